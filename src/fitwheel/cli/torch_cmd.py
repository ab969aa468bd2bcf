"""``fitwheel torch refresh``: bring the cached torch backend table up to date from the index.

It reads which torch releases each backend index under ``BASE`` carries (the backends the
root page lists, else the table's), the exact architectures from the variant index's
``torch-*-variants.json`` files where published, and extrapolates the rest (marked). The
result is the cached copy of the table, used over the bundled one from then on; a broken index
leaves the table in force as it was.
"""

from __future__ import annotations

import argparse
import json
import os

HELP = "Refresh the cached table of PyTorch's per-backend indexes."


def configure(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    refresh = sub.add_parser("refresh", help="update the cached torch backend table from the index")
    refresh.add_argument(
        "--torch-index-url",
        metavar="BASE",
        help="the root under which BASE/<backend>/ is a simple index (default: the "
        "torch-index-url setting, else PyTorch's download root)",
    )
    refresh.add_argument("--json", action="store_true", help="print JSON")


def run(args: argparse.Namespace) -> int:
    from fitwheel.data import load_table
    from fitwheel.index.session import open_session
    from fitwheel.options import SourceOptions
    from fitwheel.torchbackend.refresh import refresh_from_index, write_cached_table
    from fitwheel.torchbackend.table import TABLE_FILE
    from fitwheel.userconfig import torch_settings

    settings = torch_settings(os.environ, index_url=args.torch_index_url)
    base = settings.index_url
    session = open_session(SourceOptions(), os.environ)
    data = refresh_from_index(base, load_table(TABLE_FILE), session)
    path = write_cached_table(data)
    summary = {
        "path": path,
        "refreshed": data["refreshed"],
        "from": base,
        "releases": {
            series: {
                "backends": list(entry["builds"]),
                "latest": entry.get("latest"),
                "extrapolated": entry.get("extrapolated", {}),
            }
            for series, entry in data["releases"].items()
        },
        "backends_extrapolated": {
            name: entry["extrapolated"]
            for name, entry in data["backends"].items()
            if entry.get("extrapolated")
        },
    }
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    print(f"torch backend table refreshed from {base} at {data['refreshed']}: {path}")
    for series, entry in summary["releases"].items():
        latest = f" (newest {entry['latest']})" if entry["latest"] else ""
        marks = entry["extrapolated"]
        extra = (
            "; extrapolated: " + ", ".join(f"{b} from {src}" for b, src in marks.items())
            if marks
            else ""
        )
        print(f"  torch {series}{latest}: {', '.join(entry['backends'])}{extra}")
    for name, near in summary["backends_extrapolated"].items():
        print(
            f"  backend {name}: not in the bundled table; requirements from its name, "
            f"platforms from {near}"
        )
    return 0
