"""``fitwheel index build``: a static, variant-aware simple index from a folder of wheels."""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from pathlib import Path

HELP = "Build a static variant-aware package index."


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    build = sub.add_parser(
        "build",
        help="write simple/ pages (PEP 503 HTML + PEP 691 JSON), files/, .metadata and "
        "variants.json files for every wheel under WHEEL_DIR",
        description="Build or update a static simple index. Re-running it rewrites only the "
        "projects whose wheels changed.",
    )
    build.add_argument("wheel_dir", metavar="WHEEL_DIR", type=Path)
    build.add_argument("-o", "--output", type=Path, required=True, metavar="OUT_DIR")
    build.add_argument(
        "--copy",
        action="store_true",
        help="copy the wheels into OUT_DIR/files (default: hard links where possible)",
    )
    build.add_argument("--json", action="store_true", help="print a JSON summary")


def run(args: argparse.Namespace) -> int:
    from fitwheel.publish.index_build import build_index

    report = build_index(args.wheel_dir, args.output, mode="copy" if args.copy else "auto")
    from fitwheel.cli._reporting import reporter_for

    reporter = reporter_for(args)
    for warning in report.warnings:
        reporter.warning(warning)
    if args.json:
        print(json.dumps(asdict(report), indent=2))
        return 0
    print(
        f"{report.wheels} wheel(s) in {report.projects} project(s); "
        f"{report.wheels_read} read, {len(report.projects_written)} project page(s) written, "
        f"{len(report.variants_files)} variants.json file(s)"
    )
    if report.projects_removed:
        print(f"removed: {', '.join(report.projects_removed)}")
    if not args.quiet:
        print(f"serve {args.output} and use --index-url <server>/simple/")
    return 0
