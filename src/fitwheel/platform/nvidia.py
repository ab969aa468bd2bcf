"""The ``nvidia`` namespace: CUDA driver version and GPU architectures, as the published
nvidia-variant-provider spells them.

Properties (most preferred first):

- ``cuda_version_lower_bound``: the CUDA version the driver supports, downwards: ``12.8`` ...
  ``12.0``, ``12``, ``11.20`` ... ``11.0``, ``11`` (a wheel needs at least that version).
- ``cuda_version_upper_bound``: every version above it, ``15.20`` ... ``12.9`` (a wheel needs
  less than that version).
- ``sm_arch``: per GPU of compute capability M.m, ``Mm_real`` for minor m..0 then ``M0_virtual``.
  The machine-wide list is the union over all visible GPUs, the most capable GPU first (the
  published provider reports the most capable GPU only; the union lets a wheel for any of the
  GPUs match, and each device keeps its own list for the multi-GPU policy).

How: the kernel driver version from ``/sys/module/nvidia/version`` or
``/proc/driver/nvidia/version``; when native code is allowed, NVML (``nvmlInit_v2``, the CUDA
driver version, each GPU's compute capability, ``nvmlShutdown``), bounded in time. Without NVML
(under a sysroot, or when it cannot load) the CUDA version comes from the bundled driver table
and each GPU's compute capability from the bundled PCI device id table. On WSL2 there are no
driver files; only NVML (``/usr/lib/wsl/lib``) can answer. In a container, GPUs the host has
but the container may not open (no ``/dev/nvidia[0-9]*``, or ``NVIDIA_VISIBLE_DEVICES`` of
``void``/``none``) do not count. ``CUDA_VISIBLE_DEVICES`` narrows the set: indices in PCI bus
order (CUDA's order with ``CUDA_DEVICE_ORDER=PCI_BUS_ID``), or ``GPU-`` UUID prefixes; as in
CUDA, the list ends at the first entry that names no GPU.

Capabilities (rules):

- ``mx_fp8``/``mx_fp4``: a visible Blackwell GPU (compute capability 10.x, 11.x or 12.x: the
  architectures with block-scaled MX tensor-core formats) and a driver for CUDA 12.8 or newer,
  the first CUDA with those formats.
- ``flex_attention``: a visible GPU of compute capability 8.0 or newer; FlexAttention compiles
  through Triton, whose NVIDIA backend targets Ampere and newer.
- ``peer_to_peer``: two or more visible GPUs joined by NVLink: NVML reports active NVLink links
  on at least two of them, or (without NVML) an NVSwitch (PCI class 0x0680) is on the bus.
  PCIe peer access is not claimed: whether it works depends on the platform's topology.
"""

from __future__ import annotations

import re

from fitwheel.data import load_table
from fitwheel.platform import pci
from fitwheel.platform.gpuenv import forced, in_container, is_wsl, parse_version
from fitwheel.platform.probe import Probe
from fitwheel.platform.profile import Device
from fitwheel.platform.result import ProviderResult

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from fitwheel.platform.native import nvml
    from fitwheel.platform.native.runner import TransportSource

NAMESPACE = "nvidia"
FORCE_CUDA = "NV_VARIANT_PROVIDER_FORCE_CUDA_DRIVER_VERSION"
FORCE_SM = "NV_VARIANT_PROVIDER_FORCE_SM_ARCH"
REPLAY_ENV = "FITWHEEL_NVML_REPLAY"

UMD_MAJORS = range(11, 16)
UMD_MINORS = range(21)
MIN_SM = (5, 0)

SYS_VERSION = "/sys/module/nvidia/version"
PROC_VERSION = "/proc/driver/nvidia/version"
PROC_GPUS = "/proc/driver/nvidia/gpus"
WSL_LIB_DIR = "/usr/lib/wsl/lib"

# Patterns are compiled on first use (``re`` caches them): most never run on a given machine.
_DRIVER_VERSION = r"^\d{2,4}\.\d{1,4}(?:\.\d{1,4})?$"
_PROC_NVRM = r"Kernel Module(?:\s+for\s+\S+)?\s+(\d{2,4}\.\d{1,4}(?:\.\d{1,4})?)\b"
_DEV_NODE = r"nvidia\d+"


# -- value lists --------------------------------------------------------------------------------


def lower_bound_values(cuda: tuple[int, int]) -> tuple[str, ...]:
    major, minor = cuda
    out: list[str] = []
    for m in range(major, min(UMD_MAJORS) - 1, -1):
        top = minor if m == major else max(UMD_MINORS)
        out += [f"{m}.{n}" for n in range(top, -1, -1)] + [str(m)]
    return tuple(out)


def upper_bound_values(cuda: tuple[int, int]) -> tuple[str, ...]:
    major, minor = cuda
    out: list[str] = []
    for m in range(max(UMD_MAJORS), major - 1, -1):
        if m > major:
            out += [f"{m}.{n}" for n in range(max(UMD_MINORS), -1, -1)] + [str(m)]
        else:
            out += [f"{m}.{n}" for n in range(max(UMD_MINORS), minor, -1)]
    return tuple(out)


def sm_arch_values(cc: tuple[int, int]) -> tuple[str, ...]:
    major, minor = cc
    return (*(f"{major}{m}_real" for m in range(minor, -1, -1)), f"{major}0_virtual")


def union_sm_arch(ccs: list[tuple[int, int]]) -> tuple[str, ...]:
    """The ``sm_arch`` lists of several GPUs, the most capable first, without repeats."""
    out: dict[str, None] = {}
    for cc in sorted(set(ccs), reverse=True):
        if cc >= MIN_SM:
            out.update(dict.fromkeys(sm_arch_values(cc)))
    return tuple(out)


# -- driver files and tables ------------------------------------------------------------------


def parse_proc_version(text: str) -> str | None:
    """The kernel module version from ``/proc/driver/nvidia/version``, in the open module format
    (``NVIDIA UNIX Open Kernel Module for x86_64  V  ...``) and the legacy one
    (``NVIDIA UNIX x86_64 Kernel Module  V  ...``)."""
    for line in text.splitlines():
        if not line.startswith("NVRM version:"):
            continue
        match = re.search(_PROC_NVRM, line)
        if match:
            return match.group(1)
        # other builds: the version is the second field of double-space separated fields
        fields = [f.strip() for f in line.split("  ") if f.strip()]
        if len(fields) > 1 and re.match(_DRIVER_VERSION, fields[1]):
            return fields[1]
    return None


def read_driver_version(probe: Probe) -> tuple[str, str] | None:
    """(kernel driver version, file it came from)."""
    text = probe.read_text(SYS_VERSION, 256)
    if text is not None and re.match(_DRIVER_VERSION, text.strip()):
        return text.strip(), SYS_VERSION
    text = probe.read_text(PROC_VERSION, 8192)
    if text is not None:
        version = parse_proc_version(text)
        if version:
            return version, PROC_VERSION
    return None


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


def cuda_for_driver(version: str) -> tuple[int, int] | None:
    """The newest CUDA version a Linux kernel driver supports, from the bundled table."""
    key = _version_key(version)
    for minimum, cuda in load_table("nvidia_cuda_drivers.json")["drivers"]:
        if key >= _version_key(minimum):
            major, minor = cuda.split(".")
            return int(major), int(minor)
    return None


def pci_table_entry(device_id: int) -> tuple[tuple[int, int], str] | None:
    entry = load_table("nvidia_pci_devices.json")["devices"].get(f"{device_id:04x}")
    if entry is None:
        return None
    major, minor = entry[0].split(".")
    return (int(major), int(minor)), str(entry[1])


def _proc_gpu_info(probe: Probe) -> dict[str, dict[str, str]]:
    """``/proc/driver/nvidia/gpus/<address>/information`` as address -> key -> value."""
    out = {}
    for entry in probe.listdir(PROC_GPUS)[:256]:
        address = pci.normalise_address(entry)
        text = probe.read_text(f"{PROC_GPUS}/{entry}/information", 16384)
        if address is None or text is None:
            continue
        info = {}
        for line in text.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                info[key.strip()] = value.strip()
        out[address] = info
    return out


# -- detection ----------------------------------------------------------------------------------


class _Gpu:
    """One NVIDIA GPU as detection pieced it together, before it becomes a profile Device."""

    __slots__ = (
        "address",
        "cc",
        "cc_source",
        "driver",
        "index",
        "name",
        "nvlinks",
        "pci_id",
        "uuid",
    )

    def __init__(
        self,
        index: int,
        address: str = "",
        pci_id: str = "",
        name: str = "",
        uuid: str = "",
        driver: str | None = None,
        cc: tuple[int, int] | None = None,
        cc_source: str = "",
        nvlinks: int | None = None,
    ) -> None:
        self.index = index
        self.address = address
        self.pci_id = pci_id
        self.name = name
        self.uuid = uuid
        self.driver = driver
        self.cc = cc
        self.cc_source = cc_source
        self.nvlinks = nvlinks


class _Found:
    """What the driver offers (its CUDA version and where that came from) and its GPUs."""

    __slots__ = ("cuda", "cuda_source", "driver_version", "gpus", "notes")

    def __init__(
        self,
        cuda: tuple[int, int],
        cuda_source: str,
        gpus: list[_Gpu],
        notes: list[str] | None = None,
        driver_version: str | None = None,
    ) -> None:
        self.cuda = cuda
        self.cuda_source = cuda_source
        self.gpus = gpus
        self.notes = [] if notes is None else notes
        self.driver_version = driver_version


def detect(probe: Probe, *, nvml_transport: TransportSource | None = None) -> ProviderResult:
    """The ``nvidia`` namespace of the machine ``probe`` looks at. ``nvml_transport`` replaces
    the real NVML (tests pass a recording)."""
    try:
        return _detect(probe, nvml_transport)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        return ProviderResult(
            NAMESPACE, "unknown", reason=f"unexpected {type(exc).__name__}: {exc}"
        )


def _detect(probe: Probe, transport: TransportSource | None) -> ProviderResult:
    force_cuda = forced(probe, FORCE_CUDA)
    force_sm = forced(probe, FORCE_SM)
    cuda_override = sm_override = None
    if force_cuda:
        cuda_override = parse_version(force_cuda[1])
        if cuda_override is None or not re.fullmatch(r"\d+(\.\d+){0,2}", force_cuda[1]):
            return _bad_override(*force_cuda, "a CUDA version such as 12.8")
    if force_sm:
        sm_override = parse_version(force_sm[1])
        if sm_override is None or not re.fullmatch(r"\d{1,2}\.\d", force_sm[1]):
            return _bad_override(*force_sm, "a compute capability such as 9.0")
    if force_cuda and force_sm:
        found: _Found | ProviderResult = _Found((0, 0), "", [])
    else:
        found = _find(probe, transport)
    if isinstance(found, ProviderResult) and not force_cuda:
        return found
    if isinstance(found, ProviderResult):
        found = _Found((0, 0), "", [], [f"detection: {found.reason}"])
    visible = probe.env.get("CUDA_VISIBLE_DEVICES")
    return _result(found, visible, force_cuda, cuda_override, force_sm, sm_override)


def _bad_override(name: str, value: str, expected: str) -> ProviderResult:
    return ProviderResult(
        NAMESPACE, "unknown", reason=f"{name}={value!r} is not {expected}", sources={"*": name}
    )


def _absent(reason: str, gpus: list[_Gpu] | None = None) -> ProviderResult:
    return ProviderResult(NAMESPACE, "absent", devices=_devices(gpus or []), reason=reason)


def _find(probe: Probe, transport: TransportSource | None) -> _Found | ProviderResult:
    visible = probe.env.get("NVIDIA_VISIBLE_DEVICES", "").strip().lower()
    if visible in ("void", "none"):
        return _absent(
            f"NVIDIA_VISIBLE_DEVICES={visible}: the container runtime gave this environment no GPU"
        )
    wsl = is_wsl(probe)
    functions = pci.scan(probe)
    pci_gpus = [f for f in functions if f.is_gpu and f.vendor == pci.VENDOR_NVIDIA]
    nvswitch = any(
        f.vendor == pci.VENDOR_NVIDIA and f.subclass == pci.CLASS_BRIDGE_OTHER for f in functions
    )
    driver = read_driver_version(probe)
    nodes = [n for n in probe.listdir("/dev") if re.fullmatch(_DEV_NODE, n)]
    info = _proc_gpu_info(probe)
    file_gpus = [_gpu_from_pci(i, f, info.get(f.address, {})) for i, f in enumerate(pci_gpus)]

    if wsl:
        if not probe.exists("/dev/dxg") or not (
            probe.exists(f"{WSL_LIB_DIR}/libnvidia-ml.so.1")
            or probe.exists(f"{WSL_LIB_DIR}/libcuda.so.1")
        ):
            return _absent(
                "WSL without GPU access: /dev/dxg or /usr/lib/wsl/lib/libcuda is missing"
            )
    elif not pci_gpus and driver is None and not nodes:
        return _absent("no NVIDIA GPU on the PCI bus and no NVIDIA driver")
    elif in_container(probe) and not nodes:
        return _absent(
            "in a container without NVIDIA device nodes (/dev/nvidia[0-9]*): the host's GPUs "
            "show in /proc and /sys but cannot be opened here; start the container with GPU "
            "access (--gpus)",
            file_gpus,
        )

    notes: list[str] = []
    if probe.allow_native:
        # imported here: ctypes and threads are needed only when NVML is asked
        from fitwheel.platform.native import nvml
        from fitwheel.platform.native.runner import choose_source, run_query

        paths = (nvml.WSL_PATH, nvml.SONAME) if wsl else (nvml.SONAME,)
        key, source = choose_source(
            probe, transport, REPLAY_ENV, lambda: nvml.CtypesNvml(paths), "nvml"
        )
        outcome = run_query(probe, key, source, lambda t: nvml.query(t, want_nvlink=True))
        if outcome.report is not None:
            result = _from_nvml(outcome.report, file_gpus, info, nvswitch)
            if isinstance(result, _Found) and driver is not None:
                result.driver_version = driver[0]
            return result
        if outcome.failure == "timeout":
            return ProviderResult(
                NAMESPACE, "unknown", reason=f"NVML: {outcome.detail}", sources={"*": "nvml"}
            )
        if outcome.code == nvml.NVML_ERROR_DRIVER_NOT_LOADED:
            return _absent(
                "the NVIDIA kernel driver is not loaded (NVML: driver not loaded)", file_gpus
            )
        why = nvml.describe(outcome.code) if outcome.failure == "error" else outcome.detail
        notes.append(f"NVML unusable ({why}); using the driver files and bundled tables")
    elif wsl:
        return ProviderResult(
            NAMESPACE,
            "unknown",
            reason="WSL2: the CUDA version and GPUs are known only through NVML "
            "(/usr/lib/wsl/lib), which is not loaded here (sysroot or native code disabled)",
        )

    if wsl:
        return ProviderResult(NAMESPACE, "unknown", reason=f"WSL2: {notes[-1]}")
    if not pci_gpus:
        return _absent("an NVIDIA driver is present but no NVIDIA GPU is on the PCI bus")
    usable = [g for g in file_gpus if g.driver == "nvidia"]
    if not usable:
        bound = sorted({g.driver or "no driver" for g in file_gpus})
        return _absent(
            f"NVIDIA GPU found but not bound to the nvidia kernel driver ({', '.join(bound)})",
            file_gpus,
        )
    if driver is None:
        return ProviderResult(
            NAMESPACE,
            "unknown",
            devices=_devices(usable),
            reason=f"no readable NVIDIA driver version in {SYS_VERSION} or {PROC_VERSION}",
        )
    cuda = cuda_for_driver(driver[0])
    if cuda is None:
        return _absent(f"NVIDIA driver {driver[0]} predates every CUDA version in the table")
    found = _Found(cuda, f"driver-table:{driver[1]}", usable, notes, driver[0])
    return _with_fabric(found, nvswitch)


def _with_fabric(found: _Found, nvswitch: bool) -> _Found:
    if nvswitch and len(found.gpus) > 1:
        for gpu in found.gpus:
            gpu.nvlinks = gpu.nvlinks or 1
    return found


def _gpu_from_pci(index: int, fn: pci.PciFunction, info: dict[str, str]) -> _Gpu:
    gpu = _Gpu(index, fn.address, fn.pci_id, info.get("Model", ""), info.get("GPU UUID", ""))
    gpu.driver = fn.driver
    entry = pci_table_entry(fn.device)
    if entry is not None:
        gpu.cc, table_name = entry
        gpu.cc_source = "pci-table"
        gpu.name = gpu.name or table_name
    return gpu


def _from_nvml(
    report: nvml.NvmlReport, file_gpus: list[_Gpu], info: dict[str, dict[str, str]], nvswitch: bool
) -> _Found | ProviderResult:
    if not report.devices:
        return _absent(
            "NVML sees no GPU: none is present or this environment may not open any"
            + (f" ({'; '.join(report.notes)})" if report.notes else "")
        )
    by_address = {g.address: g for g in file_gpus}
    gpus = []
    for dev in report.devices:
        address = pci.normalise_address(dev.bus_id) if dev.bus_id else None
        known = by_address.get(address or "")
        gpu = _Gpu(
            dev.index, address or "", name=dev.name, uuid=dev.uuid, nvlinks=dev.nvlinks_active
        )
        gpu.driver = known.driver if known else None
        if dev.pci_device_id is not None:
            gpu.pci_id = f"{dev.pci_device_id & 0xFFFF:04x}:{dev.pci_device_id >> 16:04x}"
        elif known:
            gpu.pci_id = known.pci_id
        if dev.compute_capability is not None:
            gpu.cc, gpu.cc_source = dev.compute_capability, "nvml"
        else:
            device_id = int(gpu.pci_id[5:], 16) if gpu.pci_id else None
            entry = pci_table_entry(device_id) if device_id is not None else None
            if entry is not None:
                gpu.cc, gpu.cc_source = entry[0], "pci-table"
                report.notes.append(f"GPU {dev.index}: compute capability from the PCI id table")
        if not gpu.name and known:
            gpu.name = known.name or info.get(gpu.address, {}).get("Model", "")
        gpus.append(gpu)
    return _with_fabric(_Found(report.cuda_version, "nvml", gpus, list(report.notes)), nvswitch)


def narrow_visible(gpus: list[Any], value: str) -> tuple[list[Any], str]:
    """The GPUs ``CUDA_VISIBLE_DEVICES`` leaves (in the order it names them), and a note."""
    kept: list[Any] = []
    for token in (t.strip() for t in value.split(",")):
        if re.fullmatch(r"\d+", token):
            chosen = [gpus[int(token)]] if int(token) < len(gpus) else []
        elif token.upper().startswith(("GPU-", "MIG-")):
            if token.upper().startswith("MIG-") or not all(g.uuid for g in gpus):
                return gpus, f"CUDA_VISIBLE_DEVICES={value!r} names UUIDs that cannot be matched"
            chosen = [g for g in gpus if g.uuid.lower().startswith(token.lower())]
        else:
            chosen = []
        if len(chosen) != 1:
            break  # CUDA stops at the first entry that names no single GPU
        if chosen[0] not in kept:
            kept.append(chosen[0])
    return kept, f"CUDA_VISIBLE_DEVICES={value!r}"


def _result(
    found: _Found,
    visible: str | None,
    force_cuda: tuple[str, str] | None,
    cuda_override: tuple[int, ...] | None,
    force_sm: tuple[str, str] | None,
    sm_override: tuple[int, ...] | None,
) -> ProviderResult:
    gpus, notes = found.gpus, list(found.notes)
    if visible is not None and gpus:
        gpus, note = narrow_visible(gpus, visible)
        notes.append(note)
        if not gpus:
            return _absent(f"CUDA_VISIBLE_DEVICES={visible!r} hides every GPU", found.gpus)
    sources: dict[str, str] = {}
    if force_cuda and cuda_override is not None:
        cuda = (cuda_override[0], cuda_override[1])
        sources["cuda_version_lower_bound"] = sources["cuda_version_upper_bound"] = (
            f"override:{force_cuda[0]}"
        )
    else:
        cuda = found.cuda
        sources["cuda_version_lower_bound"] = sources["cuda_version_upper_bound"] = (
            found.cuda_source
        )
        if not (min(UMD_MAJORS), 0) <= cuda <= (max(UMD_MAJORS), max(UMD_MINORS)):
            return ProviderResult(
                NAMESPACE,
                "absent" if cuda < (min(UMD_MAJORS), 0) else "unknown",
                devices=_devices(gpus),
                reason=f"CUDA {cuda[0]}.{cuda[1]} is outside the versions variant wheels describe "
                f"({min(UMD_MAJORS)}.0 to {max(UMD_MAJORS)}.{max(UMD_MINORS)})",
            )
    props: dict[str, tuple[str, ...]] = {
        "cuda_version_lower_bound": lower_bound_values(cuda),
        "cuda_version_upper_bound": upper_bound_values(cuda),
    }
    ccs = [g.cc for g in gpus if g.cc is not None]
    notes += [
        f"GPU {g.index} ({g.pci_id or 'unknown id'}): compute capability unknown"
        for g in gpus
        if g.cc is None
    ]
    if force_sm and sm_override is not None:
        ccs_for_caps = [(sm_override[0], sm_override[1])]
        props["sm_arch"] = sm_arch_values(ccs_for_caps[0])
        sources["sm_arch"] = f"override:{force_sm[0]}"
    else:
        ccs_for_caps = ccs
        sm = union_sm_arch(ccs)
        if sm:
            props["sm_arch"] = sm
            sources["sm_arch"] = "+".join(sorted({g.cc_source for g in gpus if g.cc}))
        elif gpus:
            notes.append("no GPU with a known compute capability of 5.0 or newer: no sm_arch")
    linked = [g for g in gpus if g.nvlinks]
    capabilities: dict[str, Any] = {
        "driver_version": found.driver_version,
        "cuda_version": f"{cuda[0]}.{cuda[1]}",
        "mx_fp8": any(c[0] in (10, 11, 12) for c in ccs_for_caps) and cuda >= (12, 8),
        "flex_attention": any(c >= (8, 0) for c in ccs_for_caps),
        "peer_to_peer": len(linked) >= 2,
        "interconnect": "nvlink" if len(linked) >= 2 else None,
    }
    capabilities["mx_fp4"] = capabilities["mx_fp8"]
    if notes:
        capabilities["notes"] = notes
    return ProviderResult(NAMESPACE, "ok", props, _devices(gpus), capabilities, sources, reason="")


def _devices(gpus: list[_Gpu]) -> list[Device]:
    out = []
    for gpu in gpus:
        extra: dict[str, Any] = {}
        props: dict[str, dict[str, tuple[str, ...]]] = {}
        if gpu.cc is not None:
            extra["compute_capability"] = f"{gpu.cc[0]}.{gpu.cc[1]}"
            if gpu.cc >= MIN_SM:
                props[NAMESPACE] = {"sm_arch": sm_arch_values(gpu.cc)}
        if gpu.address:
            extra["pci_address"] = gpu.address
        if gpu.uuid:
            extra["uuid"] = gpu.uuid
        if gpu.driver:
            extra["driver"] = gpu.driver
        out.append(Device(NAMESPACE, gpu.index, gpu.name, gpu.pci_id, props, extra))
    return out
