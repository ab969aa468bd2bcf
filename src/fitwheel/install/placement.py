"""The place stage of an install: the fetched and built wheels, each with what the resolver
took it to be and where it came from (PEP 610), installed in one transaction."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from fitwheel.index.auth import redact
from fitwheel.install.place.directurl import direct_url_record
from fitwheel.install.place.resolved import Resolved

if TYPE_CHECKING:
    from fitwheel.install.context import InstallContext
    from fitwheel.install.outcome import Planned
    from fitwheel.install.place.core import InstallResult, WheelToInstall
    from fitwheel.resolve.candidates import Candidate
    from fitwheel.resolve.resolver import Resolution


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


def _direct_url(ctx: InstallContext, p: Planned, local: set[str]) -> dict[str, object] | None:
    """The PEP 610 record of a wheel given by path or URL, or built here from a local source
    tree, an sdist or a checkout (None for one found on an index)."""
    assert p.downloaded is not None
    path = p.downloaded.path
    # a wheel built here from a local source tree or sdist: resolving each path costs a
    # system call per component, so only where there are such wheels
    origins = ctx.sources.origins
    origin = origins.get(path.resolve()) if origins else None
    if origin is not None:
        return origin
    if str(path) in local:
        return direct_url_record(path, sha256=p.sha256)
    return None


def place_stage(
    ctx: InstallContext, resolution: Resolution, to_install: Sequence[Planned]
) -> InstallResult:
    """Install every wheel of ``to_install`` into the environment (whose lock the caller
    holds), in one transaction."""
    from fitwheel.install.place.core import install_wheels

    request = ctx.request
    local = {str(i.wheel_path) for i in ctx.user.requirements if i.wheel_path is not None}
    wheels = [_wheel_of(ctx, resolution, p, local) for p in to_install]
    return install_wheels(
        ctx.env,
        wheels,
        compile_bytecode=request.placement.compile_bytecode,
        unpacked=ctx.fetcher.unpacked,
        link_mode=request.placement.link_mode,
        reporter=ctx.reporter.inner,  # what placing says is not kept for a replay
        lock=False,
        allow_overwrite=request.placement.allow_overwrite,
    )


def _wheel_of(
    ctx: InstallContext, resolution: Resolution, p: Planned, local: set[str]
) -> WheelToInstall:
    from fitwheel.install.place.core import WheelToInstall

    assert p.downloaded is not None
    return WheelToInstall(
        p.downloaded.path,
        str(p.candidate.name),
        str(p.candidate.version),
        requested=p.requested,
        sha256=p.sha256,
        direct_url=_direct_url(ctx, p, local),
        resolved=_resolved(resolution, p.candidate),
    )
