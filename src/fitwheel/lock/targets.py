"""Lock targets: a profile plus the Python version and platform a lock resolves it for.

A target's marker values are the running interpreter's, with the Python version given
(``--python-version``), the profile's ``environment`` on top (it describes the machine: a
Graviton profile says ``platform_machine = aarch64``), and the machine of the first
``--platform`` tag when the profile names none. Its wheel tags are CPython's for that version,
on the ``--platform`` tags or, without them, on the platforms the profile implies: its machine,
its C library (``libc :: family`` / ``libc :: glibc`` from detection; glibc 2.17 to the running
machine's otherwise) as manylinux / musllinux tags, then ``linux_<machine>``; for a macOS
target (``sys_platform = darwin``) the macOS tags of its release (11 and later), for Windows
``win_amd64`` / ``win_arm64``. A profile's ``environment`` may name its ``python_version``, so
targets can differ in Python version too.
"""

from __future__ import annotations

import platform as _platform
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging import tags as packaging_tags

from fitwheel.errors import UsageError
from fitwheel.platform.profile import Device, Profile
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
    for arch in ("x86_64", "aarch64", "i686", "ppc64le", "s390x", "armv7l", "riscv64"):
        if tag.endswith("_" + arch):
            return arch
    if tag.startswith("win_amd64"):
        return "AMD64"
    return None


def _glibc_versions(profile: Profile, same_machine: bool) -> list[tuple[int, int]]:
    found = profile.properties.get("libc", {}).get("glibc", ())
    versions = []
    for text in found:
        major, _, minor = text.partition(".")
        if major.isdigit() and minor.isdigit():
            versions.append((int(major), int(minor)))
    if versions:
        return sorted(v for v in versions if v >= (2, 17))[::-1] or [(2, 17)]
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
    chosen = list(platforms) or platforms_for(profile, env)
    return LockTarget(
        name,
        profile,
        target.replace(environment=env),
        env["python_version"],
        env,
        tags_for(env["python_version"], chosen),
        source,
    )
