"""``fitwheel install`` without the command line: resolve, download, install, report.

:func:`run_install` takes an :class:`InstallRequest` (what the flags say) and returns an
:class:`InstallOutcome` (what was chosen, kept, fetched and installed); the CLI only renders it.

The install goes by stages, each in a module of its own: plan (:mod:`~fitwheel.install.planning`:
resolve, keep/install/reinstall, the ``--hash`` policy, the warnings), fetch
(:mod:`~fitwheel.install.fetching`), build (:mod:`~fitwheel.install.building`) and place
(:mod:`~fitwheel.install.placement`), inside one :class:`~fitwheel.install.env.session.
EnvironmentSession` that holds the environment's lock from the moment its contents are read.

A pinned source distribution is built into a wheel by :class:`fitwheel.sdist.builder.
SourceBuilder`, whose build environments this same workflow fills (the build requirements are
resolved and installed by fitwheel, with the request's indexes, caches and format options).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import FitwheelError
from fitwheel.index.config import IndexConfig, PipSettings, load_index_config, load_pip_settings
from fitwheel.index.finder import Finder
from fitwheel.index.http import Session
from fitwheel.index.session import RemoteFiles, open_session
from fitwheel.install.building import SourceBuilds, build_local_sources, build_stage
from fitwheel.install.context import InstallContext
from fitwheel.install.env.interpreter import TargetEnvironment, inspect_environment
from fitwheel.install.env.session import EnvironmentSession
from fitwheel.install.fetch.fetcher import Fetcher
from fitwheel.install.fetching import fetch_stage
from fitwheel.install.outcome import InstallOutcome, Planned
from fitwheel.install.placement import place_stage
from fitwheel.install.planning import add_torch_warnings, plan_stage
from fitwheel.install.request import InstallRequest
from fitwheel.install.targetdir import move_into_target, prefix_environment, staging_environment
from fitwheel.options import PlacementOptions, ResolutionOptions
from fitwheel.paths import CacheLayout, cache_root
from fitwheel.platform.profile import Profile
from fitwheel.reporter import SILENT, Recorder, Reporter
from fitwheel.resolve.candidates import CandidateSource, Options
from fitwheel.resolve.reqfile import read_local
from fitwheel.resolve.requirements import UserInput, collect, ignored
from fitwheel.variants.names import canonicalize_name
from fitwheel.variants.ordering import Target

if TYPE_CHECKING:
    from fitwheel.resolve.formats import FormatControl
    from fitwheel.torchbackend.routing import Router
    from fitwheel.torchbackend.settings import TorchSettings

__all__ = ["InstallOutcome", "Planned", "cache_dir", "run_install"]


def cache_dir(request: InstallRequest) -> Path:
    """``--cache-dir``, else ``FITWHEEL_CACHE_DIR``, else the user cache folder."""
    return cache_root(request.sources.cache_dir, request.env)


def _local_links(user: UserInput) -> list[str]:
    return [str(item.wheel_path) for item in user.requirements if item.wheel_path is not None]


def run_install(
    request: InstallRequest,
    *,
    target: Target | None,
    profile: Profile | None,
    reporter: Reporter = SILENT,
) -> InstallOutcome:
    """Install what ``request`` asks for; what there is to say while it works goes to
    ``reporter`` (notices, warnings, download progress)."""
    # SIGTERM and SIGINT: every cleanup and rollback runs; --no-cache: a temporary cache
    with EnvironmentSession(reporter=reporter) as envs:
        no_cache = request.sources.no_cache
        root = envs.temp_dir("fitwheel-cache-") if no_cache else cache_dir(request)
        return _run_install(request, root, target, profile, reporter)


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


def _interpreter(request: InstallRequest) -> str | None:
    """The interpreter ``--python`` names; with ``--target`` or ``--prefix`` and neither it
    nor an active virtual environment, the one running fitwheel (as pip uses its own)."""
    elsewhere = request.target_dir is not None or request.prefix is not None
    if request.python is None and not request.env.get("VIRTUAL_ENV") and elsewhere:
        return sys.executable
    return request.python


def _run_install(
    request: InstallRequest,
    root: Path,
    target: Target | None,
    profile: Profile | None,
    reporter: Reporter,
) -> InstallOutcome:
    layout = CacheLayout(root)
    env = inspect_environment(_interpreter(request), request.env, cache_dir=layout.envs)
    settings = load_pip_settings(env=request.env, site_prefix=str(env.prefix))
    request = request.with_pip_settings(settings)
    _check_configured_files(settings)
    elsewhere = request.target_dir is not None or request.prefix is not None
    if env.externally_managed and not request.placement.break_system_packages and not elsewhere:
        raise FitwheelError(
            f"{env.python} belongs to the operating system's Python, whose packages the system "
            "package manager owns (PEP 668): create a virtual environment and pass --python "
            "VENV, or pass --break-system-packages to install there anyway."
        )

    # a file read from a server comes through a session of the flags' and pip's sources; the
    # install's own session adds what the files say (their trusted hosts)
    def reading() -> Session:
        return open_session(request.sources, request.env, layout=layout, settings=settings)

    remote = RemoteFiles(reading, read_local)
    user = collect(
        request.requirements,
        [remote.location(name) for name in request.requirement_files],
        [remote.location(name) for name in request.constraint_files],
        request.editables,
        read=remote,
        env=request.env,
        direct=True,
    )
    if not user.requirements:
        raise FitwheelError("nothing to install: name at least one requirement or pass -r FILE.")
    request = request.with_file_options(user.options)
    if any(item.hashes for item in user.requirements) and not request.resolution.require_hashes:
        # pip's hash-checking mode: one --hash makes every requirement, dependencies included,
        # need one on one exact version
        request.resolution = request.resolution.replace(require_hashes=True)
    session = open_session(request.sources, request.env, layout=layout, settings=settings)
    if request.remember:
        session.reads = []
    with contextlib.ExitStack() as stack:
        fetcher = Fetcher(
            session,
            layout,
            reporter,
            jobs=request.placement.jobs,
            verify=request.resolution.force_reinstall,
        )
        # on failure (or interrupt) the downloads and unpacking under way end before the
        # cache is released (and, with --no-cache, removed); so too with --no-cache
        stack.push(
            lambda kind, *_: fetcher.close(wait=kind is not None or request.sources.no_cache)
        )
        sources = _source_builds(request, env, layout, fetcher, target, profile, reporter)
        stack.callback(sources.close)
        user = build_local_sources(user, sources)
        return _run_locked(
            request, env, layout, session, user, target, profile, reporter, fetcher, sources
        )


def _run_locked(
    request: InstallRequest,
    env: TargetEnvironment,
    layout: CacheLayout,
    session: Session,
    user: UserInput,
    target: Target | None,
    profile: Profile | None,
    reporter: Reporter,
    fetcher: Fetcher,
    sources: SourceBuilds,
) -> InstallOutcome:
    recorder = Recorder(reporter)
    config, source, router = _candidate_source(
        request, env, session, user, target, profile, recorder
    )
    # Hold the environment from the moment its contents are read until the install is done,
    # so that two installs at once cannot both plan against the same old state.
    with EnvironmentSession(reporter=reporter) as envs:
        env = _placed_in(request, env, envs)
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
            reporter=recorder,
        )
        for line in ignored(user.options):  # options of the user's files that pip alone reads
            ctx.reporter.warning(line)
        outcome = _stages(ctx)
        if request.target_dir is not None:
            outcome.environment = env.replace(prefix=Path(request.target_dir).absolute())
            if outcome.installed is not None:
                move_into_target(
                    env,
                    Path(request.target_dir),
                    upgrade=request.resolution.upgrade,
                    reporter=ctx.reporter,
                )
        if outcome.installed is not None:
            outcome.installed.notes[:0] = envs.recovered
        else:  # nothing installed: what recovery did is a warning
            for line in envs.recovered:
                ctx.reporter.warning(line)
        outcome.warnings = ctx.reporter.warnings
        outcome.skipped_indexes = dict(source.finder.skipped)
        if outcome.skipped_indexes and outcome.remember_blocked is None:
            # made without an index that may answer next time: never answered from memory
            outcome.remember_blocked = "an index could not be reached"
        return outcome


def _placed_in(
    request: InstallRequest, env: TargetEnvironment, envs: EnvironmentSession
) -> TargetEnvironment:
    """Where the wheels go: ``env``, or under ``--prefix``, or (``--target``) a staging
    folder whose contents are moved into the target after (:mod:`.targetdir`)."""
    if request.prefix is not None:
        return prefix_environment(env, Path(request.prefix))
    if request.target_dir is not None:
        return staging_environment(env, Path(request.target_dir), envs, dry_run=request.dry_run)
    return env


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


def index_source(
    request: InstallRequest,
    env: TargetEnvironment,
    session: Session,
    target: Target | None,
    profile: Profile | None,
    reporter: Reporter = SILENT,
) -> tuple[IndexConfig, CandidateSource, Router | None]:
    """Where an install of ``request``'s sources would find candidates for ``env`` and the
    target (its indexes, find-links and torch or variant route), without requirements: for
    asking what the newest installable version of a project is (``list --outdated``)."""
    return _candidate_source(request, env, session, UserInput(), target, profile, reporter)


def _candidate_source(
    request: InstallRequest,
    env: TargetEnvironment,
    session: Session,
    user: UserInput,
    target: Target | None,
    profile: Profile | None,
    reporter: Reporter,
) -> tuple[IndexConfig, CandidateSource, Router | None]:
    """The indexes (credentials added), and where the resolver finds candidates in them."""
    config = load_index_config(
        index_url=request.sources.index_url,
        extra_index_urls=request.sources.extra_index_urls,
        find_links=[*_local_links(user), *request.sources.find_links],
        no_index=request.sources.no_index,
        env=request.env,
        site_prefix=str(env.prefix),
        interpreter=env.python,
        cert=request.sources.cert,
        index_url_origin=request.sources.index_url_origin,
        origins=request.sources.origins,
    )
    session.cafile = config.cert
    config = config.with_urls(session.add_credentials)
    forced = {canonicalize_name(k): v for k, v in request.resolution.forced_variants}
    for item in user.requirements:
        # a requirement's own --variant=LABEL (a frozen variant install); the flag wins
        if item.variant is not None:
            forced.setdefault(item.name, item.variant)
    options = Options(
        target=target,
        python_version=env.python_version,
        tags=env.tags,
        pre=request.resolution.pre,
        no_variants=request.resolution.no_variants,
        forced=forced,
        formats=_formats(request.resolution),
    )
    router = _router(request, env, user, target, profile, config)
    source = CandidateSource(
        Finder(
            config,
            session,
            request.sources.index_strategy,
            route=router,
            unreachable_index=request.sources.unreachable_index,
            reporter=reporter,
            vital=backend_indexes(config, request.torch),
        ),
        options,
    )
    return config, source, router


def backend_indexes(config: IndexConfig, torch: TorchSettings | None) -> frozenset[str]:
    """The indexes searched that are PyTorch per-backend indexes (under the torch index root,
    or any ``.../whl/<backend>``): never left out when they cannot be reached."""
    from fitwheel.torchbackend.pins import url_backend
    from fitwheel.torchbackend.settings import DEFAULT_INDEX_URL

    root = torch.index_url if torch is not None else DEFAULT_INDEX_URL
    return frozenset(url for url in config.search_order() if url_backend(url, root) is not None)


def _formats(resolution: ResolutionOptions) -> FormatControl:
    """``--no-binary``/``--only-binary`` as pip reads them: the flags', then the requirements
    files', in order."""
    from fitwheel.resolve.formats import FormatControl

    formats = FormatControl(resolution.no_binary, resolution.only_binary)
    for option, value in resolution.formats:
        if option == "--no-binary":
            formats.add(option, value, formats.no_binary, formats.only_binary)
        else:
            formats.add(option, value, formats.only_binary, formats.no_binary)
    return formats


def _source_builds(
    request: InstallRequest,
    env: TargetEnvironment,
    layout: CacheLayout,
    fetcher: Fetcher,
    target: Target | None,
    profile: Profile | None,
    reporter: Reporter,
) -> SourceBuilds:
    """Source builds whose build environments a nested install fills, with this request's
    indexes, caches and format options."""

    def install_requirements(python: Path, requirements: Sequence[str], name: str) -> None:
        nested = InstallRequest(
            requirements=list(requirements),
            python=str(python),
            sources=request.sources.replace(cache_dir=layout.root, no_cache=False, refresh=False),
            resolution=ResolutionOptions(
                no_variants=request.resolution.no_variants,
                no_binary=request.resolution.no_binary,
                only_binary=request.resolution.only_binary,
                formats=request.resolution.formats,
                build_timeout=request.resolution.build_timeout,
            ),
            placement=PlacementOptions(
                jobs=request.placement.jobs, link_mode=request.placement.link_mode
            ),
            env=request.env,
            building=request.building | {canonicalize_name(name)},
        )
        _run_install(nested, layout.root, target, profile, SILENT)

    return SourceBuilds(
        layout,
        env,
        fetcher,
        install_requirements,
        environ=request.env,
        build_timeout=request.resolution.build_timeout,
        building=request.building,
        require_hashes=request.resolution.require_hashes,
        reporter=reporter,
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
    from fitwheel.torchbackend.pins import index_lines, requested_backend
    from fitwheel.torchbackend.routing import Router, routed_projects, torch_specifier
    from fitwheel.torchbackend.table import load_backend_table

    table = load_backend_table()
    named = requested_backend(
        settings,
        user,
        index_lines(request.sources),
        projects=routed_projects(table, settings),
        markers=env.markers,
    )
    spec = torch_specifier(user)
    return Router(
        settings,
        table,
        target=target,
        devices=profile.devices if profile is not None else (),
        markers=dict(env.markers),
        tags=env.tags,
        torch_spec=spec,
        allow_fallback=request.resolution.allow_fallback,
        own_files=[item.wheel_path for item in user.requirements if item.wheel_path is not None],
        named=named,
    )
