"""The C library: glibc or musl, and its version.

Namespace ``libc``:

- ``family``: ``glibc`` or ``musl`` (one value).
- ``glibc``: on glibc, every ``2.N`` from the detected version down to ``2.0``, most preferred
  first, so a build that needs glibc >= 2.28 declares ``libc :: glibc :: 2.28`` (the same meaning
  as a manylinux tag).
- ``musl``: on musl, every ``1.N`` from the detected version down to ``1.0`` (musllinux style).

On this machine the version comes from ``os.confstr("CS_GNU_LIBC_VERSION")``. On musl, and under
a sysroot, it comes from files: the version string inside the musl loader or glibc's
``libc.so.6`` (or the old ``libc-2.N.so`` file name). Only on this machine, when the musl loader
holds no readable version, is the loader run once (it prints ``Version 1.2.4``).
"""

from __future__ import annotations

import os
import re

from fitwheel.platform.environment import machine
from fitwheel.platform.probe import Probe
from fitwheel.platform.result import ProviderResult

NAMESPACE = "libc"

_GLIBC_DIRS = (
    "/lib/{triple}",
    "/usr/lib/{triple}",
    "/lib64",
    "/usr/lib64",
    "/lib",
    "/usr/lib",
)
_TRIPLES = {
    "x86_64": "x86_64-linux-gnu",
    "aarch64": "aarch64-linux-gnu",
    "i686": "i386-linux-gnu",
    "armv7l": "arm-linux-gnueabihf",
    "ppc64le": "powerpc64le-linux-gnu",
    "s390x": "s390x-linux-gnu",
    "riscv64": "riscv64-linux-gnu",
}
# Patterns are compiled on first use (``re`` caches them): most never run on a given machine.
_GLIBC_RELEASE = rb"release version (\d+)\.(\d+)"
_GLIBC_FILENAME = r"libc-(\d+)\.(\d+)(?:\.\d+)?\.so$"
_MUSL_VERSION = rb"\x00(1\.\d+\.\d+)\x00"
_MUSL_STDERR = r"Version (\d+)\.(\d+)"
_LIBC_READ_LIMIT = 16 << 20


def _values(major: int, minor: int) -> tuple[str, ...]:
    return tuple(f"{major}.{m}" for m in range(minor, -1, -1))


def _glibc(major: int, minor: int, source: str) -> ProviderResult:
    return ProviderResult(
        NAMESPACE,
        "ok",
        properties={"family": ("glibc",), "glibc": _values(major, minor)},
        capabilities={"family": "glibc", "version": f"{major}.{minor}"},
        sources={"*": source},
    )


def _musl(major: int, minor: int, full: str, source: str) -> ProviderResult:
    return ProviderResult(
        NAMESPACE,
        "ok",
        properties={"family": ("musl",), "musl": _values(major, minor)},
        capabilities={"family": "musl", "version": full},
        sources={"*": source},
    )


def _musl_loaders(probe: Probe) -> list[str]:
    return [f"/lib/{name}" for name in probe.listdir("/lib") if name.startswith("ld-musl-")]


def _musl_from_files(probe: Probe, loaders: list[str]) -> ProviderResult | None:
    for path in loaders:
        data = probe.read_bytes(path, _LIBC_READ_LIMIT)
        match = re.search(_MUSL_VERSION, data or b"")
        if match:
            full = match.group(1).decode()
            major, minor = (int(p) for p in full.split(".")[:2])
            return _musl(major, minor, full, path)
    return None


def _musl_from_loader(path: str) -> ProviderResult | None:
    from fitwheel import proc

    try:
        done = proc.run([path], timeout=2, limit=64 << 10)
    except OSError:
        return None
    if done.timed_out:
        return None
    stderr = done.text(stream="stderr")
    match = re.search(_MUSL_STDERR, stderr)
    if not match:
        return None
    full = stderr[match.start(1) :].split()[0]
    return _musl(int(match.group(1)), int(match.group(2)), full, f"{path} (run)")


def _glibc_from_files(probe: Probe, arch: str) -> ProviderResult | None:
    triple = _TRIPLES.get(arch, "")
    for pattern in _GLIBC_DIRS:
        if "{triple}" in pattern and not triple:
            continue
        directory = pattern.format(triple=triple)
        path = f"{directory}/libc.so.6"
        if not probe.exists(path):
            continue
        target = probe.readlink(path)
        if target:
            match = re.search(_GLIBC_FILENAME, target)
            if match:
                return _glibc(int(match.group(1)), int(match.group(2)), f"{path} -> {target}")
        found = re.search(_GLIBC_RELEASE, probe.read_bytes(path, _LIBC_READ_LIMIT) or b"")
        if found:
            return _glibc(int(found.group(1)), int(found.group(2)), path)
    return None


def _host_glibc() -> tuple[int, int] | None:
    try:
        text = os.confstr("CS_GNU_LIBC_VERSION")
    except (AttributeError, ValueError, OSError):
        return None
    if not text:
        return None
    name, _, version = text.partition(" ")
    parts = version.split(".")
    if name != "glibc" or len(parts) < 2 or not (parts[0].isdigit() and parts[1].isdigit()):
        return None
    return int(parts[0]), int(parts[1])


def detect(probe: Probe) -> ProviderResult:
    if probe.is_host:
        import sys

        if not sys.platform.startswith("linux"):
            return ProviderResult(
                NAMESPACE, "absent", reason=f"no Linux C library on {sys.platform}"
            )
        found = _host_glibc()
        if found is not None:
            return _glibc(*found, "os.confstr(CS_GNU_LIBC_VERSION)")
        loaders = _musl_loaders(probe)
        result = _musl_from_files(probe, loaders)
        if result is None and loaders and probe.allow_native:
            result = _musl_from_loader(loaders[0])
        if result is not None:
            return result
        return ProviderResult(
            NAMESPACE, "unknown", reason="neither glibc (confstr) nor a musl loader was found"
        )
    loaders = _musl_loaders(probe)
    if loaders:
        result = _musl_from_files(probe, loaders)
        if result is not None:
            return result
        return ProviderResult(
            NAMESPACE,
            "ok",
            properties={"family": ("musl",)},
            capabilities={"family": "musl"},
            sources={"*": loaders[0]},
            reason=f"{loaders[0]} holds no readable musl version",
        )
    result = _glibc_from_files(probe, machine(probe))
    if result is not None:
        return result
    return ProviderResult(
        NAMESPACE, "absent", reason="no libc.so.6 or musl loader found under the sysroot"
    )
