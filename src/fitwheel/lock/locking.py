"""``fitwheel lock`` without the command line: resolve for every target, write one lock.

Each target is resolved on its own (its own tags, marker values and variant ordering decide
its versions and builds, exactly as ``install`` would decide on that machine), but the targets
share everything that does not depend on the machine: one HTTP session and page cache, one
:class:`Finder` (each project page read once), the variants files (read once), and one
:class:`SharedMetadata` (each wheel's METADATA read once). A single resolution with all
targets in view would have to pick one version for all of them, which is wrong when targets
differ in Python version or when a release dropped one GPU; per-target resolutions over shared
metadata give each target what ``install`` would give it, at little more than the cost of one.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import urllib.parse
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from packaging.utils import NormalizedName
from packaging.version import Version

from fitwheel.errors import FitwheelError
from fitwheel.fs import CacheLayout, cache_root
from fitwheel.index.config import IndexConfig, load_index_config
from fitwheel.index.finder import Finder, search_order
from fitwheel.index.http import Session
from fitwheel.index.httpcache import HttpCache
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
from fitwheel.resolve.candidates import Candidate, CandidateSource, Options
from fitwheel.resolve.provider import SharedMetadata
from fitwheel.resolve.requirements import UserInput, collect
from fitwheel.resolve.resolver import Resolution, ResolutionError, resolve


class LockError(FitwheelError):
    pass


class LockRequest:
    """What the command line asks for (every flag by keyword)."""

    def __init__(
        self,
        *,
        requirements: Sequence[str] = (),
        requirement_files: Sequence[str] = (),
        constraint_files: Sequence[str] = (),
        index_url: str | None = None,
        extra_index_urls: Sequence[str] = (),
        find_links: Sequence[str] = (),
        no_index: bool = False,
        index_strategy: str = "first-index",
        pre: bool = False,
        upgrade: bool = False,
        upgrade_packages: Sequence[str] = (),
        allow_fallback: bool = False,
        cert: str | None = None,
        env: Mapping[str, str] | None = None,
        cache_dir: Path | None = None,
    ) -> None:
        self.requirements = requirements
        self.requirement_files = requirement_files
        self.constraint_files = constraint_files
        self.index_url = index_url
        self.extra_index_urls = extra_index_urls
        self.find_links = find_links
        self.no_index = no_index
        self.index_strategy = index_strategy
        self.pre = pre
        self.upgrade = upgrade
        self.upgrade_packages = upgrade_packages
        self.allow_fallback = allow_fallback
        self.cert = cert
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        self.cache_dir = cache_dir


class LockOutcome:
    __slots__ = ("config", "lock", "resolutions", "targets", "warnings")

    def __init__(
        self,
        lock: Lock,
        targets: Sequence[LockTarget],
        resolutions: Sequence[Resolution],
        config: IndexConfig,
        warnings: list[str],
    ) -> None:
        self.lock = lock
        self.targets = targets
        self.resolutions = resolutions
        self.config = config
        self.warnings = warnings


class _SharedFinder(Finder):
    """A finder whose small files (variants.json) are read once for every target."""

    __slots__ = ("_read",)

    def __init__(self, config: IndexConfig, session: Session, strategy: str) -> None:
        super().__init__(config, session, strategy)
        self._read: dict[str, bytes] = {}

    def read(self, link: Link, what: str = "") -> bytes:
        with self._lock:
            known = self._read.get(link.url)
        if known is None:
            known = super().read(link, what)
            with self._lock:
                self._read[link.url] = known
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
    if previous is None or request.upgrade:
        return {}
    from fitwheel.variants.names import canonicalize_name

    skip = {canonicalize_name(n) for n in request.upgrade_packages}
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
        raise LockError("a lock needs at least one target: pass --profile FILE (repeatable).")
    user = collect(request.requirements, request.requirement_files, request.constraint_files)
    if not user.requirements:
        raise LockError("nothing to lock: name at least one requirement or pass -r FILE.")
    for item in user.requirements:
        if item.wheel_path is not None:
            raise LockError(
                f"{item.origin}: {item.wheel_path} is a local wheel; a lock names files that "
                "every machine can fetch: publish it to an index or a find-links folder."
            )
    layout = CacheLayout(cache_root(request.cache_dir, request.env))
    session = Session(env=request.env, cache=HttpCache(layout.http))
    config = load_index_config(
        index_url=request.index_url,
        extra_index_urls=request.extra_index_urls,
        find_links=request.find_links,
        no_index=request.no_index,
        env=request.env,
        site_prefix=sys.prefix,
        interpreter=sys.executable,
        cert=request.cert,
    )
    session.cafile = config.cert
    config = IndexConfig(
        session.add_credentials(config.index_url) if config.index_url else None,
        tuple(session.add_credentials(u) for u in config.extra_index_urls),
        config.find_links,
        config.origins,
        config.cert,
    )
    finder = _SharedFinder(config, session, request.index_strategy)
    shared = SharedMetadata()
    resolutions = []
    sources = []
    for target in targets:
        options = Options(
            target=target.target,
            python_version=target.environment["python_full_version"],
            tags=target.tags,
            pre=request.pre,
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
                allow_fallback=request.allow_fallback,
                shared=shared,
            )
        except ResolutionError as exc:
            raise LockError(f"target {target.name} ({target.source}): {exc}") from None
        resolutions.append(resolution)
        sources.append(source)
    lock = _build(user, targets, resolutions, finder, shared, session, config)
    # what is written must read back: the reader's checks (hashes, variants-json) apply
    lock = loads_lock(lock.dumps(), "the new lock")
    warnings: list[str] = []
    return LockOutcome(lock, targets, resolutions, config, warnings)


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
    from fitwheel.index.findlinks import file_sha256, local_path

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


def _index_of(finder: Finder, link: Link) -> str | None:
    order = search_order(finder.config)
    rank = finder.rank(link)
    return public_url(order[rank]) if rank < len(order) and not link.is_file else None


def _build(
    user: UserInput,
    targets: Sequence[LockTarget],
    resolutions: Sequence[Resolution],
    finder: Finder,
    shared: SharedMetadata,
    session: Session,
    config: IndexConfig,
) -> Lock:
    # (name, version) -> target name -> candidate, in the order first seen
    entries: dict[tuple[str, str], dict[str, Candidate]] = {}
    owners: dict[tuple[str, str], Resolution] = {}
    for target, resolution in zip(targets, resolutions, strict=True):
        for cand in resolution.pins:
            key = (str(cand.name), str(cand.version))
            entries.setdefault(key, {})[target.name] = cand
            owners.setdefault(key, resolution)
    markers = {t.name: t.marker for t in targets}
    all_names = [t.name for t in targets]
    packages: list[LockedPackage] = []
    for key in sorted(entries, key=lambda k: (k[0], Version(k[1]))):
        name, version = key
        by_target = entries[key]
        links: dict[str, Link] = {}
        for cand in by_target.values():
            links.setdefault(cand.link.filename, cand.link)
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
                    resolution = resolutions[all_names.index(target_name)]
                    doc = _variants_document(finder, resolution, cand)
                    if doc is not None:
                        variants = prune_variants(doc, labels)
                        break
        first = next(iter(by_target.values()))
        requires_python = first.link.requires_python or shared.requires_python.get(first.link.url)
        packages.append(
            LockedPackage(
                name,
                version,
                wheels,
                marker=_entry_marker(list(by_target), all_names, markers),
                requires_python=requires_python or None,
                index=_index_of(finder, first.link),
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
        )
        for t in targets
    )
    return Lock(
        tuple(packages),
        records,
        tuple(str(item.requirement) for item in user.requirements),
        tuple(str(item.requirement) for item in user.constraints),
        f">={lowest}",
        environments,
    )


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
