"""The one reader of source distribution archives (``.tar.gz``, ``.tar``, ``.zip``): untrusted
input, unpacked into a fresh folder within bounds.

Every member name is checked as wheel members are (no absolute paths, no ``..``, no control
characters, no backslashes, no duplicates); a symbolic link is kept only when it is relative
and points inside the tree, a hard link only to a regular file met earlier (it is copied);
devices, FIFOs and other special members are refused. The member count, each member's size
and their total are capped, and so is the time unpacking may take. ``.zip`` sdists are read by
the one zip reader (:class:`fitwheel.wheel.archive.WheelArchive`, in its plain-zip mode), so
they get its central-directory, overlap and inflate checks too.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import time
from pathlib import Path
from typing import BinaryIO

from fitwheel._values import Frozen
from fitwheel.errors import BuildError
from fitwheel.wheel.archive import check_member_name

_CHUNK = 1 << 20


class SdistArchiveError(BuildError):
    """A source distribution fitwheel refuses to unpack; the message names the file."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        super().__init__(
            f"{path}: {problem}. fitwheel unpacks no source distribution it cannot trust: "
            "download it again, or report it to its publisher."
        )


class SdistLimits(Frozen):
    """Bounds on what an sdist may hold: far above real ones, far below an archive bomb."""

    __slots__ = ("max_member_size", "max_members", "max_seconds", "max_total_size")
    max_members: int
    max_member_size: int
    max_total_size: int
    max_seconds: float

    def __init__(
        self,
        max_members: int = 200_000,
        max_member_size: int = 2 << 30,
        max_total_size: int = 8 << 30,
        max_seconds: float = 300.0,
    ) -> None:
        init = object.__setattr__
        init(self, "max_members", max_members)
        init(self, "max_member_size", max_member_size)
        init(self, "max_total_size", max_total_size)
        init(self, "max_seconds", max_seconds)


DEFAULT_SDIST_LIMITS = SdistLimits()


class _Budget:
    """What is left of the limits while one archive is unpacked."""

    def __init__(self, path: Path, limits: SdistLimits) -> None:
        self.path = path
        self.limits = limits
        self.members = 0
        self.total = 0
        self.deadline = time.monotonic() + limits.max_seconds
        self.names: set[str] = set()

    def member(self, name: str, size: int) -> str:
        """Check one member; returns its name without a trailing ``/``."""
        problem = check_member_name(name)
        if problem:
            raise SdistArchiveError(self.path, problem)
        name = name.rstrip("/")
        if name in self.names:
            raise SdistArchiveError(self.path, f"member {name!r} appears twice")
        self.names.add(name)
        self.members += 1
        if self.members > self.limits.max_members:
            raise SdistArchiveError(
                self.path, f"it holds more than {self.limits.max_members} members"
            )
        if size > self.limits.max_member_size:
            raise SdistArchiveError(
                self.path,
                f"member {name!r} declares {size} bytes (limit {self.limits.max_member_size})",
            )
        self.grow(name, size)
        return name

    def grow(self, name: str, size: int) -> None:
        self.total += size
        if self.total > self.limits.max_total_size:
            raise SdistArchiveError(
                self.path,
                f"its members hold more than {self.limits.max_total_size} bytes in all "
                f"(at {name!r})",
            )
        self.tick()

    def tick(self) -> None:
        if time.monotonic() > self.deadline:
            raise SdistArchiveError(
                self.path, f"unpacking took longer than {self.limits.max_seconds:g} s"
            )


def _inside(root: Path, name: str) -> Path:
    return root.joinpath(*name.split("/"))


def _link_target_ok(name: str, target: str) -> bool:
    """A relative symlink target that stays inside the tree, seen from member ``name``."""
    if not target or target.startswith("/") or "\\" in target or "\x00" in target:
        return False
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(name), target))
    return not (joined == ".." or joined.startswith("../") or joined.startswith("/"))


def unpack_sdist(path: Path, dest: Path, *, limits: SdistLimits = DEFAULT_SDIST_LIMITS) -> Path:
    """Unpack the sdist at ``path`` into the empty folder ``dest``; returns the source tree: the
    archive's one top-level folder (``{name}-{version}/``), or ``dest`` when it has several."""
    dest.mkdir(parents=True, exist_ok=True)
    budget = _Budget(path, limits)
    lower = path.name.lower()
    if lower.endswith(".zip"):
        _unpack_zip(path, dest, budget)
    elif lower.endswith((".tar.gz", ".tgz", ".tar")):
        _unpack_tar(path, dest, budget)
    else:
        raise SdistArchiveError(path, "not a .tar.gz or .zip source distribution")
    tops = [entry for entry in dest.iterdir()]
    if len(tops) == 1 and tops[0].is_dir() and not tops[0].is_symlink():
        return tops[0]
    return dest


def _unpack_tar(path: Path, dest: Path, budget: _Budget) -> None:
    import tarfile

    regular: dict[str, Path] = {}
    try:
        with tarfile.open(path, mode="r:*") as archive:
            for info in archive:
                if info.isdir():
                    name = budget.member(info.name, 0)
                    _inside(dest, name).mkdir(parents=True, exist_ok=True)
                    continue
                if info.isreg():
                    name = budget.member(info.name, info.size)
                    target = _inside(dest, name)
                    _safe_parent(dest, target, path)
                    source = archive.extractfile(info)
                    assert source is not None
                    with source, target.open("xb") as out:
                        left = info.size
                        while left > 0:
                            chunk = source.read(min(_CHUNK, left))
                            if not chunk:
                                raise SdistArchiveError(path, f"member {name!r} is truncated")
                            out.write(chunk)
                            left -= len(chunk)
                            budget.tick()
                    # keep the owner's execute bit (build scripts), nothing else of the mode
                    if info.mode & 0o100:
                        target.chmod(0o755)
                    regular[name] = target
                    continue
                if info.issym():
                    name = budget.member(info.name, 0)
                    if not _link_target_ok(name, info.linkname):
                        raise SdistArchiveError(
                            path,
                            f"member {name!r} is a link to {info.linkname!r}, outside the tree",
                        )
                    target = _inside(dest, name)
                    _safe_parent(dest, target, path)
                    os.symlink(info.linkname, target)
                    continue
                if info.islnk():
                    name = budget.member(info.name, 0)
                    linked = regular.get(info.linkname.rstrip("/"))
                    if linked is None:
                        raise SdistArchiveError(
                            path,
                            f"member {name!r} is a hard link to {info.linkname!r}, which is "
                            "not a file met earlier in the archive",
                        )
                    target = _inside(dest, name)
                    _safe_parent(dest, target, path)
                    budget.grow(name, linked.stat().st_size)
                    shutil.copyfile(linked, target)
                    regular[name] = target
                    continue
                raise SdistArchiveError(
                    path, f"member {info.name!r} is a device, FIFO or other special file"
                )
    except (tarfile.TarError, EOFError, OSError) as exc:
        if isinstance(exc, SdistArchiveError):
            raise
        raise SdistArchiveError(path, f"not a readable tar archive ({exc})") from None


def _safe_parent(root: Path, target: Path, archive: Path) -> None:
    """Create ``target``'s folder, refusing one reached through a symbolic link (a link
    member followed by a file under it would write outside the tree)."""
    parent = target.parent
    current = root
    for part in parent.relative_to(root).parts:
        current = current / part
        if current.is_symlink():
            raise SdistArchiveError(
                archive, f"a member is placed under the link {current.relative_to(root)}"
            )
    parent.mkdir(parents=True, exist_ok=True)
    if target.exists() or target.is_symlink():
        raise SdistArchiveError(archive, f"member {target.relative_to(root)} appears twice")


class _Sink:
    def __init__(self, out: BinaryIO, budget: _Budget) -> None:
        self.out = out
        self.budget = budget

    def __call__(self, data: bytes) -> None:
        self.out.write(data)
        self.budget.tick()


def _unpack_zip(path: Path, dest: Path, budget: _Budget) -> None:
    from fitwheel.errors import InvalidWheelError
    from fitwheel.wheel.archive import WheelArchive

    try:
        with WheelArchive(path, wheel=False) as archive:
            for member in archive.members:
                if member.name.endswith("/"):
                    name = budget.member(member.name, 0)
                    _inside(dest, name).mkdir(parents=True, exist_ok=True)
                    continue
                name = budget.member(member.name, member.file_size)
                target = _inside(dest, name)
                _safe_parent(dest, target, path)
                with target.open("xb") as out:
                    archive.inflate(member, _Sink(out, budget))
    except InvalidWheelError as exc:
        raise SdistArchiveError(path, str(exc).split(". fitwheel uses")[0]) from None
