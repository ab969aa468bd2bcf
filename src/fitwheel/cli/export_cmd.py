"""``fitwheel export``: one target's part of a pylock.toml as a hash-pinned requirements file."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

HELP = "Write one target's locked files as a hash-pinned requirements file."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lock", metavar="PYLOCK", help="the lock file")
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="the requirements file (default: stdout)"
    )
    parser.add_argument(
        "--python-version", metavar="V", help="the target's Python version (default: this one)"
    )
    parser.add_argument(
        "--platform", action="append", default=[], metavar="TAG",
        help="the target's wheel platform tags (default: from the profile)",
    )  # fmt: skip
    parser.add_argument(
        "--allow-fallback",
        action="store_true",
        help="accept a build without GPU support when no locked build fits the target's GPU",
    )
    from fitwheel.cli._targets import add_target_arguments

    add_target_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._lockhosts import host_for
    from fitwheel.lock.document import read_lock
    from fitwheel.lock.exporting import export

    lock = read_lock(args.lock)
    text, warnings = export(lock, host_for(args, None), allow_fallback=args.allow_fallback)
    from fitwheel.cli._reporting import reporter_for

    reporter = reporter_for(args)
    for warning in warnings:
        reporter.warning(warning)
    if args.output:
        from fitwheel.fs import atomic_write

        atomic_write(Path(args.output), text.encode("utf-8"))
    else:
        sys.stdout.write(text)
    return 0
