"""Core metadata of a wheel without installing it: PEP 658/714 files, range requests, whole wheel.

The cheapest source wins: a ``.metadata`` file the index announces (hash-checked), then the
``*.dist-info/METADATA`` member read through HTTP range requests (the zip directory lives at the
end), then the whole wheel. Local wheels are read in place.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from fitwheel.errors import FitwheelError
from fitwheel.index.findlinks import local_path
from fitwheel.index.http import Session
from fitwheel.index.simple import Link

_RANGE_CHUNK = 64 * 1024


class MetadataError(FitwheelError):
    pass


def dist_info_member(names: list[str], wheel_name: str, member: str) -> str:
    """The ``{dist-info}/{member}`` path in a wheel, checking there is exactly one dist-info."""
    dist_infos = {n.split("/", 1)[0] for n in names if n.split("/", 1)[0].endswith(".dist-info")}
    if len(dist_infos) != 1:
        raise MetadataError(
            f"{wheel_name} must hold exactly one .dist-info folder, not {len(dist_infos)}."
        )
    return f"{dist_infos.pop()}/{member}"


def read_member(archive: zipfile.ZipFile, wheel_name: str, member: str) -> bytes | None:
    path = dist_info_member(archive.namelist(), wheel_name, member)
    try:
        return archive.read(path)
    except KeyError:
        return None


def wheel_member(path: Path, member: str) -> bytes | None:
    """``{dist-info}/{member}`` of a local wheel (None when absent)."""
    try:
        with zipfile.ZipFile(path) as archive:
            return read_member(archive, path.name, member)
    except (OSError, zipfile.BadZipFile) as exc:
        raise MetadataError(f"{path} is not a readable wheel: {exc}.") from exc


class _RangeReader(io.RawIOBase):
    """A seekable read-only file over HTTP range requests, with a small block cache."""

    def __init__(self, session: Session, url: str, size: int) -> None:
        self._session = session
        self._url = url
        self._size = size
        self._pos = 0
        self._blocks: dict[int, bytes] = {}

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._pos

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self._pos, 2: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def _block(self, index: int) -> bytes:
        if index not in self._blocks:
            start = index * _RANGE_CHUNK
            end = min(self._size, start + _RANGE_CHUNK) - 1
            data = self._session.get_range(self._url, start, end)
            if data is None:
                raise _NoRanges()
            self._blocks[index] = data
        return self._blocks[index]

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        want = min(len(buffer), self._size - self._pos)
        done = 0
        while done < want:
            index, offset = divmod(self._pos, _RANGE_CHUNK)
            chunk = self._block(index)[offset : offset + want - done]
            if not chunk:
                break
            buffer[done : done + len(chunk)] = chunk
            done += len(chunk)
            self._pos += len(chunk)
        return done


class _NoRanges(Exception):
    pass


def fetch_metadata(link: Link, session: Session | None) -> bytes:
    """The ``METADATA`` bytes of the wheel behind ``link``."""
    path = local_path(link.url)
    if path is not None:
        data = wheel_member(path, "METADATA")
        if data is None:
            raise MetadataError(f"{path} has no METADATA file.")
        return data
    if session is None:
        raise MetadataError(f"cannot fetch {link.url} without an HTTP session.")
    if link.metadata_hashes is not None:
        resp = session.get(
            link.metadata_url,
            what="wheel metadata",
            use_cache=True,
            hashes=dict(link.metadata_hashes) or None,
        )
        assert resp is not None  # the session checked the published hash, once
        return resp.body
    return fetch_member(link, session, "METADATA", required=True) or b""


def fetch_member(link: Link, session: Session, member: str, *, required: bool) -> bytes | None:
    """``{dist-info}/{member}`` of a remote wheel: by range requests, else the whole file."""
    try:
        headers = session.head(link.url)
        size = int(headers.get("content-length", "0"))
        if size > 0 and headers.get("accept-ranges", "").lower() == "bytes":
            with zipfile.ZipFile(
                io.BufferedReader(_RangeReader(session, link.url, size), _RANGE_CHUNK)
            ) as zf:
                data = read_member(zf, link.filename, member)
                if data is None and required:
                    raise MetadataError(f"{link.filename} has no {member} file.")
                return data
    except (_NoRanges, zipfile.BadZipFile):
        pass
    resp = session.get(link.url, what="wheel", use_cache=False)
    assert resp is not None
    try:
        with zipfile.ZipFile(io.BytesIO(resp.body)) as zf:
            data = read_member(zf, link.filename, member)
    except zipfile.BadZipFile as exc:
        raise MetadataError(f"{link.url} is not a valid wheel: {exc}.") from exc
    if data is None and required:
        raise MetadataError(f"{link.filename} has no {member} file.")
    return data
