"""The install plan of a wheel from the unpacked-wheel cache: which cached file goes where.

The general path (:mod:`fitwheel.install.staging` under the PyPA ``installer`` library) streams
every file through a destination object. For a wheel already unpacked and checked in the cache
that per-file machinery costs more than the I/O, so here the cache's manifest becomes the plan
directly: each member's final path (by the wheel's scheme rules), and the few files that must be
written rather than linked (RECORD, INSTALLER, REQUESTED, ``direct_url.json``, console scripts,
and scripts whose ``#!python`` shebang names the target interpreter). The transaction links the
members into place when it commits. The layout and RECORD match the general path's; a test
installs one wheel both ways and compares.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import re
from collections.abc import Mapping

from fitwheel.errors import FitwheelError
from fitwheel.install.unpacked import UnpackedWheel

#: the install schemes a wheel's ``.data`` folder may name (the wheel format's list)
SCHEMES = ("purelib", "platlib", "headers", "scripts", "data")

# A script name is one file name: nothing that climbs out of the scripts folder.
_SCRIPT_NAME = re.compile(r"[^/\\\x00]+")
_ENTRY_POINT = re.compile(
    r"\s*(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?(\[[^\]]*\])?\s*$", re.ASCII
)


# what makes the csv module quote a field (with "\n" as the line end)
_NEEDS_QUOTING = re.compile(r'[,"\r\n]')


class LinkPlanError(FitwheelError):
    pass


class CachedWheelPlan:
    """``links``: (final path, cached file, executable); ``written``: (final path, content,
    executable); ``skipped``: members left out (byte-code folders shipped inside the wheel)."""

    __slots__ = ("links", "skipped", "written")

    def __init__(self) -> None:
        self.links: list[tuple[str, str, bool]] = []
        self.written: list[tuple[str, bytes, bool]] = []
        self.skipped: list[str] = []


def _digest(content: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(content).digest()).decode().rstrip("=")


def _root_scheme(unpacked: UnpackedWheel) -> str:
    """``purelib`` or ``platlib``, from the WHEEL file (which must say Wheel-Version 1.x)."""
    try:
        text = unpacked.read_dist_info("WHEEL")
    except (OSError, UnicodeDecodeError) as exc:
        raise LinkPlanError(f"{unpacked.distribution}: cannot read its WHEEL file: {exc}") from exc
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    version = fields.get("wheel-version", "")
    if not version.startswith("1."):
        raise LinkPlanError(
            f"{unpacked.distribution}: its WHEEL file says Wheel-Version {version or '(none)'}; "
            "only version 1.x wheels can be installed."
        )
    return "purelib" if fields.get("root-is-purelib", "").lower() == "true" else "platlib"


def shebang(interpreter: str) -> bytes:
    """The first line(s) of a script run by ``interpreter``; the kernel's limit on the
    ``#!`` line and paths with spaces need the ``/bin/sh`` relay."""
    if " " not in interpreter and len(interpreter) <= 125:
        return f"#!{interpreter}\n".encode()
    return f"#!/bin/sh\n'''exec' \"{interpreter}\" \"$0\" \"$@\"\n' '''\n".encode()


def launcher(interpreter: str, module: str, attr: str) -> bytes:
    """A console or GUI script that calls ``module:attr``."""
    head = attr.split(".", 1)[0]
    body = (
        "# -*- coding: utf-8 -*-\n"
        "import sys\n"
        f"from {module} import {head}\n"
        'if __name__ == "__main__":\n'
        f"    sys.exit({attr}())\n"
    )
    return shebang(interpreter) + body.encode()


def entry_point_scripts(text: str, source: str) -> list[tuple[str, str, str]]:
    """(script name, module, attribute) for each console and GUI script of an
    ``entry_points.txt``."""
    import configparser

    parser = configparser.ConfigParser(delimiters="=", interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text, source)
    except configparser.Error as exc:
        raise LinkPlanError(f"{source} cannot be parsed: {exc}") from exc
    scripts = []
    for section in ("console_scripts", "gui_scripts"):
        if not parser.has_section(section):
            continue
        for name, value in parser.items(section):
            match = _ENTRY_POINT.match(value)
            if not _SCRIPT_NAME.fullmatch(name) or name in (".", "..") or match is None:
                raise LinkPlanError(f"{source}: the script entry {name} = {value} is not valid.")
            if match["attr"] is None:
                raise LinkPlanError(
                    f"{source}: the script {name} = {value} names no function to call."
                )
            scripts.append((name, match["module"], match["attr"]))
    return scripts


def _record(rows: list[tuple[str, str, int | str]]) -> bytes:
    """RECORD as CSV; the csv module only when some path needs quoting."""
    if not _NEEDS_QUOTING.search("\0".join(row[0] for row in rows)):
        return "".join(f"{path},{digest},{size}\n" for path, digest, size in rows).encode()
    import csv

    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


def plan_cached_wheel(
    unpacked: UnpackedWheel,
    scheme: Mapping[str, str],
    *,
    interpreter: str,
    extra_metadata: Mapping[str, bytes],
) -> CachedWheelPlan:
    """Where each file of ``unpacked`` goes under ``scheme`` (the five install folders), with
    ``extra_metadata`` (INSTALLER, REQUESTED, ...) added to its ``.dist-info``."""
    plan = CachedWheelPlan()
    manifest = unpacked.manifest
    root = _root_scheme(unpacked)
    bases = {name: os.path.abspath(folder) for name, folder in scheme.items()}
    missing = [name for name in SCHEMES if name not in bases]
    if missing:
        raise LinkPlanError(f"the install scheme has no {', '.join(missing)} folder.")
    root_base = bases[root]
    # RECORD paths are relative to the root scheme's folder, '/'-separated
    prefixes = {
        name: os.path.relpath(base, root_base).replace(os.sep, "/") + "/"
        for name, base in bases.items()
    }
    dist_info = unpacked.dist_info_dir
    data_prefix = unpacked.data_dir + "/"
    record_path = dist_info + "/RECORD"
    files = os.path.join(unpacked.folder, "files") + os.sep
    rows: list[tuple[str, str, int | str]] = []
    add_row = rows.append
    link = plan.links.append
    root_dir = root_base + os.sep
    slash = os.sep != "/"
    for name, executable, digest, size in manifest["members"]:
        if name == record_path:
            continue
        if "__pycache__/" in name and "__pycache__" in name.split("/")[:-1]:
            # byte-code shipped in a wheel is stale or hostile; Python writes its own
            plan.skipped.append(name)
            continue
        local = name.replace("/", os.sep) if slash else name
        if not name.startswith(data_prefix):
            link((root_dir + local, files + local, executable))
            add_row((name, "sha256=" + digest, size))
            continue
        target, _, sub = name[len(data_prefix) :].partition("/")
        if target not in SCHEMES or not sub:
            raise LinkPlanError(
                f"{unpacked.distribution}: {name} is not inside one of the .data folders "
                f"{', '.join(SCHEMES)}."
            )
        final = os.path.join(bases[target], sub.replace("/", os.sep) if slash else sub)
        if target == "scripts":
            # written, not linked: a script is made executable whatever the archive says (as
            # pip does), and a '#!python' line names the target interpreter
            with open(files + local, "rb") as handle:
                content = handle.read()
            if content.startswith(b"#!python"):
                _first, _nl, rest = content.partition(b"\n")
                content = shebang(interpreter) + rest
            plan.written.append((final, content, True))
            add_row((prefixes[target] + sub, "sha256=" + _digest(content), len(content)))
            continue
        link((final, files + local, executable))
        add_row((prefixes[target] + sub, "sha256=" + digest, size))
    entry_points = files + dist_info + os.sep + "entry_points.txt"
    if os.path.isfile(entry_points):
        with open(entry_points, encoding="utf-8") as handle:
            text = handle.read()
        for script, module, attr in entry_point_scripts(text, f"{dist_info}/entry_points.txt"):
            content = launcher(interpreter, module, attr)
            plan.written.append((os.path.join(bases["scripts"], script), content, True))
            add_row((prefixes["scripts"] + script, "sha256=" + _digest(content), len(content)))
    for filename, content in extra_metadata.items():
        plan.written.append((os.path.join(root_base, dist_info, filename), content, False))
        add_row((f"{dist_info}/{filename}", "sha256=" + _digest(content), len(content)))
    add_row((record_path, "", ""))
    plan.written.append((os.path.join(root_base, dist_info, "RECORD"), _record(rows), False))
    return plan
