"""``abi_dependency`` variants in a resolution: which dependency versions their values are matched
against, the requirement each such candidate adds, and the notice when none fits.

A candidate built for ``torch 2.9`` (see :func:`fitwheel.resolve.candidates.Candidate.abi`)
depends on ``torch==2.9.*`` as well as on what its metadata says, so the resolver pairs the
build with the torch of the same resolution and backtracks to the next build when they
disagree. The version a value is matched against is, per dependency:

1. the ``VARIANT_ABI_DEPENDENCY`` variable's (``torch==2.10.0,...``, as variantlib reads it):
   candidates that do not match are skipped, and no requirement is added (the dependency may
   come from outside the environment's metadata);
2. else the installed version, when the resolution keeps it: installed, not upgraded on
   request, and within what the user asked for. A variant never moves it: candidates that do
   not match are skipped (the requirement is still added, so nothing else moves it either);
3. else whatever the resolution picks: a user's pin wins (its mismatching builds are
   backtracked over), and a dependency that nothing pins follows the build the variant ordering
   prefers (newest dependency version first).

When the build of a release that gets installed is the null or non-variant one although
``abi_dependency`` builds exist, and none of them matches the dependency's version here,
:func:`abi_notices` says so.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import NormalizedName
from packaging.version import Version

from fitwheel.resolve.candidates import Candidate, CandidateSource
from fitwheel.variants.abi import (
    OVERRIDE_VARIABLE,
    feature_for,
    parse_override,
    value_matches,
    value_specifier,
)

__all__ = ["AbiPolicy", "abi_notices", "abi_policy", "explain_refusals"]

#: where a fixed version came from, as notices name it
_INSTALLED = "installed"
_OVERRIDE = f"from {OVERRIDE_VARIABLE}"


class AbiPolicy:
    """The fixed dependency versions of one resolution, by feature name (``flash_attn``)."""

    __slots__ = ("_requirements", "bad_override", "constrain", "fixed")

    def __init__(
        self,
        fixed: Mapping[str, tuple[Version, str]] | None = None,
        constrain: frozenset[str] | None = None,
        bad_override: Sequence[str] = (),
    ) -> None:
        #: feature -> (version, where it came from)
        self.fixed: Mapping[str, tuple[Version, str]] = {} if fixed is None else fixed
        #: features whose requirement a candidate adds (None: every feature not overridden)
        self.constrain = constrain
        #: the items of VARIANT_ABI_DEPENDENCY that are not ``name==version``
        self.bad_override = list(bad_override)
        self._requirements: dict[tuple[str, str], Requirement] = {}

    def refuses(self, candidate: Candidate) -> str | None:
        """Why ``candidate`` cannot be used with a fixed dependency version (None: it can)."""
        for feature, value in candidate.abi:
            known = self.fixed.get(feature)
            if known is not None and not value_matches(value, known[0]):
                return f"built for {feature} {value}, and {feature} is {known[0]} ({known[1]})"
        return None

    def requirements(self, candidate: Candidate) -> list[Requirement]:
        """The dependency versions ``candidate`` is built for, as requirements."""
        out = []
        for feature, value in candidate.abi:
            known = self.fixed.get(feature)
            if known is not None and known[1] == _OVERRIDE:
                continue
            if self.constrain is not None and feature not in self.constrain:
                continue
            req = self._requirements.get((feature, value))
            if req is None:
                req = self._requirements[(feature, value)] = Requirement(
                    feature.replace("_", "-") + value_specifier(value)
                )
            out.append(req)
        return out


def abi_policy(
    roots: Iterable[Requirement],
    constraints: Mapping[NormalizedName, SpecifierSet],
    kept: Mapping[NormalizedName, Version],
    *,
    environ: Mapping[str, str] | None = None,
    no_deps: bool = False,
) -> AbiPolicy:
    """The policy of a resolution of ``roots`` (markers evaluated) under ``constraints``, where
    ``kept`` are the installed versions the resolver prefers (installed, not upgraded on
    request). ``environ`` (default: this process's) may hold ``VARIANT_ABI_DEPENDENCY``."""
    asked: dict[str, SpecifierSet] = {}
    for req in roots:
        feature = feature_for(req.name)
        asked[feature] = asked.get(feature, SpecifierSet()) & req.specifier
    fixed: dict[str, tuple[Version, str]] = {}
    for name, version in kept.items():
        feature = feature_for(name)
        spec = asked.get(feature, SpecifierSet()) & constraints.get(name, SpecifierSet())
        if spec.contains(version, prereleases=True):
            fixed[feature] = (version, _INSTALLED)
    env = os.environ if environ is None else environ
    override, bad = parse_override(env.get(OVERRIDE_VARIABLE, ""))
    for feature, version in override.items():
        fixed[feature] = (version, _OVERRIDE)
    # without dependencies, a build adds only the requirements the user named themselves
    constrain = frozenset(asked) if no_deps else None
    return AbiPolicy(fixed, constrain, bad)


def explain_refusals(source: CandidateSource, policy: AbiPolicy) -> None:
    """Move the variants no candidate of which fits a fixed dependency version from the ordered
    to the rejected builds of their version's trace, with the reason (for ``--explain``)."""
    for (name, version), trace in source.traces.items():
        if not trace.ordered:
            continue
        by_label: dict[str, list[str | None]] = {}
        for cand in source.cached_candidates(name, version):
            if cand.abi and cand.label is not None:
                by_label.setdefault(cand.label, []).append(policy.refuses(cand))
        for label, reasons in by_label.items():
            if reasons and all(reasons) and label in trace.ordered:
                trace.ordered.remove(label)
                trace.rejected[label] = str(reasons[0])


def abi_notices(pins: Sequence[Candidate], source: CandidateSource, policy: AbiPolicy) -> list[str]:
    """One line per release whose null or non-variant build is installed because none of its
    ``abi_dependency`` builds matches the dependency's version here; and one per ignored item
    of ``VARIANT_ABI_DEPENDENCY``."""
    lines = [
        f"{OVERRIDE_VARIABLE}: ignoring {item!r} (expected name==version, comma-separated)"
        for item in policy.bad_override
    ]
    # the override wins, then what this resolution picked, then what is installed
    known = {f: v for f, v in policy.fixed.items() if v[1] == _INSTALLED}
    known.update((feature_for(c.name), (c.version, "in this resolution")) for c in pins)
    known.update((f, v) for f, v in policy.fixed.items() if v[1] == _OVERRIDE)
    for cand in pins:
        if cand.abi or (cand.variant is not None and not cand.variant.is_null):
            continue
        builds = [c for c in source.version_candidates(cand.name, cand.version) if c.abi]
        if not builds:
            continue
        line = _mismatch(cand, builds, known)
        if line is not None:
            lines.append(line)
    return lines


def _mismatch(
    cand: Candidate, builds: Sequence[Candidate], known: Mapping[str, tuple[Version, str]]
) -> str | None:
    offered: dict[str, list[str]] = {}
    for build in builds:
        fits = True
        for feature, value in build.abi:
            offered.setdefault(feature, [])
            if value not in offered[feature]:
                offered[feature].append(value)
            version = known.get(feature)
            if version is None:
                return None  # not decided by a version here: another reason chose this build
            fits = fits and value_matches(value, version[0])
        if fits:
            return None
    what = "the null variant" if cand.variant is not None else "the non-variant build"
    parts = [f"{feature} {known[feature][0]} ({known[feature][1]})" for feature in sorted(offered)]
    builds_for = "; ".join(f"{f} {', '.join(vs)}" for f, vs in sorted(offered.items()))
    return (
        f"{cand.name} {cand.version}: no build matches {', '.join(parts)} (builds exist for "
        f"{builds_for}), so {what} ({cand.link.filename}) is installed; install a matching "
        "version of the dependency to get its build"
    )
