"""Rebuild the releases of fitwheel's torch backend table from published variants files.

    python tools/refresh_torch_backends.py --from BASE   # PyTorch's download root
    python tools/refresh_torch_backends.py --from-files DIR_WITH_VARIANTS_JSON

``--from BASE`` reads every ``torch-*-variants.json`` on the variant index ``BASE/variant/``;
``--from-files`` reads them from a folder. The table is rewritten in place (or ``-o FILE``);
projects, backends, drivers and platforms are kept, and ``updated`` becomes today (a cached
copy ``fitwheel torch refresh`` wrote before then gives way to the bundled table). Review the
diff, run the tests, commit.
"""

from __future__ import annotations

import argparse
import json
import sys
from datetime import date
from pathlib import Path

TABLE = Path(__file__).resolve().parents[1] / "src" / "fitwheel" / "data" / "torch_backends.json"


def main(argv: list[str] | None = None) -> int:
    from fitwheel.torchbackend.refresh import (
        refreshed_table,
        releases_from_variants,
        variants_files_from_index,
    )
    from fitwheel.torchbackend.table import parse_table

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--from", dest="base", metavar="BASE", help="the download root")
    source.add_argument("--from-files", metavar="DIR", help="a folder of variants files")
    parser.add_argument("--table", default=str(TABLE), help="the table to start from")
    parser.add_argument("-o", "--output", help="where to write (default: --table)")
    args = parser.parse_args(argv)
    if args.base:
        files = variants_files_from_index(args.base)
    else:
        files = [(p.name, p.read_bytes()) for p in sorted(Path(args.from_files).iterdir())]
    releases = releases_from_variants(files)
    if not releases:
        print("no torch-*-variants.json found", file=sys.stderr)
        return 1
    table = json.loads(Path(args.table).read_text(encoding="utf-8"))
    new = refreshed_table(table, releases)
    new["updated"] = date.today().isoformat()  # the cached copies older than this give way
    parse_table(new)  # the result must load
    Path(args.output or args.table).write_text(json.dumps(new, indent=2) + "\n", encoding="utf-8")
    print(f"releases {', '.join(sorted(releases))} refreshed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
