"""``fitwheel list``: the installed distributions, with the variant of each variant install."""

from __future__ import annotations

import argparse
import json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.install.env.inventory import Installed
    from fitwheel.install.latest import Latest

HELP = "List installed packages, with the variant of each variant install."


def configure(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._targets import add_python_argument

    parser.add_argument(
        "--format",
        choices=("columns", "json", "freeze"),
        default="columns",
        help="columns (default), json (pip's entries plus variant_label and "
        "variant_properties), or freeze (as 'fitwheel freeze' writes)",
    )
    parser.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        help="also show each variant's properties, the location and the installer",
    )
    parser.add_argument(
        "--json", action="store_const", const="json", dest="format", help="--format json"
    )
    add_python_argument(parser)
    latest = parser.add_argument_group(
        "outdated packages (the newest version an install would take here)"
    )
    which = latest.add_mutually_exclusive_group()
    which.add_argument(
        "-o", "--outdated", action="store_true",
        help="list the packages with a newer installable version (columns Package, Version, "
        "Latest, Type, as pip); only builds that fit this environment and target count: a "
        "variant that runs here, a torch build from its backend index",
    )  # fmt: skip
    which.add_argument(
        "-u", "--uptodate", action="store_true",
        help="list the packages at the newest installable version",
    )  # fmt: skip
    latest.add_argument("--pre", action="store_true", help="count pre-releases")
    from fitwheel.cli._sources import add_source_arguments
    from fitwheel.cli._targets import add_target_arguments
    from fitwheel.cli._torch import add_torch_arguments

    add_source_arguments(parser)
    add_target_arguments(parser)
    add_torch_arguments(parser)


def table(rows: list[list[str]]) -> list[str]:
    """Columns under a header and a dashed rule, as pip's ``list`` prints them."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for number, row in enumerate(rows):
        lines.append(" ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        if number == 0:
            lines.append(" ".join("-" * w for w in widths))
    return lines


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._environment import read_target

    _env, inventory = read_target(args)
    dists = list(inventory)
    if args.outdated or args.uptodate:
        return _latest(args, dists)
    if args.format == "json":
        entries = [
            {
                "name": d.name,
                "version": d.version,
                "variant_label": d.variant_label,
                "variant_properties": dict(d.variant_properties),
            }
            for d in dists
        ]
        sys.stdout.write(json.dumps(entries) + "\n")
        return 0
    if args.format == "freeze":
        from fitwheel.cli.freeze_cmd import freeze_lines

        for line in freeze_lines(dists, skip=frozenset()):
            print(line)
        return 0
    if not dists:
        return 0
    header = ["Package", "Version"]
    variants = any(d.variant_label for d in dists)
    if variants:
        header.append("Variant")
    if args.verbose:
        header += ["Location", "Installer"]
        if variants:
            header.append("Properties")
    rows = [header]
    for d in dists:
        row = [d.name, d.version]
        if variants:
            row.append(d.variant_label or "")
        if args.verbose:
            row += [str(d.location), d.installer or ""]
            if variants:
                row.append(", ".join(d.variant_lines()))
        rows.append(row)
    for line in table(rows):
        print(line)
    return 0


def _latest(args: argparse.Namespace, dists: list[Installed]) -> int:
    """``--outdated`` / ``--uptodate``: pip's columns and JSON entries."""
    from fitwheel.errors import UsageError

    if args.format == "freeze":
        option = "--outdated" if args.outdated else "--uptodate"
        raise UsageError(f"--format freeze cannot be used with {option}.")
    latest = _latest_of(args, dists)
    rows: list[tuple[Installed, Latest]] = []
    for d in dists:
        found = latest.get(d.name)
        if found is None:
            continue
        if found.newer_than(d.version) if args.outdated else not found.newer_than(d.version):
            rows.append((d, found))
    if args.format == "json":
        entries: list[dict[str, object]] = []
        for d, found in rows:
            entry: dict[str, object] = {"name": d.name, "version": d.version}
            if args.outdated:
                entry["latest_version"] = str(found.version)
                entry["latest_filetype"] = found.filetype
                entry["latest_variant_label"] = found.label
            entry["variant_label"] = d.variant_label
            entries.append(entry)
        sys.stdout.write(json.dumps(entries) + "\n")
        return 0
    if not rows:
        return 0
    header = ["Package", "Version"] + (["Latest", "Type"] if args.outdated else [])
    variants = any(d.variant_label or found.label for d, found in rows)
    if variants:
        header.append("Variant")
    lines = [header]
    for d, found in rows:
        row = [d.name, d.version]
        if args.outdated:
            row += [str(found.version), found.filetype]
        if variants:
            row.append(_variant_cell(d.variant_label, found.label if args.outdated else None))
        lines.append(row)
    for line in table(lines):
        print(line)
    return 0


def _variant_cell(installed: str | None, latest: str | None) -> str:
    if latest is None or latest == installed:
        return installed or ""
    return f"{installed or '(none)'} -> {latest}"


def _latest_of(args: argparse.Namespace, dists: list[Installed]) -> dict[str, Latest | None]:
    from fitwheel.cli._reporting import reporter_for
    from fitwheel.cli._sources import sources_from
    from fitwheel.cli._targets import resolve_target
    from fitwheel.cli._torch import torch_settings_of
    from fitwheel.install.latest import latest_versions
    from fitwheel.install.request import InstallRequest
    from fitwheel.options import ResolutionOptions

    sources = sources_from(args)
    resolved = resolve_target(args, cache_dir=sources.cache_dir)
    # markers come from the interpreter listed, as in an install
    target = resolved.target.replace(environment=None)
    request = InstallRequest(
        python=args.python,
        sources=sources,
        resolution=ResolutionOptions(pre=args.pre),
        torch=torch_settings_of(args),
    )
    reporter = reporter_for(args)
    try:
        return latest_versions(
            request,
            [d.name for d in dists],
            target=target,
            profile=resolved.profile,
            reporter=reporter,
        )
    finally:
        reporter.close()
