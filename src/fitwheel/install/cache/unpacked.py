"""A cache of unpacked wheels, so that installing a wheel again links (or copies) files instead
of inflating the archive.

Each wheel (by sha256) is unpacked once into ``{root}/{sha[:2]}/{sha}/`` by
:mod:`fitwheel.install.cache.unpacking`, every member checked against RECORD as it is written.
Beside the files lie a list of every member and a manifest with the install layout worked out once
(:mod:`fitwheel.install.cache.layout`: the files that go to the root scheme folder, the folders they
need, their RECORD lines, the members of the ``.data`` folders, every member's size by folder and
the hashes of the ``.dist-info`` files read). Installing from the cache then reads that one file and
loops over nothing in Python that the kernel does not do anyway.

Every install checks each file's size first (from the manifest), which catches a truncated file
or one edited in place through a hard link, and hashes the few ``.dist-info`` files that
installing reads itself (:data:`READ_DIST_INFO`: the METADATA checked against what was resolved,
the entry points its scripts are made from); :class:`UnpackedCache` with ``verify=True``
(``install --force-reinstall``) hashes every file of the member list too. A damaged entry is
unpacked afresh and replaced with one rename, never under another process that links from it
(see :class:`UnpackedCache`). A wheel installed without the cache is unpacked the same way into
a private entry (:func:`unpack_entry`), removed with the install's transaction folder.
:mod:`fitwheel.install.place.linked` turns that manifest into an install plan whose files the
transaction hard-links (or copies) into place.

Only unpacking needs the wheel reader and the inflater; they are imported then, so that
installing from the cache starts fast.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.fs import FOLDER_FLAGS, locked, storage_error
from fitwheel.install.cache.layout import (
    MANIFEST,
    READ_DIST_INFO,
    CachedLayout,
    CachedMember,
    UnpackError,
    read_members,
)
from fitwheel.reporter import SILENT, Reporter
from fitwheel.threads import CANCEL, CancelToken
from fitwheel.wheel.record import b64

if TYPE_CHECKING:
    # loaded where a wheel is downloaded: it brings the wheel reader
    from fitwheel.install.cache.precreate import Precreator

#: METADATA and variant.json above this size are not read here (None in
#: :attr:`UnpackedWheel.checked`): the wheel reader's limit on a text member, which refuses them
TEXT_LIMIT = 64 << 20
_LIMITED = ("METADATA", "variant.json")


class UnpackedCache:
    """Unpacked wheels by sha256, shared by every process using the cache.

    An entry is used under a shared lock (``{sha}.lock`` beside it), held until :meth:`close`,
    so that no process replaces it while another links from it. An entry is checked before use
    (every file's size; with ``verify``, every file's hash too); a missing or damaged one is
    unpacked afresh into a private folder and moved in with one rename under the exclusive
    lock, after checking again that nobody put a good one there meanwhile. When the exclusive
    lock is not free at once (others are using the entry), the fresh copy is used privately
    by this process and removed by :meth:`close`.

    ``stop``: the token whose cancelling ends an unpacking under way (at its next member or
    megabyte), whose folder is then removed before :meth:`get` raises."""

    def __init__(
        self,
        root: Path,
        *,
        verify: bool = False,
        reporter: Reporter = SILENT,
        stop: CancelToken = CANCEL,
    ) -> None:
        self.root = root
        self.verify = verify
        self.stop = stop
        #: where a lenient check that let a wheel through is said
        self.reporter = reporter
        # one process often asks twice (unpack after download, then install): load once
        self._loaded: dict[str, UnpackedWheel] = {}
        self._held: dict[str, locked] = {}
        self._private: list[Path] = []
        self._guard = threading.Lock()

    def folder(self, sha256: str) -> Path:
        return Path(f"{self.root}{os.sep}{sha256[:2]}{os.sep}{sha256}")

    def lock_path(self, sha256: str) -> Path:
        return Path(f"{self.root}{os.sep}{sha256[:2]}{os.sep}{sha256}.lock")

    def has(self, sha256: str) -> bool:
        return (self.folder(sha256) / MANIFEST).is_file()

    def precreator(self, **options: int) -> Precreator:
        """A folder whose files a :class:`Precreator` creates while the wheel downloads; hand
        it to :meth:`get`."""
        from fitwheel.install.cache.precreate import Precreator

        tmp = self.root / "tmp" / os.urandom(16).hex()
        tmp.mkdir(parents=True)
        return Precreator(tmp, **options)

    def close(self) -> None:
        """Release the entries this process used (and remove its private copies)."""
        with self._guard:
            held, self._held = self._held, {}
            private, self._private = self._private, []
            self._loaded = {}
        for lock in held.values():
            lock.release()
        for folder in private:
            shutil.rmtree(folder, ignore_errors=True)

    def __enter__(self) -> UnpackedCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, wheel: Path, sha256: str, prepared: Precreator | None = None) -> UnpackedWheel:
        """The unpacked form of ``wheel`` (whose content hash is ``sha256``), unpacking it once
        (into ``prepared``'s folder when given)."""
        known = self._loaded.get(sha256)
        if known is not None:
            if prepared is not None:
                prepared.discard()
            return known
        folder = self.folder(sha256)
        lock = locked(self.lock_path(sha256), shared=True)
        lock.__enter__()
        with contextlib.suppress(OSError):
            # when it was last used (``fitwheel cache prune``)
            os.utime(lock.fd if os.utime in os.supports_fd else lock.path)
        try:
            unpacked = self._load(folder)
            if unpacked is None:
                lock.release()
                unpacked, lock = self._unpack(wheel, sha256, prepared)
                prepared = None
        except BaseException:
            lock.release()
            raise
        if prepared is not None:
            prepared.discard()
        with self._guard:
            previous = self._held.get(sha256)
            self._held[sha256] = lock
            self._loaded[sha256] = unpacked
        if previous is not None:
            previous.release()
        return unpacked

    def _unpack(
        self, wheel: Path, sha256: str, prepared: Precreator | None
    ) -> tuple[UnpackedWheel, locked]:
        """Unpack ``wheel`` afresh; returns the entry to use and the lock held."""
        if prepared is not None and (prepared.tainted or self.stop.cancelled):
            prepared.discard()
            prepared = None
        self.stop.check()  # nothing new is made once the work is to stop
        if prepared is not None:
            tmp = prepared.folder
        else:
            tmp = self.root / "tmp" / os.urandom(16).hex()
            tmp.mkdir(parents=True)
        folder = self.folder(sha256)
        try:
            try:
                fresh = unpack_entry(wheel, tmp, self.reporter, self.stop, prepared)
            except OSError as exc:
                full = storage_error(
                    exc,
                    "the unpacked-wheel cache",
                    self.root,
                    "free some space there or choose another cache with --cache-dir",
                )
                if full is None:
                    raise
                raise full from exc
            finally:
                if prepared is not None:
                    prepared.close()
            folder.parent.mkdir(parents=True, exist_ok=True)
            lock = locked(self.lock_path(sha256), wait=False)
            if not lock.__enter__():
                # others use the entry (or are putting theirs in place): ours stays private
                with self._guard:
                    self._private.append(tmp)
                return fresh, locked(self.lock_path(sha256), shared=True)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        aside: Path | None = None
        try:
            entry = self._load(folder)
            if entry is not None:
                # another process put a good copy in place meanwhile: keep it
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                entry = UnpackedWheel(folder, fresh.manifest, fresh.checked)
                if os.path.lexists(folder):
                    # really damaged: moved aside whole (one rename), removed after
                    aside = self.root / "tmp" / f"{os.urandom(16).hex()}-damaged"
                    os.rename(folder, aside)
                os.rename(tmp, folder)
            lock.share()
        except BaseException:
            lock.release()
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        if aside is not None:
            shutil.rmtree(aside, ignore_errors=True)
        return entry, lock

    def _load(self, folder: Path) -> UnpackedWheel | None:
        """The entry, or None when it is missing or damaged: a file whose size is not its
        member's (truncated, or changed in place through a hard link from an environment), one
        of :data:`READ_DIST_INFO` whose content does not hash to its member's; with ``verify``,
        any file whose content does not."""
        try:
            with open(os.path.join(folder, MANIFEST), "rb") as handle:
                data = CachedLayout.from_json(json.loads(handle.read()))
        except (OSError, ValueError):
            return None
        if data is None or "METADATA" not in data.read_hashes:
            return None  # every wheel has a METADATA: the manifest is damaged
        if not self.verify:
            # the install path: one stat per file, no more Python per member than that
            if not _sizes_match(folder, data.sizes):
                return None
        else:
            try:
                members = read_members(folder)
            except (OSError, ValueError):
                return None
            if check_members(folder, members, hashes=True) is not None:
                return None
        read = _read_dist_info(folder, data.dist_info_dir, data.read_hashes)
        return None if read is None else UnpackedWheel(folder, data, read)


def unpack_entry(
    wheel: Path,
    folder: Path,
    reporter: Reporter = SILENT,
    stop: CancelToken = CANCEL,
    staged: Precreator | None = None,
) -> UnpackedWheel:
    """Unpack ``wheel`` into ``folder`` (made already, empty or holding the files a
    :class:`~fitwheel.install.cache.precreate.Precreator` created) as an entry: every member checked
    against RECORD as it is written, the manifest written beside the files. The cache's entries
    are made this way, and so are the private entries of wheels installed without the cache.
    ``stop`` ends the unpacking (:class:`~fitwheel.threads.Cancelled`) when cancelled;
    ``staged``: what filled ``folder`` while the wheel downloaded (see
    :func:`~fitwheel.install.cache.unpacking.unpack`)."""
    from fitwheel.install.cache.unpacking import unpack

    manifest = unpack(wheel, folder, reporter, stop, staged)
    (folder / MANIFEST).write_text(json.dumps(manifest.to_json()))
    # just written, each member checked against RECORD as it was
    read = _read_dist_info(folder, manifest.dist_info_dir, None)
    if read is None:
        raise UnpackError(f"{wheel.name}: its .dist-info files cannot be read in {folder}")
    return UnpackedWheel(folder, manifest, read)


def _sizes_match(folder: Path, table: Sequence[tuple[str, list[str], list[int]]]) -> bool:
    """Whether every member file of the entry ``folder`` is there with its size (``table``:
    :attr:`CachedLayout.sizes`).

    Each file is looked up relative to its open folder where the platform allows it: the kernel
    then walks one name per file instead of the whole path into the cache. One thread: the
    loop is a stat per file with little Python around it, and threads only add their
    hand-overs of the interpreter lock to it."""
    base = os.path.join(folder, "files") + os.sep
    stat = os.stat
    try:
        if stat not in os.supports_dir_fd:
            return all(
                [stat(f"{base}{sub}/{n}" if sub else base + n).st_size for n in names] == sizes
                for sub, names, sizes in table
            )
        for sub, names, sizes in table:
            fd = os.open(base + sub if sub else base, FOLDER_FLAGS)
            try:
                if [stat(n, dir_fd=fd).st_size for n in names] != sizes:
                    return False
            finally:
                os.close(fd)
    except (OSError, ValueError):
        return False
    return True


def _read_dist_info(
    folder: Path, dist_info: str, hashes: dict[str, str] | None
) -> dict[str, bytes | None] | None:
    """The files of :data:`READ_DIST_INFO` the entry has, by name (None for one over
    :data:`TEXT_LIMIT`); None when one of them does not hash to its digest in ``hashes`` (the
    manifest's) or cannot be read. ``hashes`` None: a fresh entry, whose members were checked
    as they were written."""
    import hashlib

    base = os.path.join(folder, "files", dist_info) + os.sep
    wanted = dict.fromkeys(READ_DIST_INFO, "") if hashes is None else hashes
    read: dict[str, bytes | None] = {}
    for name, digest in wanted.items():
        try:
            if name in _LIMITED and os.stat(base + name).st_size > TEXT_LIMIT:
                read[name] = None
                continue
            with open(base + name, "rb") as handle:
                content = handle.read()
        except FileNotFoundError:
            if hashes is None:
                continue
            return None
        except OSError:
            return None
        if hashes is not None and b64(hashlib.sha256(content).digest()) != digest:
            return None
        read[name] = content
    return read


def check_members(folder: Path, members: list[CachedMember], *, hashes: bool) -> str | None:
    """The first member of the entry ``folder`` that is missing, of the wrong size or (with
    ``hashes``) of the wrong content, with what is wrong; None when all are right."""
    base = os.path.join(folder, "files") + os.sep
    stat_of = os.stat
    try:
        for member in members:
            size = stat_of(base + member.name).st_size
            if size != member.size:
                return f"{member.name} has {size} bytes where it should have {member.size}"
    except OSError as exc:
        return f"{exc.filename}: {exc.strerror}"
    if not hashes:
        return None
    import hashlib

    for member in members:
        digest = hashlib.sha256()
        try:
            with open(base + member.name, "rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
        except OSError as exc:
            return f"{member.name}: {exc.strerror}"
        if b64(digest.digest()) != member.sha256:
            return f"{member.name} does not match its hash"
    return None


class UnpackedWheel:
    """A wheel unpacked in the cache: ``folder / "files"`` holds its members, ``manifest`` its
    install layout (see the module's text), :attr:`members` every member."""

    __slots__ = ("_members", "checked", "folder", "manifest")

    def __init__(
        self, folder: Path, manifest: CachedLayout, checked: dict[str, bytes | None]
    ) -> None:
        self.folder = folder
        self.manifest = manifest
        #: the files of :data:`READ_DIST_INFO` it has, by name, as checked against their hashes
        #: (None: too large to read here, see :data:`TEXT_LIMIT`)
        self.checked = checked
        self._members: list[CachedMember] | None = None

    @property
    def members(self) -> list[CachedMember]:
        """Every member of the wheel."""
        if self._members is None:
            try:
                self._members = read_members(self.folder)
            except (OSError, ValueError) as exc:
                raise UnpackError(
                    f"the unpacked-wheel cache entry {self.folder} is damaged ({exc}): remove "
                    "it and install again."
                ) from exc
        return self._members

    @property
    def distribution(self) -> str:
        return self.manifest.distribution

    @property
    def dist_info_dir(self) -> str:
        return self.manifest.dist_info_dir

    @property
    def data_dir(self) -> str:
        return self.manifest.data_dir

    def read_dist_info(self, filename: str) -> str:
        return (self.folder / "files" / self.dist_info_dir / filename).read_text(encoding="utf-8")
