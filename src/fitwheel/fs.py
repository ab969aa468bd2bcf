"""The one owner of fitwheel's files on disk: the cache root and its subfolders, atomic writes,
hard-link-else-copy, and file locks.

Cache root: ``--cache-dir``, else ``FITWHEEL_CACHE_DIR``, else the user cache folder as
``platformdirs.user_cache_dir("fitwheel")`` places it. Every cache has a fixed subfolder there
(:class:`CacheLayout`): ``wheels`` (downloads, by sha256), ``unpacked`` (unpacked wheels), ``http``
(index pages), ``envs`` (interpreter answers), ``detect`` (the per-boot detection result) and
``built`` (wheels and metadata built from source distributions, by the sdist's sha256).

``fitwheel detect`` imports this module on its start-up path, so it imports nothing at module
level beyond ``os`` (``pathlib``, ``shutil`` and ``platformdirs`` are imported where needed) and
the string-path helpers (:func:`cache_root_str`, :func:`detect_dir`) need no ``pathlib``.
"""

from __future__ import annotations

import os

TYPE_CHECKING = False  # ``typing`` is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from pathlib import Path
    from typing import BinaryIO

    StrPath = str | os.PathLike[str]

ENV_CACHE_DIR = "FITWHEEL_CACHE_DIR"
APP_NAME = "fitwheel"

WHEELS = "wheels"
UNPACKED = "unpacked"
HTTP = "http"
ENVS = "envs"
DETECT = "detect"
BUILT = "built"
REMEMBERED = "remembered"


def user_cache_dir(env: Mapping[str, str]) -> str:
    """``platformdirs.user_cache_dir("fitwheel")``. On Linux and the BSDs that is the XDG rule,
    computed here from ``env`` (hermetic, and cheaper than importing platformdirs)."""
    import sys

    if sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd")):
        base = env.get("XDG_CACHE_HOME", "").strip() or os.path.expanduser("~/.cache")
        return os.path.join(base, APP_NAME)
    import platformdirs

    return platformdirs.user_cache_dir(APP_NAME)


def cache_root_str(flag: StrPath | None, env: Mapping[str, str]) -> str:
    """The cache root as a string: ``flag``, else ``FITWHEEL_CACHE_DIR``, else the user cache."""
    if flag is not None and os.fspath(flag):
        return os.fspath(flag)
    explicit = env.get(ENV_CACHE_DIR)
    if explicit:
        return explicit
    return user_cache_dir(env)


def cache_root(flag: StrPath | None, env: Mapping[str, str]) -> Path:
    """The cache root: ``flag`` (``--cache-dir``), else ``FITWHEEL_CACHE_DIR``, else the user
    cache folder."""
    from pathlib import Path

    return Path(cache_root_str(flag, env))


def detect_dir(env: Mapping[str, str], flag: StrPath | None = None) -> str:
    """The detection cache's folder (a string: the detect start-up path has no ``pathlib``)."""
    return os.path.join(cache_root_str(flag, env), DETECT)


class CacheLayout:
    """The fixed subfolders of one cache root, as every cache uses them (read-only)."""

    __slots__ = ("root",)
    root: Path

    def __init__(self, root: Path) -> None:
        object.__setattr__(self, "root", root)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CacheLayout is read-only: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CacheLayout) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"CacheLayout(root={self.root!r})"

    @classmethod
    def locate(cls, flag: StrPath | None, env: Mapping[str, str]) -> CacheLayout:
        return cls(cache_root(flag, env))

    @property
    def wheels(self) -> Path:
        """Downloaded wheels, ``{sha[:2]}/{sha}/{filename}``."""
        return self.root / WHEELS

    @property
    def unpacked(self) -> Path:
        """Unpacked wheels, ``{sha[:2]}/{sha}/``."""
        return self.root / UNPACKED

    @property
    def http(self) -> Path:
        """Index pages by URL."""
        return self.root / HTTP

    @property
    def envs(self) -> Path:
        """What each interpreter said of itself."""
        return self.root / ENVS

    @property
    def detect(self) -> Path:
        """The per-boot detection result."""
        return self.root / DETECT

    @property
    def built(self) -> Path:
        """What source builds made, ``{sha[:2]}/{sha}/`` by the sdist's sha256: the wheels
        built from it, and the metadata prepared for each interpreter."""
        return self.root / BUILT

    @property
    def remembered(self) -> Path:
        """Remembered resolutions, ``{key[:2]}/{key}.json`` (see
        :mod:`fitwheel.install.remembered`)."""
        return self.root / REMEMBERED

    def wheel_file(self, sha256: str, filename: str) -> str:
        """Where the downloaded wheel ``filename`` with that sha256 is kept."""
        return cached_wheel(self.wheels, sha256, filename)


def cached_wheel(folder: StrPath, sha256: str, filename: str) -> str:
    """The place of a wheel in a wheel cache folder: ``{sha[:2]}/{sha}/{filename}``."""
    return os.path.join(folder, sha256[:2], sha256, filename)


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
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
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
