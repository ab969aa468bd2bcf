"""What the environment commands (``list``, ``freeze``, ``show``, ``check``, ``uninstall``)
share: the target environment and its contents, with every unreadable distribution reported by
its folder on stderr while the command carries on."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.env.inventory import Inventory


def read_target(args: argparse.Namespace) -> tuple[TargetEnvironment, Inventory]:
    from fitwheel.cli._targets import target_environment
    from fitwheel.install.env.inventory import read_inventory

    env = target_environment(args)
    inventory = read_inventory(env.site_dirs)
    from fitwheel.cli._reporting import reporter_for

    reporter = reporter_for(args)
    for problem in inventory.problems:
        reporter.warning(problem)
    return env, inventory
