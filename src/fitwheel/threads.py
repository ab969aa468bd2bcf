"""Worker threads and how they stop when the user interrupts.

Python delivers SIGINT (and fitwheel's SIGTERM) to the main thread only, as
:class:`KeyboardInterrupt`. A worker thread (downloading, inflating, writing files) learns of it
through :data:`CANCEL`, the process's one cancellation token: whoever sees the interrupt sets it
(the signal handler of :mod:`fitwheel.install.env.signals`, or a main thread whose wait for its
workers was interrupted), and every long loop of a worker calls :meth:`CancelToken.check` at
least every few megabytes, which raises :class:`Cancelled` there. The main thread waits for its
workers to end (:func:`run_threads`, :func:`wait_through`) before it removes or rolls back what
they wrote, so that no cleanup races a writer.

:func:`run_threads` is the one loop that unpacking and the transaction's file placement share
(their work waits on the file system and on inflating, which release the GIL).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Sequence


class Cancelled(KeyboardInterrupt):
    """Raised in a worker thread that found :data:`CANCEL` set: the user interrupted. A
    :class:`KeyboardInterrupt`, so that no ``except Exception`` takes it for a failure and a
    caller that receives it ends as an interrupted command does."""


class CancelToken:
    """Whether the work under way is to stop. Set once, by whoever sees the interrupt; read by
    every long loop of a worker thread (:meth:`check`, a flag test: cheap enough per chunk)."""

    __slots__ = ("_event", "_parent")

    def __init__(self, parent: CancelToken | None = None) -> None:
        self._event = threading.Event()
        #: a token whose cancelling cancels this one too
        self._parent = parent

    @property
    def cancelled(self) -> bool:
        parent = self._parent
        return self._event.is_set() or (parent is not None and parent.cancelled)

    def cancel(self) -> None:
        self._event.set()

    def clear(self) -> None:
        """Ready for new work (the work this token stopped has ended)."""
        self._event.clear()

    def check(self) -> None:
        """Raise :class:`Cancelled` when the work is to stop."""
        if self.cancelled:
            raise Cancelled("interrupted")


#: the process's token: set when the user interrupts (SIGINT, SIGTERM) and cleared when the next
#: interruptible command begins (:func:`fitwheel.install.env.signals.interruptible`)
CANCEL = CancelToken()


def cores() -> int:
    """The processors this process may run on (its CPU affinity where the platform says, else
    every processor of the machine; at least 1): how many CPU-bound jobs can run at once."""
    getaffinity = getattr(os, "sched_getaffinity", None)
    if getaffinity is not None:
        try:
            return max(1, len(getaffinity(0)))
        except OSError:
            pass
    return max(1, os.cpu_count() or 1)


def wait_through(wait: Callable[[], object]) -> None:
    """Call ``wait`` (something safe to repeat: waiting for events, for futures) until it
    returns. An interrupt meanwhile cancels the workers (:data:`CANCEL`), so that they end at
    their next check, and the wait goes on; the first such interrupt is raised once ``wait``
    returned. Nothing the workers wrote is removed while they may still be writing.

    Not for :meth:`threading.Thread.join`: on Python 3.11 an interrupted join marks the thread
    as ended though it still runs, and a second join returns at once."""
    interrupted: KeyboardInterrupt | None = None
    while True:
        try:
            try:
                wait()
                break
            except KeyboardInterrupt as exc:
                CANCEL.cancel()
                if interrupted is None:
                    interrupted = exc
        except KeyboardInterrupt as exc:  # a second one, while the first was being handled
            CANCEL.cancel()
            if interrupted is None:
                interrupted = exc
    if interrupted is not None:
        raise interrupted


def run_threads(targets: Sequence[Callable[[], object]]) -> None:
    """Run each of ``targets`` on a thread of its own and wait for all of them; the first
    failure is raised here, in the calling thread, once every thread has ended. An interrupt
    in the calling thread cancels the targets (they stop at their next :meth:`CancelToken.check`)
    and is raised once every thread has ended."""
    failures: list[BaseException] = []
    ended = [threading.Event() for _ in targets]

    def guarded(target: Callable[[], object], done: threading.Event) -> None:
        try:
            target()
        except BaseException as exc:  # re-raised below, in the calling thread
            failures.append(exc)
        finally:
            done.set()

    threads = [
        threading.Thread(target=guarded, args=(target, done))
        for target, done in zip(targets, ended, strict=True)
    ]

    def wait() -> None:
        for thread, done in zip(threads, ended, strict=True):
            if thread.ident is not None:  # started
                done.wait()

    try:
        for thread in threads:
            thread.start()
    except BaseException:
        CANCEL.cancel()
        wait_through(wait)
        raise
    wait_through(wait)
    if failures:
        raise failures[0]
