"""Core metadata of a wheel without installing it: PEP 658/714 files, range requests, whole wheel.

The cheapest source wins: a ``.metadata`` file the index announces (hash-checked), then the
``*.dist-info/METADATA`` member read through HTTP range requests (the zip directory lives at the
end), then the whole wheel, streamed to a temporary file. Local wheels are read in place. Every
wheel is read by the one wheel reader (:mod:`fitwheel.wheel.archive`).
"""

from __future__ import annotations

from pathlib import Path

from fitwheel.errors import InvalidWheelError, NetworkError
from fitwheel.index.findlinks import local_path
from fitwheel.index.http import Session
from fitwheel.index.simple import Link
from fitwheel.wheel.archive import WheelArchive

_RANGE_CHUNK = 64 * 1024


def _member_of(archive: WheelArchive, member: str) -> bytes | None:
    """``{dist-info}/{member}`` of an opened wheel (None when absent)."""
    name = f"{archive.dist_info}/{member}"
    if name not in archive.by_name:
        return None
    return archive.read_member(name)


def wheel_member(path: Path, member: str) -> bytes | None:
    """``{dist-info}/{member}`` of a local wheel (None when absent). Only that member's local
    header is checked (with the whole central directory): installing checks the rest."""
    with WheelArchive(path, lazy_headers=True) as archive:
        return _member_of(archive, member)


class _RangeReader:
    """``read(length, offset)`` over HTTP range requests, a block at a time, for
    :class:`WheelArchive`; raises :class:`_NoRanges` when the server ignores ranges."""

    def __init__(self, session: Session, url: str, size: int) -> None:
        self._session = session
        self._url = url
        self._size = size
        self._blocks: dict[int, bytes] = {}

    def _block(self, index: int) -> bytes:
        block = self._blocks.get(index)
        if block is None:
            start = index * _RANGE_CHUNK
            end = min(self._size, start + _RANGE_CHUNK) - 1
            data = self._session.get_range(self._url, start, end)
            if data is None or len(data) != end - start + 1:
                raise _NoRanges()
            block = self._blocks[index] = data
        return block

    def read(self, length: int, offset: int) -> bytes:
        end = min(self._size, offset + length)
        parts = []
        while offset < end:
            index, within = divmod(offset, _RANGE_CHUNK)
            piece = self._block(index)[within : within + end - offset]
            parts.append(piece)
            offset += len(piece)
        return b"".join(parts)


class _NoRanges(Exception):
    pass


def fetch_metadata(link: Link, session: Session | None) -> bytes:
    """The ``METADATA`` bytes of the wheel behind ``link``."""
    path = local_path(link.url)
    if path is not None:
        if session is not None:
            session.note_local(path)
        data = wheel_member(path, "METADATA")
        if data is None:
            raise InvalidWheelError(str(path), "it has no METADATA file")
        return data
    if session is None:
        raise NetworkError(f"cannot fetch {link.url} without an HTTP session.")
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
    """``{dist-info}/{member}`` of a remote wheel: by range requests (the central directory
    and the member only), else from the whole wheel streamed to a temporary file; either way
    read by the one wheel reader, in bounded memory."""
    data: bytes | None
    try:
        headers = session.head(link.url)
        size = int(headers.get("content-length", "0"))
        if size > 0 and headers.get("accept-ranges", "").lower() == "bytes":
            reader = _RangeReader(session, link.url, size)
            with WheelArchive(link.url, reader=reader.read, size=size) as archive:
                data = _member_of(archive, member)
            if data is None and required:
                raise InvalidWheelError(link.filename, f"it has no {member} file")
            return data
    except (_NoRanges, ValueError):
        pass
    import tempfile

    with tempfile.TemporaryDirectory(prefix="fitwheel-metadata-") as folder:
        path = Path(folder) / link.filename
        with path.open("wb") as handle:
            session.download(link.url, handle, what="wheel")
        with WheelArchive(path) as archive:
            data = _member_of(archive, member)
    if data is None and required:
        raise InvalidWheelError(link.filename, f"it has no {member} file")
    return data
