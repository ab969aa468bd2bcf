"""``fitwheel sync`` without the command line: make an environment exactly the lock's part.

Never resolves: the files are those :func:`~fitwheel.lock.selection.select` picks for the host.
Each is fetched from where the lock says (its ``path`` beside the lock when that file exists,
else its ``url``), or, relocated, from a ``--find-links`` folder or page or an ``--index-url``
that serves the same filename; every byte is checked against the locked sha256 before anything
is installed. Then one transaction installs what is missing or different and removes what the
lock does not list (``inexact`` keeps those), all or nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from fitwheel.errors import FitwheelError, InputError, InstallationError, NetworkError
from fitwheel.install.cache.unpacked import UnpackedCache
from fitwheel.install.env.interpreter import TargetEnvironment, inspect_environment
from fitwheel.install.env.session import EnvironmentSession, installed_label
from fitwheel.install.fetch.download import Downloaded, Downloader, DownloadItem
from fitwheel.install.place.core import InstallResult, WheelToInstall, install_wheels
from fitwheel.install.place.transaction import Operation
from fitwheel.lock.document import Lock, LockedPackage, LockedWheel
from fitwheel.lock.selection import Host, Selection, select
from fitwheel.options import PlacementOptions, SourceOptions
from fitwheel.paths import CacheLayout, cache_root
from fitwheel.reporter import SILENT, Reporter
from fitwheel.variants.names import canonicalize_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.index.finder import Finder
    from fitwheel.index.http import Session

#: installed tools that sync leaves alone even when the lock does not list them
KEPT = frozenset({"pip"})


class SyncRequest:
    """What ``sync`` (and ``bundle``'s downloads) ask for: the environment, the shared source
    and placement records (:mod:`fitwheel.options`), and how exactly the lock is followed."""

    def __init__(
        self,
        *,
        python: str | None = None,
        inexact: bool = False,
        allow_fallback: bool = False,
        dry_run: bool = False,
        sources: SourceOptions | None = None,
        placement: PlacementOptions | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.python = python
        self.inexact = inexact
        self.allow_fallback = allow_fallback
        self.dry_run = dry_run
        #: find-links, an index for files the lock names by name only, trust, time limits,
        #: the cache and ``--offline``
        self.sources = SourceOptions() if sources is None else sources
        #: link mode, parallel downloads, PEP 668
        self.placement = PlacementOptions() if placement is None else placement
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env


class SyncedFile:
    __slots__ = ("action", "package", "source", "wheel")

    def __init__(self, package: LockedPackage, wheel: LockedWheel, action: str) -> None:
        self.package = package
        self.wheel = wheel
        #: "install" or "keep" (installed already as locked)
        self.action = action
        #: where it was fetched from
        self.source = wheel.url or wheel.path or ""


class SyncOutcome:
    __slots__ = ("environment", "files", "installed", "removed", "selection")

    def __init__(
        self,
        environment: TargetEnvironment,
        selection: Selection,
        files: list[SyncedFile],
        removed: list[str],
        installed: InstallResult | None,
    ) -> None:
        self.environment = environment
        self.selection = selection
        self.files = files
        self.removed = removed
        self.installed = installed


def host_environment(request: SyncRequest) -> TargetEnvironment:
    layout = CacheLayout(cache_root(request.sources.cache_dir, request.env))
    return inspect_environment(request.python, request.env, cache_dir=layout.envs)


class _Locator:
    """Where each locked file is read from; with ``offline``, nothing but local files."""

    def __init__(self, lock_dir: Path, request: SyncRequest) -> None:
        from fitwheel.index.findlinks import folder_links, local_path

        self.lock_dir = lock_dir
        self.offline = request.sources.offline
        self.local: dict[str, Path] = {}
        self.remote_pages: list[str] = []
        for location in request.sources.find_links:
            folder = local_path(location)
            if folder is not None:
                if not folder.is_dir():
                    raise InputError(f"--find-links {location}: no such folder.")
                for link in folder_links(folder):
                    found = local_path(link.url)
                    if found is not None:
                        self.local.setdefault(link.filename, found)
                for path in sorted(folder.glob("files/*/*.whl")):
                    self.local.setdefault(path.name, path)  # a bundle's (or index's) files
            elif self.offline:
                raise InputError(f"--find-links {location} is not a local folder, and --offline.")
            else:
                self.remote_pages.append(location)
        self.index_url = request.sources.index_url
        if self.index_url and self.offline:
            raise InputError("--index-url and --offline contradict each other: drop one.")
        self._finder: Finder | None = None

    def _relocated(self, package: LockedPackage, wheel: LockedWheel, session: object) -> str | None:
        if not (self.remote_pages or self.index_url):
            return None
        from fitwheel.index.config import IndexConfig
        from fitwheel.index.finder import Finder
        from fitwheel.index.http import Session

        if self._finder is None:
            config = IndexConfig(self.index_url, (), tuple(self.remote_pages))
            self._finder = Finder(config, session if isinstance(session, Session) else None)
        for link in self._finder.links(package.name):
            if link.filename == wheel.filename:
                return str(link.url)
        return None

    def url_of(self, package: LockedPackage, wheel: LockedWheel, session: object) -> str:
        if wheel.path is not None:
            path = Path(wheel.path)
            path = path if path.is_absolute() else self.lock_dir / path
            if path.is_file():
                return path.resolve().as_uri()
        found = self.local.get(wheel.filename)
        if found is not None:
            return found.resolve().as_uri()
        relocated = self._relocated(package, wheel, session)
        if relocated is not None:
            return relocated
        if self.offline or wheel.url is None:
            raise InputError(
                f"{package.describe()}: {wheel.filename} is not in the bundle or --find-links "
                f"folders{' and --offline is on' if self.offline else ''}"
            )
        return wheel.url


def run_sync(
    request: SyncRequest,
    lock: Lock,
    host: Host,
    *,
    environment: TargetEnvironment | None = None,
    reporter: Reporter = SILENT,
    commit_hook: Callable[[Operation], None] | None = None,
) -> SyncOutcome:
    env = environment if environment is not None else host_environment(request)
    if env.externally_managed and not request.placement.break_system_packages:
        raise InstallationError(
            f"{env.python} belongs to the operating system's Python, whose packages the system "
            "package manager owns (PEP 668): create a virtual environment and pass --python "
            "VENV, or pass --break-system-packages to sync there anyway."
        )
    selection = select(lock, host, allow_fallback=request.allow_fallback)
    layout = CacheLayout(cache_root(request.sources.cache_dir, request.env))
    with EnvironmentSession(reporter=reporter) as session:
        if request.dry_run:
            session.look_at(env)
        else:
            session.hold(env)
        notes = session.recovered
        installed = session.installed()
        files: list[SyncedFile] = []
        for package, wheel in selection.files:
            current = installed.get(canonicalize_name(package.name))
            same = (
                current is not None
                and _same_version(current.version, package.version)
                and installed_label(current) == wheel.label
            )
            files.append(SyncedFile(package, wheel, "keep" if same else "install"))
        wanted = {canonicalize_name(p.name) for p, _w in selection.files}
        removed: list[str] = (
            []
            if request.inexact
            else sorted(n for n in installed if n not in wanted and n not in KEPT)
        )
        outcome = SyncOutcome(env, selection, files, removed, None)
        if request.dry_run:
            return outcome
        todo = [f for f in files if f.action == "install"]
        if not todo and not removed:
            outcome.installed = InstallResult([], [], notes)
            return outcome
        fetched = fetch_files(request, lock, todo, layout, reporter)
        unpacked = UnpackedCache(layout.unpacked, reporter=reporter)
        wheels = [
            WheelToInstall(
                done.path,
                f.package.name,
                f.package.version,
                requested=True,
                sha256=done.sha256,
            )
            for f, done in zip(todo, fetched, strict=True)
        ]
        outcome.installed = install_wheels(
            env,
            wheels,
            unpacked=unpacked,
            link_mode=request.placement.link_mode,
            reporter=reporter,
            lock=False,
            remove=removed,
            commit_hook=commit_hook,
        )
        outcome.installed.notes[:0] = notes
        return outcome


def _same_version(installed: str, locked: str) -> bool:
    from packaging.version import InvalidVersion, Version

    try:
        return Version(installed) == Version(locked)
    except InvalidVersion:
        return installed == locked


def fetch_files(
    request: SyncRequest,
    lock: Lock,
    todo: Sequence[SyncedFile],
    layout: CacheLayout,
    reporter: Reporter = SILENT,
) -> list[Downloaded]:
    from fitwheel.index.findlinks import local_path

    session: Session | None = None
    remote = request.sources.index_url or any(
        local_path(loc) is None for loc in request.sources.find_links
    )
    if not request.sources.offline and (
        remote
        or any(
            _cached(layout, f.wheel) is None
            and f.wheel.path is None
            and local_path(f.wheel.url or "") is None
            for f in todo
        )
    ):
        # the HTTP stack loads only when something may have to be downloaded
        from fitwheel.index.session import open_session

        session = open_session(request.sources, request.env)
    locator = _Locator(Path(lock.source).resolve().parent, request)
    items = []
    for f in todo:
        cached = _cached(layout, f.wheel)
        if cached is not None:
            # fetched before: read from the cache (the downloader checks it again)
            items.append(DownloadItem(f.wheel.filename, cached.as_uri(), _hashes(f.wheel)))
            continue
        try:
            url = locator.url_of(f.package, f.wheel, session)
        except FitwheelError as exc:
            raise NetworkError(f"{lock.source}: {exc}. Nothing was changed.") from None
        if url.startswith(("http:", "https:")) and request.sources.offline:
            raise InputError(
                f"{lock.source}: {f.package.describe()}: {f.wheel.filename} would be fetched "
                f"from {url}, but --offline is on. Nothing was changed."
            )
        f.source = url
        items.append(DownloadItem(f.wheel.filename, url, _hashes(f.wheel)))
    downloader = Downloader(session, layout.wheels, jobs=request.placement.jobs)
    by_url = {item.url: f for item, f in zip(items, todo, strict=True)}
    try:
        return downloader.fetch_all(items, reporter)
    except FitwheelError as exc:
        entry = _entry_named(str(exc), by_url)
        raise NetworkError(
            f"{lock.source}: {entry}{exc} Nothing was installed or removed."
        ) from None
    finally:
        downloader.close()


def _cached(layout: CacheLayout, wheel: LockedWheel) -> Path | None:
    """The file in the download cache (the downloader's own layout), if it is there."""
    path = layout.wheels / wheel.sha256[:2] / wheel.sha256 / wheel.filename
    return path if path.is_file() else None


def _hashes(wheel: LockedWheel) -> dict[str, frozenset[str]]:
    # the locked sha256 is what is checked (never a hash the server offers)
    return {"sha256": frozenset({wheel.sha256})}


def _entry_named(message: str, by_url: Mapping[str, SyncedFile]) -> str:
    for url, f in by_url.items():
        if url in message or f.wheel.filename in message:
            return f"{f.package.describe()}: "
    return ""
