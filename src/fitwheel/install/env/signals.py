"""SIGTERM and SIGINT as :class:`KeyboardInterrupt` while fitwheel changes an environment.

Inside :func:`interruptible` either signal raises :class:`KeyboardInterrupt` (so that every
``finally`` and rollback runs), except inside :func:`deferred` blocks (rolling back, finishing,
placing files from several threads), where it waits for the next :func:`checkpoint`.
"""

from __future__ import annotations

import contextlib
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any


class _Signals:
    """SIGTERM and SIGINT as KeyboardInterrupt (see :func:`interruptible`)."""

    depth = 0
    deferring = 0
    pending = False
    previous: dict[int, Any] = {}  # noqa: RUF012 - one process-wide state


def _on_signal(signum: int, frame: FrameType | None) -> None:
    if _Signals.deferring:
        _Signals.pending = True
        return
    raise KeyboardInterrupt


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """For the block, SIGTERM and SIGINT raise KeyboardInterrupt (so that every ``finally``
    and rollback runs) except inside :func:`deferred` blocks, where they wait for the next
    :func:`checkpoint`. Nested blocks share one installation of the handler."""
    install = _Signals.depth == 0 and sys.platform != "win32" and _main_thread()
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
