"""Reading and rewriting wheel archives safely, in bounded memory.

A wheel is untrusted input. Before anything is copied, :class:`WheelArchive` checks every member
name (no absolute paths, no ``..``, no duplicates), the declared sizes (a zip bomb is refused
before it is inflated), that the member data do not overlap, and that the local headers agree with
the central directory. :func:`rewrite_wheel` then copies members *raw* (compressed bytes as they
are, never recompressed) while inflating them on the side to check sizes, CRCs and the RECORD
hashes, and publishes the result with an atomic rename: an interrupted run leaves no wheel behind.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import hashlib
import io
import itertools
import os
import queue
import re
import struct
import tempfile
import threading
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, BinaryIO

from fitwheel.errors import FitwheelError

CHUNK = 1 << 20
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_MAGIC = b"PK\x03\x04"
_RECORD_HASHES = ("sha256", "sha384", "sha512")
_DRIVE_RE = re.compile(r"^[A-Za-z]:")


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


@dataclass(frozen=True)
class Limits:
    """Bounds on what a wheel may declare; generous for real wheels (the largest CUDA builds are a
    few GB), far below what a zip bomb needs."""

    max_members: int = 500_000
    max_member_size: int = 16 << 30
    max_total_size: int = 64 << 30
    #: a member larger than ``ratio_floor`` must not inflate more than ``max_ratio`` times
    max_ratio: int = 1000
    ratio_floor: int = 64 << 20
    #: small text members read whole (METADATA, RECORD, variant.json)
    max_text_member: int = 64 << 20


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


@dataclass(frozen=True)
class RecordEntry:
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
    for lineno, row in enumerate(csv.reader(io.StringIO(text)), start=1):
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
        try:
            self._fp: BinaryIO = (
                io.BytesIO(data) if data is not None else open(self.path, "rb")  # noqa: SIM115
            )
        except OSError as exc:
            raise WheelError(self.path, f"cannot open: {exc.strerror or exc}") from None
        try:
            try:
                self.zip = zipfile.ZipFile(self._fp)
            except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError) as exc:
                raise NotAWheelError(self.path, f"not a valid zip archive ({exc})") from None
            self.infos = self.zip.infolist()
            self._check_structure()
        except BaseException:
            self.close()
            raise

    def __enter__(self) -> WheelArchive:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(AttributeError):
            self.zip.close()
        self._fp.close()

    def _check_structure(self) -> None:
        limits = self.limits
        if len(self.infos) > limits.max_members:
            raise ZipBombError(self.path, f"{len(self.infos)} members (limit {limits.max_members})")
        seen: set[str] = set()
        total = 0
        for info in self.infos:
            problem = check_member_name(info.filename)
            if problem:
                raise UnsafeWheelError(self.path, problem)
            if info.filename in seen:
                raise UnsafeWheelError(self.path, f"member {info.filename!r} appears twice")
            seen.add(info.filename)
            if info.flag_bits & 0x1:
                raise UnsafeWheelError(self.path, f"member {info.filename!r} is encrypted")
            if info.file_size > limits.max_member_size:
                raise ZipBombError(
                    self.path,
                    f"member {info.filename!r} declares {info.file_size} bytes "
                    f"(limit {limits.max_member_size})",
                )
            if info.file_size > limits.ratio_floor and info.file_size > limits.max_ratio * max(
                info.compress_size, 1
            ):
                raise ZipBombError(
                    self.path,
                    f"member {info.filename!r} inflates {info.compress_size} bytes to "
                    f"{info.file_size} (ratio limit {limits.max_ratio})",
                )
            total += info.file_size
        if total > limits.max_total_size:
            raise ZipBombError(
                self.path, f"members declare {total} bytes in all (limit {limits.max_total_size})"
            )
        self._check_layout()
        dist_infos = sorted(
            {
                info.filename.split("/", 1)[0]
                for info in self.infos
                if "/" in info.filename and info.filename.split("/", 1)[0].endswith(".dist-info")
            }
        )
        if len(dist_infos) != 1:
            found = ", ".join(dist_infos) or "none"
            raise NotAWheelError(
                self.path, f"a wheel has exactly one top-level .dist-info folder (found: {found})"
            )
        self.dist_info = dist_infos[0]
        self.record_name = f"{self.dist_info}/RECORD"
        for required in ("METADATA", "WHEEL", "RECORD"):
            if f"{self.dist_info}/{required}" not in seen:
                raise NotAWheelError(self.path, f"{self.dist_info}/{required} is missing")
        variant_jsons = [i.filename for i in self.infos if _is_variant_json(i.filename)]
        if len(variant_jsons) > 1:
            raise UnsafeWheelError(
                self.path, f"more than one variant.json: {', '.join(variant_jsons)}"
            )
        self.variant_json_name: str | None = variant_jsons[0] if variant_jsons else None

    def _check_layout(self) -> None:
        """Local headers must match the central directory and member data must not overlap
        (overlapping members are how the smallest zip bombs are built)."""
        end_of_data = self.zip.start_dir if hasattr(self.zip, "start_dir") else None
        spans: list[tuple[int, int, str]] = []
        for info in self.infos:
            start = self.data_offset(info)
            spans.append((info.header_offset, start + info.compress_size, info.filename))
        spans.sort()
        for (_, end, name), (next_start, _, next_name) in itertools.pairwise(spans):
            if end > next_start:
                raise ZipBombError(self.path, f"members {name!r} and {next_name!r} overlap")
        if spans and end_of_data is not None and spans[-1][1] > end_of_data:
            raise NotAWheelError(
                self.path, f"member {spans[-1][2]!r} runs into the central directory"
            )

    def data_offset(self, info: zipfile.ZipInfo) -> int:
        """Where ``info``'s compressed bytes start, after checking its local header."""
        self._fp.seek(info.header_offset)
        raw = self._fp.read(_LOCAL_HEADER.size)
        if len(raw) != _LOCAL_HEADER.size:
            raise NotAWheelError(self.path, f"member {info.filename!r}: truncated local header")
        fields = _LOCAL_HEADER.unpack(raw)
        if fields[0] != _LOCAL_MAGIC:
            raise NotAWheelError(self.path, f"member {info.filename!r}: bad local header")
        name_len, extra_len = fields[9], fields[10]
        name = self._fp.read(name_len)
        decoded = name.decode("utf-8" if fields[2] & 0x800 else "cp437", errors="replace")
        if decoded != info.orig_filename:
            raise UnsafeWheelError(
                self.path,
                f"member {info.filename!r}: local header names it {decoded!r}",
            )
        return int(info.header_offset + _LOCAL_HEADER.size + name_len + extra_len)

    def iter_raw(self, info: zipfile.ZipInfo) -> Iterator[bytes]:
        """The member's compressed bytes, in chunks."""
        offset = self.data_offset(info)
        self._fp.seek(offset)
        left = info.compress_size
        while left:
            chunk = self._fp.read(min(CHUNK, left))
            if not chunk:
                raise NotAWheelError(self.path, f"member {info.filename!r} is truncated")
            left -= len(chunk)
            yield chunk

    def read_member(self, name: str) -> bytes:
        """A small member's content (METADATA, RECORD, variant.json), size-checked."""
        info = self.zip.getinfo(name)
        if info.file_size > self.limits.max_text_member:
            raise ZipBombError(
                self.path, f"member {name!r} is {info.file_size} bytes; too large to read"
            )
        try:
            with self.zip.open(info) as handle:
                data = handle.read(info.file_size + 1)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError) as exc:
            raise NotAWheelError(self.path, f"member {name!r} cannot be read ({exc})") from None
        if len(data) != info.file_size:
            raise ZipBombError(self.path, f"member {name!r} does not have its declared size")
        return data

    def record(self) -> dict[str, RecordEntry]:
        return parse_record(self.read_member(self.record_name), source=str(self.path))

    def check_record_coverage(self, record: Mapping[str, RecordEntry]) -> None:
        """Every file member is listed in RECORD (with its size), and RECORD lists nothing else."""
        names = {i.filename for i in self.infos if not i.is_dir()}
        unsigned = {
            self.record_name,
            f"{self.dist_info}/RECORD.jws",
            f"{self.dist_info}/RECORD.p7s",
        }
        for info in self.infos:
            if info.is_dir() or info.filename in unsigned:
                continue
            entry = record.get(info.filename)
            if entry is None or entry.digest is None:
                raise RecordMismatchError(
                    self.path, f"member {info.filename!r} has no hash in RECORD"
                )
            if entry.size is not None and entry.size != info.file_size:
                raise RecordMismatchError(
                    self.path,
                    f"RECORD says {info.filename!r} is {entry.size} bytes, the archive says "
                    f"{info.file_size}",
                )
        for path in record:
            if path not in names:
                raise RecordMismatchError(
                    self.path, f"RECORD lists {path!r}, which is not in the archive"
                )


class _Inflater:
    """Inflates a member's raw bytes as they stream past, to hash the content and check the CRC
    and size without a second read; output is bounded per call, so a bomb cannot balloon memory."""

    def __init__(self, archive: WheelArchive, info: zipfile.ZipInfo, algorithm: str) -> None:
        self.archive = archive
        self.info = info
        self.hash = hashlib.new(algorithm)
        self.size = 0
        if info.compress_type == zipfile.ZIP_DEFLATED:
            self._zlib: zlib._Decompress | None = zlib.decompressobj(-15)
        elif info.compress_type == zipfile.ZIP_STORED:
            self._zlib = None
        else:
            raise WheelError(
                archive.path,
                f"member {info.filename!r} uses compression method {info.compress_type}; "
                "only stored and deflate are supported",
            )

    def _emit(self, data: bytes) -> None:
        self.size += len(data)
        if self.size > self.info.file_size:
            raise ZipBombError(
                self.archive.path,
                f"member {self.info.filename!r} inflates beyond its declared "
                f"{self.info.file_size} bytes",
            )
        self.hash.update(data)

    def feed(self, raw: bytes) -> None:
        if self._zlib is None:
            self._emit(raw)
            return
        try:
            data = self._zlib.decompress(raw, CHUNK)
            self._emit(data)
            while self._zlib.unconsumed_tail:
                self._emit(self._zlib.decompress(self._zlib.unconsumed_tail, CHUNK))
        except zlib.error as exc:
            raise NotAWheelError(
                self.archive.path, f"member {self.info.filename!r} is corrupt ({exc})"
            ) from None

    def finish(self) -> str:
        if self._zlib is not None:
            try:
                self._emit(self._zlib.flush())
            except zlib.error as exc:
                raise NotAWheelError(
                    self.archive.path, f"member {self.info.filename!r} is corrupt ({exc})"
                ) from None
        # No CRC check: the content is checked against its RECORD hash, a stronger test.
        if self.size != self.info.file_size:
            raise NotAWheelError(
                self.archive.path,
                f"member {self.info.filename!r} does not have its declared size",
            )
        return _b64(self.hash.digest())


_Job = tuple[str, Any, Any, Any]


class _Verifier:
    """Checks members against their RECORD hashes on worker threads while the main thread copies
    the raw bytes: inflating dominates the cost, and zlib and hashlib release the GIL. Each
    worker's queue is bounded, so memory stays bounded whatever the member sizes."""

    QUEUE_CHUNKS = 16

    def __init__(self, archive: WheelArchive, record: Mapping[str, RecordEntry]) -> None:
        self.archive = archive
        self.record = record
        # The copying thread mostly waits on the kernel, so every core can inflate.
        workers = max(1, min(4, os.cpu_count() or 1))
        self.queues: list[queue.Queue[_Job | None]] = [
            queue.Queue(self.QUEUE_CHUNKS) for _ in range(workers)
        ]
        self.load = [0] * workers
        self.error: BaseException | None = None
        self._lock = threading.Lock()
        self.threads = [
            threading.Thread(target=self._work, args=(q,), daemon=True) for q in self.queues
        ]
        for thread in self.threads:
            thread.start()

    def begin(self, info: zipfile.ZipInfo) -> int:
        worker = min(range(len(self.load)), key=self.load.__getitem__)
        self.load[worker] += info.file_size
        entry = self.record[info.filename]
        self._put(worker, ("begin", info, entry.algorithm or "sha256", entry.digest))
        return worker

    def feed(self, worker: int, chunk: bytes) -> None:
        self._put(worker, ("data", chunk, None, None))

    def end(self, worker: int) -> None:
        self._put(worker, ("end", None, None, None))

    def _put(self, worker: int, job: _Job) -> None:
        while True:
            if self.error is not None:
                raise self.error
            try:
                self.queues[worker].put(job, timeout=0.05)
                return
            except queue.Full:
                continue

    def _work(self, jobs: queue.Queue[_Job | None]) -> None:
        inflater: _Inflater | None = None
        expected: str | None = None
        while (job := jobs.get()) is not None:
            if self.error is not None:
                continue  # keep draining so that the producer never blocks
            kind, first, second, third = job
            try:
                if kind == "begin":
                    inflater, expected = _Inflater(self.archive, first, second), third
                elif kind == "data":
                    assert inflater is not None
                    inflater.feed(first)
                else:
                    assert inflater is not None
                    if inflater.finish() != expected:
                        raise RecordMismatchError(
                            self.archive.path,
                            f"member {inflater.info.filename!r} does not match its RECORD hash",
                        )
            except BaseException as exc:
                with self._lock:
                    if self.error is None:
                        self.error = exc

    def close(self) -> None:
        """Wait for every check; raise the first failure."""
        for jobs in self.queues:
            jobs.put(None)
        for thread in self.threads:
            thread.join()
        if self.error is not None:
            raise self.error


@dataclass(frozen=True)
class NewMember:
    """A member written by fitwheel (variant.json, RECORD), placed like ``template``."""

    name: str
    data: bytes
    template: zipfile.ZipInfo


def _new_info(member: NewMember) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(member.name, date_time=member.template.date_time)
    info.external_attr = member.template.external_attr or (0o644 << 16)
    info.create_system = member.template.create_system
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def _copy_bytes(src: IO[bytes], dst: IO[bytes], start: int, length: int) -> None:
    """Append ``length`` bytes of ``src`` from ``start`` to ``dst``: in the kernel where it can
    (copy_file_range), else through a 1 MiB buffer."""
    dst.flush()
    out_pos = dst.tell()
    done = 0
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is not None:
        try:
            src_fd, dst_fd = src.fileno(), dst.fileno()
            while done < length:
                n = copy_range(src_fd, dst_fd, length - done, start + done, out_pos + done)
                if n == 0:
                    break
                done += n
        except (OSError, io.UnsupportedOperation, AttributeError):
            pass
    if done < length:
        src.seek(start + done)
        dst.seek(out_pos + done)
        left = length - done
        while left:
            chunk = src.read(min(CHUNK, left))
            if not chunk:
                raise OSError(f"unexpected end of input after {length - left} bytes")
            dst.write(chunk)
            left -= len(chunk)
    dst.seek(out_pos + length)


def _copy_run(
    archive: WheelArchive, out: zipfile.ZipFile, run: list[zipfile.ZipInfo], end: int
) -> None:
    """Append members that sit back to back in the source (from the first one's local header to
    ``end``) as one byte range, and list them in ``out``'s central directory at their new
    offsets. Local headers, data and data descriptors are copied as they are."""
    fp = out.fp
    assert fp is not None
    start = run[0].header_offset
    shift = fp.tell() - start
    _copy_bytes(archive._fp, fp, start, end - start)
    for info in run:
        # The source's own ZipInfo objects move to the output (rewriting is the archive's last
        # use); only the offset changes, and often not even that.
        info.header_offset += shift
        out.filelist.append(info)
        out.NameToInfo[info.filename] = info
    # zipfile writes the central directory at start_dir when it closes.
    out.start_dir = fp.tell()
    out._didModify = True  # type: ignore[attr-defined]


@contextlib.contextmanager
def atomic_output(target: Path) -> Iterator[BinaryIO]:
    """A temporary file beside ``target`` that becomes ``target`` (fsynced, renamed) only if the
    block finishes; otherwise it is removed, so no partial file ever carries the final name."""
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=target.parent, prefix=".fitwheel-", suffix=".part")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w+b") as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    with contextlib.suppress(OSError):
        dir_fd = os.open(target.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


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
    byte for byte (local header and compressed data). With ``verify``, each copied member's
    content must match its RECORD hash."""
    record = archive.record()
    archive.check_record_coverage(record)
    # Where each member's bytes end in the source: at the next member's local header.
    by_offset = sorted(archive.infos, key=lambda i: i.header_offset)
    end_of = {id(info): nxt.header_offset for info, nxt in itertools.pairwise(by_offset)}
    if by_offset:
        end_of[id(by_offset[-1])] = archive.zip.start_dir
    verifier = _Verifier(archive, record) if verify else None
    try:
        with (
            atomic_output(target) as handle,
            zipfile.ZipFile(handle, "w", allowZip64=True) as out,
        ):
            run: list[zipfile.ZipInfo] = []

            def flush() -> None:
                if run:
                    _copy_run(archive, out, run, end_of[id(run[-1])])
                    run.clear()

            for info in archive.infos:
                name = info.filename
                if name in drop:
                    flush()
                    continue
                if name == archive.record_name:
                    flush()
                    for member in insert_before_record:
                        out.writestr(_new_info(member), member.data)
                    out.writestr(_new_info(NewMember(name, record_data, info)), record_data)
                    continue
                if run and end_of[id(run[-1])] != info.header_offset:
                    flush()
                run.append(info)
                entry = record.get(name)
                if verifier is not None and entry is not None and entry.digest is not None:
                    worker = verifier.begin(info)
                    for chunk in archive.iter_raw(info):
                        verifier.feed(worker, chunk)
                    verifier.end(worker)
            flush()
            if verifier is not None:
                # Every member must have passed before the output gets its final name.
                verifier.close()
                verifier = None
    finally:
        if verifier is not None:
            verifier.error = verifier.error or RuntimeError("cancelled")
            with contextlib.suppress(BaseException):
                verifier.close()
