"""A cache of unpacked wheels, so that installing a wheel again copies (or links) files instead of
inflating the archive.

Each wheel (by sha256) is unpacked once into ``{root}/{sha[:2]}/{sha}/`` after its RECORD was
checked against the content, with a manifest of every member (executable bit, RECORD hash, size).
:class:`UnpackedWheelSource` then feeds the PyPA ``installer`` library from that folder; the
streams it yields are :class:`CachedMember` objects, which :class:`StagingDestination` copies with
the operating system's fast path or hard-links (``link_mode="hardlink"``) instead of reading.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import os
import shutil
import stat
import uuid
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

from installer.records import parse_record_file
from installer.sources import WheelContentElement, WheelFile, WheelSource

from fitwheel.errors import FitwheelError

MANIFEST = "fitwheel-unpacked.json"
MANIFEST_VERSION = 1


class UnpackError(FitwheelError):
    pass


class CachedMember(io.BufferedReader):
    """An open member of an unpacked wheel that knows its path, RECORD hash and size."""

    cached_path: Path
    digest: str
    size: int


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _unpack(wheel: Path, folder: Path) -> dict[str, Any]:
    with WheelFile.open(wheel) as source, zipfile.ZipFile(wheel) as archive:
        try:
            source.validate_record(validate_contents=True)
        except Exception as exc:
            raise UnpackError(f"cannot install {wheel.name}: {exc}") from exc
        members = []
        for info in archive.infolist():
            name = info.filename
            if name.endswith("/"):
                continue
            parts = name.split("/")
            if name.startswith("/") or ".." in parts or "\\" in name:
                raise UnpackError(f"{wheel.name} holds an unsafe path {name!r}.")
            target = folder / "files" / name
            target.parent.mkdir(parents=True, exist_ok=True)
            digest = hashlib.sha256()
            size = 0
            with archive.open(info) as src, target.open("wb") as dst:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    digest.update(chunk)
                    dst.write(chunk)
                    size += len(chunk)
            mode = info.external_attr >> 16
            executable = bool(mode and stat.S_ISREG(mode) and mode & 0o111)
            if executable:
                target.chmod(0o755)
            members.append(
                {"name": name, "exec": executable, "hash": _b64(digest.digest()), "size": size}
            )
        return {
            "version": MANIFEST_VERSION,
            "distribution": source.distribution,
            "wheel_version": source.version,
            "dist_info_dir": source.dist_info_dir,
            "data_dir": source.data_dir,
            "members": members,
        }


class UnpackedCache:
    def __init__(self, root: Path) -> None:
        self.root = root

    def folder(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def get(self, wheel: Path, sha256: str) -> UnpackedWheelSource:
        """The unpacked form of ``wheel`` (whose content hash is ``sha256``), unpacking it once."""
        folder = self.folder(sha256)
        manifest = self._load(folder)
        if manifest is None:
            tmp = self.root / "tmp" / uuid.uuid4().hex
            tmp.mkdir(parents=True)
            try:
                manifest = _unpack(wheel, tmp)
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
        return UnpackedWheelSource(folder, manifest)

    @staticmethod
    def _load(folder: Path) -> dict[str, Any] | None:
        try:
            data = json.loads((folder / MANIFEST).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            return None
        for member in data["members"]:
            # a cheap integrity check: a file changed in place (say, through a hard link from an
            # environment) usually changes size
            try:
                if (folder / "files" / member["name"]).stat().st_size != member["size"]:
                    return None
            except OSError:
                return None
        return data


class UnpackedWheelSource(WheelSource):
    """A :class:`installer.sources.WheelSource` over an unpacked wheel in the cache."""

    def __init__(self, folder: Path, manifest: dict[str, Any]) -> None:
        super().__init__(manifest["distribution"], manifest["wheel_version"])
        self.folder = folder
        self.manifest = manifest

    @property
    def dist_info_dir(self) -> str:
        return str(self.manifest["dist_info_dir"])

    @property
    def data_dir(self) -> str:
        return str(self.manifest["data_dir"])

    @property
    def dist_info_filenames(self) -> list[str]:
        prefix = self.dist_info_dir + "/"
        return [
            m["name"][len(prefix) :]
            for m in self.manifest["members"]
            if m["name"].startswith(prefix) and "/" not in m["name"][len(prefix) :]
        ]

    def read_dist_info(self, filename: str) -> str:
        return (self.folder / "files" / self.dist_info_dir / filename).read_text(encoding="utf-8")

    def validate_record(self, *, validate_contents: bool = True) -> None:
        """Checked when the wheel was unpacked."""

    def get_contents(self) -> Iterator[WheelContentElement]:
        records = {r[0]: r for r in parse_record_file(self.read_dist_info("RECORD").splitlines())}
        for member in self.manifest["members"]:
            name = member["name"]
            path = self.folder / "files" / name
            raw = path.open("rb", buffering=0)
            stream = CachedMember(raw)
            stream.cached_path = path
            stream.digest = member["hash"]
            stream.size = member["size"]
            with stream:
                yield (
                    records.get(name, (name, "", "")),
                    cast(BinaryIO, stream),
                    bool(member["exec"]),
                )
