"""From the files of a project to ordered candidates, variant-aware.

Versions are chosen as usual (variants never influence which version); inside one version the
candidates are: the compatible variant wheels in the order :func:`order_variants` gives for the
target, then the non-variant wheel, then the source distribution (built only if the resolver
gets that far: a version with no wheel for this interpreter is still a candidate through its
sdist, as with pip). ``--no-binary`` / ``--only-binary`` (:mod:`fitwheel.resolve.formats`)
drop the wheels or the sdists of a project. Every step is written to a :class:`VersionTrace` so that
``--explain`` and ``--report`` can say why a wheel was picked or rejected.

A variant built for versions of another distribution (the ``abi_dependency`` namespace) gives one
candidate per version range it accepts, which the resolver pairs with that requirement
(:mod:`fitwheel.resolve.abideps`).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.utils import NormalizedName
from packaging.version import InvalidVersion, Version

from fitwheel._values import Frozen
from fitwheel.errors import InputError
from fitwheel.index.finder import FIND_LINKS_RANK, Finder
from fitwheel.index.simple import Link
from fitwheel.resolve.formats import FormatControl
from fitwheel.variants.abi import AbiChoice, abi_choices, with_abi_provider
from fitwheel.variants.errors import VariantError
from fitwheel.variants.filenames import SdistFilename, WheelFilename, is_sdist_filename
from fitwheel.variants.model import VariantDescription, VariantInfo
from fitwheel.variants.names import canonicalize_name
from fitwheel.variants.ordering import Target, order_variants


class Candidate(Frozen):
    __slots__ = ("abi", "extras", "link", "name", "variant", "version", "wheel")
    name: NormalizedName
    version: Version
    link: Link
    #: None: a source distribution, built into a wheel when installed
    wheel: WheelFilename | None
    #: None: a non-variant wheel
    variant: VariantDescription | None
    extras: frozenset[str]
    #: the variant's ``abi_dependency`` (feature, value) pairs this candidate stands for: one
    #: candidate per combination of a variant's values, each needing its dependencies' versions
    abi: AbiChoice

    def __init__(
        self,
        name: NormalizedName,
        version: Version,
        link: Link,
        wheel: WheelFilename | None,
        variant: VariantDescription | None = None,
        extras: frozenset[str] = frozenset(),
        abi: AbiChoice = (),
    ) -> None:
        _set = object.__setattr__
        _set(self, "name", name)
        _set(self, "version", version)
        _set(self, "link", link)
        _set(self, "wheel", wheel)
        _set(self, "variant", variant)
        _set(self, "extras", extras)
        _set(self, "abi", abi)

    @property
    def label(self) -> str | None:
        return self.wheel.variant_label if self.wheel is not None else None

    @property
    def is_sdist(self) -> bool:
        return self.wheel is None

    def with_extras(self, extras: frozenset[str]) -> Candidate:
        return Candidate(
            self.name, self.version, self.link, self.wheel, self.variant, extras, self.abi
        )

    def __str__(self) -> str:
        extras = f"[{','.join(sorted(self.extras))}]" if self.extras else ""
        return f"{self.name}{extras} {self.version} ({self.link.filename})"


class VersionTrace:
    """What happened to the variants of one version."""

    __slots__ = (
        "forced",
        "has_plain_wheel",
        "info",
        "name",
        "no_wheel",
        "ordered",
        "rejected",
        "variants_source",
        "version",
    )

    def __init__(
        self,
        name: NormalizedName,
        version: str,
        variants_source: str | None = None,
        ordered: list[str] | None = None,
        rejected: dict[str, str] | None = None,
        no_wheel: list[str] | None = None,
        has_plain_wheel: bool = False,
        forced: str | None = None,
        info: VariantInfo | None = None,
    ) -> None:
        self.name = name
        self.version = version
        self.variants_source = variants_source
        self.ordered: list[str] = [] if ordered is None else ordered
        self.rejected: dict[str, str] = {} if rejected is None else rejected
        #: labels that the ordering accepted but no wheel for this interpreter carries
        self.no_wheel: list[str] = [] if no_wheel is None else no_wheel
        self.has_plain_wheel = has_plain_wheel
        self.forced = forced
        self.info = info


class Options:
    __slots__ = ("forced", "formats", "no_variants", "pre", "python_version", "tags", "target")

    def __init__(
        self,
        target: Target | None,
        python_version: str,
        tags: Sequence[Tag],
        pre: bool = False,
        no_variants: bool = False,
        forced: Mapping[NormalizedName, str] | None = None,
        formats: FormatControl | None = None,
    ) -> None:
        self.target = target
        self.python_version = python_version
        self.tags = tags
        self.pre = pre
        self.no_variants = no_variants
        #: project -> label to install without checking it
        self.forced: Mapping[NormalizedName, str] = {} if forced is None else forced
        #: --no-binary / --only-binary: whether a project's wheels and sdists count
        self.formats = FormatControl() if formats is None else formats


def _read_variants(
    finder: Finder, name: str, version: str, links: Sequence[Link]
) -> tuple[VariantInfo | None, str | None]:
    """The version's variant metadata: its variants.json, else (PEP 825) the wheels' own files."""
    from fitwheel.variants.reading import loads_variant_info

    link = finder.variants_json_link(name, version)
    if link is not None:
        return loads_variant_info(finder.read(link, "variants.json"), link.url, "index"), link.url
    from fitwheel.index.findlinks import local_path
    from fitwheel.index.metadata import fetch_member, wheel_member
    from fitwheel.variants.merging import merge_variant_infos

    infos = []
    seen: set[str] = set()
    for wheel_link in links:
        label = WheelFilename.parse(wheel_link.filename).variant_label
        if label is None or label in seen:
            continue
        seen.add(label)
        path = local_path(wheel_link.url)
        if path is not None:
            data = wheel_member(path, "variant.json")
        else:
            session = finder.session
            assert session is not None
            data = fetch_member(wheel_link, session, "variant.json", required=False)
        if data is None:
            continue
        infos.append(loads_variant_info(data, wheel_link.url, "wheel", expected_label=label))
    if not infos:
        return None, None
    from fitwheel.variants.filenames import variants_json_filename

    # PEP 825 allows it; --explain says so, since the index serves no variants file
    said = (
        f"the wheels' own variant.json (the index serves no "
        f"{variants_json_filename(name, version)})"
    )
    return merge_variant_infos(infos, source=f"variant.json of {name} {version}"), said


#: a compatible wheel: its link, parsed filename and best tag rank (0: most specific); an sdist
#: has no filename (None) and comes after every wheel
_Wheel = tuple[Link, WheelFilename | None, int]
_SDIST_RANK = 1 << 30


class CandidateSource:
    __slots__ = (
        "_gates",
        "_lock",
        "_ordered",
        "_ranks",
        "_versions",
        "direct",
        "finder",
        "options",
        "traces",
    )

    def __init__(
        self,
        finder: Finder,
        options: Options,
        traces: dict[tuple[NormalizedName, str], VersionTrace] | None = None,
    ) -> None:
        self.finder = finder
        self.options = options
        self.traces: dict[tuple[NormalizedName, str], VersionTrace] = (
            {} if traces is None else traces
        )
        self._versions: dict[NormalizedName, list[tuple[Version, list[_Wheel]]]] = {}
        self._ordered: dict[tuple[NormalizedName, Version], list[Candidate]] = {}
        self._lock = threading.Lock()
        self._ranks: dict[Tag, int] | None = None
        # one scan of each project, whichever thread asks first
        self._gates: dict[NormalizedName, threading.Lock] = {}
        #: projects given directly (a wheel path or URL, a build): that file is the only
        #: candidate (see :meth:`bind`)
        self.direct: dict[NormalizedName, set[Path]] = {}

    def bind(self, name: str, wheel: Path) -> None:
        """Make ``wheel`` (a find-links file) a candidate of ``name`` and, with any other
        bound the same way, the only ones, as a direct reference is in pip: a dependency on the
        project that it does not meet is a conflict."""
        self.direct.setdefault(canonicalize_name(name), set()).add(wheel.resolve())

    def _tag_rank(self) -> dict[Tag, int]:
        if self._ranks is None:
            self._ranks = {tag: i for i, tag in enumerate(self.options.tags)}
        return self._ranks

    def _python_ok(self, link: Link) -> bool:
        if not link.requires_python:
            return True
        try:
            return SpecifierSet(link.requires_python).contains(
                self.options.python_version, prereleases=True
            )
        except InvalidSpecifier:
            return True  # pip ignores a broken requires-python, and so does fitwheel

    def versions(self, name: str) -> list[tuple[Version, list[_Wheel]]]:
        """The project's installable versions, newest first (with ``unsafe-first-match``: an
        earlier index's first), with their compatible wheels (cheap: no variant metadata is
        read here). Computed once; concurrent callers wait."""
        key = canonicalize_name(name)
        with self._lock:
            if key in self._versions:
                return self._versions[key]
            gate = self._gates.setdefault(key, threading.Lock())
        with gate:
            if key not in self._versions:
                found = self._scan(key)
                with self._lock:
                    self._versions[key] = found
            return self._versions[key]

    def version_candidates(self, name: str, version: Version) -> list[Candidate]:
        """The candidates of one version, best first (variant metadata is read here, once)."""
        key = canonicalize_name(name)
        wheels = dict(self.versions(key)).get(version, [])
        with self._lock:
            gate = self._gates[key]
        with gate:
            cached = self._ordered.get((key, version))
            if cached is None:
                cached = self._order_version(key, version, wheels)
                self._ordered[(key, version)] = cached
            return cached

    def cached_candidates(self, name: NormalizedName, version: str) -> list[Candidate]:
        """The candidates of one version already ordered (none: not read yet)."""
        with self._lock:
            return list(self._ordered.get((name, Version(version)), ()))

    def candidates(self, name: str) -> list[Candidate]:
        """Every candidate of every version, newest first (reads all variant metadata)."""
        return [c for v, _ in self.versions(name) for c in self.version_candidates(name, v)]

    def _scan(self, key: NormalizedName) -> list[tuple[Version, list[_Wheel]]]:
        tag_rank = self._tag_rank()
        by_version: dict[Version, list[_Wheel]] = {}
        formats = self.options.formats
        wheels_ok = formats.wheels_allowed(key)
        sdists_ok = formats.sdists_allowed(key)
        links = self.finder.links(key)
        bound = self.direct.get(key)
        if bound is not None:
            links = [link for link in links if _local_file(link) in bound]
            wheels_ok = True
        for link in links:
            if not link.is_wheel:
                sdist = _sdist_version(link, key)
                if sdist is None or not self._python_ok(link):
                    continue
                if sdists_ok:
                    by_version.setdefault(sdist, []).append((link, None, _SDIST_RANK))
                continue
            try:
                wheel = WheelFilename.parse(link.filename)
                version = Version(wheel.version)
            except (VariantError, InvalidVersion):
                continue
            if not wheels_ok:
                continue
            if canonicalize_name(wheel.name) != key or not self._python_ok(link):
                continue
            ranks = [tag_rank[t] for t in _tags_of(wheel) if t in tag_rank]
            if not ranks:
                continue
            by_version.setdefault(version, []).append((link, wheel, min(ranks)))
        finder = self.finder
        first: dict[Version, int] = {}
        for version, wheels in by_version.items():
            # a version on several indexes: the files of the first of them (and find-links)
            best = min(finder.rank(w[0]) for w in wheels)
            first[version] = best
            by_version[version] = [
                w for w in wheels if finder.rank(w[0]) in (best, FIND_LINKS_RANK)
            ]
        newest = sorted(by_version.items(), key=lambda item: item[0], reverse=True)
        if finder.index_strategy == "unsafe-first-match":
            # every version of an earlier index before any of a later one (a stable sort)
            newest.sort(key=lambda item: first[item[0]])
        return newest

    def _order_version(
        self, name: NormalizedName, version: Version, wheels: list[_Wheel]
    ) -> list[Candidate]:
        def best(items: list[_Wheel]) -> list[_Wheel]:
            # best tag first, then the highest build number (as pip orders)
            return sorted(items, key=lambda t: (t[2], _build_key(t[1].build if t[1] else None)))

        sdists = [w for w in wheels if w[1] is None]
        plain = best([w for w in wheels if w[1] is not None and w[1].variant_label is None])
        variant = [w for w in wheels if w[1] is not None and w[1].variant_label is not None]
        trace = VersionTrace(name, str(version), has_plain_wheel=bool(plain))
        out: list[Candidate] = []
        forced = self.options.forced.get(name)
        if variant and not self.options.no_variants:
            self.traces[(name, str(version))] = trace
            info, source = _read_variants(self.finder, name, str(version), [w[0] for w in variant])
            trace.variants_source = source
            trace.info = info
            if forced is not None:
                trace.forced = forced
                chosen = best([w for w in variant if _label(w) == forced])
                if not chosen:
                    return []
                desc = info.variants.get(forced) if info else None
                return [Candidate(name, version, w[0], w[1], desc) for w in chosen[:1]]
            if info is None:
                for label in sorted({_label(w) for w in variant}):
                    trace.rejected[label] = "no variants.json and no variant.json in the wheel"
            else:
                target = self.options.target
                if target is None:
                    raise InputError(
                        "variant wheels need a target: pass --profile or let fitwheel detect"
                    )
                # abi_dependency: ranked last, newest dependency first (see variants.abi)
                info = trace.info = with_abi_provider(info)
                ordering = order_variants(info, target)
                trace.rejected.update(ordering.rejected)
                for desc in ordering.ordered:
                    matching = best([w for w in variant if _label(w) == desc.label])
                    if not matching:
                        trace.no_wheel.append(desc.label)
                        continue
                    trace.ordered.append(desc.label)
                    link, wheel, _ = matching[0]
                    out.extend(
                        Candidate(name, version, link, wheel, desc, abi=choice)
                        for choice in abi_choices(desc)
                    )
                for label in sorted({_label(w) for w in variant}):
                    if label not in info.variants:
                        trace.rejected[label] = "the label is not in the version's variant metadata"
        elif forced is not None and not self.options.no_variants:
            return []
        if plain:
            link, plain_wheel, _ = plain[0]
            out.append(Candidate(name, version, link, plain_wheel, None))
        if sdists:
            # one sdist per version: the first index's (the scan kept only its files), .tar.gz
            # before .zip
            sdists.sort(key=lambda w: not w[0].filename.lower().endswith(".tar.gz"))
            out.append(Candidate(name, version, sdists[0][0], None, None))
        return out


def _local_file(link: Link) -> Path | None:
    from fitwheel.index.findlinks import local_path

    path = local_path(link.url)
    return path.resolve() if path is not None else None


def _label(item: _Wheel) -> str:
    return (item[1].variant_label if item[1] is not None else None) or ""


def _sdist_version(link: Link, key: NormalizedName) -> Version | None:
    """The version of an sdist of project ``key`` (None: not one, or another project's)."""
    if not is_sdist_filename(link.filename):
        return None
    try:
        parsed = SdistFilename.parse(link.filename, key)
    except VariantError:
        return None
    if parsed.normalized_name != key:
        return None
    return parsed.parsed_version


def _build_key(build: str | None) -> tuple[int, str]:
    if not build:
        return (0, "")
    digits = ""
    for ch in build:
        if not ch.isdigit():
            break
        digits += ch
    return (-int(digits or 0), build[len(digits) :])


def _tags_of(wheel: WheelFilename) -> list[Tag]:
    return [
        Tag(py, abi, plat)
        for py in wheel.python_tag.split(".")
        for abi in wheel.abi_tag.split(".")
        for plat in wheel.platform_tag.split(".")
    ]
