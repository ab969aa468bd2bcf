"""The one owner of fitwheel's file operations on disk: atomic writes, hard-link-else-copy,
free-space errors and file locks. Where the files go (the cache root and its subfolders) is
:mod:`fitwheel.paths`.

``fitwheel detect`` imports this module on its start-up path, so it imports nothing at module
level beyond ``os`` (``pathlib`` and ``shutil`` are imported where needed).
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # ``typing`` is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import BinaryIO

    StrPath = str | os.PathLike[str]


#: how a folder is opened to work relative to it (``dir_fd``): to look up or link its files by
#: one name each instead of by whole paths
FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def write_all(fd: int, data: bytes | memoryview) -> None:
    """Write all of ``data`` to ``fd`` (a write may take less than it was given)."""
    written = os.write(fd, data)
    if written < len(data):
        view = memoryview(data)[written:]
        while view:
            view = view[os.write(fd, view) :]


def _temporary(folder: str, name: str, mode: int) -> tuple[int, str]:
    """A new file in ``folder`` (``O_EXCL``: unique across threads and processes)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        path = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(path, flags, mode), path
        except FileExistsError:
            continue
    raise FileExistsError(f"no unused temporary name in {folder}")


def sync_folder(folder: StrPath) -> None:
    """Flush ``folder``'s entries (a rename in it) to the disk, where the platform can."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _commit(fd: int, tmp: str, path: str, *, durable: bool, mode: int | None) -> None:
    try:
        if durable:
            os.fsync(fd)
    finally:
        os.close(fd)
    if mode is not None:
        os.chmod(tmp, mode)
    os.replace(tmp, path)
    if durable:
        sync_folder(os.path.dirname(path) or ".")


def _unlink_quietly(path: str) -> None:
    try:  # noqa: SIM105 (contextlib is not imported on the detect start-up path)
        os.unlink(path)
    except OSError:
        pass


def atomic_write(
    path: StrPath, data: bytes, *, durable: bool = False, mode: int | None = None
) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the new one, never a part:
    a temporary file in the same folder (made if missing), renamed over ``path``; on failure the
    temporary file is removed and ``path`` keeps its old content.

    ``durable`` also flushes the file and its folder to the disk (published output). Caches and
    the install journal do not: a rename survives a killed process, and after a power cut the
    filesystem's own journal decides (as with pip and uv). ``mode``: the final permission bits
    (default: as ``open`` makes files, through the umask)."""
    path = os.fspath(path)
    folder, name = os.path.split(path)
    folder = folder or "."
    os.makedirs(folder, exist_ok=True)
    fd, tmp = _temporary(folder, name, 0o666)
    try:
        write_all(fd, data)
        _commit(fd, tmp, path, durable=durable, mode=mode)
    except BaseException:
        _unlink_quietly(tmp)
        raise


def atomic_output(
    path: StrPath, *, durable: bool = True, mode: int | None = 0o644
) -> _AtomicOutput:
    """A context manager: a temporary file beside ``path`` (opened ``w+b``) that becomes ``path``
    only if the block finishes; otherwise it is removed, so no partial file ever carries the final
    name. Durable (file and folder flushed) and mode 0o644 unless told otherwise."""
    return _AtomicOutput(os.fspath(path), durable, mode)


class _AtomicOutput:
    __slots__ = ("durable", "handle", "mode", "path", "tmp")

    def __init__(self, path: str, durable: bool, mode: int | None) -> None:
        self.path = path
        self.durable = durable
        self.mode = mode
        self.tmp = ""
        self.handle: BinaryIO | None = None

    def __enter__(self) -> BinaryIO:
        folder, name = os.path.split(self.path)
        folder = folder or "."
        os.makedirs(folder, exist_ok=True)
        fd, self.tmp = _temporary(folder, name, 0o600 if self.mode is not None else 0o666)
        try:
            self.handle = os.fdopen(fd, "w+b")
        except BaseException:
            os.close(fd)
            _unlink_quietly(self.tmp)
            raise
        return self.handle

    def __exit__(self, kind: type[BaseException] | None, exc: object, tb: object) -> None:
        handle = self.handle
        assert handle is not None
        self.handle = None
        if kind is not None:
            handle.close()
            _unlink_quietly(self.tmp)
            return
        try:
            handle.flush()
            _commit(
                os.dup(handle.fileno()), self.tmp, self.path, durable=self.durable, mode=self.mode
            )
        except BaseException:
            handle.close()
            _unlink_quietly(self.tmp)
            raise
        handle.close()


def link_or_copy(
    src: StrPath, dst: StrPath, *, link: bool = True, scratch: StrPath | None = None
) -> bool:
    """Put ``src``'s content at ``dst`` (which must not exist): a hard link when ``link`` and the
    filesystem allows, else a copy that keeps the permission bits, as a link would. True when
    linked.

    Any failure to link other than an existing ``dst`` (another filesystem, a filesystem without
    links, too many links, links not permitted) falls back to the copy; an existing ``dst``
    raises :class:`FileExistsError` either way. Callers placing many files pass ``link=False``
    after the first fallback (the next links would fail the same way). ``scratch``: a folder on
    ``dst``'s filesystem where a copy is made first, so that no reader sees part of it."""
    if link:
        try:
            os.link(src, dst)
            return True
        except FileExistsError:
            raise
        except OSError:
            pass
    if os.path.lexists(dst):
        raise FileExistsError(17, "File exists", os.fspath(dst))
    import shutil

    if scratch is None:
        shutil.copy(src, dst)
        return False
    # copied beside, then linked into place: ``dst`` appears whole or not at all
    tmp = os.path.join(scratch, f".{os.urandom(8).hex()}.tmp")
    shutil.copy(src, tmp)
    try:
        os.link(tmp, dst)
    except FileExistsError:
        _unlink_quietly(tmp)
        raise
    except OSError:
        try:
            os.replace(tmp, dst)  # no links there (checked above that dst does not exist)
        except OSError:
            _unlink_quietly(tmp)  # another filesystem than the scratch folder's
            shutil.copy(src, dst)
        return False
    _unlink_quietly(tmp)
    return False


def _errors() -> type[Exception]:
    from fitwheel.errors import FitwheelError

    return FitwheelError


def mount_of(path: StrPath) -> tuple[str, str]:
    """The mount point holding ``path`` and its filesystem type (from ``/proc/self/mounts``
    where there is one; else the folder where the device changes, and "unknown")."""
    real = os.path.realpath(path)
    best, kind = "", "unknown"
    try:
        with open("/proc/self/mounts", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                fields = line.split()
                if len(fields) < 3:
                    continue
                point = fields[1].replace("\\040", " ")
                inside = real == point or real.startswith(point.rstrip("/") + "/")
                if inside and len(point) >= len(best):
                    best, kind = point, fields[2]
    except OSError:
        pass
    if best:
        return best, kind
    current = real
    while not os.path.exists(current) and os.path.dirname(current) != current:
        current = os.path.dirname(current)
    try:
        dev = os.stat(current).st_dev
        while os.path.dirname(current) != current:
            parent = os.path.dirname(current)
            if os.stat(parent).st_dev != dev:
                break
            current = parent
    except OSError:
        pass
    return current, kind


#: errno -> what it means for a write
#: what to do when the disk under the cache is full (said the same wherever it is found)
CACHE_FULL_HINT = "free some space there, or point --cache-dir at another filesystem"

_STORAGE = {
    28: "no space left on device",
    122: "the disk quota is exceeded",
    30: "the filesystem is read-only",
}


def storage_error(exc: BaseException, what: str, path: StrPath, fix: str = "") -> Exception | None:
    """A :class:`~fitwheel.errors.FitwheelError` for a write that failed because the storage
    is full (or over quota, or read-only): it names what was written (``what``, under
    ``path``), the filesystem and the problem. None for any other error."""
    if not isinstance(exc, OSError) or exc.errno not in _STORAGE:
        return None
    point, kind = mount_of(path)
    where = f" ({exc.filename})" if exc.filename else ""
    fix = fix or "free some space there and run again"
    return _errors()(
        f"cannot write {what} {os.fspath(path)}{where}: {_STORAGE[exc.errno]} on the {kind} "
        f"filesystem mounted at {point}; {fix}."
    )


def lock_fd(
    fd: int,
    *,
    wait: bool = True,
    on_wait: Callable[[], None] | None = None,
    shared: bool = False,
) -> bool:
    """Take the exclusive (``shared``: the shared) ``flock`` on the open file ``fd``. A free
    lock is taken at once; a held one is waited for (``on_wait`` called first, to say so) when
    ``wait``, else False is returned. True where the platform has no ``flock`` (no locking
    there). On a file already locked by ``fd`` this converts the lock."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - no flock on this platform
        return True
    kind = fcntl.LOCK_SH if shared else fcntl.LOCK_EX
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        if not wait:
            return False
    if on_wait is not None:
        on_wait()
    fcntl.flock(fd, kind)
    return True


def unlock_fd(fd: int) -> None:
    try:
        import fcntl
    except ImportError:  # pragma: no cover
        return
    fcntl.flock(fd, fcntl.LOCK_UN)


class locked:
    """Hold the exclusive lock on ``path`` (a lock file, created with its folder if missing)
    for the block. ``wait=False``: the block runs at once and ``as`` gives False when another
    process holds the lock (nothing is locked then); with ``wait`` it gives True, after waiting
    when needed (``on_wait`` says so first). ``shared``: a shared lock (many holders at once,
    none while someone holds it exclusively); :meth:`share` turns a held exclusive lock into
    a shared one. Usable without ``with`` too (:meth:`__enter__`, :meth:`release`)."""

    __slots__ = ("fd", "on_wait", "path", "shared", "wait")

    def __init__(
        self,
        path: StrPath,
        *,
        wait: bool = True,
        on_wait: Callable[[], None] | None = None,
        shared: bool = False,
    ) -> None:
        self.path = os.fspath(path)
        self.wait = wait
        self.on_wait = on_wait
        self.shared = shared
        self.fd = -1

    def __enter__(self) -> bool:
        flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0)
        try:
            fd = os.open(self.path, flags, 0o666)
        except FileNotFoundError:
            # its folder is missing: made once, then the lock file
            folder = os.path.dirname(self.path)
            if not folder:
                raise
            os.makedirs(folder, exist_ok=True)
            fd = os.open(self.path, flags, 0o666)
        try:
            held = lock_fd(fd, wait=self.wait, on_wait=self.on_wait, shared=self.shared)
        except BaseException:
            os.close(fd)
            raise
        if not held:
            os.close(fd)
            return False
        self.fd = fd
        return True

    def share(self) -> None:
        """Turn the exclusive lock held into a shared one (never waits)."""
        if self.fd >= 0:
            lock_fd(self.fd, shared=True)
            self.shared = True

    def release(self) -> None:
        fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                unlock_fd(fd)
            finally:
                os.close(fd)

    def __exit__(self, kind: object, exc: object, tb: object) -> None:
        self.release()


def location_state(path: str) -> str:
    """What a local file or folder holds, as far as reading it can tell, without reading any
    file: a file's identity, size and times of change; a folder's listing with each entry's
    (followed where it is a link); a missing path as ``absent``, apart from one whose folder
    is missing too. Any write to a file changes its time of change (which no one can set), so
    a file replaced or edited in place changes the state, as does an entry added, removed or
    renamed in a folder (used by :mod:`fitwheel.install.remembered`)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        parent = os.path.dirname(os.path.abspath(path))
        return "absent" if os.path.isdir(parent) else "absent, no folder"
    except OSError as exc:
        return f"unreadable ({exc.errno})"
    if not os.path.isdir(path):
        return f"file {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}"
    import hashlib

    digest = hashlib.sha256()
    try:
        names = sorted(os.listdir(path))
    except OSError as exc:
        return f"unreadable ({exc.errno})"
    for name in names:
        try:
            e = os.stat(os.path.join(path, name))
            row = f"{name}\0{e.st_mode} {e.st_ino} {e.st_size} {e.st_mtime_ns} {e.st_ctime_ns}\n"
        except OSError as exc:
            row = f"{name}\0unreadable {exc.errno}\n"
        digest.update(row.encode("utf-8", "surrogateescape"))
    return f"folder {st.st_ino} {digest.hexdigest()}"
