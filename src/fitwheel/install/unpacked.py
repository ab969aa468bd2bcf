"""A cache of unpacked wheels, so that installing a wheel again links (or copies) files instead
of inflating the archive.

Each wheel (by sha256) is unpacked once into ``{root}/{sha[:2]}/{sha}/`` after its RECORD was
checked against the content. Beside the files lie a list of every member (``[name, executable,
sha256, size]``, the hash in RECORD's urlsafe base64) and a manifest with the install layout
worked out once: the files that go to the root scheme folder (as one string), the folders they
need, their RECORD lines, and the members of the ``.data`` folders. Installing from the cache
then reads one small file and loops over nothing in Python that the kernel does not do anyway.

Later runs trust the entry, as a content-addressed cache may; :class:`UnpackedCache` with
``verify=True`` (``install --force-reinstall``) checks every file's size first, which catches a
file edited in place through a hard link, and unpacks the wheel afresh when one differs.
:mod:`fitwheel.install.linked` turns that manifest into an install plan whose files the
transaction hard-links (or copies) into place.

Only unpacking needs ``zipfile``, the inflater and the PyPA ``installer`` library's RECORD
parser; they are imported then, so that installing from the cache starts fast.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

from fitwheel.errors import FitwheelError
from fitwheel.install.precreate import Precreator
from fitwheel.wheel.record import record_line

MANIFEST = "fitwheel-unpacked.json"
MEMBERS = "fitwheel-members.json"
MANIFEST_VERSION = 3


class UnpackError(FitwheelError):
    pass


def layout(
    members: list[list[Any]], dist_info: str, data_dir: str, wheel_text: str
) -> dict[str, Any]:
    """The install layout of a wheel's members, independent of the target environment."""
    fields: dict[str, str] = {}
    for line in wheel_text.splitlines():
        key, sep, value = line.partition(":")
        if sep:
            fields.setdefault(key.strip().lower(), value.strip())
    version = fields.get("wheel-version", "")
    if not version.startswith("1."):
        raise UnpackError(
            f"{dist_info}: its WHEEL file says Wheel-Version {version or '(none)'}; only "
            "version 1.x wheels can be installed."
        )
    record_path = dist_info + "/RECORD"
    data_prefix = data_dir + "/"
    files: list[str] = []
    record: list[str] = []
    dirs: set[str] = set()
    data: list[list[Any]] = []
    skipped: list[str] = []
    for name, executable, digest, size in members:
        if name == record_path:
            continue
        if "__pycache__/" in name and "__pycache__" in name.split("/")[:-1]:
            # byte-code shipped in a wheel is stale or hostile; Python writes its own
            skipped.append(name)
            continue
        if name.startswith(data_prefix):
            data.append([name, executable, digest, size])
            continue
        files.append(name)
        record.append(record_line(name, "sha256=" + digest, size))
        parent = name.rpartition("/")[0]
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    return {
        "root_is_purelib": fields.get("root-is-purelib", "").lower() == "true",
        "root_files": "\n".join(files),
        "root_dirs": "\n".join(sorted(dirs, key=lambda d: (d.count("/"), d))),
        "root_record": "".join(record),
        "data_members": data,
        "skipped": skipped,
    }


class UnpackedCache:
    def __init__(self, root: Path, *, verify: bool = False) -> None:
        self.root = root
        self.verify = verify
        # one process often asks twice (unpack after download, then install): load once
        self._loaded: dict[str, UnpackedWheel] = {}

    def folder(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def has(self, sha256: str) -> bool:
        return (self.folder(sha256) / MANIFEST).is_file()

    def precreator(self, **options: int) -> Precreator:
        """A folder whose files a :class:`Precreator` creates while the wheel downloads; hand
        it to :meth:`get`."""
        tmp = self.root / "tmp" / os.urandom(16).hex()
        tmp.mkdir(parents=True)
        return Precreator(tmp, **options)

    def get(self, wheel: Path, sha256: str, prepared: Precreator | None = None) -> UnpackedWheel:
        """The unpacked form of ``wheel`` (whose content hash is ``sha256``), unpacking it once
        (into ``prepared``'s folder when given)."""
        known = self._loaded.get(sha256)
        if known is not None:
            if prepared is not None:
                prepared.discard()
            return known
        folder = self.folder(sha256)
        manifest = self._load(folder)
        if prepared is not None and (manifest is not None or prepared.tainted):
            prepared.discard()
            prepared = None
        if manifest is None:
            if prepared is not None:
                tmp = prepared.folder
            else:
                tmp = self.root / "tmp" / os.urandom(16).hex()
                tmp.mkdir(parents=True)
            try:
                try:
                    from fitwheel.install.unpacking import unpack

                    manifest = unpack(wheel, tmp)
                finally:
                    if prepared is not None:
                        prepared.close()
                (tmp / MANIFEST).write_text(json.dumps(manifest))
                folder.parent.mkdir(parents=True, exist_ok=True)
                shutil.rmtree(folder, ignore_errors=True)  # a damaged earlier copy
                try:
                    os.rename(tmp, folder)
                except OSError:
                    # another process unpacked the same wheel first; theirs is as good
                    manifest = self._load(folder)
                    if manifest is None:
                        raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        unpacked = self._loaded[sha256] = UnpackedWheel(folder, manifest)
        return unpacked

    def _load(self, folder: Path) -> dict[str, Any] | None:
        try:
            data = json.loads((folder / MANIFEST).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            return None
        if not isinstance(data.get("root_files"), str):
            return None
        if self.verify:
            base = os.path.join(folder, "files") + os.sep
            stat_of = os.stat
            try:
                for name, _executable, _digest, size in _read_members(folder):
                    # a file changed in place (through a hard link from an environment)
                    # usually changes size
                    if stat_of(base + name).st_size != size:
                        return None
            except (OSError, ValueError, TypeError):
                return None
        return data


def _read_members(folder: Path) -> list[list[Any]]:
    members = json.loads((folder / MEMBERS).read_text())
    if not isinstance(members, list):
        raise ValueError(f"{folder / MEMBERS} is not a list")
    return members


class UnpackedWheel:
    """A wheel unpacked in the cache: ``folder / "files"`` holds its members, ``manifest`` its
    install layout (see the module's text), :attr:`members` every member."""

    __slots__ = ("_members", "folder", "manifest")

    def __init__(self, folder: Path, manifest: dict[str, Any]) -> None:
        self.folder = folder
        self.manifest = manifest
        self._members: list[list[Any]] | None = None

    @property
    def members(self) -> list[list[Any]]:
        """``[name, executable, sha256 (urlsafe base64), size]`` of every member."""
        if self._members is None:
            try:
                self._members = _read_members(self.folder)
            except (OSError, ValueError) as exc:
                raise UnpackError(
                    f"the unpacked-wheel cache entry {self.folder} is damaged ({exc}): remove "
                    "it and install again."
                ) from exc
        return self._members

    @property
    def distribution(self) -> str:
        return str(self.manifest["distribution"])

    @property
    def dist_info_dir(self) -> str:
        return str(self.manifest["dist_info_dir"])

    @property
    def data_dir(self) -> str:
        return str(self.manifest["data_dir"])

    def read_dist_info(self, filename: str) -> str:
        return (self.folder / "files" / self.dist_info_dir / filename).read_text(encoding="utf-8")
