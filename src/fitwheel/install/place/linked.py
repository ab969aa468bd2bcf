"""The install plan of an unpacked wheel: which of its files go where.

Every wheel reaches an environment this way. A wheel is unpacked once (into the unpacked-wheel
cache, or into a private entry in the install's transaction folder when the cache does not hold it;
see :mod:`fitwheel.install.cache.unpacked`), with its layout worked out there: the files of the root
scheme folder, the folders they need, their RECORD lines, the ``.data`` members. Here that layout
becomes the plan: link groups (a destination folder, a source folder and the names to link from one
to the other), and the few files that must be written rather than linked (RECORD, INSTALLER,
REQUESTED, ``direct_url.json``, console scripts, and ``.data/scripts`` files, whose ``#!python``
line names the target interpreter). The transaction links (or copies) the groups into place when it
commits; byte-compiling, when asked for, follows (:mod:`fitwheel.install.place.bytecode`)."""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Mapping

from fitwheel.errors import InstallationError
from fitwheel.install.cache.unpacked import UnpackedWheel
from fitwheel.install.place.transaction import LinkGroup
from fitwheel.wheel.record import b64, record_line

#: the install schemes a wheel's ``.data`` folder may name (the wheel format's list)
SCHEMES = ("purelib", "platlib", "headers", "scripts", "data")

# A script name is one file name: nothing that climbs out of the scripts folder.
_SCRIPT_NAME = re.compile(r"[^/\\\x00]+")
_ENTRY_POINT = re.compile(
    r"\s*(?P<module>[\w.]+)\s*(:\s*(?P<attr>[\w.]+)\s*)?(\[[^\]]*\])?\s*$", re.ASCII
)


class LinkPlanError(InstallationError):
    pass


class CachedWheelPlan:
    """``groups``: trees of cached files to link; ``written``: (final path, content,
    executable) of the files written instead, RECORD last; ``skipped``: members left out
    (byte-code folders shipped inside the wheel)."""

    __slots__ = ("groups", "libraries", "skipped", "written")

    def __init__(self) -> None:
        self.groups: list[LinkGroup] = []
        self.written: list[tuple[str, bytes, bool]] = []
        self.skipped: list[str] = []
        #: the groups that go to purelib or platlib, each with its folder as RECORD names it
        #: (relative to the root scheme folder, ``/``-separated, "" for that folder itself)
        self.libraries: list[tuple[LinkGroup, str]] = []

    @property
    def record(self) -> tuple[str, bytes]:
        """The RECORD file: its final path and content."""
        final, content, _executable = self.written[-1]
        return final, content

    def modules(self) -> list[tuple[str, str]]:
        """(final path, path as RECORD names it) of each ``.py`` file that goes to purelib or
        platlib: the modules that byte-compiling compiles."""
        return [
            (group.dst + name, prefix + name)
            for group, prefix in self.libraries
            for name in group.names
            if name.endswith(".py")
        ]


def _digest(content: bytes) -> str:
    return b64(hashlib.sha256(content).digest())


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


#: a line of an entry-points file in its plainest form, unindented: a ``[section]`` header, or
#: ``name = value`` with ASCII words and the punctuation of an object reference
_PLAIN_LINE = re.compile(
    r"\[(?P<section>[\w.\-]+)\][ \t\r]*"
    r"|(?P<key>[\w.\-]+)[ \t]*=[ \t]*(?P<value>(?:[\w.:\[\],\-]+[ \t]+)*[\w.:\[\],\-]+)?[ \t\r]*",
    re.ASCII,
)


def _plain_sections(text: str) -> dict[str, dict[str, str]] | None:
    """The sections of an entry-points file whose every line is blank, a comment or
    :data:`_PLAIN_LINE` (as good as every one), read the way ``configparser`` reads them; None
    for anything else (a continued value, a duplicate, ``[DEFAULT]``, other characters), which
    ``configparser`` itself reads. Lines end at ``\\n`` only, as ``configparser`` splits them."""
    sections: dict[str, dict[str, str]] = {}
    current: dict[str, str] | None = None
    match = _PLAIN_LINE.fullmatch
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped or stripped[0] in "#;":
            continue  # a blank line ends no value here: no value is continued
        found = match(line)
        if found is None:
            return None
        section, key, value = found.group("section", "key", "value")
        if section is not None:
            if section in sections or section == "DEFAULT":
                return None
            current = sections[section] = {}
        elif current is None or key in current:
            return None
        else:
            current[key] = value or ""
    return sections


def _ini_sections(text: str, source: str) -> dict[str, dict[str, str]]:
    """The sections of an entry-points file as ``configparser`` reads it (the format the
    entry-points specification names)."""
    import configparser

    parser = configparser.ConfigParser(delimiters="=", interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text, source)
    except configparser.Error as exc:
        raise LinkPlanError(f"{source} cannot be parsed: {exc}") from exc
    return {name: dict(parser.items(name)) for name in parser.sections()}


def entry_point_sections(text: str, source: str) -> dict[str, dict[str, str]]:
    """Each section of an ``entry_points.txt`` with its entries, in order."""
    plain = _plain_sections(text)
    return _ini_sections(text, source) if plain is None else plain


def entry_point_scripts(text: str, source: str) -> list[tuple[str, str, str]]:
    """(script name, module, attribute) for each console and GUI script of an
    ``entry_points.txt``."""
    sections = entry_point_sections(text, source)
    scripts = []
    for section in ("console_scripts", "gui_scripts"):
        for name, value in sections.get(section, {}).items():
            match = _ENTRY_POINT.match(value)
            if not _SCRIPT_NAME.fullmatch(name) or name in (".", "..") or match is None:
                raise LinkPlanError(f"{source}: the script entry {name} = {value} is not valid.")
            if match["attr"] is None:
                raise LinkPlanError(
                    f"{source}: the script {name} = {value} names no function to call."
                )
            scripts.append((name, match["module"], match["attr"]))
    return scripts


def _parents(path: str) -> list[str]:
    """The folders above a relative ``/``-separated path, parents first."""
    parts = path.split("/")[:-1]
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]


#: a scheme folder made absolute (once: every wheel of an install shares most of them)
_absolute = functools.lru_cache(maxsize=256)(os.path.abspath)


@functools.lru_cache(maxsize=256)
def _record_prefix(base: str, root: str) -> str:
    """The folder ``base`` as RECORD names it: relative to the root scheme's folder ``root``,
    ``/``-separated, "" for that folder itself (purelib and platlib are one folder in most
    environments); worked out once per pair: every wheel of an install shares most."""
    if base == root:
        return ""
    return os.path.relpath(base, root).replace(os.sep, "/") + "/"


def plan_cached_wheel(
    unpacked: UnpackedWheel,
    scheme: Mapping[str, str],
    *,
    interpreter: str,
    extra_metadata: Mapping[str, bytes],
) -> CachedWheelPlan:
    """Where the files of ``unpacked`` go under ``scheme`` (the five install folders), with
    ``extra_metadata`` (INSTALLER, REQUESTED, ...) added to its ``.dist-info``."""
    plan = CachedWheelPlan()
    manifest = unpacked.manifest
    root = "purelib" if manifest.root_is_purelib else "platlib"
    bases = {name: _absolute(folder) for name, folder in scheme.items()}
    missing = [name for name in SCHEMES if name not in bases]
    if missing:
        raise LinkPlanError(f"the install scheme has no {', '.join(missing)} folder.")
    root_base = bases[root]

    def prefix(name: str) -> str:
        # RECORD paths are relative to the root scheme's folder, '/'-separated
        return _record_prefix(bases[name], root_base)

    dist_info = unpacked.dist_info_dir
    files = os.path.join(unpacked.folder, "files") + os.sep
    plan.skipped = list(manifest.skipped)
    plan.groups.append(
        LinkGroup(root_base + os.sep, files, list(manifest.root_files), list(manifest.root_dirs))
    )
    plan.libraries.append((plan.groups[0], ""))
    record = [manifest.root_record]
    data_prefix = unpacked.data_dir + "/"
    by_scheme: dict[str, LinkGroup] = {}
    for name, _executable, digest, size in manifest.data_members:
        target, _, sub = name[len(data_prefix) :].partition("/")
        if target not in SCHEMES or not sub:
            raise LinkPlanError(
                f"{unpacked.distribution}: {name} is not inside one of the .data folders "
                f"{', '.join(SCHEMES)}."
            )
        if target == "scripts":
            # written, not linked: a script is made executable whatever the archive says (as
            # pip does), and a '#!python' line names the target interpreter
            with open(files + name, "rb") as handle:
                content = handle.read()
            if content.startswith(b"#!python"):
                _first, _nl, rest = content.partition(b"\n")
                content = shebang(interpreter) + rest
            plan.written.append((os.path.join(bases[target], sub), content, True))
            record.append(
                record_line(prefix(target) + sub, "sha256=" + _digest(content), len(content))
            )
            continue
        group = by_scheme.get(target)
        if group is None:
            group = by_scheme[target] = LinkGroup(
                bases[target] + os.sep, f"{files}{data_prefix}{target}/", [], []
            )
            plan.groups.append(group)
            if target in ("purelib", "platlib"):
                plan.libraries.append((group, prefix(target)))
        group.names.append(sub)
        group.dirs.extend(d for d in _parents(sub) if d not in group.dirs)
        record.append(record_line(prefix(target) + sub, "sha256=" + digest, size))
    entry_points = unpacked.checked.get("entry_points.txt")
    if entry_points is not None:
        try:
            text = entry_points.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LinkPlanError(f"{dist_info}/entry_points.txt is not UTF-8: {exc}") from exc
        for script, module, attr in entry_point_scripts(text, f"{dist_info}/entry_points.txt"):
            content = launcher(interpreter, module, attr)
            plan.written.append((os.path.join(bases["scripts"], script), content, True))
            record.append(
                record_line(prefix("scripts") + script, "sha256=" + _digest(content), len(content))
            )
    for filename, content in extra_metadata.items():
        plan.written.append((os.path.join(root_base, dist_info, filename), content, False))
        record.append(
            record_line(f"{dist_info}/{filename}", "sha256=" + _digest(content), len(content))
        )
    record.append(record_line(f"{dist_info}/RECORD", "", ""))
    plan.written.append(
        (os.path.join(root_base, dist_info, "RECORD"), "".join(record).encode(), False)
    )
    return plan
