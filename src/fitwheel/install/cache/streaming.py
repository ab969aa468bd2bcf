"""Unpacking a large wheel while it downloads, into a private staging folder of the
unpacked-wheel cache.

A :class:`StreamUnpacker` is fed the download's bytes in order, as a
:class:`~fitwheel.install.cache.precreate.Precreator` is (it is one, for the wheels too small to
stream): its :class:`~fitwheel.wheel.archive_stream.LocalStream` (the one wheel reader's
streaming mode) reads the local headers on the download's thread, the files are created early,
and the members' bytes the stream hands over are kept. Once :data:`STREAM_AFTER` bytes have
come, the stream goes on on threads of their own, which first take what it handed over so far,
so that inflating, hashing and writing overlap the download:

- the *stream* thread reads the local headers and inflates, hashes and writes every member
  up to :data:`BIG` bytes, each read whole;
- a larger member's bytes go to the *inflate* thread, whose output the *write* thread hashes
  and writes: the largest member of a wheel (torch's ``libtorch_cpu.so`` is 414 MiB) keeps one
  core inflating while the other hashes and writes it and everything else.

The download waits when :data:`BACKLOG` chunks are waiting (memory stays bounded), and every
loop looks for an interrupt at each chunk. Nothing streamed is trusted: once the download is
complete and its hash checked, :func:`fitwheel.install.cache.unpacking.unpack` opens the file
with the one reader and every check, takes a streamed member only where its local header and
the central directory agree on every field and its content hashes to its RECORD entry, and
reads everything else from the file; the staging folder becomes a cache entry only then (and is
removed when anything fails).
"""

from __future__ import annotations

import hashlib
import os
import queue
import threading
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from fitwheel.fs import write_all
from fitwheel.install.cache.precreate import Precreator
from fitwheel.threads import CANCEL, Cancelled, CancelToken, wait_through
from fitwheel.wheel.archive import MemberInflater, inflate_whole
from fitwheel.wheel.archive_stream import StreamedMember
from fitwheel.wheel.record import b64

#: bytes of a download seen before its members are streamed: a smaller wheel is unpacked once
#: it is complete (its files created meanwhile, see :class:`Precreator`). An 11 MiB wheel sent
#: at 50 MB/s was unpacked sooner streamed, on loopback no slower (``python -m benchmarks
#: stream``); smaller ones, mostly many at once, keep the threads for unpacking them
STREAM_AFTER = 8 << 20
#: members that inflate to more than this are inflated on a thread of their own, in pieces.
#: At 8 MiB, a torch install's peak memory was 80 MiB, at 1 MiB 71 MiB, as fast (members read
#: whole, and their content, were what the process held beyond its tables)
BIG = 1 << 20
#: chunks of the download waiting for the stream thread (64 KiB at most each) before the
#: download waits: with the pieces below, about 6 MiB in flight at most
BACKLOG = 32
#: compressed pieces (about 1 MiB each) of a large member waiting to be inflated
_INFLATE_BACKLOG = 2
#: inflated pieces (1 MiB at most) waiting to be hashed and written
_WRITE_BACKLOG = 2
_PIECE = 1 << 20
_POLL = 0.05
_OPEN = os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC


def _native(name: str) -> str:
    # the reader's checks refused absolute names and '..': a relative path as it stands
    return name if os.sep == "/" else name.replace("/", os.sep)


class _Stop:
    """The end of a queue's work."""


class _MemberEnd:
    """The end of one member's bytes."""


_STOP = _Stop()
_END = _MemberEnd()


class StreamUnpacker(Precreator):
    """Feed it the download's bytes (:meth:`feed`); once the download is complete,
    :meth:`headers` gives the members the stream read and :meth:`finish` waits until those it
    writes into ``{folder}/files`` are written."""

    def __init__(
        self,
        folder: Path,
        *,
        stop: CancelToken = CANCEL,
        stream_after: int = STREAM_AFTER,
        big: int = BIG,
        split: bool = True,
        small: bool = True,
    ) -> None:
        """``stream_after`` and ``big``: see :data:`STREAM_AFTER` and :data:`BIG`. The other
        ways, measured slower by ``python -m benchmarks stream``: ``split`` False, a large
        member is hashed and written on the inflate thread too; ``small`` False, the smaller
        members are only created while the wheel downloads, and extracted from the file once
        it is complete (on several threads, while the large ones may still stream)."""
        super().__init__(folder)
        self._split = split
        self._small_too = small
        self.stop = stop
        self._stream_after = stream_after
        self._big = big
        self._seen = 0
        #: the stream's calls before it streams, made again on the stream thread
        self._early: list[Callable[[], None]] = []
        self._streaming = False
        self._quit = threading.Event()
        self._chunks: queue.Queue[Any] = queue.Queue(BACKLOG)
        self._inflate: queue.Queue[Any] = queue.Queue(_INFLATE_BACKLOG)
        self._write: queue.Queue[Any] = queue.Queue(_WRITE_BACKLOG)
        self._workers: list[tuple[threading.Thread, threading.Event]] = []
        #: the first failure of a worker (the stream stops there; the file is read instead)
        self.failure: BaseException | None = None
        self._files = os.path.join(folder, "files") + os.sep
        self._parents: set[str] = set()
        self._small: list[bytes] = []
        self._big_piece: list[bytes] = []
        self._big_size = 0

    @property
    def streaming(self) -> bool:
        return self._streaming

    # -- the download's side ------------------------------------------------------------------

    def feed(self, data: bytes) -> None:
        if self.tainted or self._quit.is_set():
            return
        if self._streaming:
            self._put(self._chunks, data)
            return
        super().feed(data)
        self._seen += len(data)
        if self._seen >= self._stream_after:
            self._begin()

    def reset(self) -> None:
        super().reset()
        if self.tainted:
            self._early.clear()
            self._quit.set()

    def _begin(self) -> None:
        """Stream from the first member: the file creation of :class:`Precreator` ends (what it
        already created is filled in), and the stream goes on on the stream thread."""
        if not self._stopped:
            self._stop_early()
        self._streaming = True
        early, self._early = self._early, []
        stream = partial(self._run_stream, early)
        for target in (stream, self._run_inflate, self._run_write):
            done = threading.Event()
            thread = threading.Thread(target=self._guard, args=(target, done), daemon=True)
            self._workers.append((thread, done))
            thread.start()

    def _put(self, where: queue.Queue[Any], item: object) -> None:
        while True:
            try:
                where.put(item, timeout=_POLL)
                return
            except queue.Full:
                self.stop.check()
                if self._quit.is_set():
                    return

    def _get(self, where: queue.Queue[Any]) -> Any:
        while True:
            try:
                return where.get(timeout=_POLL)
            except queue.Empty:
                self.stop.check()
                if self._quit.is_set():
                    return _STOP

    # -- the workers --------------------------------------------------------------------------

    def _guard(self, target: Callable[[], None], done: threading.Event) -> None:
        try:
            target()
        except BaseException as exc:  # the stream ends; the unpacker reads the file instead
            if self.failure is None:
                self.failure = exc
            self._quit.set()
        finally:
            done.set()

    def _run_stream(self, early: list[Callable[[], None]]) -> None:
        # each call let go of once made: the calls hold the first STREAM_AFTER bytes of the
        # download, which would otherwise stay in memory until the stream ends
        early.reverse()
        while early:
            self.stop.check()
            if self._quit.is_set():
                break
            early.pop()()
        early.clear()
        local = self.stream
        while True:
            chunk = self._get(self._chunks)
            if chunk is _STOP:
                break
            self.stop.check()
            if not local.stopped:
                local.feed(chunk)
        self._put(self._inflate, _STOP)

    def _large(self, member: StreamedMember) -> bool:
        """Whether ``member`` is inflated in pieces on the inflate thread (else read whole):
        by either size, so that a header declaring a small content for many compressed bytes
        is not read whole either."""
        return member.file_size > self._big or member.compress_size > self._big

    def _later(self, call: Callable[[], None]) -> bool:
        """Whether the stream does not stream yet (the download's thread): ``call`` is then
        made on the stream thread, once it does."""
        if self._streaming:
            return False
        self._early.append(call)
        return True

    def begin(self, member: StreamedMember) -> None:
        if self._later(partial(self.begin, member)):
            super().begin(member)  # its file is created early meanwhile
            return
        target = self._target(member.name)
        if target is None:
            return
        if self._large(member):
            # the write thread learns of it from the inflate thread, in order
            member.written = True
            self._put(self._inflate, (member, target))
        elif self._small_too:
            self._small.clear()
        else:
            # created empty, as a Precreator does: extracted from the file later
            os.close(os.open(target, _OPEN, 0o644))

    def data(self, member: StreamedMember, raw: bytes) -> None:
        if self._later(partial(self.data, member, raw)):
            return
        if member.name.endswith("/"):
            return  # a folder's bytes, if any, are nothing to write
        if not self._large(member):
            if self._small_too:
                self._small.append(raw)
            return
        self._big_piece.append(raw)
        self._big_size += len(raw)
        if self._big_size >= _PIECE:
            self._flush_big()

    def _flush_big(self) -> None:
        piece, self._big_piece, self._big_size = b"".join(self._big_piece), [], 0
        self._put(self._inflate, piece)

    def end(self, member: StreamedMember) -> None:
        if self._later(partial(self.end, member)):
            return
        if member.name.endswith("/"):
            return
        if self._large(member):
            self._flush_big()
            self._put(self._inflate, _END)
            return
        if not self._small_too:
            return
        raw, self._small = b"".join(self._small), []
        content = inflate_whole(self.folder, member.name, member.method, raw, member.file_size)
        target = self._files + _native(member.name)
        member.written = True
        out = os.open(target, _OPEN, 0o644)
        try:
            write_all(out, content)
        finally:
            os.close(out)
        member.sha256 = b64(hashlib.sha256(content).digest())

    def _target(self, name: str) -> str | None:
        """Where member ``name`` is written (its folder made); None for a folder, or a member
        left to be extracted from the file."""
        if name.endswith("/"):
            os.makedirs(self._files + _native(name), exist_ok=True)
            return None
        target = self._files + _native(name)
        parent = target.rpartition(os.sep)[0]
        if parent not in self._parents:
            os.makedirs(parent, exist_ok=True)
            self._parents.add(parent)
        return target

    def _run_inflate(self) -> None:
        inflater: MemberInflater | None = None
        here = _Writer()  # where ``split`` is False
        while True:
            item = self._get(self._inflate)
            if item is _STOP:
                break
            self.stop.check()
            if isinstance(item, tuple):
                member = item[0]
                sizes = (member.compress_size, member.file_size)
                if self._split:
                    self._put(self._write, item)
                    sink: Callable[[bytes], object] = self._out
                else:
                    here.take(item)
                    sink = here.take
                inflater = MemberInflater(self.folder, member.name, member.method, sizes, sink)
            elif item is _END:
                assert inflater is not None
                inflater.finish()
                if self._split:
                    self._put(self._write, _END)
                else:
                    here.take(_END)
                inflater = None
            else:
                assert inflater is not None
                inflater.feed(item)
        here.close()
        self._put(self._write, _STOP)

    def _out(self, piece: bytes) -> None:
        self._put(self._write, piece)

    def _run_write(self) -> None:
        writer = _Writer()
        try:
            while True:
                item = self._get(self._write)
                if item is _STOP:
                    break
                self.stop.check()
                writer.take(item)
        finally:
            writer.close()

    # -- the end ------------------------------------------------------------------------------

    def headers(self) -> dict[str, StreamedMember] | None:
        """Once every byte was fed: the members whose local headers the stream read, by name,
        or None when nothing was streamed (a small wheel). The large members may still be
        inflating: :meth:`finish` waits for them."""
        if not self._streaming or self.tainted:
            return None
        self._put(self._chunks, _STOP)
        _thread, done = self._workers[0]  # the stream thread
        wait_through(done.wait)
        self._raise_cancelled()
        return self.stream.members

    def finish(self) -> None:
        """Wait until every member streamed has been written (those whose content was
        streamed whole then have their :attr:`StreamedMember.sha256`). An interrupt
        meanwhile raises :class:`~fitwheel.threads.Cancelled` once every worker has ended."""
        self._join()
        self._raise_cancelled()

    def _raise_cancelled(self) -> None:
        if isinstance(self.failure, Cancelled):
            self._quit.set()
            self._join()
            raise self.failure
        self.stop.check()

    def _join(self) -> None:
        workers = self._workers
        wait_through(lambda: [done.wait() for _thread, done in workers])

    def close(self) -> None:
        self._quit.set()
        self._join()
        super().close()


class _Writer:
    """Hashes and writes a large member's inflated pieces: ``(member, target)`` begins one,
    its pieces follow, :data:`_END` ends it (once it inflated whole to its declared size)."""

    __slots__ = ("_digest", "_member", "_out")

    def __init__(self) -> None:
        self._out = -1
        self._member: StreamedMember | None = None
        self._digest = hashlib.sha256()

    def take(self, item: object) -> None:
        if isinstance(item, bytes):
            self._digest.update(item)
            write_all(self._out, item)
        elif isinstance(item, tuple):
            self._member, target = item
            self._digest = hashlib.sha256()
            self._out = os.open(target, _OPEN, 0o644)
        elif item is _END:
            assert self._member is not None
            self.close()
            self._member.sha256 = b64(self._digest.digest())

    def close(self) -> None:
        if self._out >= 0:
            os.close(self._out)
            self._out = -1
