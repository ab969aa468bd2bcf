"""Running a few worker threads and re-raising the first failure in the caller: the one loop that
unpacking and the transaction's file placement share (their work waits on the file system and
on inflating, which release the GIL)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence


def run_threads(targets: Sequence[Callable[[], object]]) -> None:
    """Run each of ``targets`` on a thread of its own and wait for all of them; the first
    failure is raised here, in the calling thread, once every thread has ended."""
    failures: list[BaseException] = []

    def guarded(target: Callable[[], object]) -> None:
        try:
            target()
        except BaseException as exc:  # re-raised below, in the calling thread
            failures.append(exc)

    threads = [threading.Thread(target=guarded, args=(target,)) for target in targets]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failures:
        raise failures[0]
