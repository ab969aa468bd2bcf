"""Resolve user requirements to a pinned set of wheels for one target.

This wires :class:`CandidateSource` and :class:`Provider` into resolvelib, keeps a trace of the
decisions, and refuses to quietly hand a machine with a GPU the build without GPU support: when
a package offers builds for a device that is present and none fits, resolution fails with the
device and the builds on offer (``allow_fallback`` accepts the plain build instead).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName
from packaging.version import Version

from fitwheel.errors import FitwheelError, ResolutionError
from fitwheel.index.http import Session
from fitwheel.platform.coverage import unserved_gpus
from fitwheel.platform.profile import Device
from fitwheel.resolve.abideps import abi_notices, abi_policy, explain_refusals
from fitwheel.resolve.candidates import Candidate, CandidateSource, VersionTrace
from fitwheel.resolve.provider import Provider, SharedMetadata, identify_requirement
from fitwheel.resolve.requirements import UserInput
from fitwheel.variants.names import canonicalize_name
from fitwheel.wheel.metadata import CoreMetadata


class UnsupportedDeviceError(ResolutionError):
    pass


class Resolution:
    __slots__ = (
        "abi_notes",
        "decisions",
        "invalid",
        "metadata",
        "pins",
        "requested",
        "specifiers",
        "traces",
    )

    def __init__(
        self,
        pins: list[Candidate],
        requested: frozenset[NormalizedName],
        traces: Mapping[tuple[NormalizedName, str], VersionTrace],
        decisions: list[str] | None = None,
        specifiers: Mapping[NormalizedName, SpecifierSet] | None = None,
        metadata: Mapping[str, CoreMetadata] | None = None,
    ) -> None:
        self.pins = pins
        self.requested = requested
        self.traces = traces
        self.decisions: list[str] = [] if decisions is None else decisions
        #: wheel URL -> the core metadata the resolver read for it
        self.metadata: Mapping[str, CoreMetadata] = {} if metadata is None else metadata
        #: candidates skipped because their metadata is invalid (one warning line each)
        self.invalid: list[str] = []
        #: releases whose abi_dependency builds fit no dependency version here (a notice each)
        self.abi_notes: list[str] = []
        #: every project's requirements and constraints together (what another version of it
        #: would have to satisfy)
        self.specifiers: Mapping[NormalizedName, SpecifierSet] = (
            {} if specifiers is None else specifiers
        )

    def trace_of(self, candidate: Candidate) -> VersionTrace | None:
        return self.traces.get((candidate.name, str(candidate.version)))


def _reporter(lines: list[str]) -> Any:
    from resolvelib import BaseReporter

    class Reporter(BaseReporter):  # type: ignore[type-arg]
        def pinning(self, candidate: Candidate) -> None:
            lines.append(f"pinned {candidate}")

        def rejecting_candidate(self, criterion: Any, candidate: Candidate) -> None:
            causes = ", ".join(sorted({str(c.requirement) for c in criterion.information}))
            lines.append(f"rejected {candidate}: conflicts with {causes}")

    return Reporter()


class Prefetch:
    """Pages and metadata of a resolution's requirements being fetched before it starts (see
    :func:`start_prefetch`); :func:`resolve` given it reads what it fetched and stops it."""

    __slots__ = ("provider",)

    def __init__(self, provider: Provider) -> None:
        self.provider = provider

    def close(self) -> None:
        self.provider.close()


def _roots(
    user: UserInput, environment: Mapping[str, str], decisions: list[str] | None = None
) -> list[Requirement]:
    """The requirements to resolve: the user's, without a marker false here (said in
    ``decisions``) and without their markers."""
    roots: list[Requirement] = []
    for item in user.requirements:
        marker = item.requirement.marker
        if marker is not None and not marker.evaluate({**environment, "extra": ""}):
            if decisions is not None:
                decisions.append(f"skipped {item.requirement}: its marker is false here")
            continue
        req = Requirement(str(item.requirement))
        req.marker = None
        roots.append(req)
    return roots


def start_prefetch(
    user: UserInput,
    source: CandidateSource,
    *,
    session: Session | None,
    environment: Mapping[str, str],
    no_deps: bool = False,
    shared: SharedMetadata | None = None,
) -> Prefetch:
    """Start fetching the pages and metadata that resolving ``user`` will ask for, in the
    background, so that the network overlaps whatever comes before :func:`resolve` (which is
    then given the result). Nothing is decided here; a failure surfaces when the resolver asks
    for the same page itself."""
    provider = Provider(source, session, environment, no_deps=no_deps, shared=shared)
    provider.prefetch(_roots(user, environment))
    return Prefetch(provider)


def resolve(
    user: UserInput,
    source: CandidateSource,
    *,
    session: Session | None,
    environment: Mapping[str, str],
    installed: Mapping[NormalizedName, Version] | None = None,
    upgrade: bool = False,
    no_deps: bool = False,
    devices: Sequence[Device] = (),
    allow_fallback: bool = False,
    on_pin: Callable[[Candidate], None] | None = None,
    build_metadata: Callable[[Candidate], bytes] | None = None,
    shared: SharedMetadata | None = None,
    prefetched: Prefetch | None = None,
    abi_environ: Mapping[str, str] | None = None,
) -> Resolution:
    """Pin a candidate for every requirement and dependency. ``on_pin`` hears of each
    candidate as the resolver is about to pin it (before its dependencies are read), so that
    its download can start; a later backtrack may still drop it. ``build_metadata`` gives an
    sdist candidate's metadata (through its build backend); without it sdists cannot be used.
    ``shared`` holds the wheels' metadata across several resolutions (one per lock target);
    ``prefetched`` is what :func:`start_prefetch` began for the same requirements (stopped
    here). ``abi_environ`` (default: this process's environment) may hold
    ``VARIANT_ABI_DEPENDENCY`` (see :mod:`fitwheel.resolve.abideps`)."""
    from resolvelib import Resolver
    from resolvelib.resolvers import ResolutionImpossible, ResolutionTooDeep

    constraints: dict[NormalizedName, SpecifierSet] = {}
    for item in user.constraints:
        spec = constraints.get(item.name, SpecifierSet())
        constraints[item.name] = spec & item.requirement.specifier
    requested = frozenset(item.name for item in user.requirements)
    preferred = {
        name: version
        for name, version in (installed or {}).items()
        if not (upgrade and name in requested)
    }
    decisions: list[str] = []
    roots = _roots(user, environment, decisions)
    abi = abi_policy(roots, constraints, preferred, environ=abi_environ, no_deps=no_deps)
    roots_order: dict[str, int] = {}
    for item in user.requirements:
        roots_order.setdefault(identify_requirement(item.requirement), len(roots_order))
    provider = Provider(
        source,
        session,
        environment,
        requested=roots_order,
        constraints=constraints,
        no_deps=no_deps,
        preferred=preferred,
        on_pin=on_pin,
        build_metadata=build_metadata,
        shared=prefetched.provider.shared if prefetched is not None else shared,
        ahead=prefetched.provider if prefetched is not None else None,
        abi=abi,
    )
    resolver: Resolver[Requirement, Candidate, str] = Resolver(provider, _reporter(decisions))
    provider.prefetch(roots)
    try:
        result = resolver.resolve(roots, max_rounds=2000)
    except ResolutionImpossible as exc:
        message = _impossible_message(exc, provider, constraints)
        if provider.skipped:
            message += " Skipped for invalid metadata: " + "; ".join(provider.skipped) + "."
        raise ResolutionError(message) from None
    except ResolutionTooDeep as exc:
        raise ResolutionError(
            f"the requirements could not be resolved within {exc.round_count} rounds; "
            "pin some versions to help."
        ) from None
    finally:
        provider.close()
        if prefetched is not None:
            prefetched.close()
    pins = [c for key, c in result.mapping.items() if "[" not in key]
    pins.sort(key=lambda c: c.name)
    specifiers: dict[NormalizedName, SpecifierSet] = dict(constraints)
    for key, criterion in result.criteria.items():
        name = canonicalize_name(key.split("[", 1)[0])
        for info in criterion.information:
            specifiers[name] = specifiers.get(name, SpecifierSet()) & info.requirement.specifier
    resolution = Resolution(
        pins, requested, source.traces, decisions, specifiers, provider.core_metadata
    )
    resolution.invalid = list(provider.skipped)
    resolution.abi_notes = abi_notices(pins, source, abi)
    if abi.fixed:
        explain_refusals(source, abi)
    if not allow_fallback:
        check_gpu_fallback(resolution, devices)
    return resolution


def _impossible_message(
    exc: Any, provider: Provider, constraints: Mapping[NormalizedName, SpecifierSet]
) -> str:
    """The causes of a failed resolution: for a project that nothing can satisfy, why (see
    :mod:`fitwheel.resolve.diagnose`); for a conflict, the chain of requirements."""
    from fitwheel.resolve.diagnose import unavailable_reason

    source = provider.source
    parts = []
    named: list[str] = []
    for cause in exc.causes:
        req = cause.requirement
        name = canonicalize_name(req.name)
        parent = f" (needed by {cause.parent.name} {cause.parent.version})" if cause.parent else ""
        forced = source.options.forced.get(name)
        reason = None
        if forced is None:
            spec = req.specifier & constraints.get(name, SpecifierSet())
            try:
                reason = unavailable_reason(name, spec, source, provider.requires_python_of)
            except FitwheelError:
                reason = None
        if reason is not None:
            named.append(f"{req}{parent}: {reason}")
            continue
        available = [str(version) for version, _wheels in source.versions(name)]
        offer = (
            ", ".join(available[:8]) if available else "no wheel for this interpreter and platform"
        )
        if forced is not None:
            offer += f" (--variant {name}={forced} allows only that label)"
        if name in constraints:
            offer += f" (constrained to {constraints[name]})"
        parts.append(f"{req}{parent}: available {offer}")
    if named and not parts:
        return f"cannot install {'; '.join(dict.fromkeys(named))}."
    why = "; ".join(dict.fromkeys(named + parts))
    return (
        f"no set of versions satisfies the requirements: {why}. Loosen a pin, add an index, "
        "or pass --pre for pre-releases."
    )


def check_gpu_fallback(resolution: Resolution, devices: Sequence[Device]) -> None:
    """Fail when a package offers GPU builds for a device that is present and a build without GPU
    support was chosen because none of them fits."""
    for cand in resolution.pins:
        trace = resolution.trace_of(cand)
        if trace is None or trace.info is None or trace.forced:
            continue
        if cand.variant is not None and not cand.variant.is_null:
            continue
        unserved = unserved_gpus(trace.info, trace.ordered, trace.rejected, devices)
        if unserved is None:
            continue
        chosen = cand.label or "the non-variant wheel"
        raise UnsupportedDeviceError(
            f"{unserved.describe(f'{cand.name} {cand.version}')}. Installing {chosen} would leave "
            f"the GPU unused. Pass --allow-fallback to install it anyway, --variant "
            f"{cand.name}=LABEL to force a build, or pin a version that supports this GPU."
        )


def skipped_versions(resolution: Resolution) -> list[str]:
    """One line per newer version that was passed over because no build of it fits the target
    (say, a release that dropped this GPU's architecture): that choice deserves a mention."""
    lines = []
    for cand in resolution.pins:
        for (name, version), trace in resolution.traces.items():
            if name != cand.name or Version(version) <= cand.version:
                continue
            if trace.ordered or trace.has_plain_wheel or trace.forced:
                continue
            reasons = "; ".join(f"{label}: {why}" for label, why in trace.rejected.items())
            lines.append(
                f"{name} {version} has no build that runs here ({reasons or 'no wheels'}), "
                f"so {cand.version} was chosen"
            )
    return lines
