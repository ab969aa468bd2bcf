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

from installer.records import RecordEntry, parse_record_file
from installer.sources import WheelContentElement, WheelFile, WheelSource

from fitwheel.errors import FitwheelError

MANIFEST = "fitwheel-unpacked.json"
MANIFEST_VERSION = 1


class UnpackError(FitwheelError):
    pass


class CachedMember(io.RawIOBase):
    """A member of an unpacked wheel: its path, RECORD hash and size, and a stream that opens the
    file only if someone reads it (the destination usually copies or links it by path)."""

    def __init__(self, path: str, digest: str, size: int) -> None:
        super().__init__()
        self.cached_path = path
        self.digest = digest
        self.size = size
        self._file: io.BufferedReader | None = None

    def _open(self) -> io.BufferedReader:
        if self._file is None:
            self._file = open(self.cached_path, "rb")  # noqa: SIM115 - closed in close()
        return self._file

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._open().seek(offset, whence)

    def readinto(self, buffer: Any) -> int:
        return self._open().readinto(buffer)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        super().close()


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def _unpack(wheel: Path, folder: Path) -> dict[str, Any]:
    """Extract ``wheel`` into ``folder``, checking every member against RECORD on the way (one
    pass over the content)."""
    with WheelFile.open(wheel) as source, zipfile.ZipFile(wheel) as archive:
        try:
            source.validate_record(validate_contents=False)
            lines = source.read_dist_info("RECORD").splitlines()
            records = {
                r.path: r for r in (RecordEntry.from_elements(*e) for e in parse_record_file(lines))
            }
        except Exception as exc:
            raise UnpackError(f"cannot install {wheel.name}: {exc}") from exc
        record_path = f"{source.dist_info_dir}/RECORD"
        members = []
        made: set[Path] = set()
        for info in archive.infolist():
            name = info.filename
            if name.endswith("/"):
                continue
            parts = name.split("/")
            if name.startswith("/") or ".." in parts or "\\" in name:
                raise UnpackError(f"{wheel.name} holds an unsafe path {name!r}.")
            target = folder / "files" / name
            if target.parent not in made:
                target.parent.mkdir(parents=True, exist_ok=True)
                made.add(target.parent)
            record = records.get(name)
            algorithm = record.hash_.name if record is not None and record.hash_ else "sha256"
            if algorithm not in hashlib.algorithms_guaranteed:
                raise UnpackError(f"{wheel.name}: RECORD uses the unknown hash {algorithm!r}.")
            checker = hashlib.new(algorithm)
            digest = checker if algorithm == "sha256" else hashlib.sha256()
            size = 0
            with archive.open(info) as src, target.open("wb") as dst:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    checker.update(chunk)
                    if digest is not checker:
                        digest.update(chunk)
                    dst.write(chunk)
                    size += len(chunk)
            if name != record_path and (
                record is None
                or record.hash_ is None
                or record.hash_.value != _b64(checker.digest())
                or record.size != size
            ):
                raise UnpackError(
                    f"cannot install {wheel.name}: {name} does not match its RECORD entry "
                    "(the wheel was altered or built wrongly)"
                )
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
        base = str(self.folder / "files")
        for member in self.manifest["members"]:
            name = member["name"]
            stream = CachedMember(os.path.join(base, name), member["hash"], member["size"])
            with stream:
                yield (
                    records.get(name, (name, "", "")),
                    cast(BinaryIO, stream),
                    bool(member["exec"]),
                )
