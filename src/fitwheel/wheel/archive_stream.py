"""The one wheel reader's streaming mode: members read from a download as its bytes arrive.

A zip archive gives each member a local header just before its data, so a member can be
inflated as soon as its bytes are in, long before the central directory (at the end) arrives.
:class:`LocalStream` reads the local headers in the order they come and hands each member's
compressed bytes to a :class:`StreamHandler`, with the checks :mod:`fitwheel.wheel.archive`
makes of a member before anything is written: a safe name
(:func:`~fitwheel.wheel.archive.check_member_name`), no duplicate, declared sizes within the
limits (:func:`~fitwheel.wheel.archive.check_declared`); the handler inflates with the reader's
:class:`~fitwheel.wheel.archive.MemberInflater` or :func:`~fitwheel.wheel.archive.inflate_whole`,
never past the declared size.

Nothing here is trusted: a header that cannot be streamed (encrypted, sizes in a data descriptor
after the data, zip64, a name that is unsafe or repeated, sizes beyond the limits) ends the
stream quietly, and the finished file is opened by :class:`~fitwheel.wheel.archive.WheelArchive`
with every check as it always is. What was inflated from the stream stands for a member only
where :meth:`~fitwheel.wheel.archive.WheelArchive.as_streamed` finds the member's local header
and the central directory agree on every field; the rest is read from the file. So the stream
refuses nothing the reader would accept, and lets through nothing the reader refuses.
"""

from __future__ import annotations

import os
from typing import Protocol

from fitwheel.errors import InvalidWheelError
from fitwheel.wheel.archive import (
    DEFAULT_LIMITS,
    LOCAL_HEADER,
    LOCAL_MAGIC,
    U32,
    Limits,
    check_declared,
    check_member_name,
)

#: general purpose flags a streamed member may not have: encrypted (bit 0), sizes in a data
#: descriptor after the data (bit 3)
_UNSTREAMABLE = 0x1 | 0x8


class StreamedMember:
    """A member as its local header declares it; :attr:`sha256` is set by the handler once
    its content was inflated whole and written."""

    __slots__ = (
        "compress_size",
        "crc",
        "data_offset",
        "file_size",
        "flags",
        "header_offset",
        "method",
        "name",
        "sha256",
        "written",
    )

    def __init__(
        self,
        name: str,
        header_offset: int,
        data_offset: int,
        fields: tuple[int, int, int, int, int],
    ) -> None:
        self.name = name
        self.header_offset = header_offset
        self.data_offset = data_offset
        self.flags, self.method, self.crc, self.compress_size, self.file_size = fields
        #: the content's sha256 (RECORD's base64), once streamed whole; None until then
        self.sha256: str | None = None
        #: whether the handler began writing it (in part, while :attr:`sha256` is None)
        self.written = False

    def header(self) -> tuple[int, int, int, int, int, int, int]:
        """What :meth:`~fitwheel.wheel.archive.WheelArchive.as_streamed` compares."""
        return (
            self.header_offset,
            self.data_offset,
            self.flags,
            self.method,
            self.crc,
            self.compress_size,
            self.file_size,
        )

    def __repr__(self) -> str:
        return f"StreamedMember({self.name!r}, {self.compress_size} -> {self.file_size})"


class StreamHandler(Protocol):
    def begin(self, member: StreamedMember) -> None:
        """A member's local header has arrived (its data follow)."""

    def data(self, member: StreamedMember, raw: bytes) -> None:
        """The next piece of ``member``'s compressed bytes."""

    def end(self, member: StreamedMember) -> None:
        """Every compressed byte of ``member`` has arrived."""


class LocalStream:
    """Feed it an archive's bytes in order (:meth:`feed`); it calls ``handler`` for every
    member it can stream, until the first one it cannot (:attr:`stopped`, with
    :attr:`why`)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        handler: StreamHandler,
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.path = path
        self.handler = handler
        self.limits = limits
        #: every member begun, by name
        self.members: dict[str, StreamedMember] = {}
        self.stopped = False
        #: why the stream stopped before the central directory (None: it reached it)
        self.why: str | None = None
        self._offset = 0
        self._header = bytearray()
        self._member: StreamedMember | None = None
        self._left = 0
        self._declared = 0

    def stop(self, why: str | None) -> None:
        self.stopped = True
        self.why = why
        self._header.clear()

    def feed(self, data: bytes) -> None:
        view = memoryview(data)
        pos = 0
        size = len(view)
        while pos < size and not self.stopped:
            if self._left:
                member = self._member
                assert member is not None
                taken = min(self._left, size - pos)
                self.handler.data(member, view[pos : pos + taken].tobytes())
                self._left -= taken
                pos += taken
                if not self._left:
                    self._member = None
                    self.handler.end(member)
                continue
            header = self._header
            wanted = LOCAL_HEADER.size
            if len(header) >= wanted:
                wanted += int.from_bytes(header[26:28], "little")
                wanted += int.from_bytes(header[28:30], "little")
            taken = min(wanted - len(header), size - pos)
            header += view[pos : pos + taken]
            pos += taken
            if len(header) < wanted:
                continue
            if wanted == LOCAL_HEADER.size:
                if header[:4] != LOCAL_MAGIC:
                    # the central directory: every member has been seen
                    self.stop(None if header[:4] == b"PK\x01\x02" else "no local header")
                    return
                if header[26:30] != b"\0\0\0\0":
                    continue  # the name and extra field follow
            self._header_done()

    def _header_done(self) -> None:
        header = self._header
        _, _, flags, method, _, _, crc, compressed, size, name_len, extra_len = (
            LOCAL_HEADER.unpack_from(header)
        )
        start = self._offset
        self._offset += len(header) + compressed
        raw_name = bytes(header[LOCAL_HEADER.size : LOCAL_HEADER.size + name_len])
        header.clear()
        if flags & _UNSTREAMABLE or U32 in (compressed, size):
            self.stop("a local header without its sizes")
            return
        try:
            # as the central directory's names are decoded
            name = raw_name.decode(
                "ascii" if raw_name.isascii() else "utf-8" if flags & 0x800 else "cp437"
            )
        except UnicodeDecodeError:
            self.stop("a name that is not UTF-8")
            return
        problem = check_member_name(name)
        if problem is None and name in self.members:
            problem = f"member {name!r} appears twice"
        if problem is None and len(self.members) >= self.limits.max_members:
            problem = "too many members"
        self._declared += size
        if problem is None and self._declared > self.limits.max_total_size:
            problem = "members declare too many bytes"
        if problem is None:
            try:
                check_declared(self.path, name, size, compressed, self.limits)
            except InvalidWheelError as exc:
                problem = str(exc)
        if problem is not None:
            self.stop(problem)
            return
        data_offset = start + LOCAL_HEADER.size + name_len + extra_len
        member = StreamedMember(name, start, data_offset, (flags, method, crc, compressed, size))
        self.members[name] = member
        self.handler.begin(member)
        if compressed:
            self._member = member
            self._left = compressed
        else:
            self.handler.end(member)
