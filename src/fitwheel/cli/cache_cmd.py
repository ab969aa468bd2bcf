"""``fitwheel cache``: where the cache is, what it holds, whether it is intact; removing what is
damaged, left behind or unused."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import asdict

HELP = "Show, verify, clean or prune fitwheel's cache."


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    sub.add_parser("dir", help="print the cache folder")
    show = sub.add_parser("info", help="entries and bytes in each part of the cache")
    show.add_argument("--json", action="store_true", help="print JSON")
    check = sub.add_parser(
        "verify",
        help="hash every downloaded and unpacked wheel; exit 1 when one is damaged",
    )
    check.add_argument("--json", action="store_true", help="print JSON")
    tidy = sub.add_parser(
        "clean",
        help="remove damaged entries and what killed processes left behind (entries in use "
        "by another process are left alone)",
    )
    tidy.add_argument("--json", action="store_true", help="print JSON")
    cut = sub.add_parser(
        "prune",
        help="remove wheels not installed from for a while (and leftovers of killed processes)",
    )
    cut.add_argument(
        "--older-than",
        type=float,
        default=30.0,
        metavar="DAYS",
        help="unused for this many days (default 30; 0: everything, index pages and remembered "
        "resolutions too)",
    )
    cut.add_argument("--json", action="store_true", help="print JSON")
    for action in sub.choices.values():
        action.add_argument(
            "--cache-dir",
            metavar="DIR",
            help="the cache (default: FITWHEEL_CACHE_DIR, else the user cache folder)",
        )


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if value < 1024 or unit == "GiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{count} B"


def run(args: argparse.Namespace) -> int:
    from fitwheel.paths import CacheLayout

    layout = CacheLayout.locate(args.cache_dir, os.environ)
    if not layout.root.is_dir():
        from fitwheel.errors import FitwheelError

        raise FitwheelError(
            f"there is no cache at {layout.root}: nothing has been installed with it yet "
            "(check --cache-dir and FITWHEEL_CACHE_DIR)."
        )
    if args.action == "dir":
        print(layout.root)
        return 0
    from fitwheel.install.cache import maintenance as cachemaint

    if args.action == "info":
        parts = cachemaint.info(layout)
        if args.json:
            print(json.dumps({"root": str(layout.root), "parts": parts}, indent=2))
            return 0
        print(layout.root)
        for name, part in parts.items():
            print(f"  {name:9} {part['entries']:6} entries  {_size(part['bytes'])}")
        return 0
    if args.action == "verify":
        report = cachemaint.verify(layout)
    elif args.action == "clean":
        report = cachemaint.clean(layout)
    else:
        report = cachemaint.prune(layout, older_than_days=args.older_than)
    if args.json:
        print(json.dumps(asdict(report), indent=2))
    else:
        for problem in report.damaged:
            print(f"damaged: {problem.path}: {problem.problem}")
        for path in report.removed:
            print(f"removed: {path}")
        for path in report.skipped_in_use:
            print(f"in use, left alone: {path}")
        if not args.quiet:
            print(
                f"{report.checked} entries checked, {len(report.damaged)} damaged, "
                f"{len(report.removed)} removed ({_size(report.freed_bytes)} freed)"
            )
    if args.action == "verify" and report.damaged:
        print(
            f"fitwheel: error: {len(report.damaged)} cache entries in {layout.root} are "
            "damaged (listed above): run `fitwheel cache clean` to remove them; installs "
            "never use them.",
            file=sys.stderr,
        )
        return 1
    return 0
