"""Reading and rewriting wheel archives safely, in bounded memory.

A wheel is untrusted input. Before anything is copied, :class:`WheelArchive` reads the central
directory itself and checks every member name (no absolute paths, no ``..``, no duplicates), the
declared sizes (a zip bomb is refused before it is inflated), that the member data do not overlap,
and that the local headers agree with the central directory. :func:`rewrite_wheel` then copies
the archive *raw* (compressed bytes as they are, never recompressed) as a few byte ranges in the
kernel, while worker threads inflate the members to check their sizes and RECORD hashes, and
publishes the result with an atomic rename: an interrupted run leaves no wheel behind.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import importlib
import io
import os
import re
import struct
import threading
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, NoReturn

from fitwheel.errors import FitwheelError
from fitwheel.publish import output as _output
from fitwheel.publish.output import EarlyCopy, EarlyOutput, atomic_output
from fitwheel.variants.frozen import Frozen

CHUNK = 1 << 20
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
#: the name and extra field lengths, at offset 26 of a local header
_LOCAL_LENGTHS = struct.Struct("<HH")
_LOCAL_MAGIC = b"PK\x03\x04"
_CENTRAL = struct.Struct("<4sBBBBHHHHIIIHHHHHII")
#: the fields read from a central directory record (the others skipped as padding)
_CENTRAL_READ = struct.Struct("<4s4xHH4xIIIHHH4xII")
_CENTRAL_MAGIC = b"PK\x01\x02"
_END = struct.Struct("<4sHHHHIIH")
_END_MAGIC = b"PK\x05\x06"
_END64 = struct.Struct("<4sQHHIIQQQQ")
_END64_MAGIC = b"PK\x06\x06"
_END64_LOCATOR = struct.Struct("<4sIQI")
_END64_LOCATOR_MAGIC = b"PK\x06\x07"
_ZIP64_EXTRA = 0x0001
_U32 = 0xFFFFFFFF
_U16 = 0xFFFF
#: the central directory is read whole; real wheels need ~100 bytes per member
_MAX_CENTRAL_DIRECTORY = 256 << 20
_STORED, _DEFLATED = 0, 8
_RECORD_HASHES = ("sha256", "sha384", "sha512")
_DRIVE_RE = re.compile(r"^[A-Za-z]:")


def _load_inflate() -> tuple[Any, tuple[type[BaseException], ...]]:
    """ISA-L's zlib interface when it is installed (it inflates about 2.5x faster than zlib,
    and verification is bound by inflating), else zlib."""
    try:
        lib = importlib.import_module("isal.isal_zlib")
    except ImportError:
        return zlib, (zlib.error,)
    return lib, (zlib.error, lib.error)


_zlib_impl, _INFLATE_ERRORS = _load_inflate()


def _decompressobj() -> Any:
    """A raw-deflate decompressor with zlib's interface (``max_length``, ``unconsumed_tail``)."""
    return _zlib_impl.decompressobj(-15)


class WheelError(FitwheelError):
    """A wheel that fitwheel refuses to read or rewrite; the message names the file and problem."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class NotAWheelError(WheelError):
    """Not a zip archive, or a zip without the files every wheel has."""


class UnsafeWheelError(WheelError):
    """Member names or a layout that could write outside the target, or confuse readers."""


class ZipBombError(WheelError):
    """Declared or actual sizes beyond the limits, or an implausible compression ratio."""


class RecordMismatchError(WheelError):
    """RECORD does not describe the archive's content."""


class Limits(Frozen):
    """Bounds on what a wheel may declare; generous for real wheels (the largest CUDA builds are a
    few GB), far below what a zip bomb needs."""

    __slots__ = (  # noqa: RUF023 (the order of the fields, as repr shows them)
        "max_members",
        "max_member_size",
        "max_total_size",
        "max_ratio",
        "ratio_floor",
        "max_text_member",
    )
    max_members: int
    max_member_size: int
    max_total_size: int
    #: a member larger than ``ratio_floor`` must not inflate more than ``max_ratio`` times
    max_ratio: int
    ratio_floor: int
    #: small text members read whole (METADATA, RECORD, variant.json)
    max_text_member: int

    def __init__(
        self,
        max_members: int = 500_000,
        max_member_size: int = 16 << 30,
        max_total_size: int = 64 << 30,
        max_ratio: int = 1000,
        ratio_floor: int = 64 << 20,
        max_text_member: int = 64 << 20,
    ) -> None:
        init = object.__setattr__
        init(self, "max_members", max_members)
        init(self, "max_member_size", max_member_size)
        init(self, "max_total_size", max_total_size)
        init(self, "max_ratio", max_ratio)
        init(self, "ratio_floor", ratio_floor)
        init(self, "max_text_member", max_text_member)


DEFAULT_LIMITS = Limits()


def record_hash(data: bytes) -> str:
    """``sha256=<urlsafe base64, no padding>``: the RECORD form of a digest."""
    return "sha256=" + _b64(hashlib.sha256(data).digest())


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def check_member_name(name: str) -> str | None:
    """Why ``name`` is unsafe as a wheel member, or None when it is fine."""
    if not name:
        return "an empty member name"
    if "\x00" in name:
        return f"member name {name!r} contains a NUL byte"
    if "\\" in name:
        return f"member name {name!r} contains a backslash"
    if name.startswith("/") or _DRIVE_RE.match(name):
        return f"member name {name!r} is an absolute path"
    parts = name.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        return f"member name {name!r} contains an empty, '.' or '..' path component"
    return None


def _is_variant_json(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "variant.json"


class RecordEntry(NamedTuple):
    path: str
    algorithm: str | None
    digest: str | None
    size: int | None


def parse_record(data: bytes, *, source: str) -> dict[str, RecordEntry]:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordMismatchError(source, f"RECORD is not UTF-8 ({exc})") from None
    entries: dict[str, RecordEntry] = {}
    rows: Iterator[list[str]]
    if '"' in text or "\r" in text:
        rows = csv.reader(io.StringIO(text))
    else:
        # Without quotes or carriage returns, CSV rows are plain lines split at commas, and
        # splitting them is several times faster than the csv module on a 12,000-line RECORD.
        rows = (line.split(",") if line else [] for line in text.split("\n"))
    for lineno, row in enumerate(rows, start=1):
        if not row:
            continue
        if len(row) != 3:
            raise RecordMismatchError(source, f"RECORD line {lineno} has {len(row)} fields, not 3")
        path, hash_field, size_field = row
        if path in entries:
            raise RecordMismatchError(source, f"RECORD lists {path!r} twice")
        algorithm = digest = None
        if hash_field:
            algorithm, sep, digest = hash_field.partition("=")
            if not sep or algorithm not in _RECORD_HASHES:
                raise RecordMismatchError(
                    source, f"RECORD line {lineno}: hash {hash_field!r} is not sha256/384/512"
                )
        size: int | None = None
        if size_field:
            if not size_field.isdigit():
                raise RecordMismatchError(source, f"RECORD line {lineno}: bad size {size_field!r}")
            size = int(size_field)
        entries[path] = RecordEntry(path, algorithm, digest, size)
    return entries


class Member:
    """One central directory entry, with the raw record it was read from (copied as it is when
    the member keeps its offset)."""

    __slots__ = (
        "compress_size",
        "crc",
        "data_offset",
        "external_attr",
        "file_size",
        "flags",
        "header_offset",
        "method",
        "name",
        "raw_name",
        "record",
    )

    def __init__(
        self,
        name: str,
        raw_name: bytes,
        flags: int,
        method: int,
        crc: int,
        compress_size: int,
        file_size: int,
        header_offset: int,
        external_attr: int,
        record: bytes,
    ) -> None:
        self.name = name
        self.raw_name = raw_name
        self.flags = flags
        self.method = method
        self.crc = crc
        self.compress_size = compress_size
        self.file_size = file_size
        self.header_offset = header_offset
        self.external_attr = external_attr
        self.record = record
        #: where the compressed bytes start; set once the local header has been checked
        self.data_offset = -1

    @property
    def filename(self) -> str:
        return self.name

    def is_dir(self) -> bool:
        return self.name.endswith("/")

    def __repr__(self) -> str:
        return f"Member({self.name!r}, {self.compress_size} -> {self.file_size})"


def _header_offset(member: Member) -> int:
    return member.header_offset


def _zip64_values(extra: bytes, wanted: int) -> list[int] | None:
    """The first ``wanted`` 8-byte values of the zip64 extra field, or None if it is missing or
    too short."""
    pos = 0
    while pos + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, pos)
        body = extra[pos + 4 : pos + 4 + size]
        if kind == _ZIP64_EXTRA:
            if len(body) < 8 * wanted:
                return None
            return list(struct.unpack_from(f"<{wanted}Q", body))
        pos += 4 + size
    return None


def _without_zip64(extra: bytes) -> bytes:
    parts = []
    pos = 0
    while pos + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, pos)
        if kind != _ZIP64_EXTRA:
            parts.append(extra[pos : pos + 4 + size])
        pos += 4 + size
    return b"".join(parts)


class WheelArchive:
    """An opened, structurally checked wheel. Use as a context manager."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        limits: Limits = DEFAULT_LIMITS,
        data: bytes | None = None,
    ) -> None:
        """Open ``path``; with ``data`` (the file's bytes, already read), parse those instead."""
        self.path = Path(path)
        self.limits = limits
        self._data = memoryview(data) if data is not None else None
        self._fd = -1
        self._read_cache: dict[str, bytes] = {}
        if data is None:
            try:
                self._fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
                self.size = os.fstat(self._fd).st_size
            except OSError as exc:
                raise WheelError(self.path, f"cannot open: {exc.strerror or exc}") from None
        else:
            self.size = len(data)
        try:
            self._read_central_directory()
            self._check_structure()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> WheelArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def fileno(self) -> int:
        return self._fd

    def pread(self, length: int, offset: int) -> bytes:
        """Up to ``length`` bytes at ``offset`` (fewer only at the end of the file)."""
        if self._data is not None:
            return bytes(self._data[offset : offset + length])
        try:
            return os.pread(self._fd, length, offset)
        except OSError as exc:
            raise WheelError(self.path, f"cannot read: {exc.strerror or exc}") from None

    # -- the central directory ---------------------------------------------------------------

    def _bad(self, problem: str) -> NotAWheelError:
        return NotAWheelError(self.path, f"not a valid zip archive ({problem})")

    def _read_central_directory(self) -> None:
        if self.size < _END.size:
            raise self._bad("too short")
        tail_len = min(self.size, _END.size + _U16)
        tail_start = self.size - tail_len
        tail = self.pread(tail_len, tail_start)
        pos = len(tail)
        while True:
            pos = tail.rfind(_END_MAGIC, 0, pos)
            if pos < 0:
                raise self._bad("no end of central directory record")
            if pos + _END.size <= len(tail):
                end = _END.unpack_from(tail, pos)
                if pos + _END.size + end[7] <= len(tail):
                    break
        end_offset = tail_start + pos
        _, disk, cd_disk, _, count, cd_size, cd_offset, _ = end
        directory_end = end_offset
        zip64 = False
        if end_offset >= _END64_LOCATOR.size:
            locator = self.pread(_END64_LOCATOR.size, end_offset - _END64_LOCATOR.size)
            if locator[:4] == _END64_LOCATOR_MAGIC:
                _, _, end64_offset, _ = _END64_LOCATOR.unpack(locator)
                raw = self.pread(_END64.size, end64_offset)
                if len(raw) != _END64.size or raw[:4] != _END64_MAGIC:
                    raise self._bad("bad zip64 end of central directory record")
                _, _, _, _, disk, cd_disk, _, count, cd_size, cd_offset = _END64.unpack(raw)
                directory_end = end64_offset
                zip64 = True
        if disk or cd_disk:
            raise self._bad("archives that span several disks are not supported")
        if cd_size > _MAX_CENTRAL_DIRECTORY:
            raise ZipBombError(self.path, f"the central directory is {cd_size} bytes")
        if cd_offset + cd_size != directory_end:
            # Also what data prepended to an archive looks like; a wheel has none.
            raise self._bad("the central directory is not where the end record says")
        self.start_dir = cd_offset
        directory = self.pread(cd_size, cd_offset)
        if len(directory) != cd_size:
            raise self._bad("truncated central directory")
        members: list[Member] = []
        unpack = _CENTRAL_READ.unpack_from
        max_members = self.limits.max_members
        pos = 0
        while pos < cd_size:
            if pos + _CENTRAL.size > cd_size:
                raise self._bad("truncated central directory")
            (
                magic,
                flags,
                method,
                crc,
                compress_size,
                file_size,
                name_len,
                extra_len,
                comment_len,
                external_attr,
                header_offset,
            ) = unpack(directory, pos)
            if magic != _CENTRAL_MAGIC:
                raise self._bad("bad central directory entry")
            name_start = pos + _CENTRAL.size
            end = name_start + name_len + extra_len + comment_len
            if end > cd_size:
                raise self._bad("truncated central directory")
            if len(members) >= max_members:
                raise ZipBombError(self.path, f"more than {max_members} members")
            raw_name = directory[name_start : name_start + name_len]
            try:
                # cp437 and UTF-8 agree with ASCII, and ASCII decodes fastest.
                name = raw_name.decode(
                    "ascii" if raw_name.isascii() else "utf-8" if flags & 0x800 else "cp437"
                )
            except UnicodeDecodeError:
                raise UnsafeWheelError(
                    self.path, f"member name {raw_name!r} is not valid UTF-8"
                ) from None
            if compress_size == _U32 or file_size == _U32 or header_offset == _U32:
                wanted = (file_size == _U32) + (compress_size == _U32) + (header_offset == _U32)
                extra = directory[name_start + name_len : name_start + name_len + extra_len]
                values = _zip64_values(extra, wanted)
                if values is None:
                    raise self._bad(f"member {name!r}: missing zip64 sizes")
                if file_size == _U32:
                    file_size = values.pop(0)
                if compress_size == _U32:
                    compress_size = values.pop(0)
                if header_offset == _U32:
                    header_offset = values.pop(0)
            members.append(
                Member(
                    name,
                    raw_name,
                    flags,
                    method,
                    crc,
                    compress_size,
                    file_size,
                    header_offset,
                    external_attr,
                    directory[pos:end],
                )
            )
            pos = end
        if len(members) % (_U16 + 1) != count % (_U16 + 1) or (zip64 and len(members) != count):
            raise self._bad(
                f"the central directory lists {len(members)} members, the end record {count}"
            )
        self.members = members

    def _check_structure(self) -> None:
        limits = self.limits
        by_name: dict[str, Member] = {}
        total = 0
        for member in self.members:
            name = member.name
            # Substring tests are far cheaper than a full check per name; only names they flag
            # (a superset of the unsafe ones) get the full check and its message.
            if (
                not name
                or name[0] in "/."
                or "/." in name
                or "//" in name
                or "\\" in name
                or "\x00" in name
                or name[1:2] == ":"
            ):
                problem = check_member_name(name)
                if problem:
                    raise UnsafeWheelError(self.path, problem)
            if name in by_name:
                raise UnsafeWheelError(self.path, f"member {name!r} appears twice")
            by_name[name] = member
            if member.flags & 0x1:
                raise UnsafeWheelError(self.path, f"member {name!r} is encrypted")
            size = member.file_size
            if size > limits.max_member_size:
                raise ZipBombError(
                    self.path,
                    f"member {name!r} declares {size} bytes (limit {limits.max_member_size})",
                )
            if size > limits.ratio_floor and size > limits.max_ratio * max(member.compress_size, 1):
                raise ZipBombError(
                    self.path,
                    f"member {name!r} inflates {member.compress_size} bytes to "
                    f"{size} (ratio limit {limits.max_ratio})",
                )
            total += size
        if total > limits.max_total_size:
            raise ZipBombError(
                self.path, f"members declare {total} bytes in all (limit {limits.max_total_size})"
            )
        self.by_name = by_name
        self._check_layout()
        tops = {name.partition("/")[0] for name in by_name if "/" in name}
        dist_infos = sorted(top for top in tops if top.endswith(".dist-info"))
        if len(dist_infos) != 1:
            found = ", ".join(dist_infos) or "none"
            raise NotAWheelError(
                self.path, f"a wheel has exactly one top-level .dist-info folder (found: {found})"
            )
        self.dist_info = dist_infos[0]
        self.record_name = f"{self.dist_info}/RECORD"
        for required in ("METADATA", "WHEEL", "RECORD"):
            if f"{self.dist_info}/{required}" not in by_name:
                raise NotAWheelError(self.path, f"{self.dist_info}/{required} is missing")
        variant_jsons = [
            name for name in by_name if name.endswith("/variant.json") and _is_variant_json(name)
        ]
        if len(variant_jsons) > 1:
            raise UnsafeWheelError(
                self.path, f"more than one variant.json: {', '.join(variant_jsons)}"
            )
        self.variant_json_name: str | None = variant_jsons[0] if variant_jsons else None

    def _check_layout(self) -> None:
        """Local headers must match the central directory and member data must not overlap
        (overlapping members are how the smallest zip bombs are built)."""
        by_offset = sorted(self.members, key=_header_offset)
        #: where each member's bytes end in the archive: at the next local header
        self.end_of: dict[str, int] = {}
        end_of = self.end_of
        header_size = _LOCAL_HEADER.size
        lengths = _LOCAL_LENGTHS.unpack_from
        fd = self._fd
        read = self.pread if fd < 0 else None
        limits = [m.header_offset for m in by_offset[1:]]
        limits.append(self.start_dir)
        try:
            for member, limit in zip(by_offset, limits, strict=True):
                raw_name = member.raw_name
                wanted = header_size + len(raw_name)
                if read is None:
                    raw = os.pread(fd, wanted, member.header_offset)
                else:
                    raw = read(wanted, member.header_offset)
                # One test for the common case: a whole header, the magic, the same name.
                if len(raw) == wanted and raw.endswith(raw_name) and raw.startswith(_LOCAL_MAGIC):
                    magic_ok = True
                    name_len, extra_len = lengths(raw, 26)
                else:
                    magic_ok = False
                    name_len = extra_len = -1
                if not magic_ok or name_len != len(raw_name):
                    self._bad_local_header(member, raw)
                data_offset = member.header_offset + header_size + name_len + extra_len
                member.data_offset = data_offset
                if data_offset + member.compress_size > limit:
                    self._overlap(member, by_offset)
                end_of[member.name] = limit
        except OSError as exc:
            raise WheelError(self.path, f"cannot read: {exc.strerror or exc}") from None

    def _bad_local_header(self, member: Member, raw: bytes) -> NoReturn:
        header_size = _LOCAL_HEADER.size
        if len(raw) < header_size:
            raise NotAWheelError(self.path, f"member {member.name!r}: truncated local header")
        if raw[:4] != _LOCAL_MAGIC:
            raise NotAWheelError(self.path, f"member {member.name!r}: bad local header")
        name_len = struct.unpack_from("<H", raw, 26)[0]
        local_name = raw[header_size : header_size + name_len]
        decoded = local_name.decode("utf-8", errors="replace")
        raise UnsafeWheelError(
            self.path, f"member {member.name!r}: local header names it {decoded!r}"
        )

    def _overlap(self, member: Member, by_offset: list[Member]) -> NoReturn:
        if member is by_offset[-1]:
            raise NotAWheelError(
                self.path, f"member {member.name!r} runs into the central directory"
            )
        nxt = by_offset[by_offset.index(member) + 1]
        raise ZipBombError(self.path, f"members {member.name!r} and {nxt.name!r} overlap")

    # -- content ------------------------------------------------------------------------------

    def member(self, name: str) -> Member:
        return self.by_name[name]

    def inflate(self, member: Member, sink: Callable[[bytes], object]) -> None:
        """Pass ``member``'s content to ``sink`` in pieces of at most :data:`CHUNK` bytes,
        checking that it inflates to exactly its declared size (never further: a bomb stops at
        the first byte too many)."""
        name = member.name
        if member.method == _DEFLATED:
            inflater = _decompressobj()
        elif member.method == _STORED:
            inflater = None
            if member.compress_size != member.file_size:
                raise NotAWheelError(self.path, f"member {name!r} does not have its declared size")
        else:
            raise WheelError(
                self.path,
                f"member {name!r} uses compression method {member.method}; "
                "only stored and deflate are supported",
            )

        def emit(out: bytes, left: int) -> int:
            """Pass inflated bytes on; what is left of the declared size afterwards."""
            left -= len(out)
            if left < 0:
                raise ZipBombError(
                    self.path,
                    f"member {name!r} inflates beyond its declared {member.file_size} bytes",
                )
            if out:
                sink(out)
            return left

        left = member.file_size
        offset = member.data_offset
        end = offset + member.compress_size
        try:
            while offset < end:
                raw = self.pread(min(CHUNK, end - offset), offset)
                if not raw:
                    raise NotAWheelError(self.path, f"member {name!r} is truncated")
                offset += len(raw)
                if inflater is None:
                    left -= len(raw)
                    sink(raw)
                    continue
                data: bytes = raw
                while data:
                    left = emit(inflater.decompress(data, min(CHUNK, left + 1)), left)
                    data = inflater.unconsumed_tail
                    if inflater.eof:
                        break
            if inflater is not None:
                if not inflater.eof:
                    left = emit(inflater.decompress(b"", left + 1), left)
                if not inflater.eof:
                    raise NotAWheelError(self.path, f"member {name!r} is truncated")
        except _INFLATE_ERRORS as exc:
            raise NotAWheelError(self.path, f"member {name!r} is corrupt ({exc})") from None
        # No CRC check: the content is checked against its RECORD hash, a stronger test.
        if left != 0:
            raise NotAWheelError(self.path, f"member {name!r} does not have its declared size")

    def read_member(self, name: str) -> bytes:
        """A small member's content (METADATA, RECORD, variant.json), size-checked."""
        cached = self._read_cache.get(name)
        if cached is not None:
            return cached
        member = self.by_name[name]
        if member.file_size > self.limits.max_text_member:
            raise ZipBombError(
                self.path, f"member {name!r} is {member.file_size} bytes; too large to read"
            )
        parts: list[bytes] = []
        self.inflate(member, parts.append)
        data = b"".join(parts)
        # RECORD is read by the caller and again by rewrite_wheel; inflate it once.
        self._read_cache[name] = data
        return data

    def record(self) -> dict[str, RecordEntry]:
        return parse_record(self.read_member(self.record_name), source=str(self.path))

    def check_record_coverage(self, record: Mapping[str, RecordEntry]) -> None:
        """Every file member is listed in RECORD (with its size), and RECORD lists nothing else."""
        unsigned = {
            self.record_name,
            f"{self.dist_info}/RECORD.jws",
            f"{self.dist_info}/RECORD.p7s",
        }
        for member in self.members:
            name = member.name
            if name in unsigned or name.endswith("/"):
                continue
            entry = record.get(name)
            if entry is None or entry.digest is None:
                raise RecordMismatchError(self.path, f"member {name!r} has no hash in RECORD")
            if entry.size is not None and entry.size != member.file_size:
                raise RecordMismatchError(
                    self.path,
                    f"RECORD says {name!r} is {entry.size} bytes, the archive says "
                    f"{member.file_size}",
                )
        by_name = self.by_name
        for path in record:
            if path not in by_name or path.endswith("/"):
                raise RecordMismatchError(
                    self.path, f"RECORD lists {path!r}, which is not in the archive"
                )


class _Verifier:
    """Checks members against their RECORD hashes on worker threads while the main thread
    copies the raw bytes. Inflating dominates the cost, and inflating, hashing and reading all
    release the GIL; the largest members go first so that one big member does not finish last.
    Each worker holds at most a chunk or two, whatever the member sizes."""

    def __init__(
        self, archive: WheelArchive, members: Sequence[Member], record: Mapping[str, RecordEntry]
    ) -> None:
        self.archive = archive
        self.record = record
        self.pending = sorted(members, key=lambda m: m.compress_size)
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        workers = max(1, min(8, os.cpu_count() or 1, len(self.pending)))
        self.threads = [threading.Thread(target=self._work, daemon=True) for _ in range(workers)]
        for thread in self.threads:
            thread.start()

    def _next(self) -> Member | None:
        with self._lock:
            if self.error is not None or not self.pending:
                return None
            return self.pending.pop()

    def _work(self) -> None:
        while (member := self._next()) is not None:
            try:
                self._check(member)
            except BaseException as exc:
                with self._lock:
                    if self.error is None:
                        self.error = exc

    def _check(self, member: Member) -> None:
        entry = self.record[member.name]
        digest = hashlib.new(entry.algorithm or "sha256")
        if member.file_size < _PIPELINE_MIN:
            self.archive.inflate(member, digest.update)
        else:
            # One large member (a 434 MB libtorch) would otherwise be inflated and hashed in
            # turn on one core, and finish last: hash it on a second thread as it inflates.
            with _Hasher(digest) as hasher:
                self.archive.inflate(member, hasher.update)
        if _b64(digest.digest()) != entry.digest:
            raise RecordMismatchError(
                self.archive.path, f"member {member.name!r} does not match its RECORD hash"
            )

    def cancel(self) -> None:
        with self._lock:
            self.pending.clear()
            if self.error is None:
                self.error = RuntimeError("cancelled")

    def close(self) -> None:
        """Wait for every check; raise the first failure."""
        for thread in self.threads:
            thread.join()
        if self.error is not None:
            raise self.error


#: members at least this large are inflated and hashed on two threads
_PIPELINE_MIN = 32 << 20


class _Hasher:
    """Feeds chunks to ``digest`` on a thread of its own, at most a few chunks behind."""

    def __init__(self, digest: Any) -> None:
        self.digest = digest
        import queue  # only verification of very large members needs it

        self.chunks: queue.Queue[bytes | None] = queue.Queue(4)
        self.thread = threading.Thread(target=self._work, daemon=True)

    def __enter__(self) -> _Hasher:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.chunks.put(None)
        self.thread.join()

    def _work(self) -> None:
        while (chunk := self.chunks.get()) is not None:
            self.digest.update(chunk)

    def update(self, chunk: bytes) -> None:
        self.chunks.put(chunk)


class NewMember(NamedTuple):
    """A member written by fitwheel (variant.json, RECORD), placed like ``template``."""

    name: str
    data: bytes
    template: Member


def _moved_record(member: Member, offset: int) -> bytes:
    """``member``'s central directory record, pointing at its local header's new ``offset``."""
    record = member.record
    stored = struct.unpack_from("<I", record, 42)[0]
    if stored != _U32 and offset < _U32:
        return record[:42] + struct.pack("<I", offset) + record[46:]
    # The offset moves into (or already lives in) the zip64 extra field: rebuild the record.
    fields = list(_CENTRAL.unpack_from(record))
    name_len, extra_len = fields[12], fields[13]
    name = record[_CENTRAL.size : _CENTRAL.size + name_len]
    extra = record[_CENTRAL.size + name_len : _CENTRAL.size + name_len + extra_len]
    comment = record[_CENTRAL.size + name_len + extra_len :]
    values = []
    if fields[11] == _U32:
        values.append(member.file_size)
    if fields[10] == _U32:
        values.append(member.compress_size)
    values.append(offset)
    zip64 = struct.pack(f"<HH{len(values)}Q", _ZIP64_EXTRA, 8 * len(values), *values)
    extra = zip64 + _without_zip64(extra)
    fields[3] = max(fields[3], 45)
    fields[13] = len(extra)
    fields[18] = _U32
    return _CENTRAL.pack(*fields) + name + extra + comment


class _Run(NamedTuple):
    """Members that sit back to back in the source: copied as one byte range (local headers,
    data and data descriptors as they are) from ``start`` to ``end``, to ``out`` in the output."""

    members: list[Member]
    start: int
    end: int
    out: int


class _Layout:
    """Where every byte of the output goes, decided before anything is written: raw runs of the
    source, a few new members, the central directory. Knowing every offset up front lets the
    big copy run on its own thread while the rest is written and checked."""

    def __init__(self) -> None:
        self.size = 0
        self.runs: list[_Run] = []
        self.blobs: list[tuple[int, bytes]] = []
        self.records: list[bytes] = []

    def add_run(self, members: list[Member], end: int) -> None:
        start = members[0].header_offset
        shift = self.size - start
        if shift == 0:
            self.records.extend(member.record for member in members)
        else:
            self.records.extend(_moved_record(m, m.header_offset + shift) for m in members)
        self.runs.append(_Run(list(members), start, end, self.size))
        self.size += end - start

    def add_new(self, member: NewMember) -> None:
        template = member.template.record
        made_by, system, _, _, _, _, mod_time, mod_date = struct.unpack_from(
            "<BBBBHHHH", template, 4
        )
        data = _deflate(member.data)
        crc = zlib.crc32(member.data)
        name = member.name.encode("utf-8")
        flags = 0 if member.name.isascii() else 0x800
        if len(data) >= _U32 or len(member.data) >= _U32:
            raise WheelError(member.name, "too large for fitwheel to write")
        offset = self.size
        local = _LOCAL_HEADER.pack(
            _LOCAL_MAGIC,
            20,
            flags,
            _DEFLATED,
            mod_time,
            mod_date,
            crc,
            len(data),
            len(member.data),
            len(name),
            0,
        )
        blob = local + name + data
        self.blobs.append((offset, blob))
        self.size += len(blob)
        external = member.template.external_attr or (0o644 << 16)
        extra = b""
        stored_offset = offset
        needed = 20
        if offset >= _U32:
            extra = struct.pack("<HHQ", _ZIP64_EXTRA, 8, offset)
            stored_offset, needed = _U32, 45
        self.records.append(
            _CENTRAL.pack(
                _CENTRAL_MAGIC,
                made_by,
                system,
                needed,
                0,
                flags,
                _DEFLATED,
                mod_time,
                mod_date,
                crc,
                len(data),
                len(member.data),
                len(name),
                len(extra),
                0,
                0,
                0,
                external,
                stored_offset,
            )
            + name
            + extra
        )

    def finish(self) -> None:
        """Append the central directory and the end records."""
        start = self.size
        directory = b"".join(self.records)
        count, size = len(self.records), len(directory)
        parts = [directory]
        if count >= _U16 or size >= _U32 or start >= _U32:
            end64 = start + size
            parts.append(
                _END64.pack(_END64_MAGIC, _END64.size - 12, 45, 45, 0, 0, count, count, size, start)
            )
            parts.append(_END64_LOCATOR.pack(_END64_LOCATOR_MAGIC, 0, end64, 1))
            count, size, start = min(count, _U16), min(size, _U32), min(start, _U32)
        parts.append(_END.pack(_END_MAGIC, 0, 0, count, count, size, start, 0))
        blob = b"".join(parts)
        self.blobs.append((self.size, blob))
        self.size += len(blob)


def _deflate(data: bytes) -> bytes:
    if _zlib_impl is not zlib:
        # ISA-L's fastest level compresses a 1.3 MB RECORD ten times faster than zlib, smaller.
        compressor = _zlib_impl.compressobj(1, zlib.DEFLATED, -15)
    else:
        compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    return bytes(compressor.compress(data) + compressor.flush())


def _copy_run(archive: WheelArchive, fd: int, run: _Run, stop: threading.Event) -> None:
    _output.copy_range(archive.fileno(), fd, run.start, run.end - run.start, run.out, stop)


class _Copier:
    """Copies the runs and flushes them to disk on a thread of its own: both happen in the
    kernel, while the main thread checks RECORD."""

    def __init__(self, archive: WheelArchive, fd: int, runs: list[_Run]) -> None:
        self.archive = archive
        self.fd = fd
        self.runs = runs
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._work, daemon=True)
        self.thread.start()

    def _work(self) -> None:
        try:
            for run in self.runs:
                _copy_run(self.archive, self.fd, run, self.stop)
            if not self.stop.is_set():
                os.fsync(self.fd)
        except BaseException as exc:
            self.error = exc

    def join(self) -> None:
        self.thread.join()
        if self.error is not None:
            raise self.error

    def cancel(self) -> None:
        self.stop.set()
        self.thread.join()


class RewritePlan(NamedTuple):
    """What :func:`rewrite_wheel` changes: members dropped, members written just before RECORD,
    and the new RECORD content."""

    drop: set[str]
    insert_before_record: list[NewMember]
    record_data: bytes


def rewrite_wheel_file(
    path: Path,
    target: Path,
    plan: Callable[[WheelArchive], RewritePlan],
    *,
    limits: Limits = DEFAULT_LIMITS,
    verify: bool = True,
    early: EarlyOutput | None = None,
) -> None:
    """Open the wheel at ``path``, check it, and write it to ``target`` changed as ``plan`` (called
    with the opened archive) says; see :func:`rewrite_wheel`. When ``target``'s folder exists, the
    bulk copy starts before the archive is parsed (see :class:`EarlyCopy`), or earlier still
    where the caller started ``early`` (a copy of ``path`` into that folder)."""
    if early is None:
        early = EarlyOutput(path, target.parent)
    try:
        if not early.active or early.folder != target.parent:
            early.discard()
            with WheelArchive(path, limits=limits) as archive:
                drop, inserts, record_data = plan(archive)
                rewrite_wheel(
                    archive,
                    target,
                    drop=drop,
                    insert_before_record=inserts,
                    record_data=record_data,
                    verify=verify,
                )
            return
        with WheelArchive(path, limits=limits) as archive:
            drop, inserts, record_data = plan(archive)
            _rewrite(
                archive,
                early.fd,
                drop=drop,
                insert_before_record=inserts,
                record_data=record_data,
                verify=verify,
                early=early.copy,
            )
        early.commit(target)
    finally:
        early.discard()


def rewrite_wheel(
    archive: WheelArchive,
    target: Path,
    *,
    drop: set[str],
    insert_before_record: list[NewMember],
    record_data: bytes,
    verify: bool = True,
) -> None:
    """Write ``archive`` to ``target``: members in ``drop`` left out, ``insert_before_record``
    written just before RECORD, RECORD replaced by ``record_data``, every other member copied
    byte for byte (local header and compressed data). RECORD must list every member with its
    size; with ``verify``, each copied member's content must also match its RECORD hash. The
    output gets its name only once every check has passed and its bytes are on disk."""
    if archive.fileno() < 0:
        raise WheelError(archive.path, "was opened from memory; rewriting needs the file")
    with atomic_output(target) as handle:
        _rewrite(
            archive,
            handle.fileno(),
            drop=drop,
            insert_before_record=insert_before_record,
            record_data=record_data,
            verify=verify,
            early=None,
        )


def _plan_layout(
    archive: WheelArchive,
    drop: set[str],
    insert_before_record: list[NewMember],
    record_data: bytes,
) -> _Layout:
    layout = _Layout()
    end_of = archive.end_of
    record_name = archive.record_name
    run: list[Member] = []
    for member in archive.members:
        name = member.name
        if run and (
            name in drop or name == record_name or end_of[run[-1].name] != member.header_offset
        ):
            layout.add_run(run, end_of[run[-1].name])
            run = []
        if name == record_name:
            for new in insert_before_record:
                layout.add_new(new)
            layout.add_new(NewMember(name, record_data, member))
        elif name not in drop:
            run.append(member)
    if run:
        layout.add_run(run, end_of[run[-1].name])
    layout.finish()
    return layout


def _rewrite(
    archive: WheelArchive,
    fd: int,
    *,
    drop: set[str],
    insert_before_record: list[NewMember],
    record_data: bytes,
    verify: bool,
    early: EarlyCopy | None,
) -> None:
    if archive.fileno() < 0:
        raise WheelError(archive.path, "was opened from memory; rewriting needs the file")
    layout = _plan_layout(archive, drop, insert_before_record, record_data)
    runs = layout.runs
    if early is not None and early.matches(archive.fileno(), archive.size):
        # Runs that keep their offsets are already in place; the rest of the output (new
        # members, moved runs, the central directory) is written over the copied tail once the
        # early copy is done, and anything past the new end is cut off.
        runs = [r for r in runs if r.out != r.start]
    elif early is not None:
        early.cancel()
        early = None
        os.ftruncate(fd, 0)
    copier: _Copier | None = None
    verifier: _Verifier | None = None
    try:
        if early is None:
            copier = _Copier(archive, fd, runs)
            for offset, blob in layout.blobs:
                os.pwrite(fd, blob, offset)
        record = archive.record()
        archive.check_record_coverage(record)
        if verify:
            copied = [m for r in layout.runs for m in r.members]
            verifier = _Verifier(archive, _hashed(copied, record), record)
        if early is not None:
            early.join()
            os.ftruncate(fd, layout.size)
            for offset, blob in layout.blobs:
                os.pwrite(fd, blob, offset)
            if runs:
                copier = _Copier(archive, fd, runs)
        if copier is not None:
            copier.join()
        # The copier flushed the bulk; this flushes what was written beside it.
        os.fsync(fd)
        if verifier is not None:
            verifier.close()
            verifier = None
    finally:
        if copier is not None and copier.thread.is_alive():
            copier.cancel()
        if verifier is not None:
            verifier.cancel()
            with contextlib.suppress(BaseException):
                verifier.close()


def _hashed(members: Sequence[Member], record: Mapping[str, RecordEntry]) -> list[Member]:
    return [m for m in members if (e := record.get(m.name)) is not None and e.digest is not None]
