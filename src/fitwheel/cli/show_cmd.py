"""``fitwheel show``: pip's fields of installed distributions, plus the variant and its
properties for a variant install."""

from __future__ import annotations

import argparse
import json
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.env.inventory import Installed, Inventory

HELP = "Show installed packages: pip's fields, plus the variant and its properties."


def configure(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._targets import add_python_argument

    parser.add_argument("names", nargs="+", metavar="NAME", help="an installed package")
    parser.add_argument(
        "-f", "--files", action="store_true", help="also list the files RECORD names"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON list of entries")
    add_python_argument(parser)


def _fields(dist: Installed) -> dict[str, object]:
    from fitwheel.errors import FitwheelError
    from fitwheel.wheel.metadata import metadata_fields

    try:
        return metadata_fields(dist.metadata_path.read_bytes(), str(dist.metadata_path))
    except (OSError, FitwheelError):
        return {}


def entry(dist: Installed, env: TargetEnvironment, inventory: Inventory) -> dict[str, Any]:
    from packaging.requirements import Requirement

    from fitwheel.install.env.inventory import dependencies
    from fitwheel.variants.names import canonicalize_name

    fields = _fields(dist)

    def text(key: str) -> str:
        value = fields.get(key)
        return value if isinstance(value, str) else ""

    requires = sorted(
        {Requirement(spec).name for spec in dependencies(dist, env.markers)}, key=str.lower
    )
    required_by = sorted(
        (
            other.name
            for other in inventory
            if any(
                canonicalize_name(Requirement(spec).name) == dist.key
                for spec in dependencies(other, env.markers)
            )
        ),
        key=str.lower,
    )
    return {
        "name": dist.name,
        "version": dist.version,
        "summary": text("summary"),
        "home_page": text("home_page"),
        "author": text("author"),
        "author_email": text("author_email"),
        "license": text("license") or text("license_expression"),
        "location": str(dist.location),
        "installer": dist.installer or "",
        "requires": requires,
        "required_by": required_by,
        "variant_label": dist.variant_label,
        "variant_properties": dict(dist.variant_properties),
    }


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._environment import read_target

    env, inventory = read_target(args)
    found: list[Installed] = []
    missing: list[str] = []
    for name in args.names:
        dist = inventory.get(name)
        if dist is None:
            missing.append(name)
        elif dist not in found:
            found.append(dist)
    entries = [entry(d, env, inventory) for d in found]
    if args.files:
        from fitwheel.wheel.record import RecordError, installed_paths

        for dist, item in zip(found, entries, strict=True):
            record = dist.read_text("RECORD")
            try:
                item["files"] = installed_paths(record) if record is not None else None
            except RecordError:
                item["files"] = None
    if args.json:
        sys.stdout.write(json.dumps(entries, indent=2) + "\n")
    else:
        blocks = []
        for item, dist in zip(entries, found, strict=True):
            lines = [
                f"Name: {item['name']}",
                f"Version: {item['version']}",
                f"Summary: {item['summary']}",
                f"Home-page: {item['home_page']}",
                f"Author: {item['author']}",
                f"Author-email: {item['author_email']}",
                f"License: {item['license']}",
                f"Location: {item['location']}",
                f"Requires: {', '.join(item['requires'])}",
                f"Required-by: {', '.join(item['required_by'])}",
            ]
            if dist.variant_label:
                lines.append(f"Variant: {dist.variant_label}")
                lines.append("Variant-properties:")
                lines += [f"  {line}" for line in dist.variant_lines()]
            if args.files:
                lines.append("Files:")
                files = item.get("files")
                if files is None:
                    lines.append("Cannot locate RECORD or installed-files.txt")
                else:
                    lines += [f"  {path}" for path in files]
            blocks.append("\n".join(lines))
        if blocks:
            print("\n---\n".join(blocks))
    if missing:
        from fitwheel.cli._reporting import reporter_for

        reporter_for(args).warning(f"package(s) not found: {', '.join(missing)}")
        return 1
    return 0
