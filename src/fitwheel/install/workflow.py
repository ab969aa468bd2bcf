"""``fitwheel install`` without the command line: resolve, download, install, report.

:func:`run_install` takes an :class:`InstallRequest` (what the flags say) and returns an
:class:`InstallOutcome` (what was chosen, kept, fetched and installed); the CLI only renders it.

The install goes by stages, each in a module of its own: plan (:mod:`~fitwheel.install.planning`:
resolve, keep/install/reinstall, the ``--hash`` policy, the warnings), fetch
(:mod:`~fitwheel.install.fetching`), build (:mod:`~fitwheel.install.building`) and place
(:mod:`~fitwheel.install.placement`), inside one :class:`~fitwheel.install.session.
EnvironmentSession` that holds the environment's lock from the moment its contents are read.

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

from fitwheel.errors import FitwheelError
from fitwheel.fs import CacheLayout, cache_root
from fitwheel.index.config import IndexConfig, PipSettings, load_index_config, load_pip_settings
from fitwheel.index.finder import Finder
from fitwheel.index.http import DEFAULT_RETRIES, DEFAULT_TIMEOUT, Session
from fitwheel.index.httpcache import HttpCache
from fitwheel.install.building import SourceBuilds, build_local_sources, build_stage
from fitwheel.install.context import InstallContext
from fitwheel.install.environment import TargetEnvironment, inspect_environment
from fitwheel.install.fetching import Fetcher, fetch_stage
from fitwheel.install.outcome import InstallOutcome, Planned
from fitwheel.install.placement import place_stage
from fitwheel.install.planning import add_torch_warnings, plan_stage
from fitwheel.install.session import EnvironmentSession
from fitwheel.platform.profile import Profile
from fitwheel.resolve.candidates import CandidateSource, Options
from fitwheel.resolve.requirements import UserInput, collect
from fitwheel.variants.names import canonicalize_name
from fitwheel.variants.ordering import Target

if TYPE_CHECKING:
    from fitwheel.torchbackend.routing import Router
    from fitwheel.torchbackend.settings import TorchSettings

__all__ = ["InstallOutcome", "InstallRequest", "Planned", "cache_dir", "run_install"]


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


def cache_dir(request: InstallRequest) -> Path:
    """``--cache-dir``, else ``FITWHEEL_CACHE_DIR``, else the user cache folder."""
    return cache_root(request.cache_dir, request.env)


def _local_links(user: UserInput) -> list[str]:
    return [str(item.wheel_path) for item in user.requirements if item.wheel_path is not None]


def run_install(
    request: InstallRequest,
    *,
    target: Target | None,
    profile: Profile | None,
    progress: Callable[[str, int], None] | None = None,
    notice: TextIO | None = None,
) -> InstallOutcome:
    # SIGTERM and SIGINT: every cleanup and rollback runs; --no-cache: a temporary cache
    with EnvironmentSession(notice=notice) as envs:
        root = envs.temp_dir("fitwheel-cache-") if request.no_cache else cache_dir(request)
        return _run_install(request, root, target, profile, progress, notice)


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
        fetcher = Fetcher(
            session, layout, progress, jobs=request.jobs, verify=request.force_reinstall
        )
        # on failure (or interrupt) the downloads and unpacking under way end before the
        # cache is released (and, with --no-cache, removed); so too with --no-cache
        stack.push(lambda kind, *_: fetcher.close(wait=kind is not None or request.no_cache))
        sources = _source_builds(request, env, layout, fetcher, target, profile, notice)
        stack.callback(sources.close)
        user = build_local_sources(user, sources)
        return _run_locked(
            request, env, layout, session, user, target, profile, notice, fetcher, sources
        )


def _run_locked(
    request: InstallRequest,
    env: TargetEnvironment,
    layout: CacheLayout,
    session: Session,
    user: UserInput,
    target: Target | None,
    profile: Profile | None,
    notice: TextIO | None,
    fetcher: Fetcher,
    sources: SourceBuilds,
) -> InstallOutcome:
    config, source, router = _candidate_source(request, env, session, user, target, profile)
    # Hold the environment from the moment its contents are read until the install is done,
    # so that two installs at once cannot both plan against the same old state.
    with EnvironmentSession(notice=notice) as envs:
        if request.dry_run:
            envs.look_at(env)
        else:
            envs.hold(env)
        ctx = InstallContext(
            request,
            env,
            envs,
            config=config,
            source=source,
            session=session,
            user=user,
            profile=profile,
            fetcher=fetcher,
            sources=sources,
            router=router,
            notice=notice,
        )
        outcome = _stages(ctx)
        if outcome.installed is not None:
            outcome.installed.notes[:0] = envs.recovered
        else:
            outcome.warnings += envs.recovered
        return outcome


def _stages(ctx: InstallContext) -> InstallOutcome:
    """Plan, then (unless ``--dry-run``) fetch, build and place."""
    outcome, user_hashes = plan_stage(ctx)
    if ctx.request.dry_run:
        add_torch_warnings(outcome, ctx)
        return outcome
    to_install = [p for p in outcome.planned if p.action != "keep"]
    build_stage(fetch_stage(to_install, user_hashes, ctx.fetcher), ctx.sources)
    add_torch_warnings(outcome, ctx)
    outcome.installed = place_stage(ctx, outcome.resolution, to_install)
    return outcome


def _candidate_source(
    request: InstallRequest,
    env: TargetEnvironment,
    session: Session,
    user: UserInput,
    target: Target | None,
    profile: Profile | None,
) -> tuple[IndexConfig, CandidateSource, Router | None]:
    """The indexes (credentials added), and where the resolver finds candidates in them."""
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
    return config, source, router


def _source_builds(
    request: InstallRequest,
    env: TargetEnvironment,
    layout: CacheLayout,
    fetcher: Fetcher,
    target: Target | None,
    profile: Profile | None,
    notice: TextIO | None,
) -> SourceBuilds:
    """Source builds whose build environments a nested install fills, with this request's
    indexes, caches and format options."""

    def install_requirements(python: Path, requirements: Sequence[str], name: str) -> None:
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
            cache_dir=layout.root,
            timeout=request.timeout,
            retries=request.retries,
            trusted_hosts=request.trusted_hosts,
        )
        _run_install(nested, layout.root, target, profile, None, None)

    return SourceBuilds(
        layout,
        env,
        fetcher,
        install_requirements,
        environ=request.env,
        build_timeout=request.build_timeout,
        building=request.building,
        require_hashes=request.require_hashes,
        notice=notice,
    )


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
