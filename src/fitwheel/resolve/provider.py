"""The resolvelib provider: requirements in, variant-ordered candidates out.

Identifiers are ``name`` or ``name[extra,...]``; a candidate with extras depends on the same
version of the plain name, so extras never split a project in two. Dependencies are read from
the chosen wheel's own metadata (variants of one version may differ) and their markers are
evaluated with the variant markers of that wheel. A source distribution's metadata comes from
the index (PEP 658) when it has it, else from the build backend (``build_metadata``:
``prepare_metadata_for_build_wheel``, run only for the candidates the resolver gets to).

A candidate whose metadata is invalid (an unparsable ``Requires-Dist``, a name or version that
is not the file's) is skipped with a warning, as pip does: one broken release never stops a run.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import NormalizedName
from packaging.version import InvalidVersion, Version
from resolvelib import AbstractProvider

from fitwheel.errors import FitwheelError, ResolutionError
from fitwheel.index.http import Session
from fitwheel.index.metadata import fetch_metadata
from fitwheel.resolve.abideps import AbiPolicy
from fitwheel.resolve.candidates import Candidate, CandidateSource
from fitwheel.resolve.preference import PreferenceKey, Preferences
from fitwheel.variants.errors import VariantError
from fitwheel.variants.markers import evaluate_marker
from fitwheel.variants.names import canonicalize_name
from fitwheel.wheel.metadata import CoreMetadata, parse_metadata, split_requires_dist


class DependencyError(ResolutionError):
    pass


class InvalidCandidateMetadata(DependencyError):
    """A candidate's metadata cannot be used: the candidate is skipped (with a warning)."""


def identify_requirement(req: Requirement) -> str:
    name = canonicalize_name(req.name)
    if req.extras:
        return f"{name}[{','.join(sorted(canonicalize_name(e) for e in req.extras))}]"
    return name


def _pinned(spec: SpecifierSet) -> bool:
    return any(s.operator in ("==", "===") and "*" not in s.version for s in spec)


#: how many threads fetch pages and metadata ahead of the resolver: enough that the pages and
#: metadata files of a tree's next level are asked for at once (each is a small answer)
PREFETCH_JOBS = 8


class SharedMetadata:
    """The dependencies and Requires-Python read from wheels' metadata, by wheel URL: one
    instance given to the providers of several resolutions (one per lock target) reads each
    wheel's metadata once for all of them."""

    __slots__ = ("core", "errors", "gates", "lock", "requires", "requires_python")

    def __init__(self) -> None:
        self.requires: dict[str, list[tuple[Requirement, str | None]]] = {}
        self.requires_python: dict[str, str | None] = {}
        self.core: dict[str, CoreMetadata] = {}
        #: the failures of reading a wheel's metadata, reported again without asking again
        self.errors: dict[str, FitwheelError] = {}
        self.lock = threading.Lock()
        self.gates: dict[str, threading.Lock] = {}


class Provider(AbstractProvider[Requirement, Candidate, str]):
    def __init__(
        self,
        source: CandidateSource,
        session: Session | None,
        environment: Mapping[str, str],
        constraints: Mapping[NormalizedName, SpecifierSet] | None = None,
        no_deps: bool = False,
        preferred: Mapping[NormalizedName, Version] | None = None,
        prefetch_jobs: int = PREFETCH_JOBS,
        on_pin: Callable[[Candidate], None] | None = None,
        build_metadata: Callable[[Candidate], bytes] | None = None,
        shared: SharedMetadata | None = None,
        ahead: Provider | None = None,
        abi: AbiPolicy | None = None,
        requested: Mapping[str, int] | None = None,
        on_candidate: Callable[[Candidate], None] | None = None,
    ) -> None:
        self.source = source
        #: the dependency versions abi_dependency builds are matched against
        self.abi = AbiPolicy() if abi is None else abi
        #: the order projects are decided in (``requested``: the position of each of the
        #: user's requirements, by identifier)
        self.preferences = Preferences(requested)
        self.session = session
        self.environment = environment
        self.constraints: Mapping[NormalizedName, SpecifierSet] = (
            {} if constraints is None else constraints
        )
        self.no_deps = no_deps
        #: installed versions to keep when they satisfy (no --upgrade)
        self.preferred: Mapping[NormalizedName, Version] = {} if preferred is None else preferred
        #: fetch the pages and best metadata of dependencies ahead of the resolver (0: never)
        self.prefetch_jobs = prefetch_jobs
        #: another provider (started earlier, for the same requirements) whose threads prefetch
        #: for this one
        self.ahead = ahead
        #: told of each candidate the resolver is about to pin (it may still backtrack)
        self.on_pin = on_pin
        #: told of a project's likely pick as soon as it is known, before the resolver gets to
        #: it: a guess (a wheel, never an sdist) that the resolution may not keep; a provider
        #: started ahead of this one tells the same listener (see :meth:`_guess`)
        self.on_candidate: Callable[[Candidate], None] | None = (
            ahead.on_candidate if on_candidate is None and ahead is not None else on_candidate
        )
        #: projects in a conflict the resolver walked back from: their pick is no longer
        #: guessed (shared with the provider started ahead)
        self._unsettled: set[str] = ahead._unsettled if ahead is not None else set()
        #: an sdist candidate's METADATA, from its build backend (None: sdists cannot be used)
        self.build_metadata = build_metadata
        #: one line per candidate skipped for invalid metadata (pip's warning)
        self.skipped: list[str] = []
        # what the wheels' metadata says, by URL: shared by the resolutions of several targets
        shared = SharedMetadata() if shared is None else shared
        #: what the wheels' metadata says, for another provider to share
        self.shared = shared
        self._metadata = shared.requires
        self._pool: ThreadPoolExecutor | None = None
        self._prefetched: set[str] = set()
        self._prefetch_lock = threading.Lock()
        self._closed = False
        self._requires_python = shared.requires_python
        #: wheel URL -> the core metadata its dependencies were read from (compared with the
        #: wheel's own METADATA once it is downloaded)
        self.core_metadata = shared.core
        # one fetch of each wheel's metadata, whether a prefetch thread or the resolver asks first
        self._metadata_lock = shared.lock
        self._metadata_gates = shared.gates
        self._metadata_errors = shared.errors
        # answers the resolver asks for again and again, by the identity of the requirement or
        # specifier objects (which live as long as the metadata they were read from; the object
        # is kept with the answer, so a recycled id never matches)
        self._satisfied: dict[tuple[int, str, Version], tuple[Requirement, bool]] = {}
        self._pins: dict[int, tuple[SpecifierSet, bool]] = {}
        #: (marker, extra) -> its value for a non-variant wheel in this environment
        self._markers: dict[tuple[str, str], bool] = {}
        #: Requires-Python -> whether the target's interpreter satisfies it
        self._pythons: dict[str, bool] = {}

    # -- resolvelib interface -------------------------------------------------------------------
    def identify(self, requirement_or_candidate: Requirement | Candidate) -> str:
        if isinstance(requirement_or_candidate, Candidate):
            cand = requirement_or_candidate
            if cand.extras:
                return f"{cand.name}[{','.join(sorted(cand.extras))}]"
            return str(cand.name)
        return identify_requirement(requirement_or_candidate)

    def narrow_requirement_selection(
        self,
        identifiers: Iterable[str],
        resolutions: Mapping[str, Candidate],
        candidates: Mapping[str, Iterator[Candidate]],
        information: Mapping[str, Iterator[Any]],
        backtrack_causes: Sequence[Any],
    ) -> Iterable[str]:
        """The projects to decide next, before the order of :meth:`get_preference`: those in the
        conflict that made the resolver walk back (the requirements and the candidates that
        asked for them), else those that keep turning up unpinned in conflicts (see
        :class:`Preferences`), else all."""
        if backtrack_causes:
            self._note_conflict(backtrack_causes)
        return self.preferences.narrow(
            list(identifiers), resolutions, backtrack_causes, self.identify
        )

    def get_preference(
        self,
        identifier: str,
        resolutions: Mapping[str, Candidate],
        candidates: Mapping[str, Iterator[Candidate]],
        information: Mapping[str, Iterable[Any]],
        backtrack_causes: Sequence[Any],
    ) -> PreferenceKey:
        specifiers = [info.requirement.specifier for info in information.get(identifier, ())]
        return self.preferences.key(identifier, specifiers, self._pinned)

    def find_matches(
        self,
        identifier: str,
        requirements: Mapping[str, Iterator[Requirement]],
        incompatibilities: Mapping[str, Iterator[Candidate]],
    ) -> Callable[[], Iterator[Candidate]]:
        name = canonicalize_name(identifier.split("[", 1)[0])
        extras = (
            frozenset(identifier[len(name) + 1 : -1].split(","))
            if "[" in identifier
            else frozenset()
        )
        reqs = list(requirements.get(identifier, []))
        specifiers = [r.specifier for r in reqs]
        if name in self.constraints:
            specifiers.append(self.constraints[name])
        bad = {(c.version, c.link.url, c.abi) for c in incompatibilities.get(identifier, [])}
        allow_pre = self.source.options.pre or any(
            s.prereleases for spec in specifiers for s in spec
        )

        def wanted(version: Version, pre: bool) -> bool:
            if version.is_prerelease and not pre:
                return False
            return all(spec.contains(version, prereleases=True) for spec in specifiers)

        versions = self.source.versions(name)

        def live(wheels: list[Any]) -> bool:
            return any(link.yanked is None for link, _w, _r in wheels)

        chosen = [v for v, wheels in versions if wanted(v, allow_pre) and live(wheels)]
        use_yanked = False
        if not chosen and any(_pinned(s) for s in specifiers):
            # PEP 592: a yanked file is used only when an exact pin leaves nothing else
            chosen = [v for v, _w in versions if wanted(v, allow_pre)]
            use_yanked = True
        if not chosen and not allow_pre:
            # as pip does: pre-releases count when nothing final matches
            chosen = [v for v, wheels in versions if wanted(v, True) and live(wheels)]
        keep = self.preferred.get(name)
        if keep is not None:
            chosen.sort(key=lambda v: v != keep)
        # the first candidate is the resolver's likely pick, unless it is walking back
        guess = not bad and keep is None

        def generate() -> Iterator[Candidate]:
            nonlocal guess
            # lazily: a version's variant metadata is read only if the resolver gets that far
            for version in chosen:
                # a version's sdist only where it has no usable non-variant wheel: both declare
                # the same dependencies, so once the wheel is offered (or turned down) building
                # the sdist could only be turned down the same way (pip offers one file per
                # version)
                has_wheel = False
                for cand in self.source.version_candidates(name, version):
                    plain = not cand.is_sdist and cand.variant is None
                    if cand.is_sdist and has_wheel:
                        continue
                    if (cand.version, cand.link.url, cand.abi) in bad:
                        has_wheel = has_wheel or plain
                        continue
                    if cand.abi and self.abi.refuses(cand) is not None:
                        continue  # built for another version of a dependency that stays
                    if cand.link.yanked is not None and not use_yanked:
                        continue
                    if cand.is_sdist and self.build_metadata is None:
                        continue  # no builder here (a lock resolves wheels only)
                    try:
                        self._requires(cand)
                    except InvalidCandidateMetadata as exc:
                        line = (
                            f"ignoring {cand.name} {cand.version} ({cand.link.filename}): "
                            f"its metadata is invalid: {exc}"
                        )
                        if line not in self.skipped:
                            self.skipped.append(line)
                        continue
                    if not self._python_ok(cand):
                        continue
                    has_wheel = has_wheel or plain
                    if guess:
                        guess = False
                        self._guess(cand)
                    yield cand.with_extras(extras) if extras else cand

        # a factory, not an iterator: resolvelib lists an iterator at once but calls a factory
        # only when it needs candidates, so older versions' variant files may never be read
        return generate

    def _pinned(self, spec: SpecifierSet) -> bool:
        hit = self._pins.get(id(spec))
        if hit is None or hit[0] is not spec:
            hit = self._pins[id(spec)] = (spec, _pinned(spec))
        return hit[1]

    def _python_ok(self, candidate: Candidate) -> bool:
        """The wheel's own Requires-Python (read lazily: only candidates the resolver tries)."""
        self._requires(candidate)
        spec = self._requires_python.get(candidate.link.url)
        if not spec:
            return True
        known = self._pythons.get(spec)
        if known is None:
            try:
                known = SpecifierSet(spec).contains(
                    self.source.options.python_version, prereleases=True
                )
            except InvalidSpecifier:
                known = True
            self._pythons[spec] = known
        return known

    def requires_python_of(self, link: Any) -> str | None:
        """A wheel's Requires-Python: the index's, else its metadata's if it was read."""
        found: str | None = link.requires_python or self._requires_python.get(link.url)
        return found

    def is_satisfied_by(self, requirement: Requirement, candidate: Candidate) -> bool:
        # asked for every pin against every requirement on each round: answered once each
        key = (id(requirement), candidate.name, candidate.version)
        hit = self._satisfied.get(key)
        if hit is None or hit[0] is not requirement:
            ok = canonicalize_name(requirement.name) == candidate.name and (
                requirement.specifier.contains(candidate.version, prereleases=True)
            )
            hit = self._satisfied[key] = (requirement, ok)
        return hit[1]

    def prefetch(self, requirements: Iterable[Requirement]) -> None:
        """Start fetching what the resolver is about to ask for, so that network round trips
        overlap: each project's page, and the metadata of its likely pick (the newest version
        the requirement allows), then the same for that pick's dependencies, and so on down
        the tree, ahead of the resolver. Failures surface when the resolver asks for the same
        thing itself."""
        if self.ahead is not None:
            self.ahead.prefetch(requirements)
            return
        if self.prefetch_jobs <= 0:
            return
        wanted: list[tuple[NormalizedName, SpecifierSet]] = []
        with self._prefetch_lock:
            if self._closed:
                return
            for req in requirements:
                key = canonicalize_name(req.name)
                if key not in self._prefetched:
                    self._prefetched.add(key)
                    wanted.append((key, req.specifier))
            if not wanted:
                return
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.prefetch_jobs, thread_name_prefix="prefetch")
            pool = self._pool
        # submitted outside the lock: a submit may start a thread and wait for it to run, and
        # the resolver's own thread should not wait for that behind a prefetch thread
        with contextlib.suppress(RuntimeError):  # closed meanwhile: nothing more is wanted
            for key, specifier in wanted:
                pool.submit(self._warm, key, specifier)

    def _warm(self, name: str, specifier: SpecifierSet) -> None:
        with contextlib.suppress(Exception):
            pre = self.source.options.pre or any(s.prereleases for s in specifier)
            for version, _wheels in self.source.versions(name):
                if (pre or not version.is_prerelease) and specifier.contains(
                    version, prereleases=True
                ):
                    break
            else:
                return
            candidates = self.source.version_candidates(name, version)
            first = candidates[0] if candidates else None
            if first is not None and not (
                first.is_sdist and (first.link.metadata_hashes is None or not self.build_metadata)
            ):
                # an sdist without index metadata is built only when the resolver asks (and
                # never read by a provider that cannot build: its refusal would be remembered)
                self.prefetch(self._dependencies(first))
                if name not in self.preferred and self._python_ok(first):
                    self._guess(first)

    def _guess(self, candidate: Candidate) -> None:
        """Tell :attr:`on_candidate` of a likely pick: a wheel (never an sdist, a yanked file
        or a build tied to its dependencies' versions) of a project not in a conflict the
        resolver walked back from."""
        listener = self.on_candidate
        if (
            listener is None
            or candidate.is_sdist
            or candidate.abi
            or candidate.link.yanked is not None
            or candidate.name in self._unsettled
        ):
            return
        listener(candidate)

    def _note_conflict(self, causes: Sequence[Any]) -> None:
        """The projects of a conflict (the requirements and the candidates that asked for
        them): their candidate lists are changing, so their picks are guessed no more."""
        for cause in causes:
            self._unsettled.add(canonicalize_name(cause.requirement.name))
            parent = getattr(cause, "parent", None)
            if parent is not None:
                self._unsettled.add(parent.name)

    def close(self) -> None:
        """Stop prefetching: what is queued is dropped, and what is under way (a request that
        only fills the caches) is not waited for."""
        with self._prefetch_lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=False, cancel_futures=True)

    def get_dependencies(self, candidate: Candidate) -> list[Requirement]:
        if self.on_pin is not None and not candidate.extras:
            self.on_pin(candidate)
        deps = self._dependencies(candidate)
        self.prefetch(deps)
        return deps

    def _dependencies(self, candidate: Candidate) -> list[Requirement]:
        deps: list[Requirement] = []
        if candidate.extras:
            deps.append(Requirement(f"{candidate.name}=={candidate.version}"))
        elif candidate.abi:
            deps.extend(self.abi.requirements(candidate))  # the build's dependency versions
        if self.no_deps:
            return deps
        for req, marker in self._requires(candidate):
            if marker is None:
                if not candidate.extras:
                    deps.append(req)
                continue
            if candidate.extras:
                if not self._marker(marker, req, candidate, "") and any(
                    self._marker(marker, req, candidate, extra) for extra in candidate.extras
                ):
                    deps.append(req)
            elif self._marker(marker, req, candidate, ""):
                deps.append(req)
        return deps

    # -- helpers --------------------------------------------------------------------------------
    def _marker(self, marker: str, req: Requirement, candidate: Candidate, extra: str) -> bool:
        plain = candidate.variant is None  # the same answer for every non-variant wheel
        if plain:
            known = self._markers.get((marker, extra))
            if known is not None:
                return known
        env = {**self.environment, "extra": extra}
        target = self.source.options.target
        supported = target.supported if target is not None else None
        try:
            value = evaluate_marker(marker, env, candidate.variant, supported=supported)
        except VariantError as exc:
            raise DependencyError(
                f"{candidate.link.filename}: the marker of dependency {req} cannot be "
                f"evaluated: {exc}"
            ) from exc
        if plain:
            self._markers[(marker, extra)] = value
        return value

    def _requires(self, candidate: Candidate) -> list[tuple[Requirement, str | None]]:
        url = candidate.link.url
        known = self._metadata.get(url)
        if known is not None:
            return known
        with self._metadata_lock:
            gate = self._metadata_gates.setdefault(url, threading.Lock())
        with gate:
            failed = self._metadata_errors.get(url)
            if failed is not None:
                raise failed  # a prefetch thread's failure, reported once, without asking again
            try:
                return self._read_requires(candidate)
            except FitwheelError as exc:
                self._metadata_errors[url] = exc
                raise

    def _read_requires(self, candidate: Candidate) -> list[tuple[Requirement, str | None]]:
        url = candidate.link.url
        if url not in self._metadata:
            raw = self._raw_metadata(candidate)
            from fitwheel.errors import InvalidWheelError

            try:
                meta = parse_metadata(raw, f"{candidate.link.filename} (METADATA)")
            except InvalidWheelError as exc:
                raise InvalidCandidateMetadata(str(exc)) from None
            meta_name, meta_version = meta.name, meta.version
            try:
                parsed_version = Version(meta_version) if meta_version else None
            except InvalidVersion:
                raise InvalidCandidateMetadata(
                    f"{candidate.link.filename}: its metadata gives the Version "
                    f"{meta_version!r}, which is not a valid version (PEP 440)"
                ) from None
            if (meta_name and canonicalize_name(meta_name) != candidate.name) or (
                parsed_version is not None and parsed_version != candidate.version
            ):
                raise InvalidCandidateMetadata(
                    f"{candidate.link.filename}: its metadata says {meta_name} {meta_version}, "
                    "which does not match the filename"
                )
            try:
                requires = [
                    split_dependency(value, candidate.link.filename) for value in meta.requires_dist
                ]
            except DependencyError as exc:
                raise InvalidCandidateMetadata(str(exc)) from None
            self._requires_python[url] = meta.requires_python
            self.core_metadata[url] = meta
            self._metadata[url] = requires
        return self._metadata[url]

    def _raw_metadata(self, candidate: Candidate) -> bytes:
        if not candidate.is_sdist:
            return fetch_metadata(candidate.link, self.session)
        from fitwheel.index.findlinks import local_path

        if candidate.link.metadata_hashes is not None and local_path(candidate.link.url) is None:
            return fetch_metadata(candidate.link, self.session)  # PEP 658: no build needed
        if self.build_metadata is None:
            raise DependencyError(
                f"{candidate.link.filename} is a source distribution, and source builds are "
                "not available here."
            )
        return self.build_metadata(candidate)


def split_dependency(value: str, source: str) -> tuple[Requirement, str | None]:
    """A ``Requires-Dist`` value as (requirement without marker, marker text).

    The marker is kept as text: variant markers are beyond what ``packaging`` parses, so it is
    evaluated by :func:`evaluate_marker`."""
    try:
        return split_requires_dist(value)
    except InvalidRequirement as exc:
        raise DependencyError(f"{source}: cannot parse the dependency {value!r}: {exc}") from exc
