"""The shared worker-thread loop: every target runs, and the first failure reaches the caller
only once every thread has ended (so nothing is still writing when rollback starts)."""

from __future__ import annotations

import threading
import time

import pytest

from fitwheel.threads import run_threads


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
