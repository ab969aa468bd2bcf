"""SIGTERM and SIGINT as :class:`KeyboardInterrupt` while fitwheel changes an environment.

Inside :func:`interruptible` either signal raises :class:`KeyboardInterrupt` (so that every
``finally`` and rollback runs), except inside :func:`deferred` blocks (rolling back, finishing,
removing temporary folders), where it waits for the next :func:`checkpoint` (or the end of the
block of :func:`interruptible`). Either way the signal cancels the worker threads at once
(:data:`fitwheel.threads.CANCEL`: downloads, unpacking and the transaction's file placement stop
at their next chunk), and the main thread waits for them to end before it cleans up.

Only the first signal interrupts. One that comes while the command is already stopping (a
second Ctrl-C during cleanup) is absorbed: the rollback, the removal of temporary folders and the
waits for worker threads run to their end, so that neither a half-changed environment nor a
temporary folder is left behind. They are bounded (workers stop at their next chunk of a
megabyte or less; a rollback only renames), except a download blocked on a silent server, which
waits for the network time-out (``--timeout``). A process killed outright (SIGKILL) leaves its
transaction journal, which the next fitwheel command on that environment rolls back or finishes
(:mod:`fitwheel.install.env.recovery`).
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

from fitwheel.threads import CANCEL


class _Signals:
    """SIGTERM and SIGINT as KeyboardInterrupt (see :func:`interruptible`)."""

    depth = 0
    deferring = 0
    pending = False
    previous: dict[int, Any] = {}  # noqa: RUF012 - one process-wide state


def _on_signal(signum: int, frame: FrameType | None) -> None:
    stopping = CANCEL.cancelled  # an earlier signal is being handled
    CANCEL.cancel()
    if _Signals.deferring or stopping:
        _Signals.pending = True
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """For the block, SIGTERM and SIGINT raise KeyboardInterrupt (so that every ``finally``
    and rollback runs) except inside :func:`deferred` blocks, where they wait for the next
    :func:`checkpoint`. Nested blocks share one installation of the handler."""
    outermost = _Signals.depth == 0
    install = outermost and sys.platform != "win32" and _main_thread()
    if outermost:
        CANCEL.clear()  # new work: an earlier command's interrupt is over
    if install:
        _Signals.previous = {
            signal.SIGTERM: signal.signal(signal.SIGTERM, _on_signal),
            signal.SIGINT: signal.signal(signal.SIGINT, _on_signal),
        }
        _Signals.pending = False
    _Signals.depth += 1
    try:
        yield
        if install and _Signals.pending:
            _Signals.pending = False
            raise KeyboardInterrupt
    finally:
        _Signals.depth -= 1
        if install:
            for signum, handler in _Signals.previous.items():
                signal.signal(signum, handler)
            _Signals.previous = {}
        if outermost:
            CANCEL.clear()


@contextlib.contextmanager
def deferred() -> Iterator[None]:
    """A block that a signal does not interrupt (rolling back, finishing, placing files from
    several threads): the signal waits for the next :func:`checkpoint`."""
    _Signals.deferring += 1
    try:
        yield
    finally:
        _Signals.deferring -= 1


def checkpoint() -> None:
    """Where a commit may stop: raise the signal that arrived meanwhile."""
    if _Signals.pending:
        _Signals.pending = False
        raise KeyboardInterrupt


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
