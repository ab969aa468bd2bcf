"""``fitwheel download`` without the command line: the files an install for one target would
use, saved into a folder.

The target is a :class:`~fitwheel.lock.targets.LockTarget` (this machine, a profile, a sysroot,
with ``--python-version`` / ``--platform``), resolved exactly as ``lock`` resolves it (its own
tags, markers, variant ordering and torch route); the one-target lock is kept in memory,
:func:`~fitwheel.lock.selection.select` picks the target's files from it, and
:func:`~fitwheel.lock.syncing.fetch_files` brings each in through the download cache, checked
against its sha256. Each file is then copied into the folder under its own name (whole or not at
all; never a link to the cached copy, which a change to the folder's file would spoil).

Wheels only: a lock names wheels, and a source distribution cannot be built for another
machine, so a project with no wheel for the target is refused by name (as ``pip download
--only-binary :all:`` refuses it), on this machine too. A file already in the folder with the
expected sha256 is kept; one with the same name and other contents is an error naming it
(nothing is replaced behind the user's back).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from fitwheel.errors import InputError, InstallationError
from fitwheel.lock.document import LockedPackage, LockedWheel
from fitwheel.lock.locking import LockOutcome, LockRequest, run_lock
from fitwheel.lock.selection import Host, select
from fitwheel.lock.targets import LockTarget
from fitwheel.reporter import SILENT, Reporter

#: what a download refuses for a project with source distributions only
_WHEELS_ONLY = (
    "fitwheel download saves wheels only (as 'pip download --only-binary :all:'): a source "
    "distribution is built on the machine that installs it. Build a wheel there ('pip wheel "
    "NAME -w DIR') and pass its folder with --find-links, or pin a version that has a wheel "
    "for the target"
)


class DownloadedFile:
    """One file of the target: where it is (or would be) in the folder, and what happened."""

    __slots__ = ("action", "package", "path", "wheel")

    def __init__(self, package: LockedPackage, wheel: LockedWheel, path: Path, action: str):
        self.package = package
        self.wheel = wheel
        self.path = path
        #: "save" (fetched into the folder) or "keep" (already there, same sha256)
        self.action = action

    def report(self) -> dict[str, object]:
        return {
            "name": self.package.name,
            "version": self.package.version,
            "filename": self.wheel.filename,
            "url": self.wheel.url,
            "sha256": self.wheel.sha256,
            "variant_label": self.wheel.label,
            "path": str(self.path),
            "action": "kept" if self.action == "keep" else "saved",
        }


class DownloadOutcome:
    __slots__ = ("files", "lock", "target")

    def __init__(self, lock: LockOutcome, target: LockTarget, files: list[DownloadedFile]):
        self.lock = lock
        self.target = target
        self.files = files


def host_of(target: LockTarget) -> Host:
    """The host that takes ``target``'s files from a lock made for it."""
    return Host(target.target, target.devices, target.environment, target.tags, target.source)


def check_folder(dest: Path, *, dry_run: bool = False) -> None:
    """Refuse a folder that cannot hold the files: its parent missing, a file in its place, or
    no permission to write in it."""
    parent = dest.parent
    if not dest.exists() and not parent.is_dir():
        raise InputError(
            f"-d {dest}: its parent folder {parent} does not exist; create it first, or give "
            "another folder."
        )
    if dest.exists() and not dest.is_dir():
        raise InputError(f"-d {dest} is a file, not a folder: give a folder to save into.")
    where = dest if dest.exists() else parent
    if not dry_run and not os.access(where, os.W_OK | os.X_OK):
        raise InstallationError(
            f"-d {dest}: no permission to write in {where}; give a folder you can write to."
        )


def plan_files(outcome: LockOutcome, target: LockTarget, dest: Path) -> list[DownloadedFile]:
    """The target's files and, for each, whether the folder holds it already (by sha256);
    a file of that name with other contents is refused."""
    from fitwheel.integrity import file_sha256

    selection = select(
        outcome.lock, host_of(target), allow_fallback=True
    )  # the resolution already refused what leaves a GPU unused (unless --allow-fallback)
    files = []
    for package, wheel in sorted(selection.files, key=lambda item: item[1].filename):
        path = dest / wheel.filename
        action = "save"
        if path.is_file():
            found = file_sha256(path)
            if found != wheel.sha256:
                raise InstallationError(
                    f"{path} exists with other contents (sha256 {found}, where "
                    f"{package.name} {package.version} from {wheel.url} has {wheel.sha256}): "
                    "remove it, or save into another folder."
                )
            action = "keep"
        elif os.path.lexists(path):
            raise InstallationError(f"{path} exists and is not a file: remove it first.")
        files.append(DownloadedFile(package, wheel, path, action))
    return files


def resolve_download(request: LockRequest, target: LockTarget) -> LockOutcome:
    """The one-target lock of ``request``, wheels only (``request.formats`` is set to
    ``--only-binary :all:``; see the module docstring)."""
    from fitwheel.resolve.formats import FormatControl

    request.formats = FormatControl(only_binary=[":all:"], implied_by=_WHEELS_ONLY)
    return run_lock(request, [target])


def save_files(
    request: LockRequest,
    outcome: LockOutcome,
    files: Sequence[DownloadedFile],
    dest: Path,
    *,
    jobs: int = 4,
    reporter: Reporter = SILENT,
) -> None:
    """Fetch the files marked "save" (through the download cache, each checked against its
    sha256) and place them in ``dest``."""
    from fitwheel.fs import link_or_copy
    from fitwheel.lock.syncing import SyncedFile, SyncRequest, fetch_files
    from fitwheel.options import PlacementOptions
    from fitwheel.paths import CacheLayout, cache_root

    todo = [f for f in files if f.action == "save"]
    if not todo:
        return
    sync = SyncRequest(
        sources=request.sources, placement=PlacementOptions(jobs=jobs), env=request.env
    )
    layout = CacheLayout(cache_root(request.sources.cache_dir, request.env))
    synced = [SyncedFile(f.package, f.wheel, "install") for f in todo]
    fetched = fetch_files(sync, outcome.lock, synced, layout, reporter)
    dest.mkdir(exist_ok=True)
    for f, done in zip(todo, fetched, strict=True):
        try:
            # a copy, never a link to the cached file: a file in the folder is the user's to
            # change, and a change written through a link would spoil the cache
            link_or_copy(done.path, f.path, link=False, scratch=dest)
        except FileExistsError:
            raise InstallationError(
                f"{f.path} appeared while downloading: remove it, or save into another folder."
            ) from None


def run_download(
    request: LockRequest,
    target: LockTarget,
    dest: Path,
    *,
    dry_run: bool = False,
    jobs: int = 4,
    reporter: Reporter = SILENT,
) -> DownloadOutcome:
    check_folder(dest, dry_run=dry_run)
    outcome = resolve_download(request, target)
    files = plan_files(outcome, target, dest)
    if not dry_run:
        save_files(request, outcome, files, dest, jobs=jobs, reporter=reporter)
    return DownloadOutcome(outcome, target, files)
