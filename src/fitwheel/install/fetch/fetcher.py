"""Downloads into the wheel cache, each wheel unpacked into the unpacked-wheel cache as soon as
it is there (while the others still download); some start while the resolver is still pinning.

Unpacking (inflating, hashing, writing) is bound by the CPU, downloading by the network: ``--jobs``
downloads run at once, but no more wheels are unpacked at once than the machine has processors
(:func:`~fitwheel.threads.cores`). On two cores, four wheels unpacked at once took longer than
two (a cold install of a 35-distribution tree 5% longer, ``docs/performance.md``); a download
thread that finds every slot taken waits for one, the others go on downloading.

The downloads and the unpacking run on worker threads that share one
:class:`~fitwheel.threads.CancelToken`, cancelled by an interrupt (Ctrl-C, SIGTERM) or by
:meth:`Fetcher.close` with ``wait``, which returns only once every one of them has ended: what
they wrote (a temporary cache with ``--no-cache-dir``) can then be removed whole."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

from fitwheel.install.cache.unpacked import UnpackedCache
from fitwheel.install.env.signals import deferred
from fitwheel.install.fetch.download import Downloaded, Downloader, DownloadItem
from fitwheel.reporter import Reporter
from fitwheel.threads import CANCEL, CancelToken, cores

if TYPE_CHECKING:
    from fitwheel.index.http import Session
    from fitwheel.install.cache.precreate import Precreator
    from fitwheel.paths import CacheLayout
    from fitwheel.resolve.candidates import Candidate


class Fetcher:
    """Downloads into the wheel cache, each wheel unpacked into the unpacked-wheel cache as soon
    as it is there (while the others still download)."""

    def __init__(
        self,
        session: Session,
        layout: CacheLayout,
        reporter: Reporter,
        *,
        jobs: int,
        verify: bool,
    ) -> None:
        #: ends the downloads and the unpacking under way (an interrupt cancels it too)
        self.stop = CancelToken(CANCEL)
        self.unpacked = UnpackedCache(
            layout.unpacked, verify=verify, reporter=reporter, stop=self.stop
        )
        self.reporter = reporter
        #: wheels unpacked at once, at most (the work is bound by the CPU)
        self._unpacking = threading.BoundedSemaphore(cores())
        self.downloader = Downloader(
            session,
            layout.wheels,
            jobs=jobs,
            prepare=self._prepare,
            unpacked=self.unpacked.has,
            stop=self.stop,
        )

    def _prepare(self, item: DownloadItem) -> Precreator | None:
        # creating thousands of files is slow on many filesystems: start while downloading
        # and, for a large wheel, unpack it as its bytes arrive
        from fitwheel.install.cache.streaming import StreamUnpacker

        known = item.known_sha256
        if known is not None and self.unpacked.has(known):
            return None
        return StreamUnpacker(self.unpacked.precreator().folder, stop=self.stop)

    def _unpack(self, done: Downloaded) -> None:
        # a broken wheel is reported by the install step, with nothing changed
        with self._unpacking, contextlib.suppress(Exception):
            self.unpacked.get(done.path, done.sha256, done.prepared)

    def start(self, cand: Candidate) -> None:
        """Begin fetching ``cand``'s wheel before the resolution is done."""
        item = DownloadItem(
            cand.link.filename,
            cand.link.url,
            {a: frozenset({h}) for a, h in cand.link.hashes.items()},
        )
        self.downloader.start(item, self.reporter, self._unpack)

    def fetch_all(self, items: Sequence[DownloadItem]) -> list[Downloaded]:
        return self.downloader.fetch_all(items, self.reporter, then=self._unpack)

    def close(self, *, wait: bool = False) -> None:
        """Release the cache entries used. ``wait``: the downloads and unpacking still under
        way (wheels begun but not needed, or the rest after a failure or an interrupt) stop at
        their next chunk, and all have ended when this returns. A signal meanwhile waits for
        the end of the command (the cleanup is not cut short)."""
        with deferred():
            self.downloader.close(wait=wait)
            self.unpacked.close()
