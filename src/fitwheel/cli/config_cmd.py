"""``fitwheel config``: read and change fitwheel's configuration file (see
:mod:`fitwheel.userconfig`)."""

from __future__ import annotations

import argparse
import os
import sys

HELP = "Show or change fitwheel's settings (torch-backend, ...)."


def configure(parser: argparse.ArgumentParser) -> None:
    from fitwheel.userconfig import KEYS

    known = ", ".join(KEYS)
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    set_ = sub.add_parser(
        "set",
        help="set KEY to VALUE (`fitwheel config set torch-backend auto`)",
        description=f"Set a setting in the user (default) or site file. Keys: {known}. "
        "Lists (variant-index-url, torch-projects) take whitespace-separated values.",
    )
    set_.add_argument("key", metavar="KEY")
    set_.add_argument("value", metavar="VALUE")
    unset = sub.add_parser("unset", help="remove KEY from the user (default) or site file")
    unset.add_argument("key", metavar="KEY")
    for p in (set_, unset):
        level = p.add_mutually_exclusive_group()
        level.add_argument("--user", dest="level", action="store_const", const="user")
        level.add_argument(
            "--site",
            dest="level",
            action="store_const",
            const="site",
            help="the machine-wide file (default: --user)",
        )
    get = sub.add_parser("get", help="print the value of KEY in force (environment included)")
    get.add_argument("key", metavar="KEY")
    sub.add_parser("list", help="every setting in force, with where it comes from")
    sub.add_parser("path", help="the files read, site first")


def _shown(value: str | list[str]) -> str:
    return " ".join(value) if isinstance(value, list) else value


def run(args: argparse.Namespace) -> int:
    from fitwheel.userconfig import check_key, config_paths, settings_in_force, write_setting

    env = os.environ
    if args.action in ("set", "unset"):
        key = check_key(args.key)
        level = args.level or "user"
        path = write_setting(env, level, key, args.value if args.action == "set" else None)
        if not args.quiet:
            what = f"{key} = {args.value}" if args.action == "set" else f"{key} removed"
            print(f"{what} ({path})")
        return 0
    if args.action == "get":
        key = check_key(args.key)
        found = settings_in_force(env).get(key)
        if found is None:
            print(f"fitwheel: {key} is not set", file=sys.stderr)
            return 1
        print(_shown(found.value))
        return 0
    if args.action == "path":
        for level, path in config_paths(env).items():
            state = "" if os.path.exists(path) else " (missing)"
            print(f"{level}: {path}{state}")
        return 0
    for key, setting in settings_in_force(env).items():
        print(f"{key} = {_shown(setting.value)}  # {setting.origin}")
    return 0
