"""``fitwheel download`` without the command line: the files an install for one target would
use, saved into a folder.

For another machine (a profile, a sysroot, ``--python-version`` or ``--platform``), the target
is a :class:`~fitwheel.lock.targets.LockTarget` resolved exactly as ``lock`` resolves it (its own
tags, markers, variant ordering and torch route); the one-target lock is kept in memory,
:func:`~fitwheel.lock.selection.select` picks the target's files from it, and
:func:`~fitwheel.lock.syncing.fetch_files` brings each in through the download cache, checked
against its sha256. Wheels only there: a source distribution cannot be built for another
machine, so a project with no wheel for the target is refused by name (as ``pip download
--only-binary :all:`` refuses it, which pip requires with those options).

For this machine (none of those options), the files are those ``pip download`` saves: the
resolution is an install's (:func:`fitwheel.install.workflow.run_install`, ``--dry-run``, into
an empty environment of the Python fitwheel runs under, since ``pip download`` ignores what
is installed), with its variants and torch route for this machine; a project with source
distributions only is saved as its sdist, whose metadata is read from the index (PEP 658) or
prepared by its build backend, as pip prepares it. Each file is fetched through the download
cache, checked against the index's hashes.

Either way each file is then copied into the folder under its own name (whole or not at all;
never a link to the cached copy, which a change to the folder's file would spoil). A file
already in the folder with the expected sha256 is kept; one with the same name and other
contents is an error naming it (nothing is replaced behind the user's back).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import InputError, InstallationError
from fitwheel.lock.document import LockedPackage, LockedWheel
from fitwheel.lock.locking import LockOutcome, LockRequest, run_lock
from fitwheel.lock.selection import Host, select
from fitwheel.lock.targets import LockTarget
from fitwheel.reporter import SILENT, Reporter

if TYPE_CHECKING:
    from fitwheel.install.fetch.download import DownloadItem
    from fitwheel.install.outcome import InstallOutcome
    from fitwheel.paths import CacheLayout
    from fitwheel.torchbackend.routing import Router

#: what a download refuses for a project with source distributions only
_WHEELS_ONLY = (
    "fitwheel download saves wheels only (as 'pip download --only-binary :all:'): a source "
    "distribution is built on the machine that installs it. Build a wheel there ('pip wheel "
    "NAME -w DIR') and pass its folder with --find-links, or pin a version that has a wheel "
    "for the target"
)


class DownloadedFile:
    """One file of the target: where it is (or would be) in the folder, and what happened."""

    __slots__ = (
        "action",
        "filename",
        "label",
        "name",
        "path",
        "sha256",
        "source",
        "url",
        "version",
    )

    def __init__(
        self,
        name: str,
        version: str,
        filename: str,
        url: str | None,
        sha256: str | None,
        label: str | None,
        path: Path,
        action: str,
        source: tuple[LockedPackage, LockedWheel] | DownloadItem,
    ) -> None:
        self.name = name
        self.version = version
        self.filename = filename
        self.url = url
        #: the expected sha256 (None: this machine's file whose index gave none, until fetched)
        self.sha256 = sha256
        self.label = label
        self.path = path
        #: "save" (fetched into the folder) or "keep" (already there, same sha256)
        self.action = action
        #: what fetches it: the lock's entry, or (this machine) what the download cache takes
        self.source = source

    def report(self) -> dict[str, object]:
        return {
            "name": self.name,
            "version": self.version,
            "filename": self.filename,
            "url": self.url,
            "sha256": self.sha256,
            "variant_label": self.label,
            "path": str(self.path),
            "action": "kept" if self.action == "keep" else "saved",
        }


class DownloadOutcome:
    __slots__ = ("files", "notices", "router", "skipped_indexes", "target", "warnings")

    def __init__(
        self,
        target: LockTarget,
        files: list[DownloadedFile],
        *,
        warnings: Sequence[str] = (),
        notices: Sequence[str] = (),
        router: Router | None = None,
        skipped_indexes: dict[str, str] | None = None,
    ):
        self.target = target
        #: index URL -> why it could not be reached: the indexes left out
        self.skipped_indexes = {} if skipped_indexes is None else skipped_indexes
        self.files = files
        self.warnings = list(warnings)
        self.notices = list(notices)
        #: where the torch projects came from (None: no torch-backend setting)
        self.router = router


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


def _planned(dest: Path, filename: str, sha256: str | None, what: str) -> str:
    """ "keep" when ``dest`` holds ``filename`` with ``sha256`` already, else "save"; a file of
    that name with other contents (or something else in its place) is refused."""
    from fitwheel.integrity import file_sha256

    path = dest / filename
    if path.is_file():
        found = file_sha256(path)
        if sha256 is None or found != sha256:
            raise InstallationError(
                f"{path} exists with other contents (sha256 {found}, where {what} has "
                f"{sha256 or 'no published sha256'}): remove it, or save into another folder."
            )
        return "keep"
    if os.path.lexists(path):
        raise InstallationError(f"{path} exists and is not a file: remove it first.")
    return "save"


def plan_files(outcome: LockOutcome, target: LockTarget, dest: Path) -> list[DownloadedFile]:
    """The target's files and, for each, whether the folder holds it already (by sha256);
    a file of that name with other contents is refused."""
    selection = select(
        outcome.lock, host_of(target), allow_fallback=True
    )  # the resolution already refused what leaves a GPU unused (unless --allow-fallback)
    files = []
    for package, wheel in sorted(selection.files, key=lambda item: item[1].filename):
        what = f"{package.name} {package.version} from {wheel.url}"
        action = _planned(dest, wheel.filename, wheel.sha256, what)
        files.append(
            DownloadedFile(
                package.name,
                package.version,
                wheel.filename,
                wheel.url,
                wheel.sha256,
                wheel.label,
                dest / wheel.filename,
                action,
                (package, wheel),
            )
        )
    return files


def resolve_download(request: LockRequest, target: LockTarget) -> LockOutcome:
    """The one-target lock of ``request``, wheels only (``request.formats`` is set to
    ``--only-binary :all:``; see the module docstring)."""
    from fitwheel.resolve.formats import FormatControl

    request.formats = FormatControl(only_binary=[":all:"], implied_by=_WHEELS_ONLY)
    return run_lock(request, [target])


def save_files(
    request: LockRequest,
    outcome: LockOutcome | None,
    files: Sequence[DownloadedFile],
    dest: Path,
    *,
    jobs: int = 4,
    reporter: Reporter = SILENT,
) -> None:
    """Fetch the files marked "save" (through the download cache, each checked against its
    hashes) and place them in ``dest``."""
    from fitwheel.fs import link_or_copy
    from fitwheel.paths import CacheLayout, cache_root

    todo = [f for f in files if f.action == "save"]
    if not todo:
        return
    layout = CacheLayout(cache_root(request.sources.cache_dir, request.env))
    if outcome is not None:
        from fitwheel.lock.syncing import SyncedFile, SyncRequest, fetch_files
        from fitwheel.options import PlacementOptions

        sync = SyncRequest(
            sources=request.sources, placement=PlacementOptions(jobs=jobs), env=request.env
        )
        synced = []
        for f in todo:
            assert isinstance(f.source, tuple)
            synced.append(SyncedFile(f.source[0], f.source[1], "install"))
        paths = [done.path for done in fetch_files(sync, outcome.lock, synced, layout, reporter)]
    else:
        paths = _fetch_items(request, todo, layout, jobs, reporter)
    dest.mkdir(exist_ok=True)
    for f, path in zip(todo, paths, strict=True):
        try:
            # a copy, never a link to the cached file: a file in the folder is the user's to
            # change, and a change written through a link would spoil the cache
            link_or_copy(path, f.path, link=False, scratch=dest)
        except FileExistsError:
            raise InstallationError(
                f"{f.path} appeared while downloading: remove it, or save into another folder."
            ) from None


def _fetch_items(
    request: LockRequest,
    todo: Sequence[DownloadedFile],
    layout: CacheLayout,
    jobs: int,
    reporter: Reporter,
) -> list[Path]:
    """This machine's files, through the download cache (each checked against its hashes)."""
    from fitwheel.index.session import open_session
    from fitwheel.install.fetch.download import Downloader, DownloadItem

    session = open_session(request.sources, request.env, layout=layout, site_prefix=sys.prefix)
    items = []
    for f in todo:
        assert isinstance(f.source, DownloadItem)
        items.append(f.source)
    downloader = Downloader(session, layout.wheels, jobs=jobs)
    try:
        fetched = downloader.fetch_all(items, reporter)
    finally:
        downloader.close(wait=True)
    for f, done in zip(todo, fetched, strict=True):
        f.sha256 = done.sha256
    return [done.path for done in fetched]


def files_here(outcome: InstallOutcome, dest: Path) -> list[DownloadedFile]:
    """This machine's files (an install's pins, sdists included), and for each whether the
    folder holds it already."""
    from fitwheel.install.fetch.download import DownloadItem

    files = []
    for planned in sorted(outcome.planned, key=lambda p: p.candidate.link.filename):
        cand = planned.candidate
        link = cand.link
        sha256 = link.hashes.get("sha256")
        what = f"{cand.name} {cand.version} from {link.url}"
        action = _planned(dest, link.filename, sha256, what)
        item = DownloadItem(
            link.filename, link.url, {a: frozenset({h}) for a, h in link.hashes.items()}
        )
        files.append(
            DownloadedFile(
                str(cand.name),
                str(cand.version),
                link.filename,
                link.url,
                sha256,
                cand.label,
                dest / link.filename,
                action,
                item,
            )
        )
    return files


def resolve_here(
    request: LockRequest, target: LockTarget, dest: Path, reporter: Reporter
) -> InstallOutcome:
    """What an install of ``request`` into an empty environment of this interpreter would
    take on this machine (``--dry-run``: nothing is installed; sdists are not built, only their
    metadata is prepared where the index has none)."""
    from fitwheel.install.request import InstallRequest
    from fitwheel.install.workflow import run_install

    install = InstallRequest(
        requirements=request.requirements,
        requirement_files=request.requirement_files,
        constraint_files=request.constraint_files,
        python=sys.executable,
        dry_run=True,
        # an empty environment: what is installed does not count, as for pip download
        target_dir=str(dest),
        sources=request.sources,
        resolution=request.resolution,
        env=request.env,
        torch=request.torch,
    )
    # the markers are the interpreter's, as an install's
    here = target.target.replace(environment=None)
    return run_install(install, target=here, profile=target.profile, reporter=reporter)


def run_download(
    request: LockRequest,
    target: LockTarget,
    dest: Path,
    *,
    dry_run: bool = False,
    jobs: int = 4,
    reporter: Reporter = SILENT,
    this_machine: bool = False,
) -> DownloadOutcome:
    """Resolve for ``target`` and save its files into ``dest`` (``this_machine``: as pip
    download does here, sdists kept; else wheels only: see the module docstring)."""
    check_folder(dest, dry_run=dry_run)
    if this_machine:
        here = resolve_here(request, target, dest, reporter)
        files = files_here(here, dest)
        if not dry_run:
            save_files(request, None, files, dest, jobs=jobs, reporter=reporter)
        return DownloadOutcome(
            target, files, router=here.router, skipped_indexes=here.skipped_indexes
        )
    outcome = resolve_download(request, target)
    files = plan_files(outcome, target, dest)
    if not dry_run:
        save_files(request, outcome, files, dest, jobs=jobs, reporter=reporter)
    router = outcome.routers[0] if outcome.routers else None
    return DownloadOutcome(
        target,
        files,
        warnings=outcome.warnings,
        notices=outcome.notices,
        router=router,
        skipped_indexes=outcome.skipped_indexes,
    )
