"""Lock targets: a profile plus the Python version and platform a lock resolves it for.

A target's marker values are the running interpreter's, with the Python version given
(``--python-version``), the profile's ``environment`` on top (it describes the machine: a
Graviton profile says ``platform_machine = aarch64``), and the machine of the first
``--platform`` tag when the profile names none. A profile of another operating system than the
running one (``sys_platform`` or ``platform_system``, or the first ``--platform`` tag) is made
one machine's: the OS values it leaves out follow from the one it gives (``win32`` is
``Windows`` and ``nt``), the running kernel's ``platform_release`` / ``platform_version`` are
not taken, and ``platform_machine`` is spelled as that OS spells it (``AMD64`` on Windows,
``arm64`` on macOS).

Its wheel tags are CPython's for that version, on the ``--platform`` tags or, without them, on
the platforms the profile implies: its machine, its C library (``libc :: family`` /
``libc :: glibc``: the newest glibc listed and every older one down to 2.17; without them, for
another machine glibc 2.17 only, for this machine its own) as manylinux / musllinux tags, then
``linux_<machine>``; for a macOS target (``sys_platform = darwin``) the macOS tags of its
release (11 and later; ``platform_release`` is the Darwin version, 23.x is macOS 14, without it
macOS 14), for Windows ``win_amd64`` / ``win_arm64``. A profile's ``environment`` may name its
``python_version``, so targets can differ in Python version too.

An NVIDIA device of the profile may name its driver (``driver_version``): the driver's CUDA
version then comes from it by the minima of the target's OS, NVIDIA's minor-version
compatibility minima of the torch backend table on Windows (a 576 driver runs CUDA 12 builds,
CUDA 13 ones need 580.88), the detection's driver table on Linux, in place of the profile's
``cuda_version_lower_bound`` / ``cuda_version_upper_bound``.
"""

from __future__ import annotations

import platform as _platform
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging import tags as packaging_tags

from fitwheel.errors import InputError, UsageError
from fitwheel.platform.profile import Device, Profile
from fitwheel.variants.model import SupportedProperties
from fitwheel.variants.ordering import Target

#: the marker variables that tell targets apart in ``environments`` and ``packages.marker``
MARKER_KEYS = ("python_version", "sys_platform", "platform_machine")
_NAME = re.compile(r"[^a-z0-9-]+")


@dataclass(frozen=True, slots=True)
class LockTarget:
    name: str
    profile: Profile
    target: Target
    python_version: str
    environment: Mapping[str, str]
    tags: tuple[packaging_tags.Tag, ...]
    #: where the profile came from (a path), for messages
    source: str = ""

    @property
    def devices(self) -> tuple[Device, ...]:
        return self.profile.devices

    @property
    def marker(self) -> str:
        return marker_of(self.environment)

    def summary(self) -> str:
        """``NVIDIA H100 80GB HBM3 (nvidia); python 3.11, linux x86_64``."""
        gpus = [d.name or _unnamed(d) for d in self.devices]
        what = ", ".join(dict.fromkeys(gpus)) if gpus else "no GPU"
        env = self.environment
        return (
            f"{what}; python {env['python_version']}, {env['sys_platform']} "
            f"{env['platform_machine']}"
        )


def _unnamed(device: Device) -> str:
    values = [v[0] for fs in device.properties.values() for v in fs.values() if v]
    return f"{device.vendor} GPU" + (f" ({values[0]})" if values else "")


def marker_of(environment: Mapping[str, str]) -> str:
    return " and ".join(f'{k} == "{environment[k]}"' for k in MARKER_KEYS if k in environment)


def target_name(path: str, taken: set[str]) -> str:
    """A short name for a profile file: its stem, lower-case, made unique."""
    stem = _NAME.sub("-", Path(path).stem.lower()).strip("-") or "target"
    name, n = stem, 2
    while name in taken:
        name, n = f"{stem}-{n}", n + 1
    taken.add(name)
    return name


def _machine_of_tag(tag: str) -> str | None:
    if tag.startswith("win_"):
        return {"win_amd64": "AMD64", "win_arm64": "ARM64"}.get(tag)
    for arch in ("x86_64", "aarch64", "arm64", "i686", "ppc64le", "s390x", "armv7l", "riscv64"):
        if tag.endswith("_" + arch):
            return arch
    return None


def _system_of_tag(tag: str) -> str | None:
    """The ``sys_platform`` of a wheel platform tag's OS (None: not one of Windows, macOS)."""
    if tag.startswith("win"):
        return "win32"
    if tag.startswith("macosx_"):
        return "darwin"
    return None


#: sys_platform -> (platform_system, os_name)
_SYSTEMS = {"linux": ("Linux", "posix"), "darwin": ("Darwin", "posix"), "win32": ("Windows", "nt")}
#: per sys_platform, how that OS spells the machines others spell otherwise
_MACHINES = {
    "win32": {"x86_64": "AMD64", "amd64": "AMD64", "aarch64": "ARM64", "arm64": "ARM64"},
    "darwin": {"aarch64": "arm64"},
    "linux": {"amd64": "x86_64", "arm64": "aarch64"},
}


def _target_os(named: Mapping[str, str], platforms: Sequence[str], source: str) -> str | None:
    """The ``sys_platform`` the profile (or the first ``--platform`` tag) names, if any."""
    system = named.get("platform_system")
    if "sys_platform" in named:
        known = _SYSTEMS.get(named["sys_platform"], ())
        for key, value in zip(("platform_system", "os_name"), known, strict=False):
            if key in named and named[key] != value:
                raise InputError(
                    f"{source or 'a profile'}: its environment says sys_platform "
                    f"{named['sys_platform']!r} but {key} {named[key]!r}; a profile describes "
                    f"one machine: set {key} to {value!r}, or leave it out (it follows "
                    "sys_platform)."
                )
        return named["sys_platform"]
    if system is not None:
        return next((k for k, (s, _n) in _SYSTEMS.items() if s == system), None)
    return _system_of_tag(platforms[0]) if platforms else None


def _one_machine(
    env: dict[str, str], named: Mapping[str, str], system: str | None, running: str
) -> None:
    """Make ``env`` (the values of the running OS ``running``, with ``named`` on top) one
    machine's (see the module docstring)."""
    if system is not None and system != running:
        env["sys_platform"] = system
        if system in _SYSTEMS:
            if "platform_system" not in named:
                env["platform_system"] = _SYSTEMS[system][0]
            if "os_name" not in named:
                env["os_name"] = _SYSTEMS[system][1]
        for key in ("platform_release", "platform_version"):
            if key not in named:
                env[key] = ""
    spelled = _MACHINES.get(env["sys_platform"], {})
    machine = env.get("platform_machine", "")
    env["platform_machine"] = spelled.get(machine.lower(), machine)


def _glibc_versions(profile: Profile, same_machine: bool) -> list[tuple[int, int]]:
    found = profile.properties.get("libc", {}).get("glibc", ())
    minors = []
    for text in found:
        major, _, minor = text.partition(".")
        if major == "2" and minor.isdigit():
            minors.append(int(minor))
    if minors:
        # glibc runs what older ones built: the newest listed, and every one down to 2.17
        return [(2, minor) for minor in range(max(max(minors), 17), 16, -1)]
    top = 17
    if same_machine:
        libc, version = _platform.libc_ver()
        if libc == "glibc" and version.count(".") >= 1:
            top = max(17, int(version.split(".")[1]))
    return [(2, minor) for minor in range(top, 16, -1)]


def platforms_for(profile: Profile, environment: Mapping[str, str]) -> list[str]:
    machine = environment["platform_machine"]
    system = environment.get("sys_platform", "linux")
    if system == "darwin":
        release = environment.get("platform_release", "")
        # Darwin 23.x is macOS 14; without a release, macOS 14
        major = int(release.split(".")[0]) - 9 if release.split(".")[0].isdigit() else 14
        arch = "arm64" if machine in ("arm64", "aarch64") else machine
        return list(packaging_tags.mac_platforms((max(major, 11), 0), arch))
    if system == "win32":
        return {"AMD64": ["win_amd64"], "ARM64": ["win_arm64"], "x86": ["win32"]}.get(
            machine, [f"win_{machine.lower()}"]
        )
    if system != "linux":
        raise UsageError(f"a {system} target needs its wheel platforms given: pass --platform TAG.")
    same = machine == _platform.machine()
    family = profile.properties.get("libc", {}).get("family", ("glibc",))
    if family and family[0] == "musl":
        return [f"musllinux_1_{m}_{machine}" for m in range(2, -1, -1)] + [f"linux_{machine}"]
    if same and "libc" not in profile.properties:
        return list(packaging_tags.platform_tags())
    glibc = _glibc_versions(profile, same)
    return [f"manylinux_{a}_{b}_{machine}" for a, b in glibc] + [
        *(["manylinux2014_" + machine] if (2, 17) in glibc else []),
        f"linux_{machine}",
    ]


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def driver_cuda(driver: str, system: str) -> tuple[int, int] | None:
    """The CUDA version an NVIDIA ``driver`` supports on ``system`` (``platform_system``), by
    that OS's minima: on Windows the torch backend table's (NVIDIA's minor-version
    compatibility minima: the CUDA major whose minimum the driver meets, as ``M.0``), on Linux
    the detection's driver table (None: too old, or no minima for that OS)."""
    if system == "Linux":
        from fitwheel.platform.nvidia import cuda_for_driver

        return cuda_for_driver(driver)
    from fitwheel.torchbackend.table import load_backend_table

    majors = [
        int(backend.version.split(".")[0])
        for backend in load_backend_table().backends
        if backend.vendor == "nvidia" and backend.version and system in backend.drivers
        if _version_key(driver) >= _version_key(backend.drivers[system])
    ]
    return (max(majors), 0) if majors else None


def with_driver_cuda(
    profile: Profile, system: str, supported: SupportedProperties, source: str
) -> SupportedProperties:
    """``supported`` with the ``nvidia`` CUDA bounds the profile's NVIDIA driver gives on
    ``system`` (unchanged when no NVIDIA device names its ``driver_version``)."""
    drivers = {
        str(d.extra["driver_version"]).strip()
        for d in profile.devices
        if d.vendor == "nvidia" and d.extra.get("driver_version")
    }
    if not drivers:
        return supported
    bad = sorted(d for d in drivers if not re.fullmatch(r"\d+(\.\d+)*", d))
    if bad:
        raise InputError(
            f"{source or 'a profile'}: NVIDIA driver_version {bad[0]!r} is not a version "
            "(expected digits and dots, as 'nvidia-smi' shows it: 581.57)."
        )
    from fitwheel.platform.nvidia import lower_bound_values, upper_bound_values

    cuda = driver_cuda(min(drivers, key=_version_key), system)
    nvidia = {
        k: v
        for k, v in supported.get("nvidia", {}).items()
        if k not in ("cuda_version_lower_bound", "cuda_version_upper_bound")
    }
    if cuda is not None:
        nvidia["cuda_version_lower_bound"] = lower_bound_values(cuda)
        nvidia["cuda_version_upper_bound"] = upper_bound_values(cuda)
    return {**supported, "nvidia": nvidia}


def tags_for(python_version: str, platforms: Sequence[str]) -> tuple[packaging_tags.Tag, ...]:
    major, minor = (int(p) for p in python_version.split(".")[:2])
    interp = f"cp{major}{minor}"
    tags = list(packaging_tags.cpython_tags((major, minor), abis=[interp], platforms=platforms))
    tags += packaging_tags.compatible_tags((major, minor), interp, platforms)
    return tuple(dict.fromkeys(tags))


def make_target(
    name: str,
    profile: Profile,
    target: Target,
    *,
    python_version: str | None,
    platforms: Sequence[str] = (),
    source: str = "",
) -> LockTarget:
    from packaging.markers import default_environment

    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    if python_version:
        if not re.fullmatch(r"3\.\d+(\.\d+)?", python_version):
            raise UsageError(f"--python-version {python_version!r}: expected 3.X or 3.X.Y.")
        parts = python_version.split(".")
        env["python_version"] = ".".join(parts[:2])
        env["python_full_version"] = python_version if len(parts) == 3 else f"{python_version}.0"
        env["implementation_version"] = env["python_full_version"]
    env.update(profile.environment)
    named = profile.environment.get("python_version")
    if named and not env["python_full_version"].startswith(f"{named}."):
        # the profile names its Python (it wins over --python-version): a full version to match
        env["python_full_version"] = f"{named}.0"
        env["implementation_version"] = env["python_full_version"]
    if platforms and "platform_machine" not in profile.environment:
        machine = _machine_of_tag(platforms[0])
        if machine is not None:
            env["platform_machine"] = machine
    system = _target_os(profile.environment, platforms, source)
    _one_machine(env, profile.environment, system, str(default_environment()["sys_platform"]))
    chosen = list(platforms) or platforms_for(profile, env)
    supported = with_driver_cuda(profile, env["platform_system"], target.supported, source)
    return LockTarget(
        name,
        profile,
        target.replace(environment=env, supported=supported),
        env["python_version"],
        env,
        tags_for(env["python_version"], chosen),
        source,
    )
