"""Unpacking a wheel into the unpacked-wheel cache: every member written and checked against
RECORD in one pass, several members at a time.

The archive is opened by the one wheel reader (:mod:`fitwheel.wheel.archive`), which refuses
unsafe names, overlapping members, disagreeing headers and zip bombs before anything is
written; members are inflated never past their declared size; RECORD follows the rules of
:mod:`fitwheel.wheel.record`. An interrupt (a :class:`~fitwheel.threads.CancelToken`) is looked
for before every member and every megabyte written, so that unpacking a large wheel stops at
once; the caller removes the folder once this returns. A large wheel's members may have been
written while it downloaded (:mod:`fitwheel.install.cache.streaming`): they stand for the
archive's only where the checks here accept them. Imported only when a wheel is unpacked, so
that installing from the cache does not load the inflater.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import stat
import threading
import zlib
from pathlib import Path

from fitwheel.fs import write_all
from fitwheel.install.cache.layout import (
    MEMBERS,
    CachedLayout,
    CachedMember,
    UnpackError,
    layout,
)
from fitwheel.install.cache.precreate import Precreator
from fitwheel.install.cache.streaming import StreamUnpacker
from fitwheel.memory import give_back
from fitwheel.reporter import SILENT, Reporter
from fitwheel.threads import CANCEL, CancelToken, cores, run_threads
from fitwheel.variants.filenames import WheelFilename
from fitwheel.wheel.archive import (
    DEFLATED,
    Member,
    NotAWheelError,
    RecordMismatchError,
    WheelArchive,
    inflate_whole,
)
from fitwheel.wheel.archive_stream import StreamedMember
from fitwheel.wheel.record import RecordEntry, b64, unlisted

#: members up to this size are inflated in one call (never past their declared size); larger
#: ones are streamed, so that memory stays bounded whatever the wheel holds
_WHOLE = 8 << 20
_THREADED = 2 << 20
_THREADED_MEMBERS = 128


def _workers() -> int:
    # inflating, hashing and writing release the GIL; beyond one thread a core (the files
    # are created by another thread while the wheel downloads) threads only contend
    return max(2, min(4, cores()))


class _Member:
    __slots__ = ("executable", "expected", "index", "member", "target")

    def __init__(
        self,
        index: int,
        member: Member,
        target: str,
        expected: RecordEntry | None,
        executable: bool,
    ) -> None:
        self.index = index
        self.member = member
        self.target = target
        #: the RECORD row to match; None for RECORD itself and its signatures
        self.expected = expected
        self.executable = executable


def _mismatch(wheel: str, name: str) -> RecordMismatchError:
    return RecordMismatchError(
        wheel, f"{name} does not match its RECORD entry (the wheel was altered or built wrongly)"
    )


def _write(target: str, data: bytes, executable: bool) -> None:
    # not O_EXCL: the file may have been created (empty) while the wheel downloaded; nor
    # O_TRUNC: in this private folder it is empty anyway, and truncating makes ext4 flush the
    # file on close
    out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        write_all(out, data)
        if executable:
            os.fchmod(out, 0o755)
    finally:
        os.close(out)


def _extract_small(archive: WheelArchive, item: _Member, wheel: str) -> str:
    """Write one member read and inflated in one piece (a wheel's members are mostly small,
    and many), checking it against RECORD; returns its sha256 (RECORD's base64)."""
    member = item.member
    if member.method == DEFLATED:
        raw = archive.pread(member.compress_size, member.data_offset)
        if len(raw) != member.compress_size:
            raise NotAWheelError(archive.path, f"member {member.name!r} is truncated")
        data = inflate_whole(archive.path, member.name, member.method, raw, member.file_size)
    else:
        # stored (or a method the streaming path names in its error)
        return _extract(archive, item, wheel)
    _write(item.target, data, item.executable)
    return _check(data, item, wheel)


def _check(data: bytes, item: _Member, wheel: str) -> str:
    sha256 = b64(hashlib.sha256(data).digest())
    expected = item.expected
    if expected is None:
        # RECORD lists no hash for itself (nor its signatures): the zip checksum guards it
        if zlib.crc32(data) != item.member.crc:
            raise UnpackError(
                f"cannot install {wheel}: {item.member.name} is damaged (bad checksum)."
            )
        return sha256
    if expected.algorithm == "sha256":
        ok = sha256 == expected.digest  # the digest the cache keeps anyway
    else:
        checker = expected.hasher()
        checker.update(data)
        ok = expected.matches(checker)
    if not ok:
        raise _mismatch(wheel, item.member.name)
    return sha256


def _extract(archive: WheelArchive, item: _Member, wheel: str, stop: CancelToken = CANCEL) -> str:
    """Stream one member to its target, checking it against RECORD; returns its sha256. An
    interrupt is looked for before each piece (a megabyte at most) is written."""
    expected = item.expected
    checker = expected.hasher() if expected is not None else hashlib.sha256()
    digest = checker if checker.name == "sha256" else hashlib.sha256()
    crc = 0
    out = os.open(item.target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)

    def sink(piece: bytes) -> None:
        nonlocal crc
        stop.check()
        checker.update(piece)
        if digest is not checker:
            digest.update(piece)
        if expected is None:
            crc = zlib.crc32(piece, crc)
        write_all(out, piece)

    try:
        archive.inflate(item.member, sink)
        if item.executable:
            os.fchmod(out, 0o755)
    finally:
        os.close(out)
    name = item.member.name
    if expected is None:
        if crc != item.member.crc:
            raise UnpackError(f"cannot install {wheel}: {name} is damaged (bad checksum).")
    elif not expected.matches(checker):
        raise _mismatch(wheel, name)
    return b64(digest.digest())


def _extract_all(
    archive: WheelArchive, members: list[_Member], wheel: str, stop: CancelToken, digests: list[str]
) -> None:
    """Extract every member, several at a time, each one's sha256 put in ``digests`` at its
    index; the first failure (or an interrupt) stops the rest, and every thread has ended when
    this returns or raises."""
    # largest first, so that one big file does not end up alone at the end
    queue = iter(sorted(members, key=lambda m: m.member.compress_size, reverse=True))
    lock = threading.Lock()
    failed = threading.Event()

    def work() -> None:
        while not failed.is_set():
            with lock:
                item = next(queue, None)
            if item is None:
                return
            try:
                stop.check()
                if item.member.file_size <= _WHOLE:
                    digests[item.index] = _extract_small(archive, item, wheel)
                else:
                    digests[item.index] = _extract(archive, item, wheel, stop)
            except BaseException:
                failed.set()  # the other threads stop at their next member
                raise

    # threads pay off for wheels with much to inflate or many files to create (creating a
    # file waits on the file system); small ones are often unpacked several at once
    big = (
        len(members) > _THREADED_MEMBERS or sum(m.member.compress_size for m in members) > _THREADED
    )
    count = min(_workers(), len(members)) if big else 1
    if count <= 1:
        work()
    else:
        run_threads([work] * count)


def _make_folders(parents: set[str]) -> None:
    for parent in sorted(parents):
        os.makedirs(parent, exist_ok=True)


def _streamed_as_listed(archive: WheelArchive, streamed: dict[str, StreamedMember]) -> bool:
    """Whether every member the stream read (:mod:`fitwheel.install.cache.streaming`) is one
    the archive lists, the central directory and the checked local header agreeing on every
    field of the local header the stream read. When one is not, nothing streamed is kept."""
    return all(archive.as_streamed(name, got.header()) for name, got in streamed.items())


def _take_streamed(
    members: list[_Member], streamed: dict[str, StreamedMember], wheel: str, digests: list[str]
) -> list[_Member]:
    """The members left to extract from the file once those written from the stream are
    taken: a streamed member stands for the archive's only when it was inflated whole and its
    content hashes to its RECORD entry (one that does not is refused, as the file's would be:
    the same bytes). Its sha256 goes into ``digests``."""
    left: list[_Member] = []
    for item in members:
        got = streamed[item.member.name]
        expected = item.expected
        if got.sha256 is None or expected is None or expected.algorithm != "sha256":
            # streamed in part, or checked by another hash: written afresh from the file
            with contextlib.suppress(FileNotFoundError):
                os.unlink(item.target)
            left.append(item)
            continue
        if got.sha256 != expected.digest:
            raise _mismatch(wheel, item.member.name)
        if item.executable:
            os.chmod(item.target, 0o755)
        digests[item.index] = got.sha256
    return left


def _extract_around(
    archive: WheelArchive,
    members: list[_Member],
    staged: StreamUnpacker,
    streamed: dict[str, StreamedMember] | None,
    stop: CancelToken,
    into: tuple[set[str], list[str]],
) -> None:
    """Extract the members the stream did not write while it still writes the others; then
    take those (and extract any it could not). ``streamed``: the members whose local headers
    the stream read (:meth:`StreamUnpacker.headers`; None: nothing was streamed). ``into``: the
    folders the members need, and the list of their digests to fill."""
    parents, digests = into
    folder = staged.folder
    if streamed and not _streamed_as_listed(archive, streamed):
        staged.close()
        shutil.rmtree(folder / "files", ignore_errors=True)
        streamed = None
    _make_folders(parents)
    if not streamed:
        _extract_all(archive, members, archive.path.name, stop, digests)
        return
    written: list[_Member] = []
    left: list[_Member] = []
    for item in members:
        got = streamed.get(item.member.name)
        (written if got is not None and got.written else left).append(item)
    _extract_all(archive, left, archive.path.name, stop, digests)
    staged.finish()
    redo = _take_streamed(written, streamed, archive.path.name, digests)
    streamed.clear()  # the stream's own table of the members, no longer needed (memory)
    _extract_all(archive, redo, archive.path.name, stop, digests)


def unpack(
    wheel: Path,
    folder: Path,
    reporter: Reporter = SILENT,
    stop: CancelToken = CANCEL,
    staged: Precreator | None = None,
) -> CachedLayout:
    """Extract ``wheel`` into ``folder``, checking every member against RECORD on the way (one
    pass over the content). The archive is opened by the one wheel reader, which refuses
    unsafe names, overlapping members, disagreeing headers and zip bombs before anything is
    written; RECORD follows the rules of :mod:`fitwheel.wheel.record` (install's one leniency,
    a row for a file the archive lacks, is a warning to ``reporter``). ``stop``: the token
    whose cancelling ends the work (:class:`~fitwheel.threads.Cancelled`), every thread of it
    ended when this raises. ``staged``: what created (or, a :class:`StreamUnpacker`, wrote) the
    files of ``folder`` while the wheel downloaded; the streamed members the checks accept are
    not extracted again."""
    name = WheelFilename.parse(wheel.name)
    streamed = staged.headers() if isinstance(staged, StreamUnpacker) else None
    if streamed:
        # the stream has ended and freed its buffers: given back before the archive's tables
        # are built (a torch install's peak memory, about 70 MiB to 63)
        give_back()
    with WheelArchive(wheel) as archive:
        record = archive.record()
        for problem in archive.check_record_coverage(record, strict=False):
            reporter.warning(f"{wheel.name}: {problem}")
        dist_info = archive.dist_info
        base = str(folder / "files") + os.sep
        skip = unlisted(dist_info)
        members: list[_Member] = []
        parents: set[str] = set()
        # the reader refused names that are absolute or have an empty, '.' or '..' part: each
        # is a relative path as it stands
        native = os.sep == "/"
        for member in archive.members:
            member_name = member.name
            if member_name.endswith("/"):
                continue
            relative = member_name if native else member_name.replace("/", os.sep)
            target = base + relative
            parents.add(target.rpartition(os.sep)[0])
            expected = None if member_name in skip else record[member_name]
            mode = member.external_attr >> 16
            executable = bool(mode and stat.S_ISREG(mode) and mode & 0o111)
            members.append(_Member(len(members), member, target, expected, executable))
        digests = [""] * len(members)
        if isinstance(staged, StreamUnpacker):
            _extract_around(archive, members, staged, streamed, stop, (parents, digests))
        else:
            _make_folders(parents)
            _extract_all(archive, members, wheel.name, stop, digests)
        try:
            wheel_text = archive.read_member(f"{dist_info}/WHEEL").decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnpackError(f"cannot install {wheel.name}: its WHEEL file: {exc}") from exc
    listed = [
        CachedMember(m.member.name, m.executable, h, m.member.file_size)
        for m, h in zip(members, digests, strict=True)
    ]
    # the reader's tables (a torch wheel's 12,248 members, their RECORD rows and targets: some
    # 10 MiB) are let go of before the listing is written and the layout built, which is when
    # unpacking a large wheel needs the most memory
    del archive, record, members, digests, parents
    (folder / MEMBERS).write_text(json.dumps(listed, separators=(",", ":")))
    return layout(
        listed,
        distribution=name.name,
        wheel_version=name.version,
        dist_info=dist_info,
        data_dir=f"{name.name}-{name.version}.data",
        wheel_text=wheel_text,
    )
