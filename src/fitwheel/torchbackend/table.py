"""The torch backend table: data, read from ``fitwheel/data/torch_backends.json``.

The file (documented in ``docs/torch-backends.md``) holds:

- ``projects``: the torch-ecosystem projects routed to a backend index;
- ``backends``: one entry per backend, **in preference order** (newest CUDA first, then ROCm
  newest first, then XPU, CPU last): its vendor, for CUDA backends the CUDA version and the
  minimum driver per operating system (NVIDIA's minor-version compatibility: any 12.x build runs
  on a driver for CUDA 12.0 or later), and the platforms PyTorch publishes it for;
- ``releases``: per torch release series (``"2.9"``), newest first, the backends that release
  was built for and what each ships: ``sm_arch`` (NVIDIA), ``gfx_arch`` (AMD), ``device_ip``
  (Intel), in the vocabulary of the variant providers, so that a per-backend build and the
  variant wheel of the same build are judged alike. A release's ``supplement`` holds builds its
  variants file does not describe (torch 2.8's ROCm and XPU builds), with a ``note`` naming the
  source; the variants file's own builds win.

A new PyTorch release is a data change: ``tools/refresh_torch_backends.py`` rebuilds the
``releases`` part from the variants files an index publishes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from fitwheel.errors import InputError, UsageError
from fitwheel.torchbackend.settings import DEFAULT_INDEX_URL as DEFAULT_INDEX_URL

TABLE_FILE = "torch_backends.json"
TABLE_FORMAT = 1

_CUDA = re.compile(r"cu(\d+)(\d)")
_ROCM = re.compile(r"rocm(\d+)\.(\d+)(?:\.(\d+))?")
#: the values ``--torch-backend`` takes besides the backends' own names
CHOICES = ("auto", "cpu", "cuXXX", "rocmX.Y", "xpu")


class TableError(InputError):
    pass


@dataclass(frozen=True, slots=True)
class Backend:
    name: str
    #: "nvidia", "amd", "intel"; None for cpu
    vendor: str | None
    #: CUDA version of a cuXXX backend ("12.8"), ROCm version of a rocm one ("6.4")
    version: str | None = None
    #: operating system (platform_system) -> minimum driver (CUDA backends)
    drivers: Mapping[str, str] = field(default_factory=dict)
    #: "platform_system-platform_machine" keys, e.g. "Linux-x86_64"
    platforms: tuple[str, ...] = ()
    #: the known backend whose platforms (and drivers) this one was given, "" when known
    extrapolated: str = ""

    @property
    def cuda_floor(self) -> str | None:
        """The oldest driver CUDA version a cuXXX build runs on (minor-version compatibility:
        the major's .0)."""
        if self.vendor != "nvidia" or self.version is None:
            return None
        return self.version.split(".")[0] + ".0"


@dataclass(frozen=True, slots=True)
class Release:
    series: str
    #: backend -> namespace -> feature -> values (the build's architectures)
    builds: Mapping[str, Mapping[str, Mapping[str, tuple[str, ...]]]]
    requires_python: str | None = None
    source: str = ""
    #: backend -> the known build its architectures were taken from ("cu130 2.10")
    extrapolated: Mapping[str, str] = field(default_factory=dict)
    #: the newest version of the series the indexes publish ("2.15.0"), "" when not read
    latest: str = ""

    @property
    def shown(self) -> str:
        """The release as told to the user: its newest published version, else the series."""
        return self.latest or self.series

    def matches(self, spec: SpecifierSet) -> bool:
        """Whether a version of this series can satisfy ``spec`` (``2.9`` for ``==2.9.1``)."""
        base = Version(self.series)
        return any(
            spec.contains(Version(f"{base.major}.{base.minor}.{patch}"), prereleases=True)
            for patch in range(0, 20)
        )


@dataclass(frozen=True, slots=True)
class BackendTable:
    projects: tuple[str, ...]
    backends: tuple[Backend, ...]
    #: newest first
    releases: tuple[Release, ...]
    description: str = ""
    #: when the table's data was last brought up to date (ISO date or time)
    updated: str = ""
    #: where the table was read from ("the bundled table", a cached copy's path)
    origin: str = "the bundled table"
    #: what went wrong reading a cached copy (the bundled table is used instead)
    warnings: tuple[str, ...] = ()

    def backend(self, name: str) -> Backend:
        for b in self.backends:
            if b.name == name:
                return b
        return backend_from_name(name)

    def release_of(self, version: Version) -> Release | None:
        series = f"{version.major}.{version.minor}"
        for r in self.releases:
            if r.series == series:
                return r
        return None

    def release_for(self, version: Version) -> Release | None:
        """The release that judges torch ``version``: its own series, or the newest known one
        for a version newer than the table (None: older than the table, or no releases)."""
        release = self.release_of(version)
        if release is None and self.releases and Version(self.releases[0].series) < version:
            return self.releases[0]
        return release


def check_backend_name(value: str, origin: str = "--torch-backend") -> str:
    """``value`` normalised (``auto``, ``cpu``, ``cu128``, ``rocm6.4``, ``xpu``); bad usage
    otherwise, naming where it came from."""
    text = value.strip().lower()
    if text in ("auto", "cpu", "xpu") or _CUDA.fullmatch(text) or _ROCM.fullmatch(text):
        return text
    raise UsageError(
        f"{origin} {value!r}: expected auto, cpu, cuXXX (cu126, cu128, cu130, ...), rocmX.Y "
        "(rocm6.4, rocm7.0, ...) or xpu."
    )


def backend_from_name(name: str) -> Backend:
    """A backend the table does not list (say, a newer CUDA), from its name alone."""
    if name == "cpu":
        return Backend("cpu", None)
    if name == "xpu":
        return Backend("xpu", "intel")
    m = _CUDA.fullmatch(name)
    if m:
        return Backend(name, "nvidia", f"{int(m.group(1))}.{m.group(2)}")
    m = _ROCM.fullmatch(name)
    if m:
        return Backend(name, "amd", ".".join(g for g in m.groups() if g is not None))
    raise TableError(f"{name!r} is not a torch backend name")


def _str_tuple(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise TableError(f"torch backend table: {where} must be a list of strings")
    return tuple(raw)


def parse_table(data: Any, source: str = TABLE_FILE) -> BackendTable:
    """Validate the decoded JSON of a backend table."""
    if not isinstance(data, dict) or data.get("format") != TABLE_FORMAT:
        raise TableError(f"{source}: not a torch backend table of format {TABLE_FORMAT}")
    projects = _str_tuple(data.get("projects"), "projects")
    backends = []
    for name, raw in (data.get("backends") or {}).items():
        if not isinstance(raw, dict):
            raise TableError(f"{source}: backends.{name} must be an object")
        base = backend_from_name(name)
        drivers = raw.get("drivers", {})
        if not isinstance(drivers, dict):
            raise TableError(f"{source}: backends.{name}.drivers must be an object")
        backends.append(
            Backend(
                name,
                base.vendor,
                base.version,
                {str(k): str(v) for k, v in drivers.items()},
                _str_tuple(raw.get("platforms", []), f"backends.{name}.platforms"),
                str(raw.get("extrapolated", "")),
            )
        )
    releases = []
    for series, raw in (data.get("releases") or {}).items():
        try:
            Version(series)
        except InvalidVersion:
            raise TableError(f"{source}: release {series!r} is not a version") from None
        builds: dict[str, dict[str, dict[str, tuple[str, ...]]]] = {}
        supplement = (raw.get("supplement") or {}).get("builds") or {}
        for name, props in {**supplement, **(raw.get("builds") or {})}.items():
            builds[name] = {
                ns: {f: _str_tuple(v, f"releases.{series}.builds.{name}") for f, v in fs.items()}
                for ns, fs in props.items()
            }
        marks = raw.get("extrapolated") or {}
        if not isinstance(marks, dict):
            raise TableError(f"{source}: releases.{series}.extrapolated must be an object")
        releases.append(
            Release(
                series,
                builds,
                raw.get("requires_python"),
                str(raw.get("source", "")),
                {str(k): str(v) for k, v in marks.items()},
                str(raw.get("latest", "")),
            )
        )
    releases.sort(key=lambda r: Version(r.series), reverse=True)
    return BackendTable(
        projects,
        tuple(backends),
        tuple(releases),
        str(data.get("description", "")),
        str(data.get("refreshed") or data.get("updated") or ""),
    )


def load_backend_table(
    path: str | None = None, *, env: Mapping[str, str] | None = None, cached: bool = True
) -> BackendTable:
    """The table at ``path``; without one, the cached copy ``fitwheel torch refresh`` wrote
    when it is newer than the bundled table, else the bundled table (``cached=False``: the
    bundled table)."""
    import json

    if path is None:
        from fitwheel.data import load_table

        bundled = parse_table(load_table(TABLE_FILE))
        return _newer_cached_table(bundled, env) if cached else bundled
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise TableError(f"cannot read torch backend table {path}: {exc}") from None
    return parse_table(data, path)


def cached_table_path(env: Mapping[str, str] | None = None) -> str:
    """Where ``fitwheel torch refresh`` keeps its copy of the table (the cache root)."""
    import os

    from fitwheel.paths import torch_table_path

    return torch_table_path(os.environ if env is None else env)


def _newer_cached_table(bundled: BackendTable, env: Mapping[str, str] | None) -> BackendTable:
    """The cached copy when it was refreshed after ``bundled`` was updated, else ``bundled``.
    A copy that cannot be read or parsed leaves ``bundled`` in force, with a warning in
    :attr:`BackendTable.warnings`."""
    import json
    from dataclasses import replace

    path = cached_table_path(env)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        table = parse_table(data, path)
    except FileNotFoundError:
        return bundled
    except (OSError, ValueError, TypeError, AttributeError, TableError) as exc:
        warning = (
            f"the cached torch backend table {path} cannot be read ({exc}): the bundled table "
            "is used; run `fitwheel torch refresh` to rewrite it, or remove the file"
        )
        return replace(bundled, warnings=(*bundled.warnings, warning))
    if not table.updated or table.updated < bundled.updated:
        return bundled
    where = str(data.get("refreshed_from") or "")
    origin = f"{path} (refreshed {table.updated}" + (f" from {where})" if where else ")")
    return replace(table, origin=origin)
