"""Run an uninstall in a child process; optionally kill itself with SIGKILL at commit step K.

Usage: python child_uninstall.py VENV KILL_AT NAME...   (KILL_AT -1: never)
"""

import os
import signal
import sys

from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.install.place.uninstall import uninstall


def main() -> None:
    venv, kill_at, *names = sys.argv[1:]
    env = inspect_environment(venv, {})
    steps = 0

    def hook(_op: object) -> None:
        nonlocal steps
        if steps == int(kill_at):
            os.kill(os.getpid(), signal.SIGKILL)
        steps += 1

    uninstall(env, names, commit_hook=hook)
    print(f"done after {steps} steps", flush=True)


if __name__ == "__main__":
    main()
