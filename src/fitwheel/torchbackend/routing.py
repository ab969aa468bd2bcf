"""Where each project comes from: variant indexes, the torch backend index, the user's indexes.

The :class:`Router` is the index finder's :class:`~fitwheel.index.finder.ProjectRoute`:

1. ``--variant-index-url`` indexes (opt-in), in order: a project they publish variants for
   (variant wheels or a variants file on its page) comes from there, as uv's variant build does;
2. with ``--torch-backend``, the torch-ecosystem projects come from ``BASE/<backend>/``: the
   backend the user named, or for ``auto`` the first fitting backend (:mod:`.choose`) of the
   newest release with a fitting build, among the releases the backend indexes publish for the
   target interpreter (:mod:`.published`; the backends are the table's and those the index
   root lists, releases and backends the table lacks extrapolated by :mod:`.extrapolate`);
   torch versions whose build on that backend does not run here are dropped (a newer release
   that left this GPU behind). A newer release that only a driver (or ROCm) update would bring
   is told as a notice; a pinned one that cannot run here is an error saying so;
3. everything else searches the user's indexes as usual.

Find-links files count as well, but a project routed to a backend index takes from them only
the files built for the chosen backend (:mod:`.builds`) and pure-Python wheels: the others are
dropped (:attr:`Router.dropped`), so that a find-links folder holding another backend's torch
cannot stand in for the chosen one. A wheel the user named on the command line is always taken,
with a warning when it is another backend's build (:meth:`Router.own_file_warnings`).

Every decision is kept for ``--explain`` and ``--report``.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.version import InvalidVersion, Version

from fitwheel.errors import FitwheelError, ResolutionError
from fitwheel.index.finder import Finder
from fitwheel.index.findlinks import local_path
from fitwheel.index.simple import Link, variants_json_key
from fitwheel.platform.profile import Device
from fitwheel.resolve.requirements import UserInput
from fitwheel.torchbackend.builds import FileBuild, build_of
from fitwheel.torchbackend.choose import Choice, accepts_version, choose_backend, explicit_choice
from fitwheel.torchbackend.pins import Named
from fitwheel.torchbackend.settings import TorchSettings
from fitwheel.torchbackend.table import BackendTable
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.names import canonicalize_name
from fitwheel.variants.ordering import Target


class TorchBackendError(ResolutionError):
    pass


class _Missing(Exception):
    """A backend index that does not exist on this mirror (its root answers 404)."""


@dataclass(slots=True)
class Source:
    """Where one project's files came from."""

    kind: str  # "variant-index", "torch-backend", "indexes"
    url: str = ""
    backend: str | None = None
    note: str = ""
    #: torch versions on the backend index dropped because their build does not run here
    dropped: dict[str, str] = field(default_factory=dict)
    #: the URLs of the files the index gave (the find-links files beside them are not)
    files: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Dropped:
    """A find-links file of a routed project that is not the chosen backend's build."""

    project: str
    filename: str
    #: the find-links folder or page it is in
    where: str
    build: FileBuild
    #: the backend chosen
    backend: str

    def notice(self) -> str:
        text = (
            f"{self.project} {self.build.version} in {self.where}: dropped, the {self.backend} "
            "backend was chosen"
        )
        if self.build.kind != "local":
            text += f" ({self.filename} is {self.build.describe()})"
        return text

    def reason(self) -> str:
        return (
            f"{self.build.describe()}; a torch project comes from your find-links only in the "
            f"{self.backend} build or as a pure-Python wheel"
        )


def _tags(wheel: WheelFilename) -> Iterable[Tag]:
    for py in wheel.python_tag.split("."):
        for abi in wheel.abi_tag.split("."):
            for plat in wheel.platform_tag.split("."):
                yield Tag(py, abi, plat)


def _wheel(link: Link) -> WheelFilename | None:
    if not link.is_wheel:
        return None
    try:
        return WheelFilename.parse(link.filename)
    except VariantFormatError:
        return None


def _publishes_variants(links: Sequence[Link]) -> bool:
    for link in links:
        if variants_json_key(link.filename) is not None:
            return True
        wheel = _wheel(link)
        if wheel is not None and wheel.variant_label is not None:
            return True
    return False


def torch_specifier(user: UserInput) -> SpecifierSet:
    """What the requirements and constraints allow of torch (the ``auto`` choice honours it)."""
    spec = SpecifierSet()
    for item in (*user.requirements, *user.constraints):
        if item.name == "torch":
            spec &= item.requirement.specifier
    return spec


def backend_index(base: str, backend: str) -> str:
    return f"{base.rstrip('/')}/{backend}/"


def routed_projects(table: BackendTable, settings: TorchSettings) -> frozenset[str]:
    """The projects routed to the backend index: the table's and ``torch-projects``."""
    return frozenset(canonicalize_name(p) for p in (*table.projects, *settings.extra_projects))


class Router:
    def __init__(
        self,
        settings: TorchSettings,
        table: BackendTable,
        *,
        target: Target | None,
        devices: Sequence[Device],
        markers: dict[str, str],
        tags: Collection[Tag],
        torch_spec: SpecifierSet | None = None,
        allow_fallback: bool = False,
        own_files: Iterable[Path] = (),
        named: Named | None = None,
    ) -> None:
        self.settings = settings
        self.table = table
        self.target = target
        self.devices = tuple(devices)
        self.markers = markers
        self.tags = frozenset(tags)
        self.torch_spec = torch_spec
        self.allow_fallback = allow_fallback
        self.projects = routed_projects(table, settings)
        #: the backend the requirements name, which ``auto`` follows (:mod:`.pins`)
        self.named = named if settings.backend == "auto" else None
        #: project -> where its files came from (routed projects only)
        self.sources: dict[str, Source] = {}
        self.choice: Choice | None = None
        #: the backend whose index is used
        self.backend: str | None = None
        #: backends passed over because their index lacks a torch wheel for the interpreter
        self.skipped: dict[str, str] = {}
        #: why the backend the user named does not run here (None: it does, or unknown)
        self.mismatch: str | None = None
        #: the same for the backend the requirements name
        self.named_mismatch: str | None = None
        #: the wheel files the user named (taken whatever their build)
        self.own_files = frozenset(Path(p) for p in own_files)
        #: find-links files of routed projects that are another backend's build
        self.dropped: list[Dropped] = []
        #: link URL -> (project, what its build is) of the user's own files of another backend
        self.foreign_own: dict[str, tuple[str, FileBuild]] = {}
        #: backend -> the torch versions its index publishes for the target (``auto`` only)
        self.published: dict[str, tuple[Version, ...]] = {}
        self._lock = threading.RLock()

    # -- the finder's hook ---------------------------------------------------------------
    def links(self, finder: Finder, key: str) -> tuple[list[Link], str] | None:
        for url in self.settings.variant_index_urls:
            try:
                found = finder.page(url, key)
            except FitwheelError as exc:
                raise TorchBackendError(
                    f"the variant index {url} cannot be reached ({exc}). It comes from "
                    f"{self.settings.variant_index_origin}: fix the URL, or drop it "
                    "(`fitwheel config unset variant-index-url`)."
                ) from None
            if found and _publishes_variants(found):
                with self._lock:
                    files = frozenset(link.url for link in found)
                    self.sources[key] = Source("variant-index", url, files=files)
                return found, url
        if self.settings.backend is None or key not in self.projects:
            return None
        with self._lock:
            backend = self._backend(finder)
            url = backend_index(self.settings.index_url, backend)
            found = self._page(finder, url, key)
            if not found or not any(link.is_wheel for link in found):
                self.sources[key] = Source(
                    "indexes", backend=backend, note=f"not on the {backend} index ({url})"
                )
                return None
            source = Source("torch-backend", url, backend)
            if key == "torch" and self._auto:
                found = self._fitting(found, backend, source)
            source.files = frozenset(link.url for link in found)
            self.sources[key] = source
            return found, url

    def local_files(self, key: str, links: list[Link]) -> list[Link]:
        """The find-links files of ``key`` that count beside the index :meth:`links` gave it:
        for a project from the backend index, those built for that backend, pure-Python wheels,
        and the files the user named; the others are kept in :attr:`dropped`."""
        with self._lock:
            source = self.sources.get(key)
            if source is None or source.kind != "torch-backend" or source.backend is None:
                return links
            backend = source.backend
            kept, own = [], []
            for link in links:
                build = build_of(link.filename)
                if local_path(link.url) in self.own_files:
                    if build is not None and not build.fits(backend) and build.backend:
                        self.foreign_own[link.url] = (key, build)
                    own.append(link)
                elif build is None or build.fits(backend):
                    kept.append(link)
                else:
                    where = link.origin or link.url
                    self.dropped.append(Dropped(key, link.filename, where, build, backend))
            if key == "torch" and self._auto:
                kept = self._fitting(kept, backend, source)
            taken = {link.url for link in (*own, *kept)}
            return [link for link in links if link.url in taken]

    # -- the choice ---------------------------------------------------------------------
    @property
    def _auto(self) -> bool:
        """Whether the backend is fitwheel's choice (``auto`` that the requirements do not
        name): only then are the torch versions whose build does not run here dropped."""
        return self.settings.backend == "auto" and self.named is None

    def _page(
        self, finder: Finder, url: str, key: str, missing_ok: bool = False
    ) -> list[Link] | None:
        from fitwheel.index.http import HttpError

        try:
            return finder.page(url, key)
        except FitwheelError as exc:
            if missing_ok and isinstance(exc, HttpError) and exc.status == 404:
                raise _Missing from None
            s = self.settings
            raise TorchBackendError(
                f"the torch backend index {url} cannot be reached ({exc}). torch-backend "
                f"{s.backend} comes from {s.backend_origin} and the index root "
                f"{s.index_url} from {s.index_url_origin}: point --torch-index-url (or "
                "`fitwheel config set torch-index-url URL`) at a mirror of the per-backend "
                "indexes, or drop the setting (`fitwheel config unset torch-backend`) to use "
                "your own indexes only."
            ) from None

    def _read_published(self, finder: Finder) -> None:
        """Which torch releases each candidate backend's index publishes for the target (the
        backends of the GPU vendors here and cpu; those the table names and those the index
        root lists), and the table widened to them (:func:`.extrapolate.extend_table`)."""
        from fitwheel.torchbackend.choose import GPU_VENDORS, gpu_devices
        from fitwheel.torchbackend.extrapolate import extend_table
        from fitwheel.torchbackend.published import listed_backends, torch_versions
        from fitwheel.torchbackend.table import backend_from_name

        vendors = {d.vendor for d in gpu_devices(self.devices)}
        if self.target is not None:
            vendors |= {v for v in GPU_VENDORS if v in self.target.supported}
        names = [b.name for b in self.table.backends]
        names += [
            n
            for n in listed_backends(finder.session, self.settings.index_url) or ()
            if n not in names
        ]
        for name in names:
            if name != "cpu" and backend_from_name(name).vendor not in vendors:
                continue
            url = backend_index(self.settings.index_url, name)
            try:
                page = self._page(finder, url, "torch", missing_ok=True) or []
            except _Missing:
                self.skipped[name] = f"{url} does not exist (HTTP 404): not on this mirror"
                continue
            versions = torch_versions(page, self._runs_here)
            if versions:
                self.published[name] = versions
        self.table = extend_table(self.table, self.published)

    def _runs_here(self, wheel: WheelFilename) -> bool:
        return any(tag in self.tags for tag in _tags(wheel))

    def decide(self, finder: Finder | None = None) -> Choice:
        """The backend choice: for ``auto``, by the table and the target, over the releases the
        backend indexes publish (read through ``finder``; without one, the table's)."""
        if self.choice is not None:
            if not self.choice.ordered:
                raise TorchBackendError(
                    unsupported_message(self.choice, self.settings, self._pin())
                )
            return self.choice
        requested = self.settings.backend or "auto"
        if self.named is not None:
            requested = self.named.backend  # auto follows the requirements
        if requested != "auto":
            self.choice = explicit_choice(requested, self.table)
            why = self._explicit_mismatch(requested)
            if self.named is None:
                self.mismatch = why  # a warning: the user named it by hand
            else:
                self.named_mismatch = why  # for --explain: the requirements pin this build
            return self.choice
        if self.target is None:
            raise TorchBackendError(
                f"torch-backend auto (from {self.settings.backend_origin}) needs the target's "
                "hardware: drop --no-variants, or name the backend (--torch-backend cu128)."
            )
        if finder is not None:
            self._read_published(finder)
        self.choice = choose_backend(
            self.table,
            self.target,
            self.devices,
            system=self.markers.get("platform_system", ""),
            machine=self.markers.get("platform_machine", ""),
            python_version=self.markers.get("python_version"),
            torch_spec=self.torch_spec,
            allow_fallback=self.allow_fallback,
        )
        if not self.choice.ordered:
            raise TorchBackendError(unsupported_message(self.choice, self.settings, self._pin()))
        return self.choice

    def _pin(self) -> str | None:
        """``torch<2.12`` when a pinned torch runs here on no build but an older release does
        (the newest such is 2.11)."""
        if self.target is None or self.torch_spec is None or not str(self.torch_spec):
            return None
        unpinned = choose_backend(
            self.table,
            self.target,
            self.devices,
            system=self.markers.get("platform_system", ""),
            machine=self.markers.get("platform_machine", ""),
            python_version=self.markers.get("python_version"),
        )
        if not unpinned.ordered or unpinned.backend == "cpu" or unpinned.series is None:
            return None
        major, minor = unpinned.series.split(".")[:2]
        return f"torch<{major}.{int(minor) + 1}"

    def _explicit_mismatch(self, name: str) -> str | None:
        """Why the backend the user named does not run here (by the newest release that has
        it), or None: it runs, or the table cannot tell."""
        if self.target is None or name == "cpu":
            return None
        vendor = self.table.backend(name).vendor
        if vendor not in self.target.supported and all(d.vendor != vendor for d in self.devices):
            return None  # no such GPU at all: the GPU-build warning says it (gpubuild)
        release = next((r for r in self.table.releases if name in r.builds), None)
        if release is None:
            return None
        from fitwheel.torchbackend.choose import check_build, gpu_devices, platform_key

        why = check_build(
            self.table.backend(name),
            release.builds[name],
            self.target,
            gpu_devices(self.devices),
            platform=platform_key(
                self.markers.get("platform_system", ""), self.markers.get("platform_machine", "")
            ),
            python_version=self.markers.get("python_version"),
            release=release,
        )
        return None if why is None else f"torch {release.series} {name}: {why}"

    def _backend(self, finder: Finder) -> str:
        if self.backend is not None:
            return self.backend
        choice = self.decide(finder)
        if choice.requested != "auto":
            self.backend = choice.ordered[0]
            return self.backend
        for name in choice.ordered:
            url = backend_index(self.settings.index_url, name)
            try:
                page = self._page(finder, url, "torch", missing_ok=True) or []
            except _Missing:
                self.skipped[name] = f"{url} does not exist (HTTP 404): not on this mirror"
                continue
            if any(self._installable(link, name) for link in page):
                self.backend = name
                return name
            self.skipped[name] = f"{url} has no torch wheel for this interpreter and platform"
        raise TorchBackendError(
            f"no torch backend index has a torch wheel for this interpreter: "
            f"{'; '.join(f'{b}: {why}' for b, why in self.skipped.items())}. Check "
            f"--torch-index-url ({self.settings.index_url}), or name a backend with "
            "--torch-backend."
        )

    def _installable(self, link: Link, backend: str) -> bool:
        wheel = _wheel(link)
        if wheel is None or canonicalize_name(wheel.name) != "torch":
            return False
        if not any(tag in self.tags for tag in _tags(wheel)):
            return False
        if self.torch_spec is not None:
            try:
                if not self.torch_spec.contains(Version(wheel.version), prereleases=True):
                    return False
            except InvalidVersion:
                return False
        return self._why_not(wheel, backend) is None

    def _why_not(self, wheel: WheelFilename, backend: str) -> str | None:
        if self.target is None or not self._auto:
            return None
        try:
            version = Version(wheel.version)
        except InvalidVersion:
            return None
        return accepts_version(
            self.table,
            backend,
            version,
            self.target,
            self.devices,
            system=self.markers.get("platform_system", ""),
            machine=self.markers.get("platform_machine", ""),
            python_version=self.markers.get("python_version"),
        )

    def _fitting(self, links: list[Link], backend: str, source: Source) -> list[Link]:
        kept = []
        for link in links:
            wheel = _wheel(link)
            why = self._why_not(wheel, backend) if wheel is not None else None
            if why is None:
                kept.append(link)
            elif wheel is not None:
                source.dropped.setdefault(wheel.version, why)
        return kept

    # -- what to tell ---------------------------------------------------------------------
    def explain_lines(self) -> list[str]:
        s = self.settings
        lines: list[str] = []
        if s.variant_index_urls:
            lines.append("variant indexes (consulted first): " + ", ".join(s.variant_index_urls))
        if s.backend is not None:
            choice = self.choice
            head = f"torch backend: {s.backend} (from {s.backend_origin})"
            if self.backend is not None:
                head += f" -> {self.backend}, index {backend_index(s.index_url, self.backend)}"
            lines.append(head)
            lines.append(
                f"  backend table: {self.table.origin}"
                + (
                    f", updated {self.table.updated}"
                    if self.table.updated and "refreshed" not in self.table.origin
                    else ""
                )
            )
            if choice is not None:
                if self.named is not None:
                    lines.append(f"  {self.named.backend}: named by {self.named.describe()}")
                    if self.named_mismatch:
                        lines.append(
                            f"  {self.named.backend} does not run here: {self.named_mismatch}"
                        )
                elif choice.requested != "auto":
                    lines.append(
                        "  named by the user: "
                        + (
                            f"it does not run here ({self.mismatch})"
                            if self.mismatch
                            else "used as is"
                        )
                    )
                others: dict[str, list[str]] = {}
                for v in choice.considered:
                    if v.series != choice.series:
                        basis = f" (extrapolated from {v.extrapolated})" if v.extrapolated else ""
                        others.setdefault(v.series, []).append(f"{v.backend}: {v.reason}{basis}")
                if choice.backend == "cpu" and not choice.unserved:
                    others = {}  # no GPU here: older releases have nothing more to say
                for series, why in others.items():
                    lines.append(f"  torch {series}: no build runs here ({'; '.join(why)})")
                for v in choice.considered:
                    if v.series != choice.series:
                        continue
                    mark = ""
                    if v.fits:
                        mark = "fits" + ("  <- chosen" if v.backend == self.backend else "")
                    basis = f" (extrapolated from {v.extrapolated})" if v.extrapolated else ""
                    lines.append(
                        f"  torch {v.series} {v.backend}: "
                        + (mark or f"rejected: {v.reason}")
                        + basis
                    )
                if choice.fell_back:
                    lines.append("  cpu: no GPU build fits; accepted with --allow-fallback")
                for note in choice.notes:
                    lines.append(f"  note: {note}")
                if choice.upgrade is not None and choice.ordered:
                    lines.append(f"  note: {choice.upgrade}")
            for name, skip in self.skipped.items():
                lines.append(f"  skipped {name}: {skip}")
        for key, src in sorted(self.sources.items()):
            if src.kind == "variant-index":
                lines.append(f"  {key}: from the variant index {src.url} (it publishes variants)")
            elif src.kind == "torch-backend":
                lines.append(f"  {key}: from the {src.backend} index {src.url}")
                for version, reason in src.dropped.items():
                    lines.append(f"    dropped {key} {version}: {reason}")
                for d in self.dropped:
                    if d.project == key:
                        lines.append(f"    dropped {d.filename} from {d.where}: {d.reason()}")
            else:
                lines.append(f"  {key}: from your indexes ({src.note})")
        return lines

    def index_backend(self, key: str, url: str) -> str | None:
        """The backend whose index gave project ``key`` the file at ``url`` (None: the file
        came from elsewhere, or ``key`` is not routed to a backend index)."""
        source = self.sources.get(key)
        if source is None or source.kind != "torch-backend" or url not in source.files:
            return None
        return source.backend

    def index_of(self, key: str, url: str) -> tuple[str, str] | None:
        """The index this route took the file at ``url`` of project ``key`` from, and what
        that index is, for messages (None: the project was not routed, or the file is one of
        the user's find-links files)."""
        source = self.sources.get(key)
        if source is None or not source.url or url not in source.files:
            return None
        if source.kind == "variant-index":
            return source.url, f"the variant index, from {self.settings.variant_index_origin}"
        s = self.settings
        why = (
            f"named by {self.named.describe()}"
            if self.named is not None
            else f"of torch-backend {s.backend} (from {s.backend_origin})"
        )
        return source.url, (
            f"the {source.backend} backend index, {why}; the only index searched for {key}"
        )

    def notices(self) -> list[str]:
        """One line per find-links file dropped for being another backend's build, a newer
        torch that a driver (or ROCm) update would bring, and a broken cached backend table."""
        out = [f"warning: {w}" for w in self.table.warnings]
        choice = self.choice
        if choice is not None and choice.upgrade is not None and self.backend is not None:
            out.append(
                f"{choice.upgrade}; torch {choice.shown} ({self.backend}) is the newest that "
                f"runs here: {_action(choice.upgrade)} to get the newer release"
            )
        return out + [d.notice() for d in self.dropped]

    def own_file_warnings(self, urls: Collection[str]) -> list[str]:
        """A warning for each file the user named, among ``urls`` (those installed), that is
        another backend's build than the one chosen."""
        out = []
        for url, (project, build) in self.foreign_own.items():
            if url in urls:
                out.append(
                    f"{project} {build.version} ({local_path(url)}) is {build.describe()}, but "
                    f"the {self.backend} backend was chosen (from {self.settings.backend_origin}); "
                    "it is installed because the file was named, the other torch projects come "
                    f"from the {self.backend} index"
                )
        return out

    def report(self) -> dict[str, object]:
        s = self.settings
        choice = self.choice
        return {
            "requested": s.backend,
            "origin": s.backend_origin if s.backend is not None else None,
            "named_by": self.named.describe() if self.named is not None else None,
            "backend": self.backend,
            "index_url": backend_index(s.index_url, self.backend) if self.backend else None,
            "torch_index_root": s.index_url if s.backend is not None else None,
            "variant_index_urls": list(s.variant_index_urls),
            "considered": [
                {
                    "backend": v.backend,
                    "torch": v.series,
                    "fits": v.fits,
                    "reason": v.reason,
                    "extrapolated_from": v.extrapolated or None,
                }
                for v in (choice.considered if choice is not None else [])
            ],
            "published": {k: [str(v) for v in vs] for k, vs in self.published.items()},
            "table": self.table.origin,
            "sources": {
                k: {"kind": v.kind, "url": v.url or None, "backend": v.backend}
                for k, v in sorted(self.sources.items())
            },
            "dropped": [
                {"project": d.project, "file": d.filename, "from": d.where, "reason": d.reason()}
                for d in self.dropped
            ],
        }


def unsupported_message(choice: Choice, settings: TorchSettings, pin: str | None = None) -> str:
    from fitwheel.torchbackend.table import backend_from_name

    if choice.upgrade is not None and pin is not None:
        return (
            f"{choice.upgrade}: {_action(choice.upgrade)} or pin {pin}. "
            f"(torch-backend auto comes from {settings.backend_origin}.)"
        )

    present = "; ".join(d.describe() for d in choice.unserved) or "none detected"
    vendors = {d.vendor for d in choice.unserved}
    series = list(dict.fromkeys(v.series for v in choice.considered))
    releases = ", ".join(series[:-1]) + (" or " if len(series) > 1 else "") + series[-1]
    rejected = "; ".join(
        f"{v.backend}: {v.reason}"
        for v in choice.considered
        if v.series == choice.series
        and v.reason is not None
        and backend_from_name(v.backend).vendor in vendors
    )
    hint = ""
    if "no usable NVIDIA driver" in rejected:
        hint = " (in a container, start it with access to the GPU)"
    return (
        f"no build of torch {releases} runs on the GPU here ({present}): {rejected}{hint}. "
        "The cpu build would leave the GPU unused. Pass --torch-backend cpu or --allow-fallback "
        "to install it anyway, name a backend with --torch-backend, or update the GPU driver. "
        f"(torch-backend auto comes from {settings.backend_origin}.)"
    )


def _action(upgrade: str) -> str:
    return "update the driver" if "NVIDIA" in upgrade else "install that ROCm version"
