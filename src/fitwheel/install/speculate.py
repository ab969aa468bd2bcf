"""Speculative fetching: the likely pick of each project downloaded into the wheel cache as soon
as the resolver's provider knows it, before the resolution pins it.

The provider tells :meth:`Speculator.offer` of each project's first choice (a wheel, never an
sdist; for a variant project the first ordered variant wheel) once its metadata has arrived. The
wheel is downloaded on a few threads of its own into the wheel cache the fetch stage reads, through
a session that does not retry: a guess that fails costs nothing but the attempt, and the real
fetch (which retries and reports) downloads it again. A guess is only ever a cached file: what is
installed is what the resolution pinned, found in the cache by its sha256 (so only files whose
index publishes one are guessed). A guess is downloaded only: unpacking it (the CPU-bound part)
is left to the fetch stage, as for every other wheel, so that it does not compete with the
resolver for the interpreter on a machine with few cores (measured in ``docs/performance.md``).

What a wrong guess can cost is bounded: a file over :attr:`Limits.file_bytes` is never guessed
(one whose size the index does not say is stopped once it grows past it), at most
:attr:`Limits.workers` downloads run at once, and no new guess starts once
:attr:`Limits.total_bytes` were fetched speculatively. The provider stops guessing the projects of
a conflict the resolver walked back from (their candidates are changing).

When the resolution ends, :meth:`Speculator.settle` waits for the guesses that were pinned, stops
the others at their next chunk, and returns only once every speculative thread has ended (so that
a failed or interrupted install may remove what they wrote); a pinned guess that failed is handed
to the real fetch then. ``FITWHEEL_NO_SPECULATION=1`` turns speculation off.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import TYPE_CHECKING

from fitwheel.index.findlinks import local_path
from fitwheel.install.fetch.download import Downloader, DownloadItem
from fitwheel.reporter import Reporter
from fitwheel.threads import CANCEL, Cancelled, CancelToken, wait_through

if TYPE_CHECKING:
    from packaging.utils import NormalizedName
    from packaging.version import Version

    from fitwheel.install.fetch.fetcher import Fetcher
    from fitwheel.resolve.candidates import Candidate

#: the environment variable that turns speculative fetching off (``1``)
OFF_VARIABLE = "FITWHEEL_NO_SPECULATION"


class Limits:
    """What speculation may spend."""

    __slots__ = ("file_bytes", "per_project", "total_bytes", "workers")

    def __init__(
        self,
        *,
        file_bytes: int = 16 << 20,
        total_bytes: int = 256 << 20,
        workers: int = 4,
        per_project: int = 2,
    ) -> None:
        #: a larger file is never guessed (nor kept downloading when its size was not said)
        self.file_bytes = file_bytes
        #: no new guess starts once this many bytes were fetched speculatively
        self.total_bytes = total_bytes
        #: downloads at once (so at most ``workers * file_bytes`` in flight)
        self.workers = workers
        #: different files guessed for one project at most
        self.per_project = per_project


# the states of a guess
_QUEUED, _RUNNING, _DONE, _CACHED, _FAILED, _STOPPED, _TAKEN = range(7)


class _TooLarge(Exception):
    """A guessed file grew past :attr:`Limits.file_bytes` (its size was not published)."""


class _Guess:
    __slots__ = ("bytes", "candidate", "future", "limit", "pinned", "state", "stop")

    def __init__(self, candidate: Candidate, limit: int) -> None:
        self.candidate = candidate
        self.state = _QUEUED
        #: bytes downloaded so far
        self.bytes = 0
        self.limit = limit
        #: stops this download alone (an interrupt stops every one)
        self.stop = CancelToken(CANCEL)
        self.future: Future[None] | None = None
        #: the resolver pinned it while it was running (the real fetch left it to this guess)
        self.pinned = False


class _Meter(Reporter):
    """Counts a guess's bytes, and stops one that grows past the size limit."""

    def __init__(self, guess: _Guess) -> None:
        self.guess = guess

    def progress(self, what: str, advance: int, total: int | None = None) -> None:
        guess = self.guess
        guess.bytes += advance
        if guess.bytes > guess.limit:
            raise _TooLarge(what)


class Speculation:
    """What speculation did in one install (``--report``'s ``speculative``)."""

    __slots__ = ("failed", "fetched", "used", "wasted_bytes")

    def __init__(self) -> None:
        #: guessed files downloaded (not those the cache had already)
        self.fetched = 0
        #: of those, the files the resolution pinned
        self.used = 0
        #: bytes downloaded for guesses the resolution did not keep (finished or stopped)
        self.wasted_bytes = 0
        #: guesses whose download failed (each fetched again by the fetch stage when pinned)
        self.failed = 0

    def as_json(self) -> dict[str, int]:
        return {
            "fetched": self.fetched,
            "used": self.used,
            "wasted_bytes": self.wasted_bytes,
            "failed": self.failed,
        }


class Speculator:
    """Downloads the provider's guesses into ``fetcher``'s wheel cache (see the module's text).

    :meth:`offer` may be called from any thread, before :meth:`arm` too (guesses wait until the
    installed distributions are known); :meth:`covers`, :meth:`arm` and :meth:`settle` from the
    thread that runs the resolution."""

    def __init__(self, fetcher: Fetcher, limits: Limits | None = None) -> None:
        self.limits = Limits() if limits is None else limits
        self.fetcher = fetcher
        main = fetcher.downloader.session
        #: guesses never retry: a failure is left to the real fetch
        self._session = main.quick() if main is not None else None
        self._lock = threading.Lock()
        self._guesses: dict[str, _Guess] = {}
        self._per_project: dict[str, int] = {}
        self._pending: list[Candidate] | None = []
        self._installed: Mapping[NormalizedName, Version] = {}
        self._force = False
        self._pool: ThreadPoolExecutor | None = None
        self._closed = False
        self._settled = False
        self._spent = 0
        self.result = Speculation()

    # -- guesses in --------------------------------------------------------------------------
    def offer(self, candidate: Candidate) -> None:
        """A project's likely pick: start fetching it, if the limits allow."""
        with self._lock:
            if self._closed or self._session is None:
                return
            if self._pending is not None:
                self._pending.append(candidate)
                return
            self._start(candidate)

    def arm(self, installed: Mapping[NormalizedName, Version], *, force_reinstall: bool) -> None:
        """The installed distributions are known: a project installed already is not guessed
        (it is most likely kept); the guesses offered so far start."""
        with self._lock:
            self._installed, self._force = installed, force_reinstall
            pending, self._pending = self._pending or [], None
            if self._closed:
                return
            for candidate in pending:
                self._start(candidate)

    def _start(self, candidate: Candidate) -> None:  # under the lock
        link = candidate.link
        limits = self.limits
        if (
            link.url in self._guesses
            or link.sha256 is None  # the fetch stage finds a file in the cache by its sha256
            or (link.size is not None and link.size > limits.file_bytes)
            or self._spent >= limits.total_bytes
            or self._per_project.get(candidate.name, 0) >= limits.per_project
            or (candidate.name in self._installed and not self._force)
            or local_path(link.url) is not None  # nothing to download
        ):
            return
        self._per_project[candidate.name] = self._per_project.get(candidate.name, 0) + 1
        guess = _Guess(candidate, limits.file_bytes)
        self._guesses[link.url] = guess
        self._spent += link.size if link.size is not None else 0
        if self._pool is None:
            self._pool = ThreadPoolExecutor(limits.workers, thread_name_prefix="speculate")
        guess.future = self._pool.submit(self._run, guess)

    # -- the work ----------------------------------------------------------------------------
    def _run(self, guess: _Guess) -> None:
        with self._lock:
            if guess.state != _QUEUED:
                return  # taken by the real fetch, or stopped, before it began
            guess.state = _RUNNING
        state = _FAILED
        try:
            state = self._fetch(guess)
        except Cancelled:
            state = _STOPPED
        except Exception:  # a guess that fails is fetched again by the fetch stage
            state = _FAILED
        finally:
            with self._lock:
                guess.state = state
                if guess.candidate.link.size is None:
                    self._spent += guess.bytes

    def _fetch(self, guess: _Guess) -> int:
        link = guess.candidate.link
        main = self.fetcher.downloader
        # into the same wheel cache, where the fetch stage finds it by its sha256 (and unpacks
        # it); a wheel unpacked already is not downloaded again
        downloader = Downloader(
            self._session, main.cache_dir, jobs=1, unpacked=main.unpacked, stop=guess.stop
        )
        item = DownloadItem(
            link.filename, link.url, {a: frozenset({h}) for a, h in link.hashes.items()}
        )
        done = downloader.fetch(item, _Meter(guess))
        return _CACHED if done.from_cache else _DONE

    # -- the resolution's side ---------------------------------------------------------------
    def covers(self, candidate: Candidate) -> bool:
        """The resolver pins ``candidate``: whether its guess is under way or done (then the
        real fetch need not start it; the fetch stage finds it in the cache). A guess not begun
        yet is left to the real fetch."""
        with self._lock:
            guess = self._guesses.get(candidate.link.url)
            if guess is None:
                return False
            if guess.state == _QUEUED:
                guess.state = _TAKEN
                return False
            if guess.state in (_RUNNING, _DONE, _CACHED):
                guess.pinned = True
                return True
            return False

    def settle(self, pins: Iterable[Candidate], restart: Callable[[Candidate], None]) -> None:
        """The resolution ended (``pins``; none when it failed): wait for the pinned guesses,
        stop the others, and return once every speculative thread has ended. A pinned guess
        that failed after the resolver left it to speculation goes to ``restart`` (the real
        fetch). An interrupt meanwhile stops every guess; it is raised once all have ended."""
        pinned = {c.link.url for c in pins}
        # every step up to the end of the wait may be repeated: an interrupt part way through
        # leaves close() to stop and wait again
        with self._lock:
            self._closed = True
            pool = self._pool
            guesses = list(self._guesses.values())
            for guess in guesses:
                if guess.state == _QUEUED:
                    guess.state = _STOPPED  # not begun: left to the real fetch when pinned
                elif guess.candidate.link.url not in pinned:
                    guess.stop.cancel()
        if pool is not None:
            futures = [g.future for g in guesses if g.future is not None]
            # not cancel_futures: a future cancelled in the queue never counts as done for
            # futures_wait; a guess not begun returns at once instead (its state says so)
            pool.shutdown(wait=False)
            wait_through(lambda: futures_wait(futures))
        with self._lock:
            if self._settled:
                return
            self._settled = True
            self._pool = None
        result = self.result
        for guess in guesses:
            used = guess.candidate.link.url in pinned
            if guess.state == _DONE:
                result.fetched += 1
                result.used += used
            if not used:
                result.wasted_bytes += guess.bytes
            if guess.state == _FAILED:
                result.failed += 1
            if used and guess.pinned and guess.state in (_FAILED, _STOPPED):
                restart(guess.candidate)

    def close(self) -> None:
        """Stop every guess (the resolution failed or was interrupted)."""
        self.settle((), lambda _c: None)
