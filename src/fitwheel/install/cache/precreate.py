"""Create a wheel's (empty) files while the wheel is still downloading.

On many filesystems creating a file costs far more than writing its bytes, and a big wheel has
thousands of files. A zip archive names each member in a local header just before its data, so
the names are known as the bytes arrive: :class:`Precreator` reads the local headers from the
download stream and, in a thread of its own, creates each member as an empty file in a folder of
the unpacked-wheel cache. The unpacker then only opens and fills them.

The thread starts only once a wheel has named many members: for a small wheel it would cost more
than the files it saves.

Nothing here is trusted: a member name that is unsafe, a header that cannot be skipped (sizes in
a data descriptor, zip64) or any error simply ends the early work, and the unpacker checks the
finished archive (central directory, RECORD, hashes) as it always does. Files are only ever
created with ``O_EXCL``, never truncated, so the thread may safely run on while the unpacker
writes.
"""

from __future__ import annotations

import os
import queue
import shutil
import threading
from pathlib import Path

from fitwheel.wheel.archive import LOCAL_HEADER as _HEADER
from fitwheel.wheel.archive import LOCAL_MAGIC as _MAGIC
from fitwheel.wheel.archive import check_member_name

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
        self._buffer = bytearray()
        self._skip = 0
        self._fed = False
        self.tainted = False
        self._stopped = False
        self._names: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._named = 0
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def feed(self, data: bytes) -> None:
        self._fed = True
        view = memoryview(data)
        pos = 0
        while pos < len(view) and not self._stopped:
            if self._skip:
                # a member's data: only counted
                taken = min(self._skip, len(view) - pos)
                self._skip -= taken
                pos += taken
                continue
            want = self._wanted()
            if want is None:
                return
            taken = min(want - len(self._buffer), len(view) - pos)
            self._buffer += view[pos : pos + taken]
            pos += taken
            if len(self._buffer) >= _HEADER.size:
                full = self._wanted()
                if full is not None and len(self._buffer) == full:
                    self._header_done()

    def _wanted(self) -> int | None:
        """How many bytes the current local header has (None: parsing ended)."""
        if len(self._buffer) < _HEADER.size:
            return _HEADER.size
        fields = _HEADER.unpack_from(self._buffer)
        magic, flags, compressed = fields[0], fields[2], fields[7]
        if magic != _MAGIC or flags & 0x9 or compressed == 0xFFFFFFFF:
            # the central directory (the end), encryption, sizes after the data, or zip64
            self._stop_parsing()
            return None
        return int(_HEADER.size + fields[9] + fields[10])

    def _header_done(self) -> None:
        fields = _HEADER.unpack_from(self._buffer)
        name_bytes = bytes(self._buffer[_HEADER.size : _HEADER.size + fields[9]])
        self._buffer.clear()
        self._skip = int(fields[7])
        try:
            self._names.put(name_bytes.decode("utf-8"))
        except UnicodeDecodeError:
            self._stop_parsing()
            return
        self._named += 1
        if self._named == self._start_after:
            self._thread = threading.Thread(target=self._create, daemon=True)
            self._thread.start()

    def _stop_parsing(self) -> None:
        self._stopped = True
        self._buffer.clear()
        self._names.put(_DONE)

    def reset(self) -> None:
        """The download starts over from byte 0."""
        if self._fed:
            # what was fed may have been another file's bytes: the files made are not to be used
            self.tainted = True
            if not self._stopped:
                self._stop_parsing()

    def _create(self) -> None:
        made: set[str] = set()
        while not self._halt.is_set():
            name = self._names.get()
            if name == _DONE:
                return
            if name.endswith("/") or check_member_name(name) is not None:
                continue
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
