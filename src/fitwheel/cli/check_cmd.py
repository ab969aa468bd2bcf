"""``fitwheel check``: pip's check of an environment: every dependency installed in a version
its requirement allows (markers evaluated for the environment and each variant install's
properties), and every installed wheel for this platform."""

from __future__ import annotations

import argparse
import json
import sys

HELP = "Check that installed packages have their dependencies, in compatible versions."


def configure(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._targets import add_python_argument

    parser.add_argument(
        "--json",
        action="store_true",
        help='print {"ok": bool, "problems": [{"name", "version", "kind", "requirement", '
        '"installed", "message"}]}',
    )
    add_python_argument(parser, verb="check")


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._environment import read_target
    from fitwheel.install.env.inventory import check_inventory

    env, inventory = read_target(args)
    broken = check_inventory(inventory, env.markers, env.tags)
    if args.json:
        problems = [
            {
                "name": b.name,
                "version": b.version,
                "kind": b.kind,
                "requirement": b.requirement,
                "installed": b.installed,
                "message": b.line(),
            }
            for b in broken
        ]
        sys.stdout.write(json.dumps({"ok": not broken, "problems": problems}) + "\n")
    elif broken:
        for b in broken:
            print(b.line())
    else:
        print("No broken requirements found.")
    return 1 if broken else 0
