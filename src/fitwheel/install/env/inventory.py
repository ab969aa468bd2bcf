"""What an environment holds: its installed distributions, read from their ``.dist-info``
folders, with the variant each variant install is (from its ``variant.json``).

Reading never stops at one bad folder: a distribution whose METADATA cannot be read (missing,
not UTF-8, not a header block, without a name or version) is reported by its folder in
:attr:`Inventory.problems` and left out, and the rest is read. Where a name is installed twice
on the path, the first folder found wins, as for the import system.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.utils import NormalizedName

from fitwheel.variants.model import VariantDescription
from fitwheel.variants.names import canonicalize_name
from fitwheel.wheel.metadata import CoreMetadata, InvalidMetadataError, parse_metadata


@dataclass(frozen=True, slots=True)
class Installed:
    """One installed distribution."""

    name: str
    version: str
    #: its ``.dist-info`` folder
    folder: Path
    metadata: CoreMetadata
    #: the variant label and properties (ns -> feature -> values) of a variant install
    variant_label: str | None = None
    variant_properties: Mapping[str, Mapping[str, list[str]]] = field(default_factory=dict)
    #: the variant as the marker evaluator takes it (None: none, or unreadable)
    variant: VariantDescription | None = None

    @property
    def key(self) -> NormalizedName:
        return canonicalize_name(self.name)

    @property
    def location(self) -> Path:
        """The folder the distribution is installed in (its site-packages)."""
        return self.folder.parent

    def read_text(self, member: str) -> str | None:
        """A file of the ``.dist-info`` folder as text (None: absent or unreadable)."""
        try:
            return (self.folder / member).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return None

    @property
    def installer(self) -> str | None:
        text = self.read_text("INSTALLER")
        return text.strip() or None if text is not None else None

    @property
    def requested(self) -> bool:
        return (self.folder / "REQUESTED").exists()

    @property
    def metadata_path(self) -> Path:
        return _metadata_file(self.folder)

    def variant_lines(self) -> list[str]:
        """The variant's properties as ``ns :: feature :: value`` lines."""
        return [
            f"{ns} :: {feature} :: {value}"
            for ns, features in self.variant_properties.items()
            for feature, values in features.items()
            for value in values
        ]


@dataclass(frozen=True, slots=True)
class Inventory:
    #: installed distributions by canonical name
    dists: Mapping[NormalizedName, Installed]
    #: one line per ``.dist-info`` folder that could not be read
    problems: tuple[str, ...] = ()

    def get(self, name: str) -> Installed | None:
        return self.dists.get(canonicalize_name(name))

    def __iter__(self) -> Iterator[Installed]:
        return iter(sorted(self.dists.values(), key=lambda d: d.key))


_Variant = tuple[str | None, dict[str, dict[str, list[str]]], "VariantDescription | None"]


def variant_of(text: str | None, source: str) -> _Variant:
    """The label, properties and description a wheel's own ``variant.json`` gives (it names
    exactly one variant); (None, {}, None) for a non-variant install or an unreadable file."""
    if not text:
        return None, {}, None
    from fitwheel.variants.errors import VariantError
    from fitwheel.variants.reading import loads_variant_info

    try:
        info = loads_variant_info(text, source, "wheel")
    except VariantError:
        info = None
    if info is not None and len(info.variants) == 1:
        (desc,) = info.variants.values()
        return desc.label, desc.as_dict(), desc
    # a document fitwheel's reader refuses still names its label: show what it says
    try:
        variants = json.loads(text).get("variants", {})
    except (ValueError, AttributeError):
        return None, {}, None
    if not isinstance(variants, dict) or len(variants) != 1:
        return None, {}, None
    ((label, props),) = variants.items()
    return str(label), props if isinstance(props, dict) else {}, None


def _dist_info_folders(site_dirs: Iterable[str]) -> Iterator[Path]:
    seen: set[str] = set()
    for site in site_dirs:
        if site in seen:
            continue
        seen.add(site)
        try:
            entries = sorted(os.scandir(site), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            # .egg-info: what setuptools' own installs leave (PKG-INFO instead of METADATA)
            if entry.name.endswith((".dist-info", ".egg-info")) and entry.is_dir():
                yield Path(entry.path)


def _metadata_file(folder: Path) -> Path:
    return folder / ("PKG-INFO" if folder.name.endswith(".egg-info") else "METADATA")


def read_installed(folder: Path) -> Installed:
    """One ``.dist-info`` (or ``.egg-info``) folder; :class:`InvalidMetadataError` naming it
    when its METADATA cannot be read."""
    meta_path = _metadata_file(folder)
    try:
        data = meta_path.read_bytes()
    except OSError as exc:
        raise InvalidMetadataError(str(meta_path), f"cannot be read ({exc.strerror})") from None
    meta = parse_metadata(data, str(meta_path))
    if not meta.name or not meta.version:
        raise InvalidMetadataError(str(meta_path), "it gives no Name or no Version")
    variant_text: str | None = None
    variant_path = folder / "variant.json"
    if variant_path.is_file():
        try:
            variant_text = variant_path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            variant_text = None
    label, props, desc = variant_of(variant_text, str(variant_path))
    return Installed(meta.name, meta.version, folder, meta, label, props, desc)


def read_inventory(site_dirs: Iterable[str]) -> Inventory:
    """Every distribution installed in ``site_dirs`` (see the module's rules)."""
    found: dict[NormalizedName, Installed] = {}
    problems: list[str] = []
    for folder in _dist_info_folders(site_dirs):
        if not _metadata_file(folder).exists():
            problems.append(f"{folder}: skipped, it has no {_metadata_file(folder).name} file")
            continue
        try:
            dist = read_installed(folder)
        except InvalidMetadataError as exc:
            problems.append(f"{folder}: skipped, its METADATA cannot be read: {exc.problem}")
            continue
        found.setdefault(dist.key, dist)
    return Inventory(found, tuple(problems))


@dataclass(frozen=True, slots=True)
class Broken:
    """One thing ``fitwheel check`` reports, in pip's words (:meth:`line`)."""

    name: str
    version: str
    #: "missing" (a dependency not installed), "conflict" (installed in a version the
    #: requirement excludes) or "platform" (the wheel's tags are not for this environment)
    kind: str
    requirement: str | None = None
    installed: str | None = None

    def line(self) -> str:
        if self.kind == "missing":
            return (
                f"{self.name} {self.version} requires {self.requirement}, which is not installed."
            )
        if self.kind == "conflict":
            req = self.requirement or ""
            dep = req.split(";")[0]
            return (
                f"{self.name} {self.version} has requirement {dep}, but you have {self.installed}."
            )
        return f"{self.name} {self.version} is not supported on this platform"


def dependencies(
    dist: Installed, markers: Mapping[str, str], extras: Iterable[str] = ()
) -> list[str]:
    """The ``Requires-Dist`` entries of ``dist`` that apply here (markers evaluated for this
    environment, with the installed variant's properties, the extras given and none)."""
    from packaging.requirements import InvalidRequirement, Requirement

    from fitwheel.variants.errors import VariantError
    from fitwheel.variants.markers import evaluate_marker

    out = []
    for value in dist.metadata.requires_dist:
        spec, sep, marker = value.partition(";")
        try:
            Requirement(spec.strip())
        except InvalidRequirement:
            continue
        if sep and marker.strip():
            wanted = False
            for extra in ("", *extras):
                try:
                    if evaluate_marker(marker.strip(), {**markers, "extra": extra}, dist.variant):
                        wanted = True
                        break
                except (VariantError, ValueError):
                    wanted = True
                    break
            if not wanted:
                continue
        out.append(spec.strip())
    return out


def check_inventory(
    inventory: Inventory, markers: Mapping[str, str], tags: Iterable[object]
) -> list[Broken]:
    """pip's ``check``: every dependency installed in a version its requirement allows, and
    every wheel for this platform (``tags``: the environment's supported tags)."""
    from packaging.requirements import Requirement
    from packaging.version import InvalidVersion, Version

    from fitwheel.wheel.metadata import parse_wheel_info

    supported = {str(tag) for tag in tags}
    broken: list[Broken] = []
    for dist in inventory:
        for spec in dependencies(dist, markers):
            req = Requirement(spec)
            dep = inventory.get(req.name)
            if dep is None:
                broken.append(Broken(dist.name, dist.version, "missing", str(req.name)))
                continue
            try:
                ok = req.specifier.contains(Version(dep.version), prereleases=True)
            except InvalidVersion:
                ok = True
            if not ok:
                broken.append(
                    Broken(
                        dist.name,
                        dist.version,
                        "conflict",
                        str(req),
                        f"{dep.name.lower()} {dep.version}",
                    )
                )
        wheel_text = dist.read_text("WHEEL")
        if wheel_text is not None and supported:
            try:
                info = parse_wheel_info(wheel_text, str(dist.folder / "WHEEL"))
            except InvalidMetadataError:
                continue
            expanded = {
                f"{py}-{abi}-{plat}"
                for tag in info.tags
                if tag.count("-") == 2
                for py in tag.split("-")[0].split(".")
                for abi in tag.split("-")[1].split(".")
                for plat in tag.split("-")[2].split(".")
            }
            if expanded and not expanded & supported:
                broken.append(Broken(dist.name, dist.version, "platform"))
    return broken
