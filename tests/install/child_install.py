"""Run an install in a child process; optionally kill itself with SIGKILL at commit step K.

Usage: python child_install.py VENV KILL_AT WHEEL...   (KILL_AT -1: never)

With ``FITWHEEL_TEST_UNPACKED`` set, the wheels go through that unpacked-wheel cache; otherwise
each is unpacked into a private entry in the transaction folder. Either way they are hard-linked
into place.
"""

import os
import signal
import sys
from pathlib import Path

from fitwheel.cli._reporting import ConsoleReporter
from fitwheel.install.cache.unpacked import UnpackedCache
from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.install.place.core import WheelToInstall, install_wheels


def main() -> None:
    venv, kill_at, *wheels = sys.argv[1:]
    env = inspect_environment(venv, {})
    steps = 0

    def hook(_op: object) -> None:
        nonlocal steps
        if steps == int(kill_at):
            os.kill(os.getpid(), signal.SIGKILL)
        steps += 1

    cache = os.environ.get("FITWHEEL_TEST_UNPACKED")
    items = [WheelToInstall.from_path(Path(w)) for w in wheels]
    if cache:
        import hashlib

        items = [
            WheelToInstall(
                i.path, i.name, i.version, sha256=hashlib.sha256(i.path.read_bytes()).hexdigest()
            )
            for i in items
        ]
    install_wheels(
        env,
        items,
        commit_hook=hook,
        reporter=ConsoleReporter(sys.stdout),
        unpacked=UnpackedCache(Path(cache)) if cache else None,
        link_mode="hardlink",
    )
    print(f"done after {steps} steps", flush=True)


if __name__ == "__main__":
    main()
