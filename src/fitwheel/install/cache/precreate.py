"""Create a wheel's (empty) files while the wheel is still downloading.

On many filesystems creating a file costs far more than writing its bytes, and a big wheel has
thousands of files. A zip archive names each member in a local header just before its data, so
the names are known as the bytes arrive: :class:`Precreator` reads the local headers from the
download stream with the one wheel reader's streaming mode
(:class:`~fitwheel.wheel.archive_stream.LocalStream`, whose handler it is) and, in a thread of
its own, creates each member as an empty file in a folder of the unpacked-wheel cache. The
unpacker then only opens and fills them.

The thread starts only once a wheel has named many members: for a small wheel it would cost more
than the files it saves.

Nothing here is trusted: the end of the stream (the central directory, or a member the stream
refuses: an unsafe or repeated name, a header that cannot be streamed, sizes beyond the limits)
simply ends the early work, and the unpacker checks the finished archive (central directory,
RECORD, hashes) as it always does. Files are only ever created with ``O_EXCL``, never truncated,
so the thread may safely run on while the unpacker writes.
"""

from __future__ import annotations

import os
import queue
import shutil
import threading
from pathlib import Path

from fitwheel.wheel.archive_stream import LocalStream, StreamedMember

_DONE = ""
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
#: members named before the thread starts
_START_AFTER = 64


class Precreator:
    """Feed it the download's bytes in order (:meth:`feed`); it creates ``{folder}/files/NAME``
    for every member named so far."""

    def __init__(self, folder: Path, *, start_after: int = _START_AFTER) -> None:
        self.folder = folder
        self._start_after = max(1, start_after)
        self._base = os.path.join(folder, "files")
        #: the local headers read so far; this object is its handler (:meth:`begin`,
        #: :meth:`data`, :meth:`end`)
        self.stream = LocalStream(folder, self)
        self._fed = False
        self.tainted = False
        #: whether the early work has ended (no more names for the thread)
        self._stopped = False
        self._names: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._named = 0
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def feed(self, data: bytes) -> None:
        self._fed = True
        if self._stopped:
            return
        stream = self.stream
        stream.feed(data)
        if stream.stopped:
            # the central directory, or a member the stream refuses: the file tells the rest
            self._stop_early()

    # -- the stream's handler -----------------------------------------------------------------

    def begin(self, member: StreamedMember) -> None:
        """A member's local header: its name goes to the creating thread."""
        self._names.put(member.name)
        self._named += 1
        if self._named == self._start_after:
            self._thread = threading.Thread(target=self._create, daemon=True)
            self._thread.start()

    def data(self, member: StreamedMember, raw: bytes) -> None:
        """A member's bytes: nothing to do with them."""

    def end(self, member: StreamedMember) -> None:
        """A member's end: nothing to do."""

    # -- the early work -----------------------------------------------------------------------

    def _stop_early(self) -> None:
        """No more names: the thread ends once it created those it has."""
        self._stopped = True
        self._names.put(_DONE)

    def reset(self) -> None:
        """The download starts over from byte 0."""
        if self._fed:
            # what was fed may have been another file's bytes: the files made are not to be used
            self.tainted = True
            if not self._stopped:
                self._stop_early()

    def _create(self) -> None:
        made: set[str] = set()
        while not self._halt.is_set():
            name = self._names.get()
            if name == _DONE:
                return
            if name.endswith("/"):
                continue  # a folder: made with the files in it
            # the stream checked the name (a relative path, no '..'), as the reader does
            target = os.path.join(self._base, *name.split("/"))
            parent = os.path.dirname(target)
            try:
                if parent not in made:
                    os.makedirs(parent, exist_ok=True)
                    made.add(parent)
                os.close(os.open(target, _CREATE, 0o644))
            except OSError:
                continue

    def wait(self) -> None:
        """Wait until every file named so far exists (once the stream reached its end)."""
        if self._stopped and self._thread is not None:
            self._thread.join()

    def close(self) -> None:
        """Stop creating files and wait for the thread (before the folder is renamed or
        removed)."""
        self._halt.set()
        self._stopped = True
        self._names.put(_DONE)
        if self._thread is not None:
            self._thread.join()

    def discard(self) -> None:
        self.close()
        shutil.rmtree(self.folder, ignore_errors=True)
