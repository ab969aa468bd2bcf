"""Rewriting wheel archives safely, in bounded memory (``variant make`` and ``variant strip``).

The wheel is opened and checked by :class:`fitwheel.wheel.archive.WheelArchive`, the one reader.
:func:`rewrite_wheel` then copies the archive *raw* (compressed bytes as they are, never
recompressed) as a few byte ranges in the kernel, while worker threads inflate the members to
check their sizes and RECORD hashes, and publishes the result with an atomic rename: an
interrupted run leaves no wheel behind.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from fitwheel.publish import output as _output
from fitwheel.publish.output import EarlyCopy, EarlyOutput, atomic_output
from fitwheel.threads import cores
from fitwheel.wheel.archive import (
    CENTRAL,
    CENTRAL_MAGIC,
    DEFAULT_LIMITS,
    DEFLATED,
    END,
    END64,
    END64_LOCATOR,
    END64_LOCATOR_MAGIC,
    END64_MAGIC,
    END_MAGIC,
    LOCAL_HEADER,
    LOCAL_MAGIC,
    U16,
    U32,
    ZIP64_EXTRA,
    Limits,
    Member,
    RecordMismatchError,
    WheelArchive,
    WheelError,
    without_zip64,
)
from fitwheel.wheel.inflate import deflate
from fitwheel.wheel.record import RecordEntry


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
        workers = max(1, min(8, cores(), len(self.pending)))
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
        digest = entry.hasher()
        if member.file_size < _PIPELINE_MIN:
            self.archive.inflate(member, digest.update)
        else:
            # One large member (a 434 MB libtorch) would otherwise be inflated and hashed in
            # turn on one core, and finish last: hash it on a second thread as it inflates.
            with _Hasher(digest) as hasher:
                self.archive.inflate(member, hasher.update)
        if not entry.matches(digest):
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
    if stored != U32 and offset < U32:
        return record[:42] + struct.pack("<I", offset) + record[46:]
    # The offset moves into (or already lives in) the zip64 extra field: rebuild the record.
    fields = list(CENTRAL.unpack_from(record))
    name_len, extra_len = fields[12], fields[13]
    name = record[CENTRAL.size : CENTRAL.size + name_len]
    extra = record[CENTRAL.size + name_len : CENTRAL.size + name_len + extra_len]
    comment = record[CENTRAL.size + name_len + extra_len :]
    values = []
    if fields[11] == U32:
        values.append(member.file_size)
    if fields[10] == U32:
        values.append(member.compress_size)
    values.append(offset)
    zip64 = struct.pack(f"<HH{len(values)}Q", ZIP64_EXTRA, 8 * len(values), *values)
    extra = zip64 + without_zip64(extra)
    fields[3] = max(fields[3], 45)
    fields[13] = len(extra)
    fields[18] = U32
    return CENTRAL.pack(*fields) + name + extra + comment


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
        data = deflate(member.data)
        crc = zlib.crc32(member.data)
        name = member.name.encode("utf-8")
        flags = 0 if member.name.isascii() else 0x800
        if len(data) >= U32 or len(member.data) >= U32:
            raise WheelError(member.name, "too large for fitwheel to write")
        offset = self.size
        local = LOCAL_HEADER.pack(
            LOCAL_MAGIC,
            20,
            flags,
            DEFLATED,
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
        if offset >= U32:
            extra = struct.pack("<HHQ", ZIP64_EXTRA, 8, offset)
            stored_offset, needed = U32, 45
        self.records.append(
            CENTRAL.pack(
                CENTRAL_MAGIC,
                made_by,
                system,
                needed,
                0,
                flags,
                DEFLATED,
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
        if count >= U16 or size >= U32 or start >= U32:
            end64 = start + size
            parts.append(
                END64.pack(END64_MAGIC, END64.size - 12, 45, 45, 0, 0, count, count, size, start)
            )
            parts.append(END64_LOCATOR.pack(END64_LOCATOR_MAGIC, 0, end64, 1))
            count, size, start = min(count, U16), min(size, U32), min(start, U32)
        parts.append(END.pack(END_MAGIC, 0, 0, count, count, size, start, 0))
        blob = b"".join(parts)
        self.blobs.append((self.size, blob))
        self.size += len(blob)


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
