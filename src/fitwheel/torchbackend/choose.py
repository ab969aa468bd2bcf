"""Which torch backend fits a target: every constraint intersected, newest fitting first.

A backend's build of a torch release fits when all of these hold:

- the platform (``platform_system``-``platform_machine``) is one PyTorch publishes it for, and
  the Python version is one the release supports;
- NVIDIA: the driver's CUDA version is at least the backend's major.0 (minor-version
  compatibility: a cu128 build runs on a driver for CUDA 12.4), and **every** GPU the
  multi-GPU policy counts runs one of the architectures the build ships (``sm_arch``, with the
  binary compatibility detection already folds in: an sm_89 card runs sm_80 code);
- AMD: every counted GPU's ``gfx_arch`` is shipped and the installed ROCm is the backend's;
- Intel: every counted GPU's device IP is shipped.

These are exactly the checks the variant selection makes on the same builds' variant wheels
(the table is derived from their variants files), so a per-backend index and a variant index
pick the same build. Backends are tried in the table's order (newest CUDA first, then ROCm, then
XPU); the newest torch release with a fitting GPU build wins (the table's releases, or, widened
by :func:`.extrapolate.extend_table`, those the indexes publish). When a newer release runs here
only with a newer driver or ROCm, :attr:`Choice.upgrade` says what it needs. CPU is the answer
when no GPU is here; when a GPU is here and nothing fits, the choice says so and the caller
fails unless the user accepts the fallback. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from fitwheel.platform.policy import counted_devices
from fitwheel.platform.profile import Device
from fitwheel.torchbackend.table import Backend, BackendTable, Release
from fitwheel.variants.ordering import Target

GPU_VENDORS = ("nvidia", "amd", "intel")
_VENDOR_NAME = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}
_SHOWN = 8


@dataclass(frozen=True, slots=True)
class Verdict:
    backend: str
    series: str
    #: None: the build fits; otherwise why not
    reason: str | None
    #: the known build this one's data was taken from ("cu130 2.10"), "" when the table has it
    extrapolated: str = ""

    @property
    def fits(self) -> bool:
        return self.reason is None


@dataclass(slots=True)
class Choice:
    """What was decided: ``ordered`` are the backends to use, best first (empty: nothing fits
    and the fallback was not accepted); ``considered`` every backend checked, with verdicts."""

    ordered: list[str]
    considered: list[Verdict] = field(default_factory=list)
    #: the torch release series the choice was made for
    series: str | None = None
    #: "auto" or the backend the user named
    requested: str = "auto"
    #: the GPUs present that no backend serves (set when the answer is, or would be, cpu)
    unserved: tuple[Device, ...] = ()
    #: a GPU is present, nothing fits, and cpu was taken because the user accepted it
    fell_back: bool = False
    notes: list[str] = field(default_factory=list)
    #: a newer release than the one chosen (or the one asked for, when none runs) that runs
    #: here only with a newer driver or ROCm: what it needs
    upgrade: str | None = None
    #: the newest published version of the series chosen ("2.15.0"), else the series
    shown: str | None = None

    @property
    def backend(self) -> str | None:
        return self.ordered[0] if self.ordered else None


def _values(values: Sequence[str], limit: int = _SHOWN) -> str:
    shown = [_pretty(v) for v in values[:limit]]
    more = f", ... ({len(values) - limit} more)" if len(values) > limit else ""
    return ", ".join(shown) + more


def _pretty(value: str) -> str:
    """``90_real`` -> ``sm_90``, ``120_virtual`` -> ``sm_120 (PTX)``; others as they are."""
    number, sep, kind = value.partition("_")
    if sep and number.isdigit():
        return f"sm_{number}" + (" (PTX)" if kind == "virtual" else "")
    return value


def _device_arch(device: Device) -> str:
    cc = device.extra.get("compute_capability")
    if isinstance(cc, str) and cc:
        return "sm_" + cc.replace(".", "")
    for features in device.properties.values():
        for values in features.values():
            if values:
                return _pretty(values[0])
    return "of unknown architecture"


def platform_key(system: str, machine: str) -> str:
    aliases = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}
    m = aliases.get(machine.lower(), machine.lower())
    if system == "Windows" and m == "x86_64":
        return "Windows-AMD64"
    if system == "Darwin" and m == "aarch64":
        return "Darwin-arm64"
    return f"{system}-{m}"


def _platform_ok(backend: Backend, key: str) -> bool:
    return not backend.platforms or key in backend.platforms


def check_build(
    backend: Backend,
    shipped: Mapping[str, Mapping[str, tuple[str, ...]]],
    target: Target,
    devices: Sequence[Device],
    *,
    platform: str,
    python_version: str | None,
    release: Release,
    requirements: bool = True,
) -> str | None:
    """Why ``backend``'s build of ``release`` does not run on ``target`` (None: it does);
    ``requirements=False`` leaves the driver and ROCm version out of the question."""
    if not _platform_ok(backend, platform):
        where = ", ".join(backend.platforms)
        return f"published for {where} only; the target is {platform}"
    if python_version and release.requires_python:
        try:
            if not SpecifierSet(release.requires_python).contains(python_version, True):
                return (
                    f"torch {release.series} needs Python {release.requires_python}; "
                    f"the target's is {python_version}"
                )
        except InvalidSpecifier:
            pass
    vendor = backend.vendor
    if vendor is None:
        return None
    here = [d for d in devices if d.vendor == vendor]
    supported = target.supported.get(vendor)
    name = _VENDOR_NAME[vendor]
    if not here and not supported:
        return f"no {name} GPU here"
    if requirements:
        why = requirement_reason(backend, target, platform)
        if why is not None:
            return why
    for ns, features in shipped.items():
        for feature, values in features.items():
            offered = set(values)
            machine_wide = (target.supported.get(ns) or {}).get(feature, ())
            if not offered & set(machine_wide):
                gpus = "; ".join(f"{d.describe()} is {_device_arch(d)}" for d in here) or (
                    f"the {name} GPU here supports {_values(machine_wide) or 'none of them'}"
                )
                return f"ships {_values(values)}; {gpus}"
            for dc in target.device_constraints:
                if dc.namespace != ns or feature not in dc.supported:
                    continue
                if not offered & set(dc.supported[feature]):
                    arch = next(
                        (_device_arch(d) for d in here if d.describe() == dc.device),
                        _pretty(dc.supported[feature][0]) if dc.supported[feature] else "?",
                    )
                    return f"ships {_values(values)}; {dc.device} is {arch}"
    return None


def requirement_reason(backend: Backend, target: Target, platform: str) -> str | None:
    """Why the driver (NVIDIA) or ROCm installation (AMD) here is too old or missing for
    ``backend`` (None: it is not)."""
    supported = target.supported.get(backend.vendor or "")
    if backend.vendor == "nvidia":
        floor = backend.cuda_floor
        bounds = (supported or {}).get("cuda_version_lower_bound", ())
        driver = backend.drivers.get(platform.split("-")[0]) or backend.drivers.get("Linux")
        need = f"an NVIDIA driver for CUDA {floor} or newer" + (f" (>= {driver})" if driver else "")
        if not bounds:
            return f"needs {need}; no usable NVIDIA driver answers here"
        if floor is not None and floor not in bounds:
            return f"needs {need}; the driver here supports CUDA {bounds[0]}"
    if backend.vendor == "amd":
        installed = (supported or {}).get("rocm_version", ())
        if not installed:
            return f"needs ROCm {backend.version}; no ROCm installation was found here"
        if backend.version is not None and backend.version not in installed:
            return f"needs ROCm {backend.version}; ROCm {installed[0]} is installed"
    return None


def _driver_key(driver: str) -> tuple[int, ...]:
    return tuple(int(p) for p in driver.split(".") if p.isdigit())


def _builds_of(
    table: BackendTable, release: Release
) -> Iterator[tuple[Backend, Mapping[str, Mapping[str, tuple[str, ...]]]]]:
    """The backends (in the table's order of preference) that have a build of ``release``."""
    for backend in table.backends:
        if backend.name in release.builds and backend.vendor is not None:
            yield backend, release.builds[backend.name]


def upgrade_needed(
    table: BackendTable,
    release: Release,
    target: Target,
    gpus: Sequence[Device],
    *,
    platform: str,
    python_version: str | None,
) -> str | None:
    """What ``release`` needs to run here when only the driver (or ROCm) stands in the way:
    ``torch 2.15.0 needs NVIDIA driver >= 580.65.06 (cu130, cu132); the driver here supports
    CUDA 12.8``; None when it runs, or when more than the driver stands in the way."""
    wanting: list[tuple[Backend, str]] = []
    for backend, build in _builds_of(table, release):
        other = check_build(
            backend,
            build,
            target,
            gpus,
            platform=platform,
            python_version=python_version,
            release=release,
            requirements=False,
        )
        if other is not None:
            continue
        why = requirement_reason(backend, target, platform)
        if why is None:
            return None  # a build runs: nothing to update
        wanting.append((backend, why))
    if not wanting:
        return None
    names = ", ".join(b.name for b, _ in wanting)
    system = platform.split("-")[0]
    nvidia = [b for b, _ in wanting if b.vendor == "nvidia"]
    if nvidia:
        drivers = [d for b in nvidia if (d := b.drivers.get(system) or b.drivers.get("Linux"))]
        need = f"NVIDIA driver >= {min(drivers, key=_driver_key)}" if drivers else "a newer driver"
    else:
        need = "ROCm " + " or ".join(dict.fromkeys(str(b.version) for b, _ in wanting))
    here = wanting[0][1].split("; ", 1)[-1]
    return f"torch {release.shown} needs {need} ({names}); {here}"


def _releases_for(table: BackendTable, spec: SpecifierSet | None) -> tuple[list[Release], str]:
    if spec is None or not str(spec):
        return list(table.releases), ""
    matching = [r for r in table.releases if r.matches(spec)]
    if matching or not table.releases:
        return matching, ""
    newest, oldest = table.releases[0], table.releases[-1]
    mentioned = []
    for item in spec:
        try:
            mentioned.append(Version(item.version.rstrip(".*")))
        except InvalidVersion:
            continue
    if any(v > Version(newest.series) for v in mentioned):
        return [newest], (
            f"torch {spec} is newer than the backend table (newest: {newest.series}): judged by "
            f"torch {newest.series}'s builds; refresh the table for exact answers"
        )
    return [oldest], (
        f"torch {spec} is older than the backend table (oldest: {oldest.series}): judged by "
        f"torch {oldest.series}'s builds"
    )


def gpu_devices(devices: Sequence[Device]) -> tuple[Device, ...]:
    """The GPUs that count: those the multi-GPU policy holds builds to, of a vendor torch has
    builds for, and those whose architecture detection could not tell (no build can be shown
    to run on them; an unknown discrete GPU must not pass for a CPU-only machine)."""
    counted = set(map(id, counted_devices(devices)))
    return tuple(
        d for d in devices if d.vendor in GPU_VENDORS and (id(d) in counted or not d.properties)
    )


def choose_backend(
    table: BackendTable,
    target: Target,
    devices: Sequence[Device],
    *,
    system: str,
    machine: str,
    python_version: str | None = None,
    torch_spec: SpecifierSet | None = None,
    allow_fallback: bool = False,
) -> Choice:
    """The ``auto`` answer for ``target`` (see the module docstring)."""
    platform = platform_key(system, machine)
    releases, note = _releases_for(table, torch_spec)
    choice = Choice([], notes=[note] if note else [])
    gpus = gpu_devices(devices)
    for release in releases:
        fitting = []
        for backend, build in _builds_of(table, release):
            reason = check_build(
                backend,
                build,
                target,
                gpus,
                platform=platform,
                python_version=python_version,
                release=release,
            )
            mark = release.extrapolated.get(backend.name, "")
            if backend.extrapolated:
                mark += ("; " if mark else "") + (
                    f"requirements from its name, platforms from {backend.extrapolated}"
                )
            choice.considered.append(Verdict(backend.name, release.series, reason, mark))
            if reason is None:
                fitting.append(backend.name)
        if fitting:
            choice.ordered = fitting
            choice.series = release.series
            choice.shown = release.shown
            if release is not releases[0]:
                choice.notes.append(
                    f"no GPU build of torch {releases[0].series} runs here; torch "
                    f"{release.series} is the newest release with one"
                )
            break
    if gpus:
        for release in releases:
            if choice.series is not None and Version(release.series) <= Version(choice.series):
                break
            choice.upgrade = upgrade_needed(
                table, release, target, gpus, platform=platform, python_version=python_version
            )
            if choice.upgrade is not None:
                break
    if choice.ordered:
        return choice
    # nothing for the GPU: cpu, if the platform has it
    newest = releases[0] if releases else None
    choice.series = newest.series if newest is not None else None
    choice.shown = newest.shown if newest is not None else None
    cpu = table.backend("cpu")
    if newest is not None and "cpu" in newest.builds:
        reason = check_build(
            cpu,
            {},
            target,
            gpus,
            platform=platform,
            python_version=python_version,
            release=newest,
        )
        choice.considered.append(Verdict("cpu", newest.series, reason))
        if reason is not None:
            return choice
    discrete = tuple(d for d in gpus if not d.extra.get("integrated"))
    if gpus:
        choice.unserved = gpus
    if discrete and not allow_fallback:
        return choice
    if discrete:
        choice.fell_back = True
    elif gpus:
        choice.notes.append(
            "no build runs on the integrated GPU here "
            f"({'; '.join(d.describe() for d in gpus)}): cpu"
        )
    choice.ordered = ["cpu"]
    return choice


def explicit_choice(name: str, table: BackendTable) -> Choice:
    """The user named the backend: it is used as it is (not checked against the target)."""
    choice = Choice([name], requested=name)
    if name != "cpu" and all(b.name != name for b in table.backends):
        choice.notes.append(f"{name} is not in fitwheel's backend table; its index is used as is")
    return choice


def accepts_version(
    table: BackendTable,
    backend: str,
    version: Version,
    target: Target,
    devices: Sequence[Device],
    *,
    system: str,
    machine: str,
    python_version: str | None,
) -> str | None:
    """Why torch ``version`` from ``backend``'s index does not run here (None: it does, or the
    table cannot tell). A release newer than the table is judged by the newest known one."""
    release = table.release_for(version)
    if release is None or backend not in release.builds:
        return None
    return check_build(
        table.backend(backend),
        release.builds[backend],
        target,
        gpu_devices(devices),
        platform=platform_key(system, machine),
        python_version=python_version,
        release=release,
    )
