"""What the environment commands (``list``, ``freeze``, ``show``, ``check``, ``uninstall``)
share: the target environment and its contents, with every unreadable distribution reported by
its folder on stderr while the command carries on."""

from __future__ import annotations

import argparse
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.env.inventory import Inventory


def read_target(args: argparse.Namespace) -> tuple[TargetEnvironment, Inventory]:
    from fitwheel.cli._targets import target_environment
    from fitwheel.install.env.inventory import read_inventory

    env = target_environment(args)
    inventory = read_inventory(env.site_dirs)
    for problem in inventory.problems:
        print(f"fitwheel: warning: {problem}", file=sys.stderr)
    return env, inventory
