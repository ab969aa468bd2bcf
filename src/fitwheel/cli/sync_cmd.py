"""``fitwheel sync``: make an environment exactly what a pylock.toml locks for this host."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from fitwheel.lock.syncing import SyncOutcome

HELP = "Install exactly the locked files that fit this host, hash-checked."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("lock", metavar="PYLOCK", help="the lock file (or a bundle's folder)")
    target = parser.add_argument_group("target")
    target.add_argument(
        "--python", metavar="PATH", help="interpreter or virtual environment to sync"
    )
    from fitwheel.cli._targets import add_target_arguments

    add_target_arguments(parser)
    parser.add_argument(
        "--allow-fallback",
        action="store_true",
        help="accept a build without GPU support when no locked build fits the GPU here",
    )
    parser.add_argument(
        "--inexact", action="store_true", help="keep installed packages the lock does not list"
    )
    where = parser.add_argument_group("where files come from")
    where.add_argument(
        "-f", "--find-links", action="append", default=[], metavar="DIR",
        help="take locked files from this folder (a bundle, or a folder of wheels) or page",
    )  # fmt: skip
    where.add_argument(
        "-i", "--index-url", metavar="URL",
        help="take locked files (by filename) from this index instead of their locked URLs",
    )  # fmt: skip
    where.add_argument(
        "--offline", action="store_true", help="use local files only: no network at all"
    )
    from fitwheel.cli._sources import add_fetch_arguments, add_placement_arguments

    add_fetch_arguments(parser, where)
    add_placement_arguments(parser, target, verb="sync")
    parser.add_argument(
        "--dry-run", action="store_true", help="say what would change; change nothing"
    )
    from fitwheel.cli._verify import add_verify_argument

    add_verify_argument(parser, "syncing")
    from fitwheel.cli._lockhosts import add_report_arguments

    add_report_arguments(parser)


def explain_lines(outcome: SyncOutcome, description: str) -> list[str]:
    selection = outcome.selection
    lines = [f"host: {description}"]
    for choice in selection.choices:
        p = choice.package
        locked = sorted({w.label for w in p.wheels if w.label})
        lines.append(f"{p.name} {p.version}: locked builds {', '.join(locked) or 'none'}")
        picked = choice.wheel.label if choice.wheel is not None else None
        for rank, label in enumerate(choice.ordered, 1):
            mark = "  <- chosen" if label == picked else ""
            where = "" if label in locked else " (not in the lock)"
            lines.append(f"  {rank}. {label}{where}{mark}")
        for label, reason in choice.rejected.items():
            if label in locked:
                lines.append(f"  rejected {label}: {reason}")
    if selection.target is not None:
        lines.append(f"target: {selection.target.describe()}")
    for name, why in selection.reasons.items():
        lines.append(f"  not {name}: {why}")
    return lines


def report_json(outcome: SyncOutcome, lock: str) -> dict[str, Any]:
    env = outcome.environment
    target = outcome.selection.target
    return {
        "fitwheel_report": 1,
        "lock": lock,
        "target": target.name if target is not None else None,
        "environment": {
            "python": env.python,
            "prefix": str(env.prefix),
            "markers": dict(env.markers),
        },
        "install": [
            {
                "name": f.package.name,
                "version": f.package.version,
                "filename": f.wheel.filename,
                "url": f.source,
                "sha256": f.wheel.sha256,
                "variant_label": f.wheel.label,
                "action": f.action,
            }
            for f in outcome.files
        ],
        "remove": list(outcome.removed),
    }


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._lockhosts import host_for
    from fitwheel.cli._sources import placement_from, sources_from
    from fitwheel.cli._targets import sysroot_of
    from fitwheel.lock.document import read_lock
    from fitwheel.lock.syncing import SyncRequest, host_environment, run_sync

    sources = sources_from(args)
    placement = placement_from(args)
    path = Path(args.lock)
    if path.is_dir():
        path = path / "pylock.toml"
    lock = read_lock(str(path))
    request = SyncRequest(
        python=args.python,
        inexact=args.inexact,
        allow_fallback=args.allow_fallback,
        dry_run=args.dry_run,
        sources=sources,
        placement=placement,
    )
    env = host_environment(request)
    # the lock's plugins run here only where this host allows them, with the lock's files
    args.locked_plugins = (lock.plugins, str(path))
    host = host_for(args, env, sources.cache_dir)
    from fitwheel.cli._reporting import reporter_for

    reporter = reporter_for(args)  # progress bars while the locked files download
    try:
        outcome = run_sync(request, lock, host, environment=env, reporter=reporter)
    finally:
        reporter.close()
    if args.explain:
        root = sysroot_of(args)
        what = (
            f"profile {args.profile}"
            if args.profile
            else (f"sysroot {root}" if root else "this machine")
        )
        print("\n".join(explain_lines(outcome, what)))
    if args.report:
        text = json.dumps(report_json(outcome, str(path)), indent=2) + "\n"
        if args.report == "-":
            sys.stdout.write(text)
        else:
            Path(args.report).write_text(text, encoding="utf-8")
    if not args.quiet and args.report != "-":
        verb = "Would install" if args.dry_run else "Installed"
        fresh = [f for f in outcome.files if f.action == "install"]
        kept = [f for f in outcome.files if f.action == "keep"]
        target = outcome.selection.target
        if target is not None:
            print(f"Target {target.name} of {path}")

        def show(f: Any) -> str:
            label = f" [{f.wheel.label}]" if f.wheel.label else ""
            return f"{f.package.name} {f.package.version}{label}"

        if fresh:
            print(f"{verb}: " + ", ".join(show(f) for f in fresh))
        if kept:
            print("Already installed: " + ", ".join(show(f) for f in kept))
        if outcome.removed:
            print(("Would remove: " if args.dry_run else "Removed: ") + ", ".join(outcome.removed))
        if outcome.installed is not None:
            for note in outcome.installed.notes:
                print(note)
    if args.verify and not args.dry_run:
        from fitwheel.cli._verify import verify

        verify(
            args,
            outcome.environment,
            None,
            [f.package.name for f in outcome.files],
            action="sync",
            quiet=args.quiet or args.report == "-",
            cache_dir=sources.cache_dir,
        )
    return 0
