"""A cache of unpacked wheels, so that installing a wheel again links (or copies) files instead
of inflating the archive.

Each wheel (by sha256) is unpacked once into ``{root}/{sha[:2]}/{sha}/`` after its RECORD was
checked against the content. Beside the files lie a list of every member (``[name, executable,
sha256, size]``, the hash in RECORD's urlsafe base64) and a manifest with the install layout
worked out once: the files that go to the root scheme folder (as one string), the folders they
need, their RECORD lines, and the members of the ``.data`` folders. Installing from the cache
then reads one small file and loops over nothing in Python that the kernel does not do anyway.

Later runs trust the entry, as a content-addressed cache may; :class:`UnpackedCache` with
``verify=True`` (``install --force-reinstall``) checks every file's size first, which catches a
file edited in place through a hard link, and unpacks the wheel afresh when one differs.
:mod:`fitwheel.install.linked` turns that manifest into an install plan whose files the
transaction hard-links (or copies) into place.

Only unpacking needs ``zipfile``, the inflater and the PyPA ``installer`` library's RECORD
parser; they are imported then, so that installing from the cache starts fast.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import stat
import struct
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fitwheel.errors import FitwheelError
from fitwheel.install.precreate import Precreator

if TYPE_CHECKING:
    import zipfile

MANIFEST = "fitwheel-unpacked.json"
MEMBERS = "fitwheel-members.json"
MANIFEST_VERSION = 3


def _inflater() -> Any:
    try:
        # ISA-L inflates about twice as fast as zlib; the output is the same
        from isal import isal_zlib  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - the optional accelerator is missing
        return zlib
    return isal_zlib


class UnpackError(FitwheelError):
    pass


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


#: members up to this size are inflated in one call; larger ones are streamed, so that memory
#: stays bounded whatever the wheel holds
_WHOLE = 8 << 20
_CHUNK = 1 << 20
_THREADED = 2 << 20
_THREADED_MEMBERS = 128
_LOCAL_HEADER = struct.Struct("<4sHHHHHIIIHH")
_LOCAL_MAGIC = b"PK\x03\x04"


def _workers() -> int:
    # inflating, hashing and writing release the GIL; beyond one thread a core (the files
    # are created by another thread while the wheel downloads) threads only contend
    return max(2, min(4, os.cpu_count() or 1))


class _Member:
    __slots__ = ("algorithm", "executable", "expected", "index", "info", "target")

    def __init__(
        self,
        index: int,
        info: zipfile.ZipInfo,
        target: str,
        algorithm: str,
        expected: tuple[str, int | None] | None,
        executable: bool,
    ) -> None:
        self.index = index
        self.info = info
        self.target = target
        self.algorithm = algorithm
        #: the RECORD digest (urlsafe base64) and size to match; None for RECORD itself
        self.expected = expected
        self.executable = executable


def _data_offset(fd: int, info: zipfile.ZipInfo, wheel: str) -> int:
    header = os.pread(fd, _LOCAL_HEADER.size, info.header_offset)
    if len(header) != _LOCAL_HEADER.size:
        raise UnpackError(f"{wheel} is truncated (at {info.filename}).")
    fields = _LOCAL_HEADER.unpack(header)
    if fields[0] != _LOCAL_MAGIC:
        raise UnpackError(f"{wheel} is damaged: no local header for {info.filename}.")
    return int(info.header_offset + _LOCAL_HEADER.size + fields[9] + fields[10])


def _chunks(fd: int, offset: int, size: int, wheel: str, name: str) -> Iterator[bytes]:
    """The stored bytes of a member, in pieces."""
    while size > 0:
        raw = os.pread(fd, min(_CHUNK, size), offset)
        if not raw:
            raise UnpackError(f"{wheel} is truncated (in {name}).")
        offset += len(raw)
        size -= len(raw)
        yield raw


def _contents(fd: int, info: zipfile.ZipInfo, wheel: str) -> Iterator[bytes]:
    """The inflated bytes of a member, in pieces (read with ``pread``: threads share ``fd``)."""
    import zipfile

    offset = _data_offset(fd, info, wheel)
    if info.compress_type == zipfile.ZIP_STORED:
        yield from _chunks(fd, offset, info.compress_size, wheel, info.filename)
        return
    if info.compress_type != zipfile.ZIP_DEFLATED:
        raise UnpackError(
            f"{wheel}: {info.filename} uses zip compression method {info.compress_type}; "
            "wheels use deflate or no compression."
        )
    inflate = _inflater()
    errors = (zlib.error, inflate.error)
    if info.file_size <= _WHOLE:
        raw = b"".join(_chunks(fd, offset, info.compress_size, wheel, info.filename))
        try:
            yield inflate.decompress(raw, -15, max(info.file_size, 1))
        except errors as exc:
            raise UnpackError(f"{wheel} is damaged ({info.filename}: {exc}).") from exc
        return
    inflater = inflate.decompressobj(-15)
    try:
        for raw in _chunks(fd, offset, info.compress_size, wheel, info.filename):
            pending = raw
            while pending:
                yield inflater.decompress(pending, _CHUNK)
                pending = inflater.unconsumed_tail
        yield inflater.flush()
    except errors as exc:
        raise UnpackError(f"{wheel} is damaged ({info.filename}: {exc}).") from exc


def _extract_small(fd: int, member: _Member, wheel: str) -> str:
    """:func:`_extract` for a member inflated in one piece, with less machinery per file (a
    wheel's members are mostly small, and many)."""
    info = member.info
    raw = os.pread(fd, info.compress_size, _data_offset(fd, info, wheel))
    if len(raw) != info.compress_size:
        raise UnpackError(f"{wheel} is truncated (in {info.filename}).")
    if info.compress_type == 8:  # deflate
        inflate = _inflater()
        try:
            data = inflate.decompress(raw, -15, max(info.file_size, 1))
        except (zlib.error, inflate.error) as exc:
            raise UnpackError(f"{wheel} is damaged ({info.filename}: {exc}).") from exc
    elif info.compress_type == 0:  # stored
        data = raw
    else:
        return _extract(fd, member, wheel)  # reports the method
    out = os.open(member.target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        written = os.write(out, data)
        if written < len(data):
            view = memoryview(data)[written:]
            while view:
                view = view[os.write(out, view) :]
        if member.executable:
            os.fchmod(out, 0o755)
    finally:
        os.close(out)
    sha256 = _b64(hashlib.sha256(data).digest())
    if member.expected is None:
        if zlib.crc32(data) != info.CRC or len(data) != info.file_size:
            raise UnpackError(f"cannot install {wheel}: {info.filename} is damaged (bad checksum).")
        return sha256
    checked = (
        sha256
        if member.algorithm == "sha256"
        else _b64(hashlib.new(member.algorithm, data).digest())
    )
    if member.expected != (checked, len(data)):
        raise UnpackError(
            f"cannot install {wheel}: {info.filename} does not match its RECORD entry "
            "(the wheel was altered or built wrongly)"
        )
    return sha256


def _extract(fd: int, member: _Member, wheel: str) -> str:
    """Write one member to its target, checking it against RECORD; returns its sha256 (b64)."""
    checker = hashlib.new(member.algorithm)
    digest = checker if member.algorithm == "sha256" else hashlib.sha256()
    crc = 0
    size = 0
    # not O_EXCL: the file may have been created (empty) while the wheel downloaded; nor
    # O_TRUNC: in this private folder it is empty anyway, and truncating makes ext4 flush the
    # file on close
    out = os.open(member.target, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        for piece in _contents(fd, member.info, wheel):
            checker.update(piece)
            if digest is not checker:
                digest.update(piece)
            if member.expected is None:
                crc = zlib.crc32(piece, crc)
            view = memoryview(piece)
            while view:
                view = view[os.write(out, view) :]
            size += len(piece)
        if member.executable:
            os.fchmod(out, 0o755)
    finally:
        os.close(out)
    name = member.info.filename
    if member.expected is None:
        # RECORD lists no hash for itself: the zip checksum guards it instead
        if crc != member.info.CRC or size != member.info.file_size:
            raise UnpackError(f"cannot install {wheel}: {name} is damaged (bad checksum).")
    elif member.expected != (_b64(checker.digest()), size):
        raise UnpackError(
            f"cannot install {wheel}: {name} does not match its RECORD entry "
            "(the wheel was altered or built wrongly)"
        )
    return _b64(digest.digest())


def _extract_all(wheel: Path, members: list[_Member]) -> list[str]:
    """Extract every member, several at a time; the first failure stops the rest."""
    digests: list[str] = [""] * len(members)
    # largest first, so that one big file does not end up alone at the end
    queue = iter(sorted(members, key=lambda m: m.info.compress_size, reverse=True))
    lock = threading.Lock()
    failures: list[BaseException] = []
    fd = os.open(wheel, os.O_RDONLY | os.O_CLOEXEC)

    def work() -> None:
        while not failures:
            with lock:
                member = next(queue, None)
            if member is None:
                return
            try:
                small = member.info.file_size <= _WHOLE
                extract = _extract_small if small else _extract
                digests[member.index] = extract(fd, member, wheel.name)
            except BaseException as exc:
                failures.append(exc)
                return

    try:
        # threads pay off for wheels with much to inflate or many files to create (creating a
        # file waits on the file system); small ones are often unpacked several at once
        big = (
            len(members) > _THREADED_MEMBERS
            or sum(m.info.compress_size for m in members) > _THREADED
        )
        count = min(_workers(), len(members)) if big else 1
        if count <= 1:
            work()
        else:
            threads = [threading.Thread(target=work, daemon=True) for _ in range(count)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
    finally:
        os.close(fd)
    if failures:
        raise failures[0]
    return digests


#: digital signatures of RECORD, which RECORD cannot list
_SIGNATURES = ("RECORD.jws", "RECORD.p7s")


def _read_record(data: bytes, wheel: str) -> dict[str, tuple[str, str, int]]:
    """RECORD's rows with a hash: path -> (algorithm, urlsafe-base64 digest, size)."""
    import csv
    import io

    try:
        rows = list(csv.reader(io.StringIO(data.decode("utf-8"), newline="")))
    except (UnicodeDecodeError, csv.Error) as exc:
        raise UnpackError(f"cannot install {wheel}: its RECORD cannot be read ({exc}).") from exc
    records: dict[str, tuple[str, str, int]] = {}
    for row in rows:
        if not row:
            continue
        if len(row) != 3 or not row[0]:
            raise UnpackError(f"cannot install {wheel}: its RECORD has a bad row {row!r}.")
        path, hash_, size = row
        if not hash_:
            continue  # RECORD itself; any other file without a hash is refused when met
        algorithm, sep, digest = hash_.partition("=")
        if not sep or not digest:
            raise UnpackError(f"cannot install {wheel}: RECORD's hash for {path} is malformed.")
        if algorithm not in hashlib.algorithms_guaranteed:
            raise UnpackError(f"{wheel}: RECORD uses the unknown hash {algorithm!r}.")
        try:
            size_value = int(size)
        except ValueError:
            raise UnpackError(
                f"cannot install {wheel}: RECORD gives {path} a hash but no size in bytes."
            ) from None
        records[path] = (algorithm, digest, size_value)
    return records


def _unpack(wheel: Path, folder: Path) -> dict[str, Any]:
    """Extract ``wheel`` into ``folder``, checking every member against RECORD on the way (one
    pass over the content)."""
    import zipfile

    from installer.sources import WheelFile

    with zipfile.ZipFile(wheel) as archive:
        source = WheelFile(archive)
        try:
            record_path = f"{source.dist_info_dir}/RECORD"
            records = _read_record(archive.read(record_path), wheel.name)
        except UnpackError:
            raise
        except Exception as exc:
            raise UnpackError(f"cannot install {wheel.name}: {exc}") from exc
        infos = [info for info in archive.infolist() if not info.filename.endswith("/")]
        manifest: dict[str, Any] = {
            "version": MANIFEST_VERSION,
            "distribution": source.distribution,
            "wheel_version": source.version,
            "dist_info_dir": source.dist_info_dir,
            "data_dir": source.data_dir,
        }
    base = str(folder / "files")
    members: list[_Member] = []
    parents: set[str] = set()
    names: set[str] = set()
    for info in infos:
        name = info.filename
        if name in names:
            raise UnpackError(f"{wheel.name} holds {name!r} twice.")
        names.add(name)
        parts = name.split("/")
        if name.startswith("/") or ".." in parts or "\\" in name:
            raise UnpackError(f"{wheel.name} holds an unsafe path {name!r}.")
        if info.flag_bits & 0x1:
            raise UnpackError(f"{wheel.name}: {name} is encrypted.")
        target = os.path.join(base, *parts)
        parents.add(os.path.dirname(target))
        record = records.get(name)
        algorithm = record[0] if record is not None else "sha256"
        expected: tuple[str, int | None] | None = None
        signature = name.startswith(source.dist_info_dir + "/") and parts[-1] in _SIGNATURES
        if name != record_path and not signature:
            if record is None:
                raise UnpackError(
                    f"cannot install {wheel.name}: {name} does not match its RECORD entry "
                    "(the wheel was altered or built wrongly)"
                )
            expected = (record[1], record[2])
        mode = info.external_attr >> 16
        executable = bool(mode and stat.S_ISREG(mode) and mode & 0o111)
        members.append(_Member(len(members), info, target, algorithm, expected, executable))
    for parent in sorted(parents):
        os.makedirs(parent, exist_ok=True)
    digests = _extract_all(wheel, members)
    listed = [
        [m.info.filename, m.executable, h, m.info.file_size]
        for m, h in zip(members, digests, strict=True)
    ]
    try:
        wheel_text = (Path(base) / manifest["dist_info_dir"] / "WHEEL").read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise UnpackError(f"cannot install {wheel.name}: its WHEEL file: {exc}") from exc
    manifest.update(layout(listed, manifest["dist_info_dir"], manifest["data_dir"], wheel_text))
    (folder / MEMBERS).write_text(json.dumps(listed, separators=(",", ":")))
    return manifest


_NEEDS_QUOTING = (",", '"', "\r", "\n")


def record_line(path: str, digest: str, size: int | str) -> str:
    """One RECORD row (CSV: a path with a comma, quote or line break is quoted)."""
    if any(c in path for c in _NEEDS_QUOTING):
        path = '"' + path.replace('"', '""') + '"'
    return f"{path},{digest},{size}\n"


def layout(
    members: list[list[Any]], dist_info: str, data_dir: str, wheel_text: str
) -> dict[str, Any]:
    """The install layout of a wheel's members, independent of the target environment."""
    from fitwheel.wheel.metadata import InvalidMetadataError, parse_wheel_info

    try:
        info = parse_wheel_info(wheel_text, f"{dist_info}/WHEEL")
        info.check_installable(dist_info)
    except InvalidMetadataError as exc:
        raise UnpackError(str(exc)) from exc
    record_path = dist_info + "/RECORD"
    data_prefix = data_dir + "/"
    files: list[str] = []
    record: list[str] = []
    dirs: set[str] = set()
    data: list[list[Any]] = []
    skipped: list[str] = []
    for name, executable, digest, size in members:
        if name == record_path:
            continue
        if "__pycache__/" in name and "__pycache__" in name.split("/")[:-1]:
            # byte-code shipped in a wheel is stale or hostile; Python writes its own
            skipped.append(name)
            continue
        if name.startswith(data_prefix):
            data.append([name, executable, digest, size])
            continue
        files.append(name)
        record.append(record_line(name, "sha256=" + digest, size))
        parent = name.rpartition("/")[0]
        while parent and parent not in dirs:
            dirs.add(parent)
            parent = parent.rpartition("/")[0]
    return {
        "root_is_purelib": info.root_is_purelib,
        "root_files": "\n".join(files),
        "root_dirs": "\n".join(sorted(dirs, key=lambda d: (d.count("/"), d))),
        "root_record": "".join(record),
        "data_members": data,
        "skipped": skipped,
    }


class UnpackedCache:
    def __init__(self, root: Path, *, verify: bool = False) -> None:
        self.root = root
        self.verify = verify
        # one process often asks twice (unpack after download, then install): load once
        self._loaded: dict[str, UnpackedWheel] = {}

    def folder(self, sha256: str) -> Path:
        return self.root / sha256[:2] / sha256

    def has(self, sha256: str) -> bool:
        return (self.folder(sha256) / MANIFEST).is_file()

    def precreator(self, **options: int) -> Precreator:
        """A folder whose files a :class:`Precreator` creates while the wheel downloads; hand
        it to :meth:`get`."""
        tmp = self.root / "tmp" / os.urandom(16).hex()
        tmp.mkdir(parents=True)
        return Precreator(tmp, **options)

    def get(self, wheel: Path, sha256: str, prepared: Precreator | None = None) -> UnpackedWheel:
        """The unpacked form of ``wheel`` (whose content hash is ``sha256``), unpacking it once
        (into ``prepared``'s folder when given)."""
        known = self._loaded.get(sha256)
        if known is not None:
            if prepared is not None:
                prepared.discard()
            return known
        folder = self.folder(sha256)
        manifest = self._load(folder)
        if prepared is not None and (manifest is not None or prepared.tainted):
            prepared.discard()
            prepared = None
        if manifest is None:
            if prepared is not None:
                tmp = prepared.folder
            else:
                tmp = self.root / "tmp" / os.urandom(16).hex()
                tmp.mkdir(parents=True)
            try:
                try:
                    manifest = _unpack(wheel, tmp)
                finally:
                    if prepared is not None:
                        prepared.close()
                (tmp / MANIFEST).write_text(json.dumps(manifest))
                folder.parent.mkdir(parents=True, exist_ok=True)
                shutil.rmtree(folder, ignore_errors=True)  # a damaged earlier copy
                try:
                    os.rename(tmp, folder)
                except OSError:
                    # another process unpacked the same wheel first; theirs is as good
                    manifest = self._load(folder)
                    if manifest is None:
                        raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        unpacked = self._loaded[sha256] = UnpackedWheel(folder, manifest)
        return unpacked

    def _load(self, folder: Path) -> dict[str, Any] | None:
        try:
            data = json.loads((folder / MANIFEST).read_text())
        except (OSError, ValueError):
            return None
        if not isinstance(data, dict) or data.get("version") != MANIFEST_VERSION:
            return None
        if not isinstance(data.get("root_files"), str):
            return None
        if self.verify:
            base = os.path.join(folder, "files") + os.sep
            stat_of = os.stat
            try:
                for name, _executable, _digest, size in _read_members(folder):
                    # a file changed in place (through a hard link from an environment)
                    # usually changes size
                    if stat_of(base + name).st_size != size:
                        return None
            except (OSError, ValueError, TypeError):
                return None
        return data


def _read_members(folder: Path) -> list[list[Any]]:
    members = json.loads((folder / MEMBERS).read_text())
    if not isinstance(members, list):
        raise ValueError(f"{folder / MEMBERS} is not a list")
    return members


class UnpackedWheel:
    """A wheel unpacked in the cache: ``folder / "files"`` holds its members, ``manifest`` its
    install layout (see the module's text), :attr:`members` every member."""

    __slots__ = ("_members", "folder", "manifest")

    def __init__(self, folder: Path, manifest: dict[str, Any]) -> None:
        self.folder = folder
        self.manifest = manifest
        self._members: list[list[Any]] | None = None

    @property
    def members(self) -> list[list[Any]]:
        """``[name, executable, sha256 (urlsafe base64), size]`` of every member."""
        if self._members is None:
            try:
                self._members = _read_members(self.folder)
            except (OSError, ValueError) as exc:
                raise UnpackError(
                    f"the unpacked-wheel cache entry {self.folder} is damaged ({exc}): remove "
                    "it and install again."
                ) from exc
        return self._members

    @property
    def distribution(self) -> str:
        return str(self.manifest["distribution"])

    @property
    def dist_info_dir(self) -> str:
        return str(self.manifest["dist_info_dir"])

    @property
    def data_dir(self) -> str:
        return str(self.manifest["data_dir"])

    def read_dist_info(self, filename: str) -> str:
        return (self.folder / "files" / self.dist_info_dir / filename).read_text(encoding="utf-8")
