"""Run a native query in a daemon thread and give up on it after a deadline.

A call into a driver library cannot be interrupted from Python. The query therefore runs in a
daemon thread; when the deadline passes the caller moves on and the thread is abandoned (it ends
with the process). While an abandoned query is still running, further queries to the same
library fail at once instead of piling up more stuck threads.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

# below the detection-wide bound (FITWHEEL_DETECT_TIMEOUT, 3 s), so a hung library is named
DEFAULT_TIMEOUT_S = 2.5

_busy: set[str] = set()
_busy_lock = threading.Lock()


class NativeTimeout(Exception):
    pass


def run_bounded(key: str, fn: Callable[[], T], timeout_s: float) -> T:
    """``fn()``'s result, or its exception, if it finishes within ``timeout_s`` seconds;
    :class:`NativeTimeout` otherwise (or at once while an earlier call on ``key`` still hangs)."""
    with _busy_lock:
        if key in _busy:
            raise NativeTimeout("an earlier call has not returned yet")
        _busy.add(key)
    outcome: list[T] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def worker() -> None:
        try:
            outcome.append(fn())
        except BaseException as exc:  # carried to the caller's thread
            failure.append(exc)
        finally:
            with _busy_lock:
                _busy.discard(key)
            done.set()

    thread = threading.Thread(target=worker, name=f"fitwheel-native-{key}", daemon=True)
    thread.start()
    if not done.wait(timeout_s):
        raise NativeTimeout(f"did not answer within {timeout_s:g} s")
    if failure:
        raise failure[0]
    return outcome[0]


def timeout_from_env(value: str | None) -> float:
    """The deadline from ``FITWHEEL_NATIVE_TIMEOUT`` (seconds), or the default."""
    if value:
        try:
            seconds = float(value)
        except ValueError:
            return DEFAULT_TIMEOUT_S
        if 0 < seconds <= 600:
            return seconds
    return DEFAULT_TIMEOUT_S
