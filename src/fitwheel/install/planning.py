"""The plan stage of an install: resolve the requirements against the indexes and the
installed distributions, decide for each pin whether it is kept, installed or reinstalled,
apply the ``--hash`` policy, and gather the warnings about what was chosen."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from fitwheel.install.env.session import installed_label
from fitwheel.install.fetching import start_on_pin
from fitwheel.install.outcome import InstallOutcome, Planned
from fitwheel.install.speculate import OFF_VARIABLE, Limits, Speculator
from fitwheel.integrity import HashRequiredError
from fitwheel.resolve.diagnose import index_of, shadowed
from fitwheel.resolve.plugin_notices import plugin_notices
from fitwheel.resolve.resolver import (
    Prefetch,
    Resolution,
    resolve,
    skipped_versions,
    start_prefetch,
)
from fitwheel.variants.names import canonicalize_name

if TYPE_CHECKING:
    from importlib.metadata import Distribution

    from packaging.utils import NormalizedName

    from fitwheel.install.context import InstallContext, StageSettings
    from fitwheel.platform.profile import Profile
    from fitwheel.reporter import Reporter
    from fitwheel.resolve.candidates import Candidate, CandidateSource
    from fitwheel.resolve.requirements import UserInput, UserRequirement
    from fitwheel.torchbackend.routing import Router
    from fitwheel.variants.ordering import Target

#: the ``--hash`` pins by project, each with the requirement that pins it
UserHashes = dict["NormalizedName", "UserRequirement"]


def plan_stage(ctx: InstallContext) -> tuple[InstallOutcome, UserHashes]:
    """Resolve, and plan what happens to each pin; returns the outcome so far (its ``planned``
    list and warnings) and the ``--hash`` pins the fetch stage checks."""
    request, env, user = ctx.request, ctx.env, ctx.user
    for item in user.requirements:
        if item.wheel_path is not None:  # a wheel given directly is its project's one candidate
            ctx.source.bind(item.name, item.wheel_path)
    # the index answers while the environment is read
    early = start_prefetch(
        user,
        ctx.source,
        session=ctx.session,
        environment=env.markers,
        no_deps=request.resolution.no_deps,
    )
    speculator = _speculator(ctx)
    if speculator is not None:
        early.provider.on_candidate = speculator.offer
    try:
        installed_dists = ctx.envs.installed()
        installed_before = None
        if request.remember:
            from fitwheel.install.remembered import installed_state

            installed_before = installed_state(env.site_dirs)
        installed = _versions(installed_dists)
        if speculator is not None:
            speculator.arm(installed, force_reinstall=request.resolution.force_reinstall)
        try:
            resolution = _resolve(ctx, installed, early, speculator)
        finally:
            note_dropped(ctx.router, ctx.reporter)  # what was left out, even when nothing fits
    except BaseException:
        if speculator is not None:
            speculator.close()  # every speculative download has ended before any cleanup
        raise
    user_hashes = hash_policy(request, user, resolution)
    planned = plan_actions(
        resolution,
        installed_dists,
        installed,
        user,
        force_reinstall=request.resolution.force_reinstall,
    )
    outcome = InstallOutcome(env, ctx.config, resolution, planned, None)
    if speculator is not None:
        outcome.speculative = speculator.result.as_json()
    if request.remember:
        _remember(outcome, ctx, installed_before, user_hashes)
    _warn(ctx, resolution.invalid)
    _warn(ctx, resolution.abi_notes)
    outcome.router = ctx.router
    _warn(ctx, resolution_warnings(resolution, ctx.source, request.sources.index_strategy))
    outcome.passed_over = shadowed(resolution.pins, resolution.specifiers, ctx.source)
    _warn(ctx, passed_over_summary(outcome.passed_over))
    return outcome, user_hashes


def _versions(
    installed_dists: Mapping[NormalizedName, Distribution],
) -> dict[NormalizedName, Version]:
    """The installed versions that are valid ones (the others are never kept)."""
    installed: dict[NormalizedName, Version] = {}
    for name, dist in installed_dists.items():
        try:
            installed[name] = Version(dist.version)
        except InvalidVersion:
            continue
    return installed


def _fetch_early(ctx: InstallContext) -> bool:
    """Whether wheels may be downloaded before the resolution ends: not when hashes are to be
    checked (the pins' own, after the resolution) or nothing is installed."""
    request = ctx.request
    return not (request.dry_run or request.resolution.require_hashes) and not any(
        item.hashes for item in ctx.user.requirements
    )


def _speculator(ctx: InstallContext) -> Speculator | None:
    """What downloads each project's likely pick before it is pinned (:mod:`.speculate`),
    where wheels may be downloaded early and ``FITWHEEL_NO_SPECULATION`` is not set."""
    if not _fetch_early(ctx) or ctx.request.env.get(OFF_VARIABLE, "") not in ("", "0"):
        return None
    return Speculator(ctx.fetcher, Limits(workers=max(1, ctx.request.placement.jobs)))


def _resolve(
    ctx: InstallContext,
    installed: dict[NormalizedName, Version],
    early: Prefetch,
    speculator: Speculator | None,
) -> Resolution:
    """The resolution; each wheel starts downloading as it is pinned (see
    :func:`_fetch_early`), unless its likely pick was guessed and is being fetched already
    (``speculator``: settled here once the resolution is done)."""
    request, user = ctx.request, ctx.user
    on_pin = restart = None
    if _fetch_early(ctx):
        on_pin = restart = start_on_pin(
            ctx.fetcher, installed, force_reinstall=request.resolution.force_reinstall
        )
        if speculator is not None:
            on_pin = guarded_on_pin(restart, speculator)
    ctx.sources.pinned = {item.name: item.hashes for item in user.requirements if item.hashes}
    resolution = resolve(
        user,
        ctx.source,
        session=ctx.session,
        environment=ctx.env.markers,
        installed=installed,
        upgrade=request.resolution.upgrade,
        no_deps=request.resolution.no_deps,
        devices=ctx.profile.devices if ctx.profile is not None else (),
        allow_fallback=request.resolution.allow_fallback,
        on_pin=on_pin,
        build_metadata=ctx.sources.metadata,
        prefetched=early,
        abi_environ=request.env,
    )
    if speculator is not None and restart is not None:
        speculator.settle(resolution.pins, restart)
    return resolution


def guarded_on_pin(
    on_pin: Callable[[Candidate], None], speculator: Speculator
) -> Callable[[Candidate], None]:
    """``on_pin``, except for a pin whose guess is being fetched (or was) already."""

    def pinned(cand: Candidate) -> None:
        if not speculator.covers(cand):
            on_pin(cand)

    return pinned


def hash_policy(request: StageSettings, user: UserInput, resolution: Resolution) -> UserHashes:
    """The ``--hash`` pins by project; with ``--require-hashes`` every pin must have them, on
    one exact version."""
    if not request.resolution.require_hashes:
        return {item.name: item for item in user.requirements if item.hashes}
    by_name = {item.name: item for item in user.requirements}
    for cand in resolution.pins:
        item = by_name.get(cand.name)
        if item is not None and item.source_path is not None:
            continue  # built here: what it was built from was checked (or refused) before
        if item is None or not item.hashes:
            raise HashRequiredError(
                f"--require-hashes is on, but {cand.name} {cand.version} has no --hash in the "
                "requirements: list every distribution (dependencies too) with a pinned version "
                "and its hashes (one --hash in the requirements turns this on, as in pip)."
            )
        specs = list(item.requirement.specifier)
        if len(specs) != 1 or specs[0].operator not in ("==", "===") or "*" in specs[0].version:
            raise HashRequiredError(
                f"--require-hashes is on, but {item.requirement} is not pinned with ==: hashes "
                "only make sense for one exact version."
            )
    return by_name


def plan_actions(
    resolution: Resolution,
    installed_dists: Mapping[NormalizedName, Distribution],
    installed: Mapping[NormalizedName, Version],
    user: UserInput,
    *,
    force_reinstall: bool,
) -> list[Planned]:
    """For each pin: "keep" (installed as chosen), "install" or "reinstall"."""
    planned: list[Planned] = []
    # a local project given by path is installed afresh, as pip does (its files may have changed)
    local_builds = {
        item.name
        for item in user.requirements
        if item.source_path is not None or item.direct is not None
    }
    for cand in resolution.pins:
        current = installed_dists.get(cand.name)
        action = "install"
        if current is not None and cand.name in local_builds:
            action = "reinstall"
        elif current is not None and not force_reinstall:
            same = (
                installed.get(cand.name) == cand.version and installed_label(current) == cand.label
            )
            action = "keep" if same else "install"
        elif current is not None:
            action = "reinstall"
        planned.append(
            Planned(cand, cand.name in resolution.requested, action, sha256=cand.link.sha256)
        )
    return planned


def _remember(
    outcome: InstallOutcome,
    ctx: InstallContext,
    installed_before: list[object] | None,
    user_hashes: UserHashes,
) -> None:
    """What a remembered resolution needs to know (:mod:`fitwheel.install.remembered`)."""
    reads = ctx.session.reads
    outcome.pages_read = reads if reads is not None else []
    outcome.files_read = ctx.user.files
    outcome.installed_before = installed_before
    if user_hashes or ctx.request.resolution.require_hashes:
        outcome.remember_blocked = "hash-checked"
    elif ctx.sources.built:
        outcome.remember_blocked = "built from source"


def _warn(ctx: InstallContext, lines: Iterable[str]) -> None:
    for line in lines:
        ctx.reporter.warning(line)


def resolution_warnings(
    resolution: Resolution, source: CandidateSource, index_strategy: str
) -> list[str]:
    """Skipped versions, variants no provider could answer for, shadowed projects, projects
    several indexes publish, yanked pins."""
    out = skipped_versions(resolution)
    out += plugin_notices(resolution, source)
    for cand in resolution.pins:
        served = source.finder.served_by.get(cand.name, [])
        if len(served) > 1:
            out.append(
                f"{cand.name} is published on {len(served)} indexes ({', '.join(served)}); "
                f"--index-strategy {index_strategy} let all of them count, and "
                f"{cand.version} came from {_index_of(source, cand)}"
            )
    for cand in resolution.pins:
        if cand.link.yanked is not None:
            why = f": {cand.link.yanked}" if cand.link.yanked else ""
            out.append(
                f"{cand.name} {cand.version} ({cand.link.filename}) is yanked from its index{why}; "
                "it is used only because a requirement pins that version exactly"
            )
    return out


def passed_over_summary(lines: Sequence[str]) -> list[str]:
    """What the first-index strategy passed over, said once: one project's line as it is,
    several as one line that counts them (``--explain`` lists each)."""
    if len(lines) <= 1:
        return list(lines)
    names = ", ".join(line.split(" ", 1)[0] for line in lines)
    return [
        f"{len(lines)} projects came from the first index that has them, while a later index "
        f"has a newer version that pip would install ({names}): pass --index-strategy "
        "unsafe-best-match to consider every index; --explain lists each"
    ]


def _index_of(source: CandidateSource, cand: Candidate) -> str:
    where = index_of(source.finder, cand.name, cand.link)
    return where[0] if where is not None else "--find-links"


def add_torch_warnings(outcome: InstallOutcome, ctx: InstallContext) -> None:
    """The fallback that was accepted, and GPU builds for a GPU the target does not have."""
    router, profile = ctx.router, ctx.profile
    if profile is None and router is None:
        return
    _warn(ctx, _backend_warnings(router))
    if router is not None:
        urls = {c.link.url for c in outcome.resolution.pins}
        _warn(ctx, router.own_file_warnings(urls))
    torch = ctx.request.torch
    extra = torch.extra_projects if torch is not None else ()
    _add_gpu_builds(outcome, ctx.source.options.target, profile, router, extra)
    _warn(ctx, outcome.gpu_builds)


def note_dropped(router: Router | None, reporter: Reporter) -> None:
    """Tell of the find-links files the chosen torch backend ruled out."""
    if router is None:
        return
    for line in router.notices():
        reporter.notice(f"fitwheel: {line}")


def _backend_warnings(router: Router | None) -> list[str]:
    """A hand-named backend whose build does not run here, and an accepted fallback."""
    out: list[str] = []
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
    return out


def _add_gpu_builds(
    outcome: InstallOutcome,
    target: Target | None,
    profile: Profile | None,
    router: Router | None,
    extra_projects: Sequence[str],
) -> None:
    """GPU builds resolved for a target without that GPU (``outcome.gpu_builds``)."""
    from fitwheel.torchbackend.gpubuild import build_kind, gpu_build_warnings

    env, resolution = outcome.environment, outcome.resolution
    pinned = [c.name for c in resolution.pins]
    if not any(build_kind(c, pinned) for c in resolution.pins):
        return  # no GPU build at all: the table is not needed
    from fitwheel.torchbackend.table import load_backend_table

    table = load_backend_table()
    projects = {canonicalize_name(p) for p in table.projects}
    projects |= {canonicalize_name(p) for p in extra_projects}
    if not any(c.name in projects for c in resolution.pins):
        return
    by_name = {p.candidate.name: p for p in outcome.planned}

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
