"""The target's CPU architecture and PEP 508 marker values.

On this machine the marker values come from the running interpreter (as ``packaging`` computes
them, without importing ``platform``). Under a sysroot no interpreter of the target runs, so the
values come from files: ``platform_machine`` from the userland's dynamic loader (which is what an
emulated process, QEMU user mode, really runs), else ``/proc/sys/kernel/arch``, else the shape of
``/proc/cpuinfo``; ``platform_release`` and ``platform_version`` from ``/proc/sys/kernel``.
Python-specific markers are left out there: which interpreter the target will use is not known.
"""

from __future__ import annotations

import os
import sys

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.platform.probe import Probe

#: dynamic loader name -> machine, for telling a sysroot's userland architecture.
_LOADERS = (
    ("/lib64/ld-linux-x86-64.so.2", "x86_64"),
    ("/lib/ld-linux-x86-64.so.2", "x86_64"),
    ("/lib/ld-linux-aarch64.so.1", "aarch64"),
    ("/lib64/ld-linux-aarch64.so.1", "aarch64"),
    ("/lib/ld-linux-aarch64_be.so.1", "aarch64_be"),
    ("/lib/ld-musl-x86_64.so.1", "x86_64"),
    ("/lib/ld-musl-aarch64.so.1", "aarch64"),
    ("/lib/ld-linux-armhf.so.3", "armv7l"),
    ("/lib/ld-linux.so.2", "i686"),
    ("/lib64/ld64.so.2", "ppc64le"),
    ("/lib/ld-linux-riscv64-lp64d.so.1", "riscv64"),
    ("/lib/ld64.so.1", "s390x"),
)

#: spellings of the same architecture on other systems.
_MACHINE_ALIASES = {"amd64": "x86_64", "x64": "x86_64", "arm64": "aarch64"}

CPUINFO_LIMIT = 64 * 1024


def normalize_machine(machine: str) -> str:
    return _MACHINE_ALIASES.get(machine.lower(), machine)


def read_cpuinfo(probe: Probe) -> str | None:
    """The start of ``/proc/cpuinfo``: enough for the first processor block, without making the
    kernel render every core of a large machine."""
    return probe.read_text("/proc/cpuinfo", CPUINFO_LIMIT)


def first_block(cpuinfo: str) -> dict[str, str]:
    """``key: value`` lines of the first processor block (x86 and most others) merged with the
    trailing machine-wide lines (AArch64 kernels print ``Features`` per core; some print
    ``Hardware`` at the end)."""
    fields: dict[str, str] = {}
    started = False
    for line in cpuinfo.splitlines():
        if not line.strip():
            if started:
                break
            continue
        key, sep, value = line.partition(":")
        if not sep:
            continue
        started = True
        fields.setdefault(key.strip(), value.strip())
    return fields


def machine(probe: Probe) -> str:
    """The target's ``platform_machine`` (normalised: ``x86_64``, ``aarch64``, ...), or ``""``."""
    if probe.is_host:
        return normalize_machine(_host_machine())
    for path, name in _LOADERS:
        if probe.exists(path):
            return name
    arch = (probe.read_text("/proc/sys/kernel/arch", 256) or "").strip()
    if arch:
        return normalize_machine(arch)
    return _machine_from_cpuinfo(read_cpuinfo(probe) or "")


def _host_machine() -> str:
    uname = getattr(os, "uname", None)
    if uname is not None:
        return str(uname().machine)
    import platform  # Windows only: no os.uname

    return platform.machine()


def _machine_from_cpuinfo(text: str) -> str:
    fields = first_block(text)
    if "flags" in fields and "vendor_id" in fields:
        return "x86_64" if " lm" in f" {fields['flags']} " else "i686"
    if "CPU implementer" in fields or "Features" in fields:
        arch = fields.get("CPU architecture", "8")
        return (
            "aarch64"
            if arch in ("8", "AArch64") or not arch.isdigit() or int(arch) >= 8
            else "armv7l"
        )
    return ""


def host_environment() -> dict[str, str]:
    """PEP 508 marker values of the running interpreter."""
    impl = sys.implementation
    info = impl.version
    impl_version = f"{info.major}.{info.minor}.{info.micro}"
    if info.releaselevel != "final":
        impl_version += info.releaselevel[0] + str(info.serial)
    full = sys.version.split()[0]
    if sys.implementation.name == "cpython" and full.endswith("+"):
        full += "local"
    uname = getattr(os, "uname", None)
    if uname is not None:
        u = uname()
        system, release, version, mach = u.sysname, u.release, u.version, u.machine
    else:
        import platform

        system, release, version, mach = (
            platform.system(),
            platform.release(),
            platform.version(),
            platform.machine(),
        )
    return {
        "implementation_name": impl.name,
        "implementation_version": impl_version,
        "os_name": os.name,
        "platform_machine": mach,
        "platform_python_implementation": _python_implementation(impl.name),
        "platform_release": release,
        "platform_system": system,
        "platform_version": version,
        "python_full_version": full,
        "python_version": f"{sys.version_info[0]}.{sys.version_info[1]}",
        "sys_platform": sys.platform,
    }


def _python_implementation(name: str) -> str:
    return {"cpython": "CPython", "pypy": "PyPy", "ironpython": "IronPython"}.get(
        name, name.capitalize()
    )


def sysroot_environment(probe: Probe, machine_name: str | None = None) -> dict[str, str]:
    """Marker values that the files of a (Linux) sysroot determine."""
    env = {"os_name": "posix", "platform_system": "Linux", "sys_platform": "linux"}
    mach = machine(probe) if machine_name is None else machine_name
    if mach:
        env["platform_machine"] = mach
    release = (probe.read_text("/proc/sys/kernel/osrelease", 4096) or "").strip()
    if release:
        env["platform_release"] = release
    version = (probe.read_text("/proc/sys/kernel/version", 4096) or "").strip()
    if version:
        env["platform_version"] = version
    return env


def target_environment(probe: Probe, machine_name: str | None = None) -> dict[str, str]:
    return host_environment() if probe.is_host else sysroot_environment(probe, machine_name)
