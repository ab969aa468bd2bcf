"""Why a requirement has no candidate: the cause, in words a user can act on.

When resolution fails for a project, the files the indexes list are looked at again, filter by
filter, in the order the candidate source applies them, and the first filter that leaves nothing
names the cause:

- the project is on no index searched (the indexes are listed, in the order searched, with
  where each came from);
- no version matches the requirement (the versions there are listed, and, under the
  ``first-index`` strategy, which index they came from);
- no wheel of a matching version is for this interpreter and platform (the platforms the
  wheels are for are listed);
- every matching wheel's ``Requires-Python`` excludes this interpreter (the newest version
  that would fit is named);
- every matching file is yanked;
- the matching files are all of a kind ``--only-binary`` (sdists) or ``--no-binary`` (wheels)
  refuses.

Anything else (the versions exist and fit, but the requirements conflict) is left to the
resolver's own account of the conflict.

:func:`shadowed` looks the other way, after a resolution: under the ``first-index`` strategy a
project comes from the first index that has it, and a later index may have a newer version that
the requirements allow (which pip, taking the best version of any index, would install). Each
such project gets one line naming both indexes and the way to let the later one count.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import Tag
from packaging.utils import NormalizedName
from packaging.version import InvalidVersion, Version

from fitwheel.errors import FitwheelError
from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import FIND_LINKS_RANK, Finder
from fitwheel.index.http import Session
from fitwheel.index.simple import Link
from fitwheel.resolve.candidates import Candidate, CandidateSource
from fitwheel.variants.errors import VariantError
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.names import canonicalize_name

#: at most this many versions or platforms are named in one message
_SHOWN = 8


def _python_ok(spec: str | None, python_version: str) -> bool:
    if not spec:
        return True
    try:
        return SpecifierSet(spec).contains(python_version, prereleases=True)
    except InvalidSpecifier:
        return True


def _shown(items: Sequence[str]) -> str:
    more = f", ... ({len(items) - _SHOWN} more)" if len(items) > _SHOWN else ""
    return ", ".join(items[:_SHOWN]) + more


class _File:
    __slots__ = ("link", "tags", "version", "wheel")

    def __init__(self, link: Link, version: Version, wheel: WheelFilename | None) -> None:
        self.link = link
        self.version = version
        self.wheel = wheel
        self.tags: list[Tag] = []
        if wheel is not None:
            self.tags = [
                Tag(py, abi, plat)
                for py in wheel.python_tag.split(".")
                for abi in wheel.abi_tag.split(".")
                for plat in wheel.platform_tag.split(".")
            ]


def _files(name: NormalizedName, links: Sequence[Link]) -> list[_File]:
    """The distribution files of ``name`` with a readable version (wheels, then sdists)."""
    out = []
    for link in links:
        if link.is_wheel:
            try:
                wheel = WheelFilename.parse(link.filename)
                version = Version(wheel.version)
            except (VariantError, InvalidVersion):
                continue
            if canonicalize_name(wheel.name) == name:
                out.append(_File(link, version, wheel))
            continue
        for suffix in (".tar.gz", ".zip"):
            if link.filename.endswith(suffix):
                stem = link.filename[: -len(suffix)]
                project, _, text = stem.rpartition("-")
                try:
                    version = Version(text)
                except InvalidVersion:
                    break
                if canonicalize_name(project) == name:
                    out.append(_File(link, version, None))
                break
    return out


def _routed(finder: Finder, key: str, link: Link) -> tuple[str, str] | None:
    """Where the finder's route took ``link`` from (None: the project was not routed)."""
    route: Callable[[str, str], tuple[str, str] | None] | None
    route = getattr(finder.route, "index_of", None)
    if route is None:
        return None
    found: tuple[str, str] | None = route(key, link.url)
    return found


def index_of(finder: Finder, key: str, link: Link) -> tuple[str, str] | None:
    """The index the file ``link`` of project ``key`` came from, and what that index is (where
    it was configured, or what routed the project there); None for a find-links file.

    A project the finder's route took elsewhere (a variant index, a torch backend index) has
    its files from there, whatever the configured indexes are: the route says which (its
    ``index_of``); the others' index is the one at their place in the search order."""
    rank = finder.rank(link)
    if rank == FIND_LINKS_RANK:
        return None
    found = _routed(finder, key, link)
    if found is not None:
        return found
    order = finder.config.search_order()
    if rank >= len(order):
        return None
    return order[rank], finder.config.origin_of(order[rank])


def _where(source: CandidateSource, key: NormalizedName, links: Sequence[Link]) -> str:
    """Which indexes the files came from, and (first-index) which were not looked at."""
    finder = source.finder
    config = finder.config
    order = config.search_order()
    used: dict[str, str] = {}
    routed = local = False
    for link in sorted(links, key=finder.rank):
        where = index_of(finder, key, link)
        if where is None:
            local = True
            continue
        used.setdefault(*where)
        routed = routed or _routed(finder, key, link) is not None
    text = ", ".join(f"{url} ({origin})" for url, origin in used.items())
    if local:
        text = f"{text}, find-links" if text else "find-links"
    ranks = sorted({finder.rank(link) for link in links} - {FIND_LINKS_RANK})
    if routed or not ranks:
        return text
    if finder.index_strategy == "first-index" and ranks[-1] + 1 < len(order):
        later = order[ranks[-1] + 1 :]
        text += (
            "; the first index that has the project is the only one used under --index-strategy "
            "first-index, so "
            + ", ".join(f"{url} ({config.origin_of(url)})" for url in later)
            + " was not searched for it (--index-strategy unsafe-best-match looks at every index)"
        )
    return text


def unavailable_reason(
    name: str,
    specifier: SpecifierSet,
    source: CandidateSource,
    requires_python: Callable[[Link], str | None] | None = None,
) -> str | None:
    """Why no file of ``name`` can satisfy ``specifier`` here, or None when files would (the
    failure is then a conflict between requirements). ``requires_python`` tells a wheel's
    Requires-Python (the index's, else its metadata's, when the resolver read it)."""
    if requires_python is None:

        def requires_python(link: Link) -> str | None:
            return link.requires_python

    key = canonicalize_name(name)
    finder = source.finder
    options = source.options
    links = finder.links(key)
    files = _files(key, links)
    if not files:
        return (
            f"{key} is not on any index searched: {finder.config.describe_indexes()}; check the "
            "name, or add the index that has it with --extra-index-url"
        )
    pre = options.pre or any(s.prereleases for s in specifier)
    matching = [f for f in files if specifier.contains(f.version, prereleases=True)]
    if not pre and any(not f.version.is_prerelease for f in matching):
        matching = [f for f in matching if not f.version.is_prerelease]
    if not matching:
        versions = sorted({f.version for f in files}, reverse=True)
        return (
            f"no version of {key} matches {specifier or 'the requirement'}: the versions are "
            f"{_shown([str(v) for v in versions])}, from {_where(source, key, links)}"
        )
    formats = options.formats
    sdists = [f for f in matching if f.wheel is None]
    if not formats.wheels_allowed(key):
        if sdists:
            return None  # the sdists were candidates: a conflict, or what they build
        versions = sorted({f.version for f in matching}, reverse=True)
        refusal = formats.wheel_refusal(key)
        return (
            f"{key} has only wheels ({_shown([str(v) for v in versions])}), which {refusal} "
            f"refuses; drop {refusal} for it, or add an index that has its source distribution"
        )
    wheels = [f for f in matching if f.wheel is not None]
    sdist_only = sorted({f.version for f in sdists} - {f.version for f in wheels}, reverse=True)
    if not formats.sdists_allowed(key) and sdists:
        supported_tags = set(options.tags)
        if not any(any(t in supported_tags for t in f.tags) for f in wheels):
            refusal = formats.refusal(key)
            shown = _shown([str(v) for v in sdist_only or sorted({f.version for f in sdists})])
            return (
                f"only source distributions ({shown}), builds refused by {refusal}; "
                f"{formats.build_advice(key)}"
            )
    if not wheels:
        return None  # source distributions only: the build step decides
    if sdists and formats.sdists_allowed(key):
        return None  # the sdists were candidates too
    supported = set(options.tags)
    fitting = [f for f in wheels if any(t in supported for t in f.tags)]
    if not fitting:
        platforms = sorted({f.wheel.platform_tag for f in wheels if f.wheel is not None})
        pythons = sorted({f"{f.wheel.python_tag}-{f.wheel.abi_tag}" for f in wheels if f.wheel})
        here = options.tags[0] if options.tags else None
        what = f" ({here.interpreter}-{here.abi}-{here.platform})" if here is not None else ""
        return (
            f"no wheel of {key} {specifier or ''}".rstrip()
            + f" is for this interpreter and platform{what}: the matching wheels of {key} are "
            f"for the platforms {_shown(platforms)} (Python tags {_shown(pythons)}); use a "
            "matching interpreter or machine, or pin a version that has a wheel for this one"
        )
    python = options.python_version
    for_python = [f for f in fitting if _python_ok(requires_python(f.link), python)]
    if not for_python:
        excluded = max(fitting, key=lambda f: f.version)
        others = [
            f
            for f in files
            if f.wheel is not None
            and any(t in supported for t in f.tags)
            and _python_ok(requires_python(f.link), python)
            and (pre or not f.version.is_prerelease)
        ]
        would_fit = max((f.version for f in others), default=None)
        advice = (
            f"{key} {would_fit} is the newest version that supports Python {python} "
            f"({key}=={would_fit})"
            if would_fit is not None
            else f"no version of {key} supports Python {python}"
        )
        return (
            f"every version of {key} matching {specifier or 'the requirement'} excludes this "
            f"interpreter: {key} {excluded.version} requires Python "
            f"{requires_python(excluded.link)} "
            f"and the environment has Python {python}; {advice}, or use a newer Python"
        )
    live = [f for f in for_python if f.link.yanked is None]
    if not live:
        yanked = sorted({f.version for f in for_python}, reverse=True)
        reasons = sorted({f.link.yanked for f in for_python if f.link.yanked})
        why = f" ({'; '.join(reasons)})" if reasons else ""
        return (
            f"every version of {key} matching {specifier or 'the requirement'} is yanked from "
            f"its index{why}: {_shown([str(v) for v in yanked])}; a yanked version is used only "
            f"when pinned exactly ({key}=={yanked[0]})"
        )
    return _no_variant_fits(key, live, source)


def _no_variant_fits(
    key: NormalizedName, live: Sequence[_File], source: CandidateSource
) -> str | None:
    """Why none of ``live``, all variant wheels, fits the target (each label's reason, from the
    newest version the resolver looked at), or None when that is not what failed."""
    if any(f.wheel is None or f.wheel.variant_label is None for f in live):
        return None
    for version in sorted({f.version for f in live}, reverse=True):
        trace = source.traces.get((key, str(version)))
        if trace is None:
            continue
        if trace.ordered or trace.forced or not trace.rejected:
            return None
        reasons = "; ".join(f"{label}: {why}" for label, why in trace.rejected.items())
        return (
            f"no build of {key} {version} fits this target, and it has no null or non-variant "
            f"build to fall back on: {reasons}"
        )
    return None


def _newer_on(
    url: str,
    cand: Candidate,
    specifier: SpecifierSet,
    source: CandidateSource,
    session: Session | None,
) -> Version | None:
    """The newest version of ``cand``'s project on index ``url`` that is newer than ``cand``,
    allowed by ``specifier`` and installable here; None when there is none. An index that does
    not answer raises (the caller stops asking it: the notice is advice, never a failure)."""
    config = source.finder.config
    alone = IndexConfig(url, (), (), {}, config.cert, ((url, config.origin_of(url)),))
    other = CandidateSource(Finder(alone, session, "first-index"), source.options)
    pre = source.options.pre or any(s.prereleases for s in specifier) or cand.version.is_prerelease
    versions = other.versions(cand.name)
    for version, wheels in versions:
        if version <= cand.version:
            break
        if version.is_prerelease and not pre:
            continue
        if not specifier.contains(version, prereleases=True):
            continue
        if any(link.yanked is None for link, _wheel, _rank in wheels):
            return version
    return None


def shadowed(
    pins: Sequence[Candidate],
    specifiers: Mapping[NormalizedName, SpecifierSet],
    source: CandidateSource,
) -> list[str]:
    """One line per project that a later index has in a newer allowed version, which the
    ``first-index`` strategy passed over (the later indexes are asked here, in parallel)."""
    finder = source.finder
    if finder.index_strategy != "first-index":
        return []
    order = finder.config.search_order()
    work: list[tuple[Candidate, list[str]]] = []
    for cand in pins:
        rank = finder.rank(cand.link)
        if rank == FIND_LINKS_RANK or rank + 1 >= len(order):
            continue
        if _routed(finder, cand.name, cand.link) is not None:
            continue  # a route took it from its own index: the others were not asked
        work.append((cand, list(order[rank + 1 :])))
    if not work:
        return []
    found: dict[str, str] = {}
    # asked once each, without retries and with a short time-out: an index that does not answer
    # is not asked again in this run
    session = finder.session.quick() if finder.session is not None else None
    dead: set[str] = set()

    def check(cand: Candidate, later: list[str]) -> None:
        spec = specifiers.get(cand.name, SpecifierSet())
        for url in later:
            if url in dead:
                continue
            try:
                newer = _newer_on(url, cand, spec, source, session)
            except (FitwheelError, OSError):
                dead.add(url)
                continue
            if newer is not None:
                config = finder.config
                first = order[finder.rank(cand.link)]
                found[cand.name] = (
                    f"{cand.name} {cand.version} is from {first} ({config.origin_of(first)}), "
                    f"the first index that has it; {url} ({config.origin_of(url)}) has the "
                    f"newer {newer}, which pip would install: pass --index-strategy "
                    "unsafe-best-match to consider every index"
                )
                return

    import functools

    from fitwheel.threads import run_threads

    for start in range(0, len(work), 8):
        run_threads([functools.partial(check, c, later) for c, later in work[start : start + 8]])
    return [found[c.name] for c, _later in work if c.name in found]
