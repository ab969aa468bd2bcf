"""Run a sync in a child process; optionally kill itself with SIGKILL at commit step K.

Usage: python child_sync.py LOCK VENV SYSROOT CACHE KILL_AT   (KILL_AT -1: never)
"""

import argparse
import os
import signal
import sys
from pathlib import Path

from fitwheel.cli._lockhosts import host_for
from fitwheel.lock.document import read_lock
from fitwheel.lock.syncing import SyncRequest, host_environment, run_sync
from fitwheel.options import SourceOptions


def main() -> None:
    lock, venv, sysroot, cache, kill_at = sys.argv[1:]
    steps = 0

    def hook(_op: object) -> None:
        nonlocal steps
        if steps == int(kill_at):
            os.kill(os.getpid(), signal.SIGKILL)
        steps += 1

    request = SyncRequest(
        python=venv, sources=SourceOptions(cache_dir=Path(cache)), env={**os.environ}
    )
    env = host_environment(request)
    args = argparse.Namespace(
        profile=None,
        sysroot=sysroot,
        gpu_policy=None,
        enable_optional=[],
        enable_optional_all=False,
        cache_dir=None,
    )
    run_sync(request, read_lock(lock), host_for(args, env), environment=env, commit_hook=hook)
    print(f"done after {steps} steps", flush=True)


if __name__ == "__main__":
    main()
