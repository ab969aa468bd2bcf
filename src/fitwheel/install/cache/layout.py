"""The install layout of an unpacked wheel (:class:`CachedLayout`), worked out once from its
members (:class:`CachedMember`) when it is unpacked, and the files an unpacked entry keeps beside
the wheel's own: the manifest (:data:`MANIFEST`) and the member list (:data:`MEMBERS`).

Shared by unpacking (:mod:`fitwheel.install.cache.unpacking`), which writes them, and the cache
(:mod:`fitwheel.install.cache.unpacked`), which reads them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, NamedTuple

from fitwheel._values import Frozen
from fitwheel.errors import InstallationError
from fitwheel.wheel.record import record_line

MANIFEST = "fitwheel-unpacked.json"
MEMBERS = "fitwheel-members.json"
MANIFEST_VERSION = 5
#: joins the names of a list in the manifest into one JSON string (no path holds it)
_SEP = "\0"


#: the ``.dist-info`` files that installing from the cache reads itself (the rest are only
#: linked): checked against their hashes on every use, and kept by
#: :class:`fitwheel.install.cache.unpacked.UnpackedWheel`
READ_DIST_INFO = ("METADATA", "entry_points.txt", "variant.json")


class UnpackError(InstallationError):
    pass


class CachedMember(NamedTuple):
    """One member of a cached wheel: its name, whether it is executable, its sha256 (RECORD's
    urlsafe base64) and its size."""

    name: str
    executable: bool
    sha256: str
    size: int


def _is_member_list(value: object) -> bool:
    return isinstance(value, list) and all(
        isinstance(row, list)
        and len(row) == 4
        and isinstance(row[0], str)
        and isinstance(row[1], bool)
        and isinstance(row[2], str)
        and isinstance(row[3], int)
        for row in value
    )


def _is_str_list(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(item, str) for item in value)


class CachedLayout(Frozen):
    """The install layout of an unpacked wheel, independent of the target environment: what
    :mod:`fitwheel.install.place.linked` needs to plan an install without looking at the members,
    and what taking the entry checks (:attr:`sizes`, :attr:`read_hashes`) without reading the
    member list.

    In the manifest file, lists of names are kept joined into one string each: a wheel may
    have tens of thousands of files, and one long JSON string reads many times faster than as
    many short ones."""

    __slots__ = (
        "data_dir",
        "data_members",
        "dist_info_dir",
        "distribution",
        "read_hashes",
        "root_dirs",
        "root_files",
        "root_is_purelib",
        "root_record",
        "sizes",
        "skipped",
        "wheel_version",
    )
    distribution: str
    wheel_version: str
    dist_info_dir: str
    data_dir: str
    root_is_purelib: bool
    #: the files that go to the root scheme folder, and the folders they need (parents first)
    root_files: list[str]
    root_dirs: list[str]
    #: RECORD's lines for ``root_files``, worked out once
    root_record: str
    data_members: list[CachedMember]
    #: members left out (byte-code shipped inside the wheel)
    skipped: list[str]
    #: every member by folder: (folder, its members' names in it, their sizes), for the size
    #: check of each use (one ``stat`` per file, relative to its folder)
    sizes: list[tuple[str, list[str], list[int]]]
    #: the sha256 (RECORD's urlsafe base64) of each file of :data:`READ_DIST_INFO` it has
    read_hashes: dict[str, str]

    def __init__(
        self,
        *,
        distribution: str,
        wheel_version: str,
        dist_info_dir: str,
        data_dir: str,
        root_is_purelib: bool,
        root_files: list[str],
        root_dirs: list[str],
        root_record: str,
        data_members: list[CachedMember],
        skipped: list[str],
        sizes: list[tuple[str, list[str], list[int]]],
        read_hashes: dict[str, str],
    ) -> None:
        _set = object.__setattr__
        _set(self, "distribution", distribution)
        _set(self, "wheel_version", wheel_version)
        _set(self, "dist_info_dir", dist_info_dir)
        _set(self, "data_dir", data_dir)
        _set(self, "root_is_purelib", root_is_purelib)
        _set(self, "root_files", root_files)
        _set(self, "root_dirs", root_dirs)
        _set(self, "root_record", root_record)
        _set(self, "data_members", data_members)
        _set(self, "skipped", skipped)
        _set(self, "sizes", sizes)
        _set(self, "read_hashes", read_hashes)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": MANIFEST_VERSION,
            "distribution": self.distribution,
            "wheel_version": self.wheel_version,
            "dist_info_dir": self.dist_info_dir,
            "data_dir": self.data_dir,
            "root_is_purelib": self.root_is_purelib,
            "root_files": _SEP.join(self.root_files),
            "root_dirs": _SEP.join(self.root_dirs),
            "root_record": self.root_record,
            "data_members": [list(m) for m in self.data_members],
            "skipped": self.skipped,
            "sizes": [[folder, _SEP.join(names), sizes] for folder, names, sizes in self.sizes],
            "read_hashes": self.read_hashes,
        }

    @classmethod
    def from_json(cls, data: object) -> CachedLayout | None:
        """The layout a manifest describes, or None when it is of another version or shape (a
        cache miss: the wheel is unpacked again)."""
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            return None
        texts = (
            "distribution",
            "wheel_version",
            "dist_info_dir",
            "data_dir",
            "root_record",
            "root_files",
            "root_dirs",
        )
        if not all(isinstance(data.get(key), str) for key in texts):
            return None
        if not isinstance(data.get("root_is_purelib"), bool):
            return None
        if not _is_str_list(data.get("skipped")):
            return None
        if not _is_member_list(data.get("data_members")):
            return None
        sizes = _sizes_of(data.get("sizes"))
        hashes = data.get("read_hashes")
        if sizes is None or not isinstance(hashes, dict):
            return None
        if not all(key in READ_DIST_INFO and isinstance(v, str) for key, v in hashes.items()):
            return None
        return cls(
            distribution=data["distribution"],
            wheel_version=data["wheel_version"],
            dist_info_dir=data["dist_info_dir"],
            data_dir=data["data_dir"],
            root_is_purelib=data["root_is_purelib"],
            root_files=_split(data["root_files"]),
            root_dirs=_split(data["root_dirs"]),
            root_record=data["root_record"],
            data_members=[CachedMember(*row) for row in data["data_members"]],
            skipped=data["skipped"],
            sizes=sizes,
            read_hashes=hashes,
        )


def _split(joined: str) -> list[str]:
    return joined.split(_SEP) if joined else []


def _sizes_of(value: object) -> list[tuple[str, list[str], list[int]]] | None:
    """The size table of a manifest, or None when it is not one. The sizes themselves are only
    compared (a value that is no size fails the check)."""
    if not isinstance(value, list):
        return None
    table = []
    for row in value:
        if not (
            isinstance(row, list)
            and len(row) == 3
            and isinstance(row[0], str)
            and isinstance(row[1], str)
            and isinstance(row[2], list)
        ):
            return None
        names = _split(row[1])
        if len(names) != len(row[2]):
            return None
        table.append((row[0], names, row[2]))
    return table


def layout(
    members: list[CachedMember],
    *,
    distribution: str,
    wheel_version: str,
    dist_info: str,
    data_dir: str,
    wheel_text: str,
) -> CachedLayout:
    """The install layout of a wheel's members."""
    from fitwheel.wheel.metadata import InvalidMetadataError, parse_wheel_info

    try:
        info = parse_wheel_info(wheel_text, f"{dist_info}/WHEEL")
        info.check_installable(dist_info)
    except InvalidMetadataError as exc:
        raise UnpackError(str(exc)) from exc
    record_path = dist_info + "/RECORD"
    data_prefix = data_dir + "/"
    files: list[str] = []
    record: list[str] = []
    dirs: set[str] = set()
    data: list[CachedMember] = []
    skipped: list[str] = []
    by_folder: dict[str, tuple[list[str], list[int]]] = {}
    read = {f"{dist_info}/{name}": name for name in READ_DIST_INFO}
    hashes: dict[str, str] = {}
    for member in members:
        name = member.name
        folder, _, base = name.rpartition("/")
        known = by_folder.get(folder)
        if known is None:
            known = by_folder[folder] = ([], [])
        known[0].append(base)
        known[1].append(member.size)
        short = read.get(name)
        if short is not None:
            hashes[short] = member.sha256
        if name == record_path:
            continue
        if "__pycache__/" in name and "__pycache__" in name.split("/")[:-1]:
            # byte-code shipped in a wheel is stale or hostile; Python writes its own
            skipped.append(name)
            continue
        if name.startswith(data_prefix):
            data.append(member)
            continue
        files.append(name)
        record.append(record_line(name, "sha256=" + member.sha256, member.size))
        parent = name.rpartition("/")[0]
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    return CachedLayout(
        distribution=distribution,
        wheel_version=wheel_version,
        dist_info_dir=dist_info,
        data_dir=data_dir,
        root_is_purelib=info.root_is_purelib,
        root_files=files,
        root_dirs=sorted(dirs, key=lambda d: (d.count("/"), d)),
        root_record="".join(record),
        data_members=data,
        skipped=skipped,
        sizes=[(folder, names, sizes) for folder, (names, sizes) in by_folder.items()],
        read_hashes=hashes,
    )


def read_members(folder: Path) -> list[CachedMember]:
    members = json.loads((folder / MEMBERS).read_text())
    if not _is_member_list(members):
        raise ValueError(f"{folder / MEMBERS} is not a list of members")
    return [CachedMember(*row) for row in members]
