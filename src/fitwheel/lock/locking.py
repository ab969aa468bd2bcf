"""``fitwheel lock`` without the command line: resolve for every target, write one lock.

Each target is resolved on its own (its own tags, marker values and variant ordering decide
its versions and builds, exactly as ``install`` would decide on that machine), but the targets
share everything that does not depend on the machine: one HTTP session and page cache, the
project pages (each read once, keyed by URL), the variants files (read once), and one
:class:`SharedMetadata` (each wheel's METADATA read once). Each target has a finder of its own
because each may take its torch projects from another index: with ``--torch-backend`` a
:class:`~fitwheel.torchbackend.routing.Router` per target routes them to ``BASE/<backend>/``,
``auto`` deciding from that target's profile (its GPUs, driver, ROCm), not this machine's.
A single resolution with all targets in view would have to pick one version for all of them,
which is wrong when targets differ in Python version or when a release dropped one GPU;
per-target resolutions over shared metadata give each target what ``install`` would give it,
at little more than the cost of one.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
import tempfile
import threading
import urllib.parse
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from packaging.utils import NormalizedName
from packaging.version import Version

from fitwheel.errors import InputError, ResolutionError
from fitwheel.index.config import IndexConfig, load_index_config
from fitwheel.index.finder import Finder
from fitwheel.index.http import Session
from fitwheel.index.session import RemoteFiles, open_session
from fitwheel.index.simple import Link
from fitwheel.lock.document import (
    Lock,
    LockedPackage,
    LockedWheel,
    TargetRecord,
    loads_lock,
    prune_variants,
)
from fitwheel.lock.targets import LockTarget
from fitwheel.options import ResolutionOptions, SourceOptions
from fitwheel.paths import CacheLayout, cache_root
from fitwheel.resolve.candidates import Candidate, CandidateSource, Options
from fitwheel.resolve.plugin_notices import plugin_notices
from fitwheel.resolve.provider import SharedMetadata
from fitwheel.resolve.reqfile import read_local
from fitwheel.resolve.requirements import UserInput, collect, ignored
from fitwheel.resolve.resolver import Resolution, resolve

if TYPE_CHECKING:
    from fitwheel.platform.profile import Profile
    from fitwheel.resolve.formats import FormatControl
    from fitwheel.torchbackend.routing import Router
    from fitwheel.torchbackend.settings import TorchSettings


class LockRequest:
    """What the command line asks for: the requirements, where packages come from and how
    versions are chosen."""

    def __init__(
        self,
        *,
        requirements: Sequence[str] = (),
        requirement_files: Sequence[str] = (),
        constraint_files: Sequence[str] = (),
        sources: SourceOptions | None = None,
        resolution: ResolutionOptions | None = None,
        env: Mapping[str, str] | None = None,
        torch: TorchSettings | None = None,
        formats: FormatControl | None = None,
    ) -> None:
        self.requirements = requirements
        self.requirement_files = requirement_files
        self.constraint_files = constraint_files
        #: indexes, find-links, trust, time limits and the cache
        self.sources = SourceOptions() if sources is None else sources
        #: ``pre``, ``upgrade``, ``upgrade_packages`` and ``allow_fallback`` apply to a lock
        #: (``no_deps`` to a download: the named projects alone)
        self.resolution = ResolutionOptions() if resolution is None else resolution
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        #: --torch-backend, --torch-index-url, --variant-index-url and their settings
        self.torch = torch
        #: which kinds of distribution count (None: every kind; a lock takes wheels only
        #: anyway, and ``only_binary=[":all:"]`` says so in the message for a source-only
        #: project)
        self.formats = formats


class LockOutcome:
    __slots__ = (
        "config",
        "lock",
        "resolutions",
        "routers",
        "skipped_indexes",
        "targets",
        "warnings",
    )

    def __init__(
        self,
        lock: Lock,
        targets: Sequence[LockTarget],
        resolutions: Sequence[Resolution],
        config: IndexConfig,
        warnings: list[str],
        routers: Sequence[Router | None] = (),
    ) -> None:
        self.lock = lock
        self.targets = targets
        self.resolutions = resolutions
        self.config = config
        self.warnings = warnings
        #: per target: where its torch projects came from (None: no torch-backend setting)
        self.routers: Sequence[Router | None] = routers or [None] * len(targets)
        #: index URL -> why it could not be reached: the indexes left out
        #: (``--unreachable-index warn``)
        self.skipped_indexes: dict[str, str] = {}

    @property
    def notices(self) -> list[str]:
        """The find-links files a target's torch backend ruled out, one line each."""
        return [
            f"target {target.name}: {line}"
            for target, router in zip(self.targets, self.routers, strict=True)
            if router is not None
            for line in router.notices()
        ]


class _Shared:
    """What the targets' finders share: index pages by (index URL, project) and small files
    (variants.json) by URL, each fetched once for every target."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pages: dict[tuple[str, str], list[Link] | None] = {}
        self.files: dict[str, bytes] = {}
        #: the indexes left out because they could not be reached (each said once)
        self.skipped: dict[str, str] = {}


class _SharedFinder(Finder):
    """A target's finder (its own route) over the pages and files every target shares."""

    __slots__ = ("_shared",)

    def __init__(
        self,
        config: IndexConfig,
        session: Session,
        sources: SourceOptions,
        shared: _Shared,
        route: Router | None = None,
        vital: frozenset[str] = frozenset(),
    ) -> None:
        super().__init__(
            config,
            session,
            sources.index_strategy,
            route=route,
            unreachable_index=sources.unreachable_index,
            skipped=shared.skipped,
            vital=vital,
        )
        self._shared = shared

    def page(self, index_url: str, key: str) -> list[Link] | None:
        with self._shared.lock:
            if (index_url, key) in self._shared.pages:
                return self._shared.pages[index_url, key]
        found = super().page(index_url, key)
        with self._shared.lock:
            self._shared.pages[index_url, key] = found
        return found

    def read(self, link: Link, what: str = "") -> bytes:
        with self._shared.lock:
            known = self._shared.files.get(link.url)
        if known is None:
            known = super().read(link, what)
            with self._shared.lock:
                self._shared.files[link.url] = known
        return known


def public_url(url: str) -> str:
    """``url`` without credentials: a lock file is shared, a password must not be in it."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port:
        host += f":{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


def _preferred(
    previous: Lock | None, target: LockTarget, request: LockRequest
) -> dict[NormalizedName, Version]:
    if previous is None or request.resolution.upgrade:
        return {}
    from fitwheel.variants.names import canonicalize_name

    skip = {canonicalize_name(n) for n in request.resolution.upgrade_packages}
    out: dict[NormalizedName, Version] = {}
    for p in previous.packages:
        name = canonicalize_name(p.name)
        if name in skip or (p.targets and target.name not in p.targets):
            continue
        out[name] = Version(p.version)
    return out


def run_lock(
    request: LockRequest, targets: Sequence[LockTarget], previous: Lock | None = None
) -> LockOutcome:
    if not targets:
        raise InputError("a lock needs at least one target: pass --profile FILE (repeatable).")
    layout = CacheLayout(cache_root(request.sources.cache_dir, request.env))

    def reading() -> Session:
        # a file read from a server: the flags' and pip's sources (not yet the files')
        return open_session(request.sources, request.env, layout=layout, site_prefix=sys.prefix)

    remote = RemoteFiles(reading, read_local)
    user = collect(
        request.requirements,
        [remote.location(name) for name in request.requirement_files],
        [remote.location(name) for name in request.constraint_files],
        read=remote,
        env=request.env,
    )
    if not user.requirements:
        raise InputError("nothing to lock: name at least one requirement or pass -r FILE.")
    for item in user.requirements:
        if item.wheel_path is not None:
            raise InputError(
                f"{item.origin}: {item.wheel_path} is a local wheel; a lock names files that "
                "every machine can fetch: publish it to an index or a find-links folder."
            )
    sources = request.sources.with_file_options(user.options)
    # of the resolution options a lock reads, files can turn on --pre
    pre = request.resolution.with_file_options(user.options).pre
    session = open_session(sources, request.env, layout=layout, site_prefix=sys.prefix)
    config = load_index_config(
        index_url=sources.index_url,
        extra_index_urls=sources.extra_index_urls,
        find_links=sources.find_links,
        no_index=sources.no_index,
        env=request.env,
        site_prefix=sys.prefix,
        interpreter=sys.executable,
        cert=sources.cert,
        index_url_origin=sources.index_url_origin,
        origins=sources.origins,
    )
    config = config.with_urls(session.add_credentials)
    from fitwheel.install.workflow import backend_indexes

    vital = backend_indexes(config, request.torch)  # never left out when unreachable
    pages = _Shared()
    shared = SharedMetadata()
    resolutions = []
    finders: list[Finder] = []
    routers: list[Router | None] = []
    notices: list[str] = []
    for target in targets:
        router = _router(request, user, target, config)
        finder = _SharedFinder(config, session, sources, pages, router, vital)
        options = Options(
            target=target.target,
            python_version=target.environment["python_full_version"],
            tags=target.tags,
            pre=pre,
            formats=request.formats,
        )
        source = CandidateSource(finder, options)
        try:
            resolution = resolve(
                user,
                source,
                session=session,
                environment=target.environment,
                installed=_preferred(previous, target, request),
                devices=target.devices,
                allow_fallback=request.resolution.allow_fallback,
                no_deps=request.resolution.no_deps,
                shared=shared,
                abi_environ=request.env,
            )
        except ResolutionError as exc:  # the torch backend route's failures included
            dropped = "".join(f" ({line})" for line in router.notices()) if router else ""
            dropped += "".join(f" ({line})" for line in _skipped_warnings(pages))
            raise ResolutionError(
                f"target {target.name} ({target.source}): {exc}{dropped}"
            ) from None
        resolutions.append(resolution)
        finders.append(finder)
        routers.append(router)
        notices += [f"target {target.name}: {line}" for line in plugin_notices(resolution, source)]
    lock = _build(user, targets, resolutions, finders, shared, session, routers)
    # what is written must read back: the reader's checks (hashes, variants-json) apply
    lock = loads_lock(lock.dumps(), "the new lock")
    warnings = [
        *_skipped_warnings(pages),
        *ignored(user.options),
        *_torch_warnings(targets, routers),
    ]
    for target, resolution in zip(targets, resolutions, strict=True):
        warnings += [f"target {target.name}: {line}" for line in resolution.abi_notes]
    warnings += notices
    outcome = LockOutcome(lock, targets, resolutions, config, warnings, routers)
    outcome.skipped_indexes = dict(pages.skipped)
    return outcome


def _skipped_warnings(shared: _Shared) -> list[str]:
    """One warning per index left out because it could not be reached."""
    from fitwheel.index.finder import skipped_warning

    return [skipped_warning(url, reason) for url, reason in shared.skipped.items()]


def _router(
    request: LockRequest, user: UserInput, target: LockTarget, config: IndexConfig
) -> Router | None:
    """The target's route for its torch projects (and variant-index projects): install's
    router, with the target's profile as the machine."""
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
        index_lines(request.sources.with_file_options(user.options)),
        projects=routed_projects(table, settings),
        markers=target.environment,
    )
    return Router(
        settings,
        table,
        target=target.target,
        devices=target.devices,
        markers=dict(target.environment),
        tags=target.tags,
        torch_spec=torch_specifier(user),
        allow_fallback=request.resolution.allow_fallback,
        named=named,
    )


def _torch_warnings(targets: Sequence[LockTarget], routers: Sequence[Router | None]) -> list[str]:
    out = []
    for target, router in zip(targets, routers, strict=True):
        if router is None:
            continue
        if router.mismatch is not None and router.backend is not None:
            out.append(
                f"target {target.name}: --torch-backend {router.backend} (from "
                f"{router.settings.backend_origin}) was named by hand, but its build does not "
                f"run there: {router.mismatch}; --torch-backend auto chooses one that does"
            )
        if router.choice is not None and router.choice.fell_back:
            gpus = "; ".join(d.describe() for d in router.choice.unserved)
            out.append(
                f"target {target.name}: no torch backend runs on its GPU ({gpus}); the cpu "
                "build is locked because --allow-fallback accepts it"
            )
    return out


def _variants_document(
    finder: Finder, resolution: Resolution, cand: Candidate
) -> dict[str, Any] | None:
    trace = resolution.trace_of(cand)
    if trace is None or trace.info is None:
        return None
    link = finder.variants_json_link(cand.name, str(cand.version))
    if link is not None and trace.variants_source == link.url:
        return cast(dict[str, Any], json.loads(finder.read(link, "variants.json")))
    from fitwheel.variants.writing import to_json_dict

    return to_json_dict(trace.info, allow_lossy=True)


def _sha256(link: Link, session: Session) -> str:
    if link.sha256:
        return link.sha256
    from fitwheel.index.findlinks import local_path
    from fitwheel.integrity import file_sha256

    path = local_path(link.url)
    if path is not None:
        return file_sha256(path)
    # the index publishes no hash: fetch the file once and hash it
    digest = hashlib.sha256()
    with tempfile.TemporaryFile() as handle:
        session.download(link.url, handle, what=link.filename)
        handle.seek(0)
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _index_of(finder: Finder, name: str, link: Link) -> str | None:
    """The index a locked file came from (the one rule, :func:`~fitwheel.resolve.diagnose.
    index_of`, routed projects included), without credentials; None for a local file."""
    from fitwheel.resolve.diagnose import index_of

    if link.is_file:
        return None
    found = index_of(finder, name, link)
    return public_url(found[0]) if found is not None else None


def _build(
    user: UserInput,
    targets: Sequence[LockTarget],
    resolutions: Sequence[Resolution],
    finders: Sequence[Finder],
    shared: SharedMetadata,
    session: Session,
    routers: Sequence[Router | None],
) -> Lock:
    # (name, version) -> target name -> candidate, in the order first seen
    entries: dict[tuple[str, str], dict[str, Candidate]] = {}
    for target, resolution in zip(targets, resolutions, strict=True):
        for cand in resolution.pins:
            key = (str(cand.name), str(cand.version))
            entries.setdefault(key, {})[target.name] = cand
    markers = {t.name: t.marker for t in targets}
    all_names = [t.name for t in targets]
    packages: list[LockedPackage] = []
    for key in sorted(entries, key=lambda k: (k[0], Version(k[1]))):
        name, version = key
        by_target = entries[key]
        links: dict[str, Link] = {}
        for cand in by_target.values():
            known = links.setdefault(cand.link.filename, cand.link)
            if known.url != cand.link.url and known.sha256 and known.sha256 != cand.link.sha256:
                # one filename, two files (say, two backend indexes): a lock names one file
                raise ResolutionError(
                    f"{cand.link.filename} is served with different contents by "
                    f"{public_url(known.url)} and {public_url(cand.link.url)}; a lock can "
                    "hold only one file of that name: lock those targets separately, or pin "
                    "another version."
                )
        wheels = tuple(
            LockedWheel(
                filename,
                public_url(link.url),
                {"sha256": _sha256(link, session)},
            )
            for filename, link in sorted(links.items())
        )
        variants = None
        labels = sorted({c.label for c in by_target.values() if c.label is not None})
        if labels:
            for target_name, cand in by_target.items():
                if cand.label is not None:
                    at = all_names.index(target_name)
                    doc = _variants_document(finders[at], resolutions[at], cand)
                    if doc is not None:
                        variants = prune_variants(doc, labels)
                        break
        first_target, first = next(iter(by_target.items()))
        at = all_names.index(first_target)
        requires_python = first.link.requires_python or shared.requires_python.get(first.link.url)
        packages.append(
            LockedPackage(
                name,
                version,
                wheels,
                marker=_entry_marker(list(by_target), all_names, markers),
                requires_python=requires_python or None,
                index=_index_of(finders[at], name, first.link),
                variants_json=variants,
                targets={t: by_target[t].link.filename for t in all_names if t in by_target},
            )
        )
    environments = tuple(dict.fromkeys(t.marker for t in targets))
    lowest = min(targets, key=lambda t: Version(t.python_version)).python_version
    records = tuple(
        TargetRecord(
            t.name,
            t.marker,
            t.summary(),
            t.python_version,
            t.source,
            hashlib.sha256(t.profile.dumps().encode()).hexdigest(),
            *_backend_of(router),
            answers=answers_of(t.profile),
        )
        for t, router in zip(targets, routers, strict=True)
    )
    return Lock(
        tuple(packages),
        records,
        tuple(str(item.requirement) for item in user.requirements),
        tuple(str(item.requirement) for item in user.constraints),
        f">={lowest}",
        environments,
        torch_index_url=next(
            (public_url(r.settings.index_url) for r in routers if r is not None and r.backend),
            None,
        ),
    )


def answers_of(profile: Profile) -> dict[str, str]:
    """Where the profile's answer came from, for each namespace no built-in provider answers
    (a plugin's, or a static answer)."""
    from fitwheel.platform.detect import PROVIDER_MODULES

    return {
        ns: source
        for ns, source in profile.sources.items()
        if ns not in PROVIDER_MODULES and ns in profile.properties
    }


def _backend_of(router: Router | None) -> tuple[str, str]:
    """The backend a target's torch projects came from, and what was asked for ("auto" or
    the backend named); empty when none came from a backend index."""
    if router is None or router.backend is None:
        return "", ""
    return router.backend, router.settings.backend or ""


def _entry_marker(
    users: Sequence[str], all_targets: Sequence[str], markers: Mapping[str, str]
) -> str | None:
    """The plain marker that selects an entry for the targets using it: none when every
    target's marker values are among the users' (a target with the same values that does not
    use the entry is told apart by its variant only, in the per-target table)."""
    used = list(dict.fromkeys(markers[t] for t in all_targets if t in users))
    if set(used) == {markers[t] for t in all_targets}:
        return None
    if len(used) == 1:
        return used[0]
    return " or ".join(f"({m})" for m in used)


def diff_summary(old: Lock, new: Lock) -> list[str]:
    """What changed between two locks, one line per change, for ``lock --check``."""
    lines: list[str] = []
    if old.requirements != new.requirements or old.constraints != new.constraints:
        lines.append(
            f"requirements: {', '.join(old.requirements) or 'none'} -> "
            f"{', '.join(new.requirements) or 'none'}"
        )
    old_targets = {t.name: t for t in old.targets}
    new_targets = {t.name: t for t in new.targets}
    for name in sorted(old_targets.keys() | new_targets.keys()):
        old_t, new_t = old_targets.get(name), new_targets.get(name)
        if old_t is None:
            lines.append(f"target {name}: added")
        elif new_t is None:
            lines.append(f"target {name}: removed")
        elif old_t != new_t:
            backends = [(t.torch_backend or "none") for t in (old_t, new_t)]
            if dataclasses.replace(old_t, torch_backend="", torch_backend_requested="") == (
                dataclasses.replace(new_t, torch_backend="", torch_backend_requested="")
            ):
                lines.append(f"target {name}: torch backend {backends[0]} -> {backends[1]}")
            else:
                lines.append(f"target {name}: its profile or environment changed")

    def files(lock: Lock) -> dict[tuple[str, str], str]:
        return {
            (t, p.name): f"{p.version} {f} sha256:{p.wheel(f).sha256[:12]}"
            for p in lock.packages
            for t, f in p.targets.items()
        }

    before, after = files(old), files(new)
    for key in sorted(before.keys() | after.keys()):
        a, b = before.get(key), after.get(key)
        if a != b:
            target, name = key
            lines.append(f"{name} for {target}: {a or 'not locked'} -> {b or 'not needed'}")
    if not lines and old.dumps() != new.dumps():
        lines.append("the file's layout differs from what fitwheel writes for these inputs")
    return lines
