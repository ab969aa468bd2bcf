"""The output side of rewriting a wheel: byte ranges copied in the kernel, a temporary file that
takes its final name only once complete, and a copy of the whole source started before anything
else is known.

Kept apart from :mod:`fitwheel.publish.wheelfile`, and light to import (no hashing, no zlib), so
that ``variant make`` can start copying as soon as it knows the output folder.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

from fitwheel.fs import atomic_output, sync_folder

__all__ = ["EarlyCopy", "EarlyOutput", "atomic_output", "copy_range", "create_temporary"]

#: the buffer size where the kernel cannot copy by itself
_CHUNK = 1 << 20


#: copies are issued in pieces of this size, so that a cancelled rewrite stops soon
_COPY_PIECE = 256 << 20


def copy_range(
    src_fd: int, dst_fd: int, start: int, length: int, out_pos: int, stop: threading.Event
) -> None:
    """Copy ``length`` bytes of ``src_fd`` from ``start`` to ``dst_fd`` at ``out_pos``: in the
    kernel where it can (copy_file_range, which may share blocks on filesystems that can), else
    through a buffer. Offsets are explicit, so other threads may write elsewhere in ``dst_fd``."""
    done = 0
    copy_range = getattr(os, "copy_file_range", None)
    if copy_range is not None:
        with contextlib.suppress(OSError):
            while done < length and not stop.is_set():
                n = copy_range(
                    src_fd, dst_fd, min(_COPY_PIECE, length - done), start + done, out_pos + done
                )
                if n == 0:
                    break
                done += n
    while done < length:
        if stop.is_set():
            raise RuntimeError("cancelled")
        chunk = os.pread(src_fd, min(_CHUNK, length - done), start + done)
        if not chunk:
            raise OSError(f"unexpected end of input after {done} bytes")
        os.pwrite(dst_fd, chunk, out_pos + done)
        done += len(chunk)


def create_temporary(folder: Path) -> tuple[int, Path]:
    """A new, empty, private file in ``folder``, as ``tempfile.mkstemp`` makes one (which would
    cost ``variant make`` the import of ``tempfile``, ``random`` and ``shutil``)."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        path = folder / f".fitwheel-{os.urandom(8).hex()}.part"
        try:
            return os.open(path, flags, 0o600), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {folder}")


class EarlyCopy:
    """The whole source file copied into the output at the same offsets, started before the
    archive is opened and checked. In the common layout (every member kept in place, new members
    written over the old tail) most of the output is then already on disk, copied and flushed in
    the kernel while the central directory and RECORD are parsed and checked. The output keeps
    its temporary name until every check has passed, and the copy is cancelled on any failure."""

    def __init__(self, source: Path, fd: int) -> None:
        self.fd = fd
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.src_fd = -1
        try:
            self.src_fd = os.open(source, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
            stat = os.fstat(self.src_fd)
        except OSError:
            # Opening the archive fails the same way and reports it; nothing is copied early.
            self.close()
            self.identity: tuple[int, int, int] | None = None
            self.thread: threading.Thread | None = None
            return
        self.identity = (stat.st_dev, stat.st_ino, stat.st_size)
        self.thread = threading.Thread(target=self._work, args=(stat.st_size,), daemon=True)
        self.thread.start()

    def _work(self, size: int) -> None:
        try:
            copy_range(self.src_fd, self.fd, 0, size, 0, self.stop)
            if not self.stop.is_set():
                os.fsync(self.fd)
        except BaseException as exc:
            self.error = exc

    def matches(self, fd: int, size: int) -> bool:
        """Whether the early copy is of the very file open as ``fd``, ``size`` bytes long."""
        if self.identity is None or fd < 0:
            return False
        stat = os.fstat(fd)
        return self.identity == (stat.st_dev, stat.st_ino, size)

    def join(self) -> None:
        """Wait for the copy; raise its failure."""
        if self.thread is not None:
            self.thread.join()
        self.close()
        if self.error is not None:
            raise self.error

    def cancel(self) -> None:
        self.stop.set()
        if self.thread is not None:
            self.thread.join()
        self.close()

    def close(self) -> None:
        if self.src_fd >= 0:
            os.close(self.src_fd)
            self.src_fd = -1


class EarlyOutput:
    """A temporary file in ``folder``, filling on a thread with a copy of ``source`` from the
    moment it is made (see :class:`EarlyCopy`). :meth:`commit` gives it its final name;
    :meth:`discard` (safe to call at any time, and again) stops the copy and removes the file.
    Inactive, creating nothing, where ``folder`` is not an existing folder or the file cannot
    be made: the caller then writes its output the usual way and reports what fails there."""

    def __init__(self, source: str | os.PathLike[str], folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.fd = -1
        self.tmp: Path | None = None
        self.copy: EarlyCopy | None = None
        try:
            if not self.folder.is_dir():
                return
            self.fd, self.tmp = create_temporary(self.folder)
        except OSError:
            return
        self.copy = EarlyCopy(Path(source), self.fd)

    @property
    def active(self) -> bool:
        return self.fd >= 0 and self.copy is not None

    def commit(self, target: Path) -> None:
        """Flush the file and rename it to ``target`` (in :attr:`folder`)."""
        assert self.tmp is not None and self.fd >= 0
        tmp = self.tmp
        try:
            os.fsync(self.fd)
            os.close(self.fd)
            self.fd = -1
            os.chmod(tmp, 0o644)
            os.replace(tmp, target)
        except BaseException:
            self.discard()
            raise
        self.tmp = None
        sync_folder(target.parent)

    def discard(self) -> None:
        if self.copy is not None:
            self.copy.cancel()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.tmp is not None:
            with contextlib.suppress(OSError):
                self.tmp.unlink()
            self.tmp = None
