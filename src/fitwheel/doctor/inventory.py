"""What is installed in an environment, read from its ``*.dist-info`` folders without importing
anything: name, version (with its local label), Requires-Dist, the recorded ``variant.json``
and, on demand, the files RECORD lists.

A distribution whose metadata cannot be read is kept with the problem (``error``), so that the
checks report it instead of failing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fitwheel.variants.errors import VariantError
from fitwheel.variants.model import VariantDescription, VariantInfo
from fitwheel.variants.names import canonicalize_name
from fitwheel.wheel.metadata import InvalidMetadataError, parse_metadata

__all__ = ["Installed", "Inventory", "read_inventory"]

_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.dist-info$")


@dataclass(slots=True)
class Installed:
    """One installed distribution."""

    name: str
    version: str
    dist_info: Path
    site: Path
    requires: tuple[str, ...] = ()
    #: the wheel's ``variant.json`` as installed (the variant recorded at install time), if any
    variant_info: VariantInfo | None = None
    #: why an installed ``variant.json`` could not be read ("" when it could or there is none)
    variant_error: str = ""
    #: why the metadata could not be read ("" when it could)
    error: str = ""
    _files: list[str] | None = field(default=None, repr=False)

    @property
    def variant(self) -> VariantDescription | None:
        info = self.variant_info
        return next(iter(info.variants.values()), None) if info is not None else None

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)

    @property
    def local(self) -> str:
        """The local version label (``cu128`` of ``2.9.0+cu128``), "" when none."""
        return self.version.partition("+")[2]

    @property
    def public(self) -> str:
        return self.version.partition("+")[0]

    def files(self) -> list[str]:
        """The paths RECORD lists, relative to the site folder ([] when there is no RECORD)."""
        if self._files is None:
            from fitwheel.wheel.record import RecordError, installed_paths

            try:
                text = (self.dist_info / "RECORD").read_text(encoding="utf-8", errors="replace")
                self._files = installed_paths(text)
            except (OSError, RecordError):
                self._files = []
        return self._files

    def path(self, relative: str) -> Path:
        return self.site / relative

    def read_text(self, relative: str, limit: int = 1 << 20) -> str | None:
        """A small file of this distribution, or None when it is missing or unreadable."""
        try:
            with open(self.site / relative, "rb") as fh:
                return fh.read(limit).decode("utf-8", "replace")
        except OSError:
            return None


@dataclass(slots=True)
class Inventory:
    """Installed distributions by canonical name (the first found on the path wins)."""

    dists: dict[str, Installed]
    sites: tuple[Path, ...]

    def get(self, name: str) -> Installed | None:
        return self.dists.get(canonicalize_name(name))

    def __iter__(self) -> Iterator[Installed]:
        return iter(self.dists.values())


def _variant(dist_info: Path) -> tuple[VariantInfo | None, str]:
    path = dist_info / "variant.json"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return None, ""
    except OSError as exc:
        return None, f"{path}: {exc.strerror or exc}"
    from fitwheel.variants.reading import loads_variant_info

    try:
        info = loads_variant_info(raw, str(path), kind="wheel")
    except VariantError as exc:
        return None, str(exc)
    return info, ""


def _read(dist_info: Path, site: Path) -> Installed:
    match = _DIST_INFO.match(dist_info.name)
    name = match["name"] if match else dist_info.name.removesuffix(".dist-info")
    version = match["version"] if match else ""
    meta_path = dist_info / "METADATA"
    try:
        meta = parse_metadata(meta_path.read_bytes(), str(meta_path))
    except FileNotFoundError:
        return Installed(name, version, dist_info, site, error=f"{meta_path} is missing")
    except OSError as exc:
        return Installed(
            name, version, dist_info, site, error=f"{meta_path}: {exc.strerror or exc}"
        )
    except InvalidMetadataError as exc:
        return Installed(name, version, dist_info, site, error=exc.problem)
    if not meta.name or not meta.version:
        return Installed(
            name, version, dist_info, site, error=f"{meta_path} has no Name or no Version"
        )
    variant_info, variant_error = _variant(dist_info)
    return Installed(
        meta.name,
        meta.version,
        dist_info,
        site,
        requires=meta.requires_dist,
        variant_info=variant_info,
        variant_error=variant_error,
    )


def read_inventory(sites: Iterable[str | os.PathLike[str]]) -> Inventory:
    """Every ``*.dist-info`` folder in ``sites``, in path order."""
    dists: dict[str, Installed] = {}
    roots = tuple(Path(s) for s in dict.fromkeys(os.fspath(s) for s in sites))
    for site in roots:
        try:
            entries = sorted(e for e in os.listdir(site) if e.endswith(".dist-info"))
        except OSError:
            continue
        for entry in entries:
            dist = _read(site / entry, site)
            dists.setdefault(dist.key, dist)
    return Inventory(dists, roots)
