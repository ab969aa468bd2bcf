"""``fitwheel list``: the installed distributions, with the variant of each variant install."""

from __future__ import annotations

import argparse
import json
import sys

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
    add_python_argument(parser)


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
