"""The shared worker-thread loop: every target runs, and the first failure reaches the caller
only once every thread has ended (so nothing is still writing when rollback starts); an
interrupt in the caller cancels the workers (the process's one token) and is raised once they
have ended, even when a second one comes meanwhile."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator

import pytest

from fitwheel.threads import CANCEL, Cancelled, CancelToken, run_threads, wait_through


def test_every_target_runs_on_a_thread_of_its_own() -> None:
    seen: list[str] = []
    lock = threading.Lock()

    def target(i: int) -> None:
        with lock:
            seen.append(f"{i}:{threading.current_thread() is not threading.main_thread()}")

    run_threads([lambda i=i: target(i) for i in range(5)])
    assert sorted(seen) == [f"{i}:True" for i in range(5)]


def test_the_first_failure_is_raised_after_every_thread_ended() -> None:
    finished = threading.Event()

    def fails() -> None:
        raise OSError("disk full")

    def slow() -> None:
        time.sleep(0.2)
        finished.set()

    with pytest.raises(OSError, match="disk full"):
        run_threads([fails, slow])
    assert finished.is_set()


@pytest.fixture
def cancel() -> Iterator[CancelToken]:
    """The process's token, clear before and after the test."""
    CANCEL.clear()
    yield CANCEL
    CANCEL.clear()


def test_a_token_raises_once_cancelled_and_a_child_follows_its_parent(
    cancel: CancelToken,
) -> None:
    child = CancelToken(cancel)
    child.check()
    cancel.cancel()
    assert child.cancelled
    with pytest.raises(Cancelled):
        child.check()
    # an interrupt: no ``except Exception`` takes it for a failure
    assert issubclass(Cancelled, KeyboardInterrupt) and not issubclass(Cancelled, Exception)
    cancel.clear()
    own = CancelToken(cancel)
    own.cancel()
    assert own.cancelled and not cancel.cancelled


def _interrupt_main_thread_soon() -> None:
    """A KeyboardInterrupt in the main thread in a moment, as Ctrl-C brings one."""
    timer = threading.Timer(0.2, lambda: os.kill(os.getpid(), signal.SIGINT))
    timer.start()


def test_an_interrupted_wait_cancels_the_workers_and_waits_for_them(
    cancel: CancelToken,
) -> None:
    stopped: list[bool] = []

    def worker() -> None:
        # a long loop that looks for the interrupt at every piece of its work
        while True:
            try:
                cancel.check()
            except Cancelled:
                time.sleep(0.1)  # ends a little after it saw the token
                stopped.append(True)
                raise
            time.sleep(0.01)

    _interrupt_main_thread_soon()
    with pytest.raises(KeyboardInterrupt) as caught:
        run_threads([worker, worker])
    assert stopped == [True, True], "raised before every worker had ended"
    assert type(caught.value) is KeyboardInterrupt  # the user's interrupt, not a worker's


def test_a_second_interrupt_while_waiting_does_not_cut_the_wait_short(
    cancel: CancelToken,
) -> None:
    ended = threading.Event()

    def slow_to_stop() -> None:
        while not cancel.cancelled:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGINT)  # the second Ctrl-C, while the caller waits
        time.sleep(0.5)  # a chunk being finished
        ended.set()

    worker = threading.Thread(target=slow_to_stop)
    worker.start()
    _interrupt_main_thread_soon()
    with pytest.raises(KeyboardInterrupt):
        wait_through(ended.wait)
    assert ended.is_set()
    worker.join()
    assert cancel.cancelled
