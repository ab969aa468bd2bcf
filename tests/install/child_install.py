"""Run an install in a child process; optionally kill itself with SIGKILL at commit step K.

Usage: python child_install.py VENV KILL_AT WHEEL...   (KILL_AT -1: never)
"""

import os
import signal
import sys
from pathlib import Path

from fitwheel.install.environment import inspect_environment
from fitwheel.install.installer import WheelToInstall, install_wheels


def main() -> None:
    venv, kill_at, *wheels = sys.argv[1:]
    env = inspect_environment(venv, {})
    steps = 0

    def hook(_op: object) -> None:
        nonlocal steps
        if steps == int(kill_at):
            os.kill(os.getpid(), signal.SIGKILL)
        steps += 1

    install_wheels(
        env,
        [WheelToInstall.from_path(Path(w)) for w in wheels],
        commit_hook=hook,
        notice=sys.stdout,
    )
    print(f"done after {steps} steps", flush=True)


if __name__ == "__main__":
    main()
