"""Fetch wheels in parallel into a content-addressed cache, verifying their hashes.

A wheel whose sha256 is known (from the index or ``--hash``) and already in the cache is not
fetched again. Downloads go to a temporary name next to their final place and are renamed only
once the hash matched, so an interrupted download never looks complete.

:meth:`Downloader.start` begins a download in the background before it is known to be needed
(the installer starts each wheel the resolver pins, so downloading and unpacking overlap the rest
of the resolution); :meth:`Downloader.fetch_all` then waits for those it started and fetches the
others. A started download that turns out not to be needed only fills the cache.

Every download looks for an interrupt (a :class:`~fitwheel.threads.CancelToken`) before it
starts and before each chunk it writes; :meth:`Downloader.close` with ``wait`` cancels what is
under way and returns once every download thread has ended, so that the caller may remove the
folders they wrote to.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, cast

from fitwheel._values import Frozen
from fitwheel.errors import FitwheelError
from fitwheel.fs import CACHE_FULL_HINT, lock_fd, storage_error
from fitwheel.index.auth import redact
from fitwheel.index.findlinks import local_path
from fitwheel.integrity import Hashes, HashMismatchError, Verifier
from fitwheel.paths import CacheLayout, cached_wheel
from fitwheel.reporter import SILENT, Reporter
from fitwheel.threads import CANCEL, Cancelled, CancelToken, wait_through

if TYPE_CHECKING:
    # the HTTP stack (urllib3, ssl) loads only where something is downloaded
    from fitwheel.index.http import Session
    from fitwheel.install.cache.precreate import Precreator


@contextlib.contextmanager
def _claim(part: Path) -> Iterator[tuple[BinaryIO, Path]]:
    """Open ``part`` for resuming, or a private file when another process is writing it."""
    handle = part.open("a+b")
    if not lock_fd(handle.fileno(), wait=False):
        handle.close()
        part = part.with_name(f"{os.urandom(16).hex()}.part")
        handle = part.open("w+b")
    try:
        yield handle, part
    except BaseException:
        # closing flushes what is still buffered: on a full disk that fails too, and must not
        # hide the error that named the file
        with contextlib.suppress(OSError):
            handle.close()
        raise
    try:
        handle.close()
    except OSError as exc:
        raise _write_error(exc, part) from exc


def _write_error(exc: OSError, path: str | Path) -> Exception:
    """A full disk found while flushing or closing a download, said as the session says it
    when a write fails (the other errors as they are)."""
    return storage_error(exc, "a download into the cache", path, CACHE_FULL_HINT) or exc


class _HashingWriter:
    """The file a download is written to, hashing what goes through it, so that a download is
    checked without reading it back. Follows the file's rewinds: a resumed download hashes the
    piece already on disk first; a restarted one starts the hashes over."""

    def __init__(
        self,
        handle: BinaryIO,
        verifier: Verifier,
        observer: Precreator | None = None,
        stop: CancelToken = CANCEL,
    ) -> None:
        self.handle = handle
        self.verifier = verifier
        self.observer = observer
        self.stop = stop

    def seek(self, offset: int, whence: int = 0) -> int:
        self.verifier.reset()
        if self.observer is not None:
            self.observer.reset()
        if whence != 0:
            raise ValueError("downloads seek from the start only")
        self.handle.seek(0)
        remaining = offset
        while remaining > 0:
            self.stop.check()
            chunk = self.handle.read(min(1 << 20, remaining))
            if not chunk:
                break
            self._update(chunk)
            remaining -= len(chunk)
        return self.handle.seek(offset)

    @property
    def name(self) -> str:
        """The file's path (for a write error's message)."""
        return str(self.handle.name)

    def truncate(self, size: int | None = None) -> int:
        return self.handle.truncate(size)

    def _update(self, data: bytes) -> None:
        self.verifier.update(data)
        if self.observer is not None:
            self.observer.feed(data)

    def write(self, data: bytes) -> int:
        self.stop.check()  # a chunk of the HTTP session's size: an interrupt is seen at once
        self._update(data)
        return self.handle.write(data)  # a write error: the session names the file

    def flush(self) -> None:
        try:
            self.handle.flush()
        except OSError as exc:
            raise _write_error(exc, self.handle.name) from exc


class DownloadItem(Frozen):
    __slots__ = ("filename", "hashes", "url")
    filename: str
    url: str
    #: algorithm -> acceptable digests (any one must match); empty: nothing to check
    hashes: Mapping[str, frozenset[str]]

    def __init__(
        self, filename: str, url: str, hashes: Mapping[str, frozenset[str]] | None = None
    ) -> None:
        _set = object.__setattr__
        _set(self, "filename", filename)
        _set(self, "url", url)
        _set(self, "hashes", {} if hashes is None else hashes)

    @property
    def known_sha256(self) -> str | None:
        values = self.hashes.get("sha256", frozenset())
        return next(iter(values)) if len(values) == 1 else None

    def verifier(self, where: str) -> Verifier:
        """What checks this file's content: refuses here an item with no usable hash."""
        return Verifier(Hashes.of(self.hashes), where, self.filename)


class Downloaded(Frozen):
    __slots__ = ("from_cache", "item", "path", "prepared", "sha256")
    item: DownloadItem
    path: Path
    sha256: str
    from_cache: bool
    #: the wheel's files, already being created while it downloaded (for the unpacker)
    prepared: Precreator | None

    def __init__(
        self,
        item: DownloadItem,
        path: Path,
        sha256: str,
        from_cache: bool,
        prepared: Precreator | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "item", item)
        _set(self, "path", path)
        _set(self, "sha256", sha256)
        _set(self, "from_cache", from_cache)
        _set(self, "prepared", prepared)


def default_cache_dir() -> Path:
    return CacheLayout.locate(None, os.environ).wheels


def _verify_file(path: Path, verifier: Verifier, stop: CancelToken = CANCEL) -> str:
    """Check the file at ``path``; return its sha256."""
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            stop.check()
            verifier.update(chunk)
    verifier.verify()
    return verifier.sha256


class Downloader:
    def __init__(
        self,
        session: Session | None,
        cache_dir: Path | None = None,
        jobs: int = 4,
        prepare: Callable[[DownloadItem], Precreator | None] | None = None,
        unpacked: Callable[[str], bool] | None = None,
        stop: CancelToken | None = None,
    ) -> None:
        self.session = session
        #: what ends the downloads under way: cancelled by an interrupt, or by close(wait=True)
        self.stop = CancelToken(CANCEL) if stop is None else stop
        self.cache_dir = default_cache_dir() if cache_dir is None else cache_dir
        self.jobs = jobs
        #: for a wheel about to be downloaded: something that creates its files meanwhile
        self.prepare = prepare
        #: whether a wheel (by sha256) is unpacked already (then its cached file is not read)
        self.unpacked = unpacked
        self._pool: ThreadPoolExecutor | None = None
        #: every download submitted to the pool (close(wait=True) waits for them to end)
        self._submitted: list[Future[Downloaded]] = []
        #: url -> (item, its fetch) for downloads begun by start()
        self._started: dict[str, tuple[DownloadItem, Future[Downloaded]]] = {}

    def _submit(
        self,
        item: DownloadItem,
        reporter: Reporter,
        then: Callable[[Downloaded], object] | None,
    ) -> Future[Downloaded]:
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=max(1, self.jobs))
        future = self._pool.submit(self._one, item, reporter, then)
        self._submitted.append(future)
        return future

    def _one(
        self,
        item: DownloadItem,
        reporter: Reporter,
        then: Callable[[Downloaded], object] | None,
    ) -> Downloaded:
        done = self.fetch(item, reporter)
        if then is not None:
            then(done)
        return done

    def start(
        self,
        item: DownloadItem,
        reporter: Reporter = SILENT,
        then: Callable[[Downloaded], object] | None = None,
    ) -> None:
        """Begin fetching ``item`` (then running ``then`` on it) in the background, unless
        that was begun already. Errors wait for :meth:`fetch_all`, which reports them only for
        items it is asked for."""
        if item.url not in self._started:
            self._started[item.url] = (item, self._submit(item, reporter, then))

    def close(self, *, wait: bool = False) -> None:
        """Stop the downloads not begun yet. Those under way finish on their own, unless
        ``wait``: then they stop at their next chunk (their partial files stay, to be resumed),
        and every download thread has ended when this returns, even through an interrupt
        (raised once they have)."""
        pool, self._pool = self._pool, None
        submitted, self._submitted = self._submitted, []
        if pool is None:
            return
        pool.shutdown(wait=False, cancel_futures=True)
        if not wait:
            return
        self.stop.cancel()
        try:
            # the futures, not the threads: a future is done once its download (and what runs
            # after it) has ended, and waiting for one is safe to repeat after an interrupt. One
            # the shutdown cancelled before it began is never "done" for ``futures_wait`` (no
            # worker takes it to notify its waiters), so it is left out.
            started = [future for future in submitted if not future.cancelled()]
            wait_through(lambda: futures_wait(started))
        finally:
            self.stop.clear()  # every download of this token has ended: later ones may run

    def _cached(self, sha256: str, filename: str) -> Path:
        return Path(cached_wheel(self.cache_dir, sha256, filename))

    def fetch(self, item: DownloadItem, reporter: Reporter = SILENT) -> Downloaded:
        self.stop.check()  # nothing new is begun once the work is to stop
        local = local_path(item.url)
        if local is not None:
            verified = _verify_file(local, item.verifier(str(local)), self.stop)
            return Downloaded(item, local, verified, True)
        known = item.known_sha256
        if known is not None:
            cached = self._cached(known, item.filename)
            if cached.is_file() and self._intact(cached, item, known):
                return Downloaded(item, cached, known, True)
        if self.session is None:
            raise FitwheelError(f"cannot download {item.url}: no network session.")
        tmp_dir = self.cache_dir / "tmp"
        tmp_dir.mkdir(parents=True, exist_ok=True)

        def report(size: int) -> None:
            reporter.progress(item.filename, size)

        # one partial file per URL, so that an interrupted download resumes where it stopped
        part = tmp_dir / (hashlib.sha256(item.url.encode()).hexdigest()[:32] + ".part")
        prepared = self.prepare(item) if self.prepare is not None else None
        try:
            final, sha256 = self._download(item, part, report, prepared)
        except BaseException:
            if prepared is not None:
                prepared.discard()
            raise
        return Downloaded(item, final, sha256, False, prepared)

    def _download(
        self,
        item: DownloadItem,
        part: Path,
        report: Callable[[int], None],
        prepared: Precreator | None,
    ) -> tuple[Path, str]:
        assert self.session is not None
        verifier = item.verifier(redact(item.url))
        with _claim(part) as (handle, path):
            start = os.fstat(handle.fileno()).st_size
            writer = _HashingWriter(handle, verifier, prepared, self.stop)
            resumed = self.session.download(
                item.url,
                cast(BinaryIO, writer),
                start=start,
                what=item.filename,
                progress=report,
            )
            writer.flush()
            try:
                verifier.verify()
            except HashMismatchError:
                if not resumed:
                    path.unlink(missing_ok=True)
                    raise
                # the piece kept from before belonged to another file: start over once
                self.session.download(
                    item.url, cast(BinaryIO, writer), what=item.filename, progress=report
                )
                writer.flush()
                try:
                    verifier.verify()
                except HashMismatchError:
                    path.unlink(missing_ok=True)
                    raise
            final = self._cached(verifier.sha256, item.filename)
            final.parent.mkdir(parents=True, exist_ok=True)
            os.replace(path, final)
        return final, verifier.sha256

    def _intact(self, cached: Path, item: DownloadItem, sha256: str) -> bool:
        """Whether a cached wheel can be used: it is unpacked already (the install reads that),
        or it still has its hash. A damaged one (truncated, overwritten) is removed: a miss."""
        if self.unpacked is not None and self.unpacked(sha256):
            return True
        try:
            _verify_file(cached, item.verifier(str(cached)), self.stop)
            return True
        except (HashMismatchError, OSError):
            with contextlib.suppress(OSError):
                cached.unlink()
            return False

    def fetch_all(
        self,
        items: Sequence[DownloadItem],
        reporter: Reporter = SILENT,
        then: Callable[[Downloaded], object] | None = None,
    ) -> list[Downloaded]:
        """Every item, in order; the first failure cancels the rest and is raised.

        ``then`` runs on each file as soon as it is there (say, unpacking it while the others
        still download). Items begun by :meth:`start` are not fetched again."""
        if len(items) <= 1 and not self._started:
            return [self._one(item, reporter, then) for item in items]
        futures = []
        for item in items:
            begun = self._started.get(item.url)
            if begun is not None and begun[0] == item:
                futures.append(begun[1])
            else:
                futures.append(self._submit(item, reporter, then))
        try:
            return [f.result() for f in futures]
        except BaseException as exc:
            for f in futures:
                f.cancel()
            if isinstance(exc, KeyboardInterrupt) and not isinstance(exc, Cancelled):
                CANCEL.cancel()  # the downloads under way stop; close(wait=True) waits for them
            raise

    def clear(self) -> None:
        shutil.rmtree(self.cache_dir, ignore_errors=True)
