"""What is installed, as the doctor needs it: the environment's inventory
(:mod:`fitwheel.install.env.inventory`, the one reader of ``.dist-info`` folders) plus, per
distribution, the whole recorded ``variant.json`` (the variant recorded at install time, with its
providers, to judge against today's detection), why it cannot be read, and on demand the files
RECORD lists. A folder whose metadata cannot be read is kept as a distribution with ``error``
set, so that the checks report it instead of skipping it silently.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fitwheel.install.env import inventory as environment_inventory
from fitwheel.variants.errors import VariantError
from fitwheel.variants.model import VariantDescription, VariantInfo
from fitwheel.variants.names import canonicalize_name

__all__ = ["Installed", "Inventory", "read_inventory"]

_DIST_INFO = re.compile(r"^(?P<name>[^-]+)-(?P<version>[^-]+)\.(?:dist|egg)-info$")
_SKIPPED = ": skipped, "


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
    """Installed distributions by canonical name (the first found on the path wins), and the
    environment's own inventory they were read from (for ``check``)."""

    dists: dict[str, Installed]
    base: environment_inventory.Inventory

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
        return loads_variant_info(raw, str(path), kind="wheel"), ""
    except VariantError as exc:
        return None, str(exc)


def _unreadable(problem: str) -> Installed | None:
    """A distribution for one of the inventory's problem lines (``FOLDER: skipped, why``)."""
    folder_text, sep, why = problem.partition(_SKIPPED)
    if not sep:
        return None
    folder = Path(folder_text)
    match = _DIST_INFO.match(folder.name)
    name = match["name"] if match else folder.name.rpartition(".")[0]
    version = match["version"] if match else ""
    return Installed(name, version, folder, folder.parent, error=why)


def read_inventory(sites: Iterable[str | os.PathLike[str]]) -> Inventory:
    """Every distribution installed in ``sites``, in path order."""
    base = environment_inventory.read_inventory([os.fspath(s) for s in sites])
    dists: dict[str, Installed] = {}
    for dist in base.dists.values():
        variant_info, variant_error = (
            _variant(dist.folder) if (dist.folder / "variant.json").exists() else (None, "")
        )
        dists[dist.key] = Installed(
            dist.name,
            dist.version,
            dist.folder,
            dist.location,
            requires=dist.metadata.requires_dist,
            variant_info=variant_info,
            variant_error=variant_error,
        )
    for problem in base.problems:
        broken = _unreadable(problem)
        if broken is not None:
            dists.setdefault(broken.key, broken)
    return Inventory(dists, base)
