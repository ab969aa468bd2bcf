"""``fitwheel install`` without the command line: resolve, download, install, report.

:func:`run_install` takes an :class:`InstallRequest` (what the flags say) and returns an
:class:`InstallOutcome` (what was chosen, kept, fetched and installed); the CLI only renders it.

A pinned source distribution is built into a wheel by :class:`fitwheel.sdist.builder.
SourceBuilder`, whose build environments this same workflow fills (the build requirements are
resolved and installed by fitwheel, with the request's indexes, caches and format options).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from packaging.utils import NormalizedName
from packaging.version import InvalidVersion, Version

from fitwheel.errors import FitwheelError
from fitwheel.index.auth import redact
from fitwheel.index.config import IndexConfig, PipSettings, load_index_config, load_pip_settings
from fitwheel.index.finder import Finder
from fitwheel.index.http import DEFAULT_RETRIES, DEFAULT_TIMEOUT, Session
from fitwheel.index.httpcache import HttpCache
from fitwheel.install.download import Downloaded, Downloader, DownloadItem
from fitwheel.install.environment import TargetEnvironment, inspect_environment
from fitwheel.install.precreate import Precreator
from fitwheel.install.resolved import Resolved
from fitwheel.install.transaction import environment_lock, interruptible, recover
from fitwheel.install.unpacked import UnpackedCache
from fitwheel.integrity import HashMismatchError, HashRequiredError
from fitwheel.paths import CacheLayout, cache_root
from fitwheel.platform.profile import Profile
from fitwheel.resolve.candidates import Candidate, CandidateSource, Options
from fitwheel.resolve.diagnose import shadowed
from fitwheel.resolve.requirements import UserInput, UserRequirement, collect
from fitwheel.resolve.resolver import Resolution, resolve, skipped_versions, start_prefetch
from fitwheel.variants.names import canonicalize_name
from fitwheel.variants.ordering import Target

if TYPE_CHECKING:
    # the installer is loaded where wheels are installed: a --dry-run does without it
    from fitwheel.install.installer import InstallResult
    from fitwheel.sdist.builder import SourceBuilder
    from fitwheel.torchbackend.routing import Router
    from fitwheel.torchbackend.settings import TorchSettings


class InstallRequest:
    """What the command line asks for (every flag by keyword)."""

    def __init__(
        self,
        *,
        requirements: Sequence[str] = (),
        requirement_files: Sequence[str] = (),
        constraint_files: Sequence[str] = (),
        editables: Sequence[str] = (),
        index_url: str | None = None,
        extra_index_urls: Sequence[str] = (),
        find_links: Sequence[str] = (),
        no_index: bool = False,
        index_strategy: str = "first-index",
        python: str | None = None,
        dry_run: bool = False,
        no_variants: bool = False,
        forced_variants: Mapping[str, str] | None = None,
        allow_fallback: bool = False,
        pre: bool = False,
        no_deps: bool = False,
        upgrade: bool = False,
        force_reinstall: bool = False,
        require_hashes: bool = False,
        no_binary: Sequence[str] = (),
        only_binary: Sequence[str] = (),
        build_timeout: float | None = None,
        building: frozenset[str] = frozenset(),
        compile_bytecode: bool = False,
        jobs: int = 4,
        link_mode: str = "hardlink",
        allow_overwrite: bool = False,
        break_system_packages: bool = False,
        cert: str | None = None,
        no_cache: bool = False,
        env: Mapping[str, str] | None = None,
        cache_dir: Path | None = None,
        timeout: float | None = None,
        retries: int | None = None,
        trusted_hosts: Sequence[str] = (),
        torch: TorchSettings | None = None,
        remember: bool = False,
        refresh: bool = False,
    ) -> None:
        self.requirements = requirements
        self.requirement_files = requirement_files
        self.constraint_files = constraint_files
        #: ``-e PATH``: local projects installed in editable mode (PEP 660)
        self.editables = editables
        self.index_url = index_url
        self.extra_index_urls = extra_index_urls
        self.find_links = find_links
        self.no_index = no_index
        #: which indexes' files count for a project (see :mod:`fitwheel.index.finder`)
        self.index_strategy = index_strategy
        self.python = python
        self.dry_run = dry_run
        self.no_variants = no_variants
        self.forced_variants: Mapping[str, str] = {} if forced_variants is None else forced_variants
        self.allow_fallback = allow_fallback
        self.pre = pre
        self.no_deps = no_deps
        self.upgrade = upgrade
        self.force_reinstall = force_reinstall
        self.require_hashes = require_hashes
        #: pip's form (names, ``:all:``, ``:none:``); pip's configuration comes first, then
        #: the flags (see :meth:`with_pip_settings`)
        self.no_binary = no_binary
        self.only_binary = only_binary
        #: seconds each build backend hook may run (None: the default)
        self.build_timeout = build_timeout
        #: the projects whose build environment this install fills (a cycle guard)
        self.building = building
        self.compile_bytecode = compile_bytecode
        self.jobs = jobs
        #: install from unpacked wheels in the cache by linking ("hardlink") or copying ("copy")
        self.link_mode = link_mode
        #: let a wheel replace another installed distribution's files
        self.allow_overwrite = allow_overwrite
        self.break_system_packages = break_system_packages
        self.cert = cert
        #: use a temporary cache, removed at the end
        self.no_cache = no_cache
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        self.cache_dir = cache_dir
        #: --torch-backend, --torch-index-url, --variant-index-url and their settings
        self.torch = torch
        #: seconds to wait for an index, and retries of a failed request (None: the default)
        self.timeout = timeout
        self.retries = retries
        #: hosts whose HTTPS certificate is not checked (pip's ``--trusted-host``)
        self.trusted_hosts = trusted_hosts
        #: note what the resolution reads, so that it can be remembered
        #: (:mod:`fitwheel.install.remembered`)
        self.remember = remember
        #: ask the index again for every cached page, however fresh
        self.refresh = refresh

    def with_pip_settings(self, settings: PipSettings) -> InstallRequest:
        """This request with pip's configuration under it: a yes/no setting is on when the
        configuration or the flag says so, lists are the configuration's and then the flags',
        a value given as a flag wins."""
        import copy

        merged = copy.copy(self)
        merged.constraint_files = [*settings.constraint_files, *self.constraint_files]
        merged.no_binary = [*settings.no_binary, *self.no_binary]
        merged.only_binary = [*settings.only_binary, *self.only_binary]
        merged.pre = self.pre or settings.pre
        merged.no_deps = self.no_deps or settings.no_deps
        merged.require_hashes = self.require_hashes or settings.require_hashes
        merged.timeout = self.timeout if self.timeout is not None else settings.timeout
        merged.retries = self.retries if self.retries is not None else settings.retries
        merged.trusted_hosts = [*settings.trusted_hosts, *self.trusted_hosts]
        return merged


class Planned:
    __slots__ = ("action", "candidate", "downloaded", "requested", "sha256")

    def __init__(
        self,
        candidate: Candidate,
        requested: bool,
        action: str,
        downloaded: Downloaded | None = None,
        sha256: str | None = None,
    ) -> None:
        self.candidate = candidate
        self.requested = requested
        #: "install", "keep" (already installed as chosen) or "reinstall"
        self.action = action
        self.downloaded = downloaded
        self.sha256 = sha256


class InstallOutcome:
    __slots__ = (
        "config",
        "environment",
        "files_read",
        "gpu_builds",
        "installed",
        "installed_before",
        "pages_read",
        "planned",
        "remember_blocked",
        "resolution",
        "router",
        "warnings",
    )

    def __init__(
        self,
        environment: TargetEnvironment,
        config: IndexConfig,
        resolution: Resolution,
        planned: list[Planned],
        installed: InstallResult | None,
        warnings: list[str] | None = None,
    ) -> None:
        self.environment = environment
        self.config = config
        self.resolution = resolution
        self.planned = planned
        self.installed = installed
        self.warnings: list[str] = [] if warnings is None else warnings
        #: where the torch-ecosystem projects (and variant-index projects) came from
        self.router: Router | None = None
        #: GPU builds resolved for a target without that GPU (also among the warnings)
        self.gpu_builds: list[str] = []
        #: with ``InstallRequest.remember``: the URLs the resolution read (None: a read no
        #: cached page stands for), the requirements files read, the installed set it saw
        #: (:func:`fitwheel.install.remembered.installed_state`), and why it cannot be
        #: remembered at all (None: nothing against it)
        self.pages_read: list[str | None] = []
        self.files_read: list[str] = []
        self.installed_before: list[object] | None = None
        self.remember_blocked: str | None = None


def installed_label(dist: object) -> str | None:
    """The variant label of an installed distribution (from its ``variant.json``), if any."""
    from fitwheel.install.inventory import variant_of

    text = getattr(dist, "read_text", lambda _n: None)("variant.json")
    return variant_of(text, "variant.json")[0]


def _resolved(resolution: Resolution, cand: Candidate) -> Resolved:
    """What the resolver took ``cand``'s wheel to be: the metadata it read (and from where) and
    the variant it chose."""
    link = cand.link
    trace = resolution.trace_of(cand)
    source = redact(link.metadata_url if link.metadata_hashes is not None else link.url)
    if cand.is_sdist and link.metadata_hashes is None:
        source = f"what the build backend prepared from {link.filename}"
    return Resolved(
        metadata=resolution.metadata.get(link.url),
        metadata_source=source,
        variant=cand.variant,
        variants_source=trace.variants_source if trace is not None else None,
    )


def cache_dir(request: InstallRequest) -> Path:
    """``--cache-dir``, else ``FITWHEEL_CACHE_DIR``, else the user cache folder."""
    return cache_root(request.cache_dir, request.env)


def _index_of(source: CandidateSource, cand: Candidate) -> str:
    from fitwheel.index.finder import search_order

    order = search_order(source.finder.config)
    rank = source.finder.rank(cand.link)
    return order[rank] if rank < len(order) else "--find-links"


def _local_links(user: UserInput) -> list[str]:
    return [str(item.wheel_path) for item in user.requirements if item.wheel_path is not None]


def _check_hashes_required(
    user: UserInput, resolution: Resolution
) -> dict[NormalizedName, UserRequirement]:
    by_name = {item.name: item for item in user.requirements}
    for cand in resolution.pins:
        item = by_name.get(cand.name)
        if item is None or not item.hashes:
            raise HashRequiredError(
                f"--require-hashes is on, but {cand.name} {cand.version} has no --hash in the "
                "requirements: list every distribution (dependencies too) with a pinned version "
                "and its hashes."
            )
        specs = list(item.requirement.specifier)
        if len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
            raise HashRequiredError(
                f"--require-hashes is on, but {item.requirement} is not pinned with ==: hashes "
                "only make sense for one exact version."
            )
    return by_name


def _check_built(cand: Candidate, wheel: Path) -> None:
    from fitwheel.errors import BuildError
    from fitwheel.variants.filenames import WheelFilename

    parsed = WheelFilename.parse(wheel.name)
    if parsed.normalized_name != cand.name or parsed.parsed_version != cand.version:
        raise BuildError(
            f"building {cand.link.filename} made {wheel.name}, which is not {cand.name} "
            f"{cand.version}: the sdist's name or version does not match what it builds."
        )


def run_install(
    request: InstallRequest,
    *,
    target: Target | None,
    profile: Profile | None,
    progress: Callable[[str, int], None] | None = None,
    notice: TextIO | None = None,
) -> InstallOutcome:
    with interruptible():  # SIGTERM and SIGINT: every cleanup and rollback runs
        if not request.no_cache:
            return _run_install(request, cache_dir(request), target, profile, progress, notice)
        import tempfile

        with tempfile.TemporaryDirectory(prefix="fitwheel-cache-") as tmp:
            return _run_install(request, Path(tmp), target, profile, progress, notice)


def _check_configured_files(settings: PipSettings) -> None:
    """A constraints file that pip's configuration names must exist (the message says where
    the setting is, which a missing-file error alone would not)."""
    for name in settings.constraint_files:
        if not Path(name).is_file():
            origin = settings.origins.get("constraint", "pip's configuration")
            raise FitwheelError(
                f"the constraints file {name} that pip's 'constraint' setting names ({origin}) "
                "does not exist: fix or remove the setting."
            )


def _run_install(
    request: InstallRequest,
    root: Path,
    target: Target | None,
    profile: Profile | None,
    progress: Callable[[str, int], None] | None,
    notice: TextIO | None,
) -> InstallOutcome:
    layout = CacheLayout(root)
    env = inspect_environment(request.python, request.env, cache_dir=layout.envs)
    settings = load_pip_settings(env=request.env, site_prefix=str(env.prefix))
    request = request.with_pip_settings(settings)
    _check_configured_files(settings)
    if env.externally_managed and not request.break_system_packages:
        raise FitwheelError(
            f"{env.python} belongs to the operating system's Python, whose packages the system "
            "package manager owns (PEP 668): create a virtual environment and pass --python "
            "VENV, or pass --break-system-packages to install there anyway."
        )
    user = collect(
        request.requirements,
        request.requirement_files,
        request.constraint_files,
        request.editables,
    )
    if not user.requirements:
        raise FitwheelError("nothing to install: name at least one requirement or pass -r FILE.")
    session = Session(
        env=request.env,
        cache=HttpCache(layout.http),
        retries=DEFAULT_RETRIES if request.retries is None else request.retries,
        timeout=DEFAULT_TIMEOUT if request.timeout is None else request.timeout,
        trusted_hosts=frozenset(request.trusted_hosts),
    )
    session.revalidate = request.refresh
    if request.remember:
        session.reads = []
    with contextlib.ExitStack() as stack:
        fetcher = _Fetcher(request, session, layout, progress)
        # on failure (or interrupt) the downloads and unpacking under way end before the
        # cache is released (and, with --no-cache, removed); so too with --no-cache
        stack.push(lambda kind, *_: fetcher.close(wait=kind is not None or request.no_cache))
        sources = _Sources(request, env, layout, fetcher, target, profile, notice)
        stack.callback(sources.close)
        user = _build_local_sources(user, sources)
        return _run_locked(
            request, env, layout, session, user, target, profile, notice, fetcher, sources
        )


def _build_local_sources(user: UserInput, sources: _Sources) -> UserInput:
    """Local source trees and sdist files, built into wheels that stand in for them."""
    if not any(item.source_path is not None for item in user.requirements):
        return user
    from packaging.requirements import Requirement

    from fitwheel.integrity import file_sha256
    from fitwheel.sdist.builder import source_key
    from fitwheel.variants.filenames import WheelFilename

    out = UserInput(constraints=user.constraints)
    out.files = user.files
    for item in user.requirements:
        path = item.source_path
        if path is None:
            out.requirements.append(item)
            continue
        key = source_key(path) if path.is_dir() else file_sha256(path)
        if item.editable:
            wheel = sources.builder().editable(path, key, f"{path} (editable)")
            parsed = WheelFilename.parse(wheel.name)
            sources.origins[wheel.resolve()] = (path, "editable")
            out.requirements.append(
                UserRequirement(
                    Requirement(f"{parsed.name}=={parsed.version}"),
                    {},
                    wheel.resolve(),
                    item.origin,
                    source_path=path,
                    editable=True,
                )
            )
            continue
        if item.hashes and not path.is_dir():
            # --hash pins on a local sdist are checked as on any download
            checked = DownloadItem(path.name, path.as_uri(), item.hashes)
            sources.fetcher.downloader.fetch(checked)
        wheel = sources.builder().wheel(path, key, str(path))
        parsed = WheelFilename.parse(wheel.name)
        if not path.is_dir() and parsed.normalized_name != item.name:
            raise FitwheelError(
                f"{path} built {wheel.name}, which is not {item.requirement}: the sdist's "
                "filename and its metadata disagree."
            )
        sources.origins[wheel.resolve()] = (path, key)
        out.requirements.append(
            UserRequirement(
                Requirement(f"{parsed.name}=={parsed.version}"),
                {},
                wheel.resolve(),
                item.origin,
                source_path=path,
            )
        )
    return out


def _run_locked(
    request: InstallRequest,
    env: TargetEnvironment,
    layout: CacheLayout,
    session: Session,
    user: UserInput,
    target: Target | None,
    profile: Profile | None,
    notice: TextIO | None,
    fetcher: _Fetcher,
    sources: _Sources,
) -> InstallOutcome:
    config = load_index_config(
        index_url=request.index_url,
        extra_index_urls=request.extra_index_urls,
        find_links=[*_local_links(user), *request.find_links],
        no_index=request.no_index,
        env=request.env,
        site_prefix=str(env.prefix),
        interpreter=env.python,
        cert=request.cert,
    )
    session.cafile = config.cert
    config = config.with_urls(session.add_credentials)
    forced = {canonicalize_name(k): v for k, v in request.forced_variants.items()}
    for item in user.requirements:
        # a requirement's own --variant=LABEL (a frozen variant install); the flag wins
        if item.variant is not None:
            forced.setdefault(item.name, item.variant)
    from fitwheel.resolve.formats import FormatControl

    options = Options(
        target=target,
        python_version=env.python_version,
        tags=env.tags,
        pre=request.pre,
        no_variants=request.no_variants,
        forced=forced,
        formats=FormatControl(request.no_binary, request.only_binary),
    )
    router = _router(request, env, user, target, profile, config)
    source = CandidateSource(Finder(config, session, request.index_strategy, route=router), options)
    # Hold the environment from the moment its contents are read until the install is done,
    # so that two installs at once cannot both plan against the same old state.
    with contextlib.ExitStack() as stack:
        recovered: list[str] = []
        if not request.dry_run:
            stack.enter_context(environment_lock(env.prefix, notice=notice))
            recovered = recover(env.prefix, env.scheme.values())
        outcome = _resolve_and_install(
            request, env, config, source, session, user, profile, fetcher, notice, sources, router
        )
        if outcome.installed is not None:
            outcome.installed.notes[:0] = recovered
        else:
            outcome.warnings += recovered
        return outcome


class _Fetcher:
    """Downloads into the wheel cache, each wheel unpacked into the unpacked-wheel cache as soon
    as it is there (while the others still download)."""

    def __init__(
        self,
        request: InstallRequest,
        session: Session,
        layout: CacheLayout,
        progress: Callable[[str, int], None] | None,
    ) -> None:
        self.unpacked = UnpackedCache(layout.unpacked, verify=request.force_reinstall)
        self.progress = progress
        self.downloader = Downloader(
            session,
            layout.wheels,
            jobs=request.jobs,
            prepare=self._prepare,
            unpacked=self.unpacked.has,
        )

    def _prepare(self, item: DownloadItem) -> Precreator | None:
        # creating thousands of files is slow on many filesystems: start while downloading
        known = item.known_sha256
        if known is not None and self.unpacked.has(known):
            return None
        return self.unpacked.precreator()

    def _unpack(self, done: Downloaded) -> None:
        # a broken wheel is reported by the install step, with nothing changed
        with contextlib.suppress(Exception):
            self.unpacked.get(done.path, done.sha256, done.prepared)

    def start(self, cand: Candidate) -> None:
        """Begin fetching ``cand``'s wheel before the resolution is done."""
        item = DownloadItem(
            cand.link.filename,
            cand.link.url,
            {a: frozenset({h}) for a, h in cand.link.hashes.items()},
        )
        self.downloader.start(item, self.progress, self._unpack)

    def fetch_all(self, items: Sequence[DownloadItem]) -> list[Downloaded]:
        return self.downloader.fetch_all(items, self.progress, then=self._unpack)

    def close(self, *, wait: bool = False) -> None:
        self.downloader.close(wait=wait)
        self.unpacked.close()


class _Sources:
    """Source builds for one install: sdists downloaded by the fetcher's downloader (hashes
    checked), built by one :class:`SourceBuilder` whose build environments are filled by a
    nested :func:`run_install`."""

    def __init__(
        self,
        request: InstallRequest,
        env: TargetEnvironment,
        layout: CacheLayout,
        fetcher: _Fetcher,
        target: Target | None,
        profile: Profile | None,
        notice: TextIO | None,
    ) -> None:
        self.request = request
        self.env = env
        self.layout = layout
        self.fetcher = fetcher
        self.target = target
        self.profile = profile
        self.notice = notice
        self._builder: SourceBuilder | None = None
        #: a wheel built from a local source tree or sdist file -> (that path, its key)
        self.origins: dict[Path, tuple[Path, str]] = {}
        #: --hash pins by project: an sdist is checked against them before any of its code runs
        self.pinned: dict[NormalizedName, Mapping[str, frozenset[str]]] = {}
        self._downloads: dict[tuple[str, str], Downloaded] = {}

    @property
    def built(self) -> bool:
        """Whether a source build was set up (a build's environment is resolved apart)."""
        return self._builder is not None

    def builder(self) -> SourceBuilder:
        from fitwheel.sdist.builder import DEFAULT_BUILD_TIMEOUT, SourceBuilder

        if self._builder is None:
            request = self.request
            self._builder = SourceBuilder(
                self.layout.built,
                python=self.env.python,
                tags=self.env.tags,
                install_requirements=self._install_requirements,
                env=request.env,
                timeout=request.build_timeout or DEFAULT_BUILD_TIMEOUT,
                notice=self._say if self.notice is not None else None,
            )
        return self._builder

    def _say(self, line: str) -> None:
        print(f"fitwheel: {line}", file=self.notice)

    def _guard(self, cand: Candidate) -> str:
        what = f"{cand.name} {cand.version} ({cand.link.filename})"
        if cand.name in self.request.building:
            from fitwheel.errors import BuildError

            chain = " -> ".join([*sorted(self.request.building), str(cand.name)])
            raise BuildError(
                f"building {what} needs {cand.name} itself to build ({chain}): a build "
                f"requirement cannot be built from its own sdist; add an index or find-links "
                f"folder that has a wheel of {cand.name}."
            )
        return what

    def _install_requirements(self, python: Path, requirements: Sequence[str], what: str) -> None:
        request = self.request
        name = what.split(" ", 1)[0]
        nested = InstallRequest(
            requirements=list(requirements),
            index_url=request.index_url,
            extra_index_urls=request.extra_index_urls,
            find_links=request.find_links,
            no_index=request.no_index,
            index_strategy=request.index_strategy,
            python=str(python),
            no_variants=request.no_variants,
            no_binary=request.no_binary,
            only_binary=request.only_binary,
            build_timeout=request.build_timeout,
            building=request.building | {canonicalize_name(name)},
            jobs=request.jobs,
            link_mode=request.link_mode,
            cert=request.cert,
            env=request.env,
            cache_dir=self.layout.root,
            timeout=request.timeout,
            retries=request.retries,
            trusted_hosts=request.trusted_hosts,
        )
        if self.notice is not None:
            self._say(f"installing the build requirements of {what}: {', '.join(requirements)}")
        try:
            _run_install(nested, self.layout.root, self.target, self.profile, None, None)
        except FitwheelError as exc:
            from fitwheel.errors import BuildError

            raise BuildError(f"cannot set up the build environment of {what}: {exc}") from None

    def download(
        self, cand: Candidate, hashes: Mapping[str, frozenset[str]] | None = None
    ) -> Downloaded:
        """The sdist, checked against ``hashes`` (default: the published ones)."""
        wanted = (
            hashes
            if hashes is not None
            else {a: frozenset({h}) for a, h in cand.link.hashes.items()}
        )
        key = (cand.link.url, repr(sorted((a, sorted(d)) for a, d in wanted.items())))
        done = self._downloads.get(key)
        if done is None:
            item = DownloadItem(cand.link.filename, cand.link.url, wanted)
            done = self.fetcher.downloader.fetch(item, self.fetcher.progress)
            self._downloads[key] = done
        return done

    def metadata(self, cand: Candidate) -> bytes:
        what = self._guard(cand)
        pinned = self.pinned.get(cand.name)
        if pinned is None and self.request.require_hashes:
            raise HashRequiredError(
                f"--require-hashes is on, but {cand.name} {cand.version} has no --hash in the "
                "requirements, and its sdist would have to be built (running its code) to "
                "resolve: list it with a pinned version and its hashes."
            )
        done = self.download(cand, pinned)
        return self.builder().metadata(done.path, done.sha256, what)

    def wheel(self, cand: Candidate, done: Downloaded) -> Path:
        what = self._guard(cand)
        return self.builder().wheel(done.path, done.sha256, what)

    def close(self) -> None:
        if self._builder is not None:
            self._builder.close()


def _router(
    request: InstallRequest,
    env: TargetEnvironment,
    user: UserInput,
    target: Target | None,
    profile: Profile | None,
    config: IndexConfig,
) -> Router | None:
    settings = request.torch
    if settings is None or not (settings.backend or settings.variant_index_urls):
        return None
    if config.index_url is None:
        return None  # --no-index: find-links only, as asked (no backend or variant index)
    from fitwheel.torchbackend.routing import Router, torch_specifier
    from fitwheel.torchbackend.table import load_backend_table

    spec = torch_specifier(user)
    return Router(
        settings,
        load_backend_table(),
        target=target,
        devices=profile.devices if profile is not None else (),
        markers=dict(env.markers),
        tags=env.tags,
        torch_spec=spec,
        allow_fallback=request.allow_fallback,
    )


def _add_torch_warnings(
    outcome: InstallOutcome,
    request: InstallRequest,
    target: Target | None,
    profile: Profile | None,
    router: Router | None,
) -> None:
    """The fallback that was accepted, and GPU builds for a GPU the target does not have."""
    if profile is None and router is None:
        return
    from fitwheel.torchbackend.gpubuild import build_kind, gpu_build_warnings

    env, resolution, planned = outcome.environment, outcome.resolution, outcome.planned
    out = outcome.warnings
    if router is not None and router.mismatch is not None and router.backend is not None:
        out.append(
            f"--torch-backend {router.backend} (from {router.settings.backend_origin}) was "
            f"named by hand, but its build does not run here: {router.mismatch}; "
            "--torch-backend auto chooses one that does"
        )
    if router is not None and router.choice is not None and router.choice.fell_back:
        gpus = "; ".join(d.describe() for d in router.choice.unserved)
        out.append(
            f"no torch backend runs on the GPU here ({gpus}); the cpu build is installed "
            "because --allow-fallback accepts it"
        )
    pinned = [c.name for c in resolution.pins]
    if not any(build_kind(c, pinned) for c in resolution.pins):
        return  # no GPU build at all: the table is not needed
    from fitwheel.torchbackend.table import load_backend_table

    table = load_backend_table()
    projects = {canonicalize_name(p) for p in table.projects}
    if request.torch is not None:
        projects |= {canonicalize_name(p) for p in request.torch.extra_projects}
    if not any(c.name in projects for c in resolution.pins):
        return
    by_name = {p.candidate.name: p for p in planned}

    def size_of(cand: Candidate) -> int | None:
        p = by_name.get(cand.name)
        if p is not None and p.downloaded is not None:
            with contextlib.suppress(OSError):
                return p.downloaded.path.stat().st_size
        return cand.link.size

    def fitting() -> str | None:
        if router is not None and router.choice is not None and router.choice.requested == "auto":
            return router.backend
        if target is None:
            return None
        from fitwheel.torchbackend.choose import choose_backend

        choice = choose_backend(
            table,
            target,
            profile.devices if profile is not None else (),
            system=env.markers.get("platform_system", ""),
            machine=env.markers.get("platform_machine", ""),
            python_version=env.markers.get("python_version"),
            torch_spec=None,
        )
        return choice.backend

    outcome.gpu_builds = gpu_build_warnings(resolution.pins, projects, profile, size_of, fitting)
    out += outcome.gpu_builds


def _resolve_and_install(
    request: InstallRequest,
    env: TargetEnvironment,
    config: IndexConfig,
    source: CandidateSource,
    session: Session,
    user: UserInput,
    profile: Profile | None,
    fetcher: _Fetcher,
    notice: TextIO | None,
    sources: _Sources,
    router: Router | None = None,
) -> InstallOutcome:
    # the index answers while the environment is read
    early = start_prefetch(
        user, source, session=session, environment=env.markers, no_deps=request.no_deps
    )
    installed_dists = env.installed()
    installed_before = None
    if request.remember:
        from fitwheel.install.remembered import installed_state

        installed_before = installed_state(env.site_dirs)
    installed: dict[NormalizedName, Version] = {}
    for name, dist in installed_dists.items():
        try:
            installed[name] = Version(dist.version)
        except InvalidVersion:
            continue
    on_pin = None
    if not (request.dry_run or request.require_hashes) and not any(
        item.hashes for item in user.requirements
    ):

        def on_pin(cand: Candidate) -> None:
            # download (and unpack) each wheel as the resolver pins it, while it goes on
            if installed.get(cand.name) == cand.version and not request.force_reinstall:
                return  # most likely kept as installed
            if not cand.is_sdist:
                fetcher.start(cand)

    sources.pinned = {item.name: item.hashes for item in user.requirements if item.hashes}
    resolution = resolve(
        user,
        source,
        session=session,
        environment=env.markers,
        installed=installed,
        upgrade=request.upgrade,
        no_deps=request.no_deps,
        devices=profile.devices if profile is not None else (),
        allow_fallback=request.allow_fallback,
        on_pin=on_pin,
        build_metadata=sources.metadata,
        prefetched=early,
    )
    user_hashes = (
        _check_hashes_required(user, resolution)
        if request.require_hashes
        else {item.name: item for item in user.requirements if item.hashes}
    )
    planned: list[Planned] = []

    # a local project given by path is installed afresh, as pip does (its files may have changed)
    local_builds = {item.name for item in user.requirements if item.source_path is not None}
    for cand in resolution.pins:
        current = installed_dists.get(cand.name)
        action = "install"
        if current is not None and cand.name in local_builds:
            action = "reinstall"
        elif current is not None and not request.force_reinstall:
            same = (
                installed.get(cand.name) == cand.version and installed_label(current) == cand.label
            )
            action = "keep" if same else "install"
        elif current is not None:
            action = "reinstall"
        planned.append(
            Planned(cand, cand.name in resolution.requested, action, sha256=cand.link.sha256)
        )
    outcome = InstallOutcome(env, config, resolution, planned, None)
    if request.remember:
        outcome.pages_read = session.reads if session.reads is not None else []
        outcome.files_read = user.files
        outcome.installed_before = installed_before
        if user_hashes or request.require_hashes:
            outcome.remember_blocked = "hash-checked"
        elif sources.built:
            outcome.remember_blocked = "built from source"
    outcome.warnings += resolution.invalid
    outcome.router = router
    outcome.warnings += skipped_versions(resolution)
    outcome.warnings += shadowed(resolution.pins, resolution.specifiers, source)
    for cand in resolution.pins:
        served = source.finder.served_by.get(cand.name, [])
        if len(served) > 1:
            outcome.warnings.append(
                f"{cand.name} is published on {len(served)} indexes ({', '.join(served)}); "
                f"--index-strategy {request.index_strategy} let all of them count, and "
                f"{cand.version} came from {_index_of(source, cand)}"
            )
    for cand in resolution.pins:
        if cand.link.yanked is not None:
            why = f": {cand.link.yanked}" if cand.link.yanked else ""
            outcome.warnings.append(
                f"{cand.name} {cand.version} ({cand.link.filename}) is yanked from its index{why}; "
                "it is used only because a requirement pins that version exactly"
            )
    if request.dry_run:
        _add_torch_warnings(outcome, request, source.options.target, profile, router)
        return outcome
    to_fetch = [p for p in planned if p.action != "keep"]
    items = []
    for p in to_fetch:
        hashes: dict[str, frozenset[str]] = {
            a: frozenset({h}) for a, h in p.candidate.link.hashes.items()
        }
        pinned = user_hashes.get(p.candidate.name)
        if pinned is not None:
            for algo, digests in pinned.hashes.items():
                published = p.candidate.link.hashes.get(algo)
                if published is not None and published not in digests:
                    raise HashMismatchError(
                        f"{p.candidate.link.filename}: the index publishes {algo} {published}, "
                        f"which is none of the --hash values pinned for {p.candidate.name}. "
                        "Nothing was installed."
                    )
            if pinned.hashes:
                # the pins are what is checked: the strongest published hash must not stand
                # in for them
                hashes = dict(pinned.hashes)
        items.append(DownloadItem(p.candidate.link.filename, p.candidate.link.url, hashes))
    wheel_items = [i for i, p in zip(items, to_fetch, strict=True) if not p.candidate.is_sdist]
    fetched = iter(fetcher.fetch_all(wheel_items))
    for p, item in zip(to_fetch, items, strict=True):
        if p.candidate.is_sdist:
            # the sdist's hashes (published or pinned) are checked; then the wheel built from it
            sdist = sources.download(p.candidate, dict(item.hashes))
            built = sources.wheel(p.candidate, sdist)
            _check_built(p.candidate, built)
            from fitwheel.integrity import file_sha256

            p.downloaded = Downloaded(item, built, file_sha256(built), sdist.from_cache)
        else:
            p.downloaded = next(fetched)
        p.sha256 = p.downloaded.sha256
    local = {str(item.wheel_path) for item in user.requirements if item.wheel_path is not None}
    from fitwheel.install.installer import WheelToInstall, install_wheels

    wheels = []
    for p in to_fetch:
        assert p.downloaded is not None
        path = p.downloaded.path
        direct = str(path) in local
        direct_url: dict[str, object] | None = (
            {"url": path.as_uri(), "archive_info": {"hashes": {"sha256": p.sha256}}}
            if direct
            else None
        )
        # a wheel built here from a local source tree or sdist: resolving each path costs a
        # system call per component, so only where there are such wheels
        origin = sources.origins.get(path.resolve()) if sources.origins else None
        if origin is not None:
            source_path, key = origin
            direct_url = (
                {"url": source_path.as_uri(), "dir_info": {"editable": True}}
                if key == "editable"
                else {"url": source_path.as_uri(), "dir_info": {}}
                if source_path.is_dir()
                else {
                    "url": source_path.as_uri(),
                    "archive_info": {"hashes": {"sha256": key}},
                }
            )
        wheels.append(
            WheelToInstall(
                path,
                str(p.candidate.name),
                str(p.candidate.version),
                requested=p.requested,
                sha256=p.sha256,
                direct_url=direct_url,
                resolved=_resolved(outcome.resolution, p.candidate),
            )
        )
    _add_torch_warnings(outcome, request, source.options.target, profile, router)
    outcome.installed = install_wheels(
        env,
        wheels,
        compile_bytecode=request.compile_bytecode,
        unpacked=fetcher.unpacked,
        link_mode=request.link_mode,
        notice=notice,
        lock=False,
        allow_overwrite=request.allow_overwrite,
    )
    return outcome
