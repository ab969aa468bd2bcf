"""The one reader of wheel archives: untrusted input, read in bounded memory.

:class:`WheelArchive` reads the central directory itself and checks every member name (no
absolute paths, no ``..``, no control characters, no duplicates), the declared sizes (a zip
bomb is refused before it is inflated), that the member data do not overlap, and that each local
header agrees with the central directory, so that every zip reader would see the same files.
Members are inflated with :mod:`fitwheel.wheel.inflate`, never past their declared size. A
download can be read as it arrives (the streaming mode, :mod:`fitwheel.wheel.archive_stream`)
with the same member checks; what it read stands for a member only where
:meth:`WheelArchive.as_streamed` finds the finished archive agrees.

Installing (:mod:`fitwheel.install.cache.unpacked`), reading metadata (local files and HTTP range
requests, :mod:`fitwheel.index.metadata`), publishing and rewriting
(:mod:`fitwheel.publish.wheelfile`) all open wheels here.
"""

from __future__ import annotations

import os
import re
import struct
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, NoReturn

from fitwheel._values import Frozen
from fitwheel.errors import InvalidWheelError
from fitwheel.wheel import inflate as _inflate
from fitwheel.wheel.record import RecordEntry, RecordError, check_coverage, parse_record

CHUNK = 1 << 20
LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
#: the name and extra field lengths, at offset 26 of a local header
_LOCAL_LENGTHS = struct.Struct("<HH")
LOCAL_MAGIC = b"PK\x03\x04"
CENTRAL = struct.Struct("<4sBBBBHHHHIIIHHHHHII")
#: the fields read from a central directory record (the others skipped as padding)
CENTRAL_READ = struct.Struct("<4s4xHH4xIIIHHH4xII")
CENTRAL_MAGIC = b"PK\x01\x02"
END = struct.Struct("<4sHHHHIIH")
END_MAGIC = b"PK\x05\x06"
END64 = struct.Struct("<4sQHHIIQQQQ")
END64_MAGIC = b"PK\x06\x06"
END64_LOCATOR = struct.Struct("<4sIQI")
END64_LOCATOR_MAGIC = b"PK\x06\x07"
ZIP64_EXTRA = 0x0001
U32 = 0xFFFFFFFF
U16 = 0xFFFF
#: the central directory is read whole; real wheels need ~100 bytes per member
_MAX_CENTRAL_DIRECTORY = 256 << 20
STORED, DEFLATED = 0, 8
_DRIVE_RE = re.compile(r"^[A-Za-z]:")
#: C0 control characters and DEL: no file name needs one, and a newline splits a name in two
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


class WheelError(InvalidWheelError):
    """A wheel that fitwheel refuses to read or rewrite; the message names the file and problem."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        super().__init__(str(path), problem)


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


def check_member_name(name: str) -> str | None:
    """Why ``name`` is unsafe as a wheel member, or None when it is fine."""
    if not name:
        return "an empty member name"
    if _CONTROL.search(name):
        return f"member name {name!r} contains a control character"
    if "\\" in name:
        return f"member name {name!r} contains a backslash"
    if name.startswith("/") or _DRIVE_RE.match(name):
        return f"member name {name!r} is an absolute path"
    parts = name.rstrip("/").split("/")
    if any(part in ("", ".", "..") for part in parts):
        return f"member name {name!r} contains an empty, '.' or '..' path component"
    return None


def check_declared(
    path: str | os.PathLike[str], name: str, file_size: int, compress_size: int, limits: Limits
) -> None:
    """Refuse a member whose declared sizes are beyond ``limits`` (a zip bomb), before it is
    inflated: as the central directory declares them, or a local header as a download streams."""
    if file_size > limits.max_member_size:
        raise ZipBombError(
            path, f"member {name!r} declares {file_size} bytes (limit {limits.max_member_size})"
        )
    if file_size > limits.ratio_floor and file_size > limits.max_ratio * max(compress_size, 1):
        raise ZipBombError(
            path,
            f"member {name!r} inflates {compress_size} bytes to "
            f"{file_size} (ratio limit {limits.max_ratio})",
        )


def _unsupported(path: str | os.PathLike[str], name: str, method: int) -> WheelError:
    return WheelError(
        path,
        f"member {name!r} uses compression method {method}; only stored and deflate are supported",
    )


def inflate_whole(
    path: str | os.PathLike[str], name: str, method: int, raw: bytes, file_size: int
) -> bytes:
    """A member's content from its compressed bytes read whole (``raw``, as many as it
    declares), which must come to exactly ``file_size`` bytes, never inflated past it."""
    if method == STORED:
        if len(raw) != file_size:
            raise NotAWheelError(path, f"member {name!r} does not have its declared size")
        return raw
    if method != DEFLATED:
        raise _unsupported(path, name, method)
    try:
        return _inflate.inflate_exact(raw, file_size)
    except _inflate.InflateSizeError as exc:
        raise ZipBombError(path, f"member {name!r} {exc}") from None
    except _inflate.INFLATE_ERRORS as exc:
        raise NotAWheelError(path, f"member {name!r} is corrupt ({exc})") from None


class MemberInflater:
    """One member's compressed bytes inflated as they come, in order (read from the file, or
    as a download streams), passed to ``sink`` in pieces of at most :data:`CHUNK` bytes and
    checked to come to exactly the declared size (never further: a bomb stops at the first
    byte too many). Bytes after the end of a deflate stream are ignored. No CRC check: the
    content is checked against its RECORD hash, a stronger test."""

    __slots__ = ("_inflater", "_left", "_name", "_path", "_sink", "_size")

    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str,
        method: int,
        sizes: tuple[int, int],
        sink: Callable[[bytes], object],
    ) -> None:
        """``sizes``: the declared compressed and inflated sizes."""
        compress_size, file_size = sizes
        self._path = path
        self._name = name
        self._sink = sink
        self._size = self._left = file_size
        if method == DEFLATED:
            self._inflater: Any = _inflate.decompressobj()
        elif method == STORED:
            self._inflater = None
            if compress_size != file_size:
                raise NotAWheelError(path, f"member {name!r} does not have its declared size")
        else:
            raise _unsupported(path, name, method)

    def _emit(self, out: bytes) -> None:
        self._left -= len(out)
        if self._left < 0:
            raise ZipBombError(
                self._path,
                f"member {self._name!r} inflates beyond its declared {self._size} bytes",
            )
        if out:
            self._sink(out)

    def feed(self, raw: bytes) -> None:
        inflater = self._inflater
        if inflater is None:
            self._left -= len(raw)
            self._sink(raw)
            return
        try:
            data: bytes = raw
            while data and not inflater.eof:
                self._emit(inflater.decompress(data, min(CHUNK, self._left + 1)))
                data = inflater.unconsumed_tail
        except _inflate.INFLATE_ERRORS as exc:
            raise NotAWheelError(self._path, f"member {self._name!r} is corrupt ({exc})") from None

    def finish(self) -> None:
        """The member's compressed bytes have all been fed: check it came out whole."""
        inflater = self._inflater
        if inflater is not None:
            try:
                if not inflater.eof:
                    self._emit(inflater.decompress(b"", self._left + 1))
            except _inflate.INFLATE_ERRORS as exc:
                raise NotAWheelError(
                    self._path, f"member {self._name!r} is corrupt ({exc})"
                ) from None
            if not inflater.eof:
                raise NotAWheelError(self._path, f"member {self._name!r} is truncated")
        if self._left != 0:
            raise NotAWheelError(
                self._path, f"member {self._name!r} does not have its declared size"
            )


def _is_variant_json(name: str) -> bool:
    parts = name.split("/")
    return len(parts) == 2 and parts[0].endswith(".dist-info") and parts[1] == "variant.json"


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
        if kind == ZIP64_EXTRA:
            if len(body) < 8 * wanted:
                return None
            return list(struct.unpack_from(f"<{wanted}Q", body))
        pos += 4 + size
    return None


def without_zip64(extra: bytes) -> bytes:
    parts = []
    pos = 0
    while pos + 4 <= len(extra):
        kind, size = struct.unpack_from("<HH", extra, pos)
        if kind != ZIP64_EXTRA:
            parts.append(extra[pos : pos + 4 + size])
        pos += 4 + size
    return b"".join(parts)


class WheelArchive:
    """An opened, structurally checked wheel. Use as a context manager."""

    #: the wheel's own ``variant.json`` member, if any
    variant_json_name: str | None

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        limits: Limits = DEFAULT_LIMITS,
        data: bytes | None = None,
        reader: Callable[[int, int], bytes] | None = None,
        size: int = 0,
        lazy_headers: bool = False,
        wheel: bool = True,
    ) -> None:
        """Open ``path``; with ``data`` (the file's bytes, already read), parse those instead;
        with ``reader`` (``reader(length, offset)`` returns those bytes of a file of ``size``
        bytes, as HTTP range requests do), read through it. Through a reader, the central
        directory is checked whole and a member's local header when the member is read, so
        that reading one member costs a few requests whatever the wheel holds. ``lazy_headers``
        does the same for a file (reading one member's metadata; installing checks every
        header). ``wheel=False`` reads any zip archive with the same checks, without the wheel
        layout (a ``.zip`` source distribution: :mod:`fitwheel.sdist.archive`)."""
        self.path = Path(path)
        self._wheel = wheel
        self.limits = limits
        self._data = memoryview(data) if data is not None else None
        self._reader = reader
        self._lazy = lazy_headers or reader is not None
        self._fd = -1
        self._read_cache: dict[str, bytes] = {}
        if reader is not None:
            self.size = size
        elif data is None:
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
        if self._reader is not None:
            return self._reader(length, offset)
        try:
            return os.pread(self._fd, length, offset)
        except OSError as exc:
            raise WheelError(self.path, f"cannot read: {exc.strerror or exc}") from None

    # -- the central directory ---------------------------------------------------------------

    def _bad(self, problem: str) -> NotAWheelError:
        return NotAWheelError(self.path, f"not a valid zip archive ({problem})")

    def _read_central_directory(self) -> None:
        if self.size < END.size:
            raise self._bad("too short")
        tail_len = min(self.size, END.size + U16)
        tail_start = self.size - tail_len
        tail = self.pread(tail_len, tail_start)
        pos = len(tail)
        while True:
            pos = tail.rfind(END_MAGIC, 0, pos)
            if pos < 0:
                raise self._bad("no end of central directory record")
            if pos + END.size <= len(tail):
                end = END.unpack_from(tail, pos)
                if pos + END.size + end[7] <= len(tail):
                    break
        end_offset = tail_start + pos
        _, disk, cd_disk, _, count, cd_size, cd_offset, _ = end
        directory_end = end_offset
        zip64 = False
        if end_offset >= END64_LOCATOR.size:
            locator = self.pread(END64_LOCATOR.size, end_offset - END64_LOCATOR.size)
            if locator[:4] == END64_LOCATOR_MAGIC:
                _, _, end64_offset, _ = END64_LOCATOR.unpack(locator)
                raw = self.pread(END64.size, end64_offset)
                if len(raw) != END64.size or raw[:4] != END64_MAGIC:
                    raise self._bad("bad zip64 end of central directory record")
                _, _, _, _, disk, cd_disk, _, count, cd_size, cd_offset = END64.unpack(raw)
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
        unpack = CENTRAL_READ.unpack_from
        max_members = self.limits.max_members
        pos = 0
        while pos < cd_size:
            if pos + CENTRAL.size > cd_size:
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
            if magic != CENTRAL_MAGIC:
                raise self._bad("bad central directory entry")
            name_start = pos + CENTRAL.size
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
            if compress_size == U32 or file_size == U32 or header_offset == U32:
                wanted = (file_size == U32) + (compress_size == U32) + (header_offset == U32)
                extra = directory[name_start + name_len : name_start + name_len + extra_len]
                values = _zip64_values(extra, wanted)
                if values is None:
                    raise self._bad(f"member {name!r}: missing zip64 sizes")
                if file_size == U32:
                    file_size = values.pop(0)
                if compress_size == U32:
                    compress_size = values.pop(0)
                if header_offset == U32:
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
        if len(members) % (U16 + 1) != count % (U16 + 1) or (zip64 and len(members) != count):
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
                or not name.isprintable()
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
            if size > limits.ratio_floor or size > limits.max_member_size:
                check_declared(self.path, name, size, member.compress_size, limits)
            total += size
        if total > limits.max_total_size:
            raise ZipBombError(
                self.path, f"members declare {total} bytes in all (limit {limits.max_total_size})"
            )
        self.by_name = by_name
        self._check_layout()
        if not self._wheel:
            self.dist_info = ""
            self.record_name = ""
            self.variant_json_name = None
            return
        tops = {name.partition("/")[0] for name in by_name if "/" in name}
        dist_infos = sorted(top for top in tops if top.endswith(".dist-info"))
        if len(dist_infos) != 1:
            found = ", ".join(dist_infos) or "none"
            raise NotAWheelError(
                self.path, f"a wheel has exactly one top-level .dist-info folder (found: {found})"
            )
        self.dist_info = dist_infos[0]
        self._check_dist_info_name()
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
        self.variant_json_name = variant_jsons[0] if variant_jsons else None

    def _check_dist_info_name(self) -> None:
        """The ``.dist-info`` folder belongs to the project the file name gives (compared
        canonically, as ``{name}-{version}.dist-info`` escapes the name): a wheel named ``foo``
        never writes ``bar``'s metadata. A file whose name is not a wheel file name (a temporary
        copy, a rewrite in progress) names no project to compare with; installing parses the
        file name first."""
        from fitwheel.variants.errors import InvalidWheelFilenameError
        from fitwheel.variants.filenames import WheelFilename
        from fitwheel.variants.names import canonicalize_name

        filename = self.path.name
        if self._reader is not None:  # a URL: its last path segment, unquoted
            from urllib.parse import unquote

            filename = unquote(filename.split("#", 1)[0].split("?", 1)[0])
        try:
            project = WheelFilename.parse(filename).normalized_name
        except InvalidWheelFilenameError:
            return
        folder_name = self.dist_info[: -len(".dist-info")].partition("-")[0]
        if canonicalize_name(folder_name) != project:
            raise NotAWheelError(
                self.path,
                f"its .dist-info folder {self.dist_info!r} is not for project {project!r} "
                f"that the file name {filename!r} gives: a wheel holds its own project's "
                "metadata, never another's",
            )

    def _check_layout(self) -> None:
        """Local headers must match the central directory and member data must not overlap
        (overlapping members are how the smallest zip bombs are built)."""
        by_offset = sorted(self.members, key=_header_offset)
        #: where each member's bytes end in the archive: at the next local header
        self.end_of: dict[str, int] = {}
        end_of = self.end_of
        header_size = LOCAL_HEADER.size
        lengths = _LOCAL_LENGTHS.unpack_from
        fd = self._fd
        read = self.pread if fd < 0 else None
        limits = [m.header_offset for m in by_offset[1:]]
        limits.append(self.start_dir)
        if self._lazy:
            # Local headers are checked as members are read (see check_local_header); the
            # smallest possible header already tells overlapping members apart.
            for member, limit in zip(by_offset, limits, strict=True):
                end_of[member.name] = limit
                least = member.header_offset + header_size + len(member.raw_name)
                if least + member.compress_size > limit:
                    self._overlap(member, by_offset)
            return
        try:
            for member, limit in zip(by_offset, limits, strict=True):
                raw_name = member.raw_name
                wanted = header_size + len(raw_name)
                if read is None:
                    raw = os.pread(fd, wanted, member.header_offset)
                else:
                    raw = read(wanted, member.header_offset)
                # One test for the common case: a whole header, the magic, the same name.
                if len(raw) == wanted and raw.endswith(raw_name) and raw.startswith(LOCAL_MAGIC):
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

    def check_local_header(self, member: Member) -> None:
        """Check ``member``'s local header against the central directory (done for every
        member on opening, except through a reader) and note where its data start."""
        if member.data_offset >= 0:
            return
        raw_name = member.raw_name
        wanted = LOCAL_HEADER.size + len(raw_name)
        raw = self.pread(wanted, member.header_offset)
        if not (len(raw) == wanted and raw.endswith(raw_name) and raw.startswith(LOCAL_MAGIC)):
            self._bad_local_header(member, raw)
        name_len, extra_len = _LOCAL_LENGTHS.unpack_from(raw, 26)
        if name_len != len(raw_name):
            self._bad_local_header(member, raw)
        data_offset = member.header_offset + LOCAL_HEADER.size + name_len + extra_len
        if data_offset + member.compress_size > self.end_of[member.name]:
            self._overlap(member, sorted(self.members, key=_header_offset))
        member.data_offset = data_offset

    def _bad_local_header(self, member: Member, raw: bytes) -> NoReturn:
        header_size = LOCAL_HEADER.size
        if len(raw) < header_size:
            raise NotAWheelError(self.path, f"member {member.name!r}: truncated local header")
        if raw[:4] != LOCAL_MAGIC:
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
        raise ZipBombError(
            self.path,
            f"members {member.name!r} and {nxt.name!r} overlap (one run of bytes under two "
            "names, as zip bombs and smuggled files are built)",
        )

    # -- content ------------------------------------------------------------------------------

    def member(self, name: str) -> Member:
        return self.by_name[name]

    def inflate(self, member: Member, sink: Callable[[bytes], object]) -> None:
        """Pass ``member``'s content to ``sink`` in pieces of at most :data:`CHUNK` bytes,
        checking that it inflates to exactly its declared size (:class:`MemberInflater`)."""
        if member.data_offset < 0:
            self.check_local_header(member)
        inflater = MemberInflater(
            self.path, member.name, member.method, (member.compress_size, member.file_size), sink
        )
        offset = member.data_offset
        end = offset + member.compress_size
        while offset < end:
            raw = self.pread(min(CHUNK, end - offset), offset)
            if not raw:
                raise NotAWheelError(self.path, f"member {member.name!r} is truncated")
            offset += len(raw)
            inflater.feed(raw)
        inflater.finish()

    def as_streamed(self, name: str, header: tuple[int, int, int, int, int, int, int]) -> bool:
        """Whether a member read from a download as it streamed is this archive's member
        ``name``, byte for byte: ``header`` (its local header's offset, data offset, flags,
        method, CRC, compressed and inflated sizes) as the central directory and the checked
        local header give them. Only then does what was inflated from the stream stand for
        the member (:mod:`fitwheel.wheel.archive_stream`)."""
        member = self.by_name.get(name)
        return member is not None and header == (
            member.header_offset,
            member.data_offset,
            member.flags,
            member.method,
            member.crc,
            member.compress_size,
            member.file_size,
        )

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
        """RECORD's rows, checked against the rules of :mod:`fitwheel.wheel.record`."""
        try:
            return parse_record(self.read_member(self.record_name))
        except RecordError as exc:
            raise RecordMismatchError(self.path, str(exc)) from None

    def file_sizes(self) -> dict[str, int]:
        """Every file member (folders left out) with its declared size."""
        return {m.name: m.file_size for m in self.members if not m.name.endswith("/")}

    def check_record_coverage(
        self, record: Mapping[str, RecordEntry], *, strict: bool = True
    ) -> list[str]:
        """Every file member is listed in RECORD with its hash and size; a RECORD row for a file
        the archive lacks is an error when ``strict``, else one of the warnings returned."""
        try:
            return check_coverage(record, self.file_sizes(), self.dist_info, strict=strict)
        except RecordError as exc:
            raise RecordMismatchError(self.path, str(exc)) from None
