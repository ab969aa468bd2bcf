"""The ``amd`` namespace: GPU ISAs and the ROCm version, as the published amd-variant-provider
spells them.

Properties (most preferred first):

- ``gfx_arch``: the ISA of every visible GPU (``gfx942``, ``gfx90a``, ``gfx1100``): discrete GPUs
  before integrated ones, more compute units first, then the newer ISA.
- ``rocm_version``: the installed ROCm release as ``M.m`` (one value: variant wheels name the
  ROCm release they were built against).

How: the KFD topology (``/sys/class/kfd/kfd/topology/nodes/*/properties``), whose
``gfx_target_version`` is decimal ``major*10000 + minor*100 + stepping`` with minor and stepping
written as one hex digit each in the ISA name (90010 -> gfx90a, 90402 -> gfx942, 110501 ->
gfx1151); CPU nodes have 0. An integrated GPU is a node that also has CPU cores or whose PCI id
is a known APU. The ROCm version comes from ``$ROCM_PATH/.info/version`` or
``/opt/rocm/.info/version`` (links followed inside the sysroot), else ``rocm_version.h``.
``ROCR_VISIBLE_DEVICES`` (indices among the GPU nodes, or ``GPU-`` unique ids) and then
``HIP_VISIBLE_DEVICES`` (or ``CUDA_VISIBLE_DEVICES``) narrow the set, as ROCm applies them. In a
container without ``/dev/kfd`` the host's GPUs cannot be used.

Capabilities (rules):

- ``mx_fp8``/``mx_fp4``: a visible gfx950 (CDNA 4, the first AMD ISA with MX block-scaled
  formats) and ROCm 7.0 or newer, the first release that supports it.
- ``flex_attention``: a visible GPU with an ISA Triton's AMD backend targets: CDNA 2 and newer
  (gfx90a, gfx94x, gfx950) or RDNA 3 and newer (gfx11xx, gfx12xx).
- ``peer_to_peer``: two or more visible GPUs joined by XGMI (KFD io_links of type 11 between
  visible GPU nodes).
"""

from __future__ import annotations

import re

from fitwheel.data import load_table
from fitwheel.platform import pci
from fitwheel.platform.gpuenv import forced, in_container, parse_version, split_list
from fitwheel.platform.probe import Probe
from fitwheel.platform.profile import Device
from fitwheel.platform.result import ProviderResult

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

NAMESPACE = "amd"
FORCE_GFX = ("AMD_VARIANT_PROVIDER_FORCE_GFX_ARCH", "AMD_VARIANT_PROVIDER_GFX_ARCH")
FORCE_ROCM = ("AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION", "AMD_VARIANT_PROVIDER_ROCM_VERSION")

KFD_NODES = "/sys/class/kfd/kfd/topology/nodes"
IOLINK_TYPE_XGMI = 11
# compiled on first use (``re`` caches it), not on every start
_GFX_NAME = r"gfx\d{1,2}[0-9a-f]{2}"
_MAX_NODES = 256


def gfx_name(target_version: int) -> str | None:
    """``gfx_target_version`` -> ISA name; None for CPU nodes (0) and impossible values."""
    major, minor, stepping = (
        target_version // 10000,
        target_version // 100 % 100,
        target_version % 100,
    )
    if not 6 <= major <= 99 or minor > 15 or stepping > 15:
        return None
    return f"gfx{major}{minor:x}{stepping:x}"


def parse_properties(text: str) -> dict[str, int]:
    """A KFD ``properties`` file: ``key value`` lines with integer values."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and re.fullmatch(r"\d{1,20}", parts[1]):
            out[parts[0]] = int(parts[1])
    return out


def read_rocm_version(probe: Probe) -> tuple[str, str] | None:
    """(``M.m``, file it came from)."""
    roots = [r for r in (probe.env.get("ROCM_PATH", "").rstrip("/"), "/opt/rocm") if r]
    for root in dict.fromkeys(roots):
        path = f"{root}/.info/version"
        text = probe.read_text(path, 256)
        version = parse_version(text, 2) if text else None
        if version is not None and text and re.match(r"\s*\d+\.\d+", text):
            return f"{version[0]}.{version[1]}", path
        path = f"{root}/include/rocm-core/rocm_version.h"
        header = probe.read_text(path, 65536) or ""
        major = re.search(r"#define\s+ROCM_VERSION_MAJOR\s+(\d+)", header)
        minor = re.search(r"#define\s+ROCM_VERSION_MINOR\s+(\d+)", header)
        if major and minor:
            return f"{int(major.group(1))}.{int(minor.group(1))}", path
    return None


class _Gpu:
    """One AMD GPU as the KFD topology describes it, before it becomes a profile Device."""

    __slots__ = (
        "address",
        "compute_units",
        "gfx",
        "index",
        "integrated",
        "name",
        "node",
        "pci_id",
        "target_version",
        "unique_id",
        "xgmi_peers",
    )

    def __init__(
        self,
        node: int,
        gfx: str,
        target_version: int,
        compute_units: int,
        integrated: bool,
        address: str = "",
        pci_id: str = "",
        name: str = "",
        unique_id: int = 0,
        xgmi_peers: set[int] | None = None,
        index: int = 0,
    ) -> None:
        self.node = node
        self.gfx = gfx
        self.target_version = target_version
        self.compute_units = compute_units
        self.integrated = integrated
        self.address = address
        self.pci_id = pci_id
        self.name = name
        self.unique_id = unique_id
        self.xgmi_peers: set[int] = set() if xgmi_peers is None else xgmi_peers
        self.index = index


def _address(props: dict[str, int]) -> str:
    location = props.get("location_id", 0)
    if not location:
        return ""
    domain, bus, dev, fn = (
        props.get("domain", 0),
        location >> 8,
        (location >> 3) & 0x1F,
        location & 7,
    )
    return f"{domain:04x}:{bus:02x}:{dev:02x}.{fn}"


def _kfd_gpus(probe: Probe, notes: list[str]) -> list[_Gpu]:
    nodes = [n for n in probe.listdir(KFD_NODES) if n.isdigit()]
    if not nodes:
        return []
    apus = load_table("amd_apu.json")["devices"]
    gpus = []
    for node in sorted(nodes, key=int)[:_MAX_NODES]:
        text = probe.read_text(f"{KFD_NODES}/{node}/properties", 65536)
        if text is None:
            continue
        props = parse_properties(text)
        target = props.get("gfx_target_version", 0)
        if target == 0 or props.get("simd_count", 0) == 0:
            continue  # a CPU node
        gfx = gfx_name(target)
        if gfx is None:
            notes.append(f"KFD node {node}: unreadable gfx_target_version {target}")
            continue
        simd_per_cu = props.get("simd_per_cu", 0)
        device_id = props.get("device_id", 0)
        gpu = _Gpu(
            int(node),
            gfx,
            target,
            props["simd_count"] // simd_per_cu if simd_per_cu else 0,
            props.get("cpu_cores_count", 0) > 0 or f"{device_id:04x}" in apus,
            _address(props),
            f"{props.get('vendor_id', pci.VENDOR_AMD):04x}:{device_id:04x}" if device_id else "",
            unique_id=props.get("unique_id", 0),
        )
        if gpu.address:
            gpu.name = (
                probe.read_text(f"{pci.PCI_DEVICES}/{gpu.address}/product_name", 256) or ""
            ).strip()
        for link in probe.listdir(f"{KFD_NODES}/{node}/io_links")[:_MAX_NODES]:
            ltext = probe.read_text(f"{KFD_NODES}/{node}/io_links/{link}/properties", 8192)
            lprops = parse_properties(ltext or "")
            if lprops.get("type") == IOLINK_TYPE_XGMI and "node_to" in lprops:
                gpu.xgmi_peers.add(lprops["node_to"])
        gpus.append(gpu)
    for index, gpu in enumerate(gpus):
        gpu.index = index
    return gpus


def _narrow(gpus: list[_Gpu], name: str, value: str, notes: list[str]) -> list[_Gpu]:
    """ROCm's visible-devices rule: indices (or ``GPU-`` unique ids) into the current list; the
    list ends at the first entry that names no GPU."""
    kept: list[_Gpu] = []
    for token in (t.strip() for t in value.split(",")):
        if re.fullmatch(r"\d+", token):
            chosen = [gpus[int(token)]] if int(token) < len(gpus) else []
        elif token.upper().startswith("GPU-"):
            wanted = token[4:].lower()
            chosen = [g for g in gpus if g.unique_id and f"{g.unique_id:016x}" == wanted]
        else:
            chosen = []
        if len(chosen) != 1:
            break
        if chosen[0] not in kept:
            kept.append(chosen[0])
    notes.append(f"{name}={value!r}")
    return kept


def detect(probe: Probe) -> ProviderResult:
    """The ``amd`` namespace of the machine ``probe`` looks at."""
    try:
        return _detect(probe)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        reason = f"unexpected {type(exc).__name__}: {exc}"
        return ProviderResult(NAMESPACE, "unknown", reason=reason)


def _detect(probe: Probe) -> ProviderResult:
    force_gfx = forced(probe, *FORCE_GFX)
    force_rocm = forced(probe, *FORCE_ROCM)
    if force_gfx:
        archs = split_list(force_gfx[1].lower())
        bad = [a for a in archs if not re.fullmatch(_GFX_NAME, a)]
        if bad or not archs:
            return ProviderResult(
                NAMESPACE,
                "unknown",
                reason=f"{force_gfx[0]}={force_gfx[1]!r}: not a list of gfx names such as gfx942",
            )
    if force_rocm and not re.fullmatch(r"\d+\.\d+(\.\d+)?", force_rocm[1]):
        return ProviderResult(
            NAMESPACE,
            "unknown",
            reason=f"{force_rocm[0]}={force_rocm[1]!r}: not a ROCm version such as 6.4 or 6.4.1",
        )
    notes: list[str] = []
    sources: dict[str, str] = {}
    gpus = _kfd_gpus(probe, notes)
    if not gpus and notes and not force_gfx:
        return ProviderResult(
            NAMESPACE, "unknown", reason="KFD topology unreadable: " + "; ".join(notes)
        )
    if not gpus:
        absent = _no_kfd(probe)
        if not force_gfx:
            return absent
        notes.append(f"detection: {absent.reason}")
    elif in_container(probe) and not probe.exists("/dev/kfd"):
        if not force_gfx:
            return ProviderResult(
                NAMESPACE,
                "absent",
                devices=_devices(gpus),
                reason="in a container without /dev/kfd: the host's GPUs show in /sys but cannot "
                "be opened here; pass /dev/kfd and /dev/dri to the container",
            )
    else:
        for name in ("ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"):
            value = probe.env.get(name)
            if name == "HIP_VISIBLE_DEVICES" and value is None:
                name, value = "CUDA_VISIBLE_DEVICES", probe.env.get("CUDA_VISIBLE_DEVICES")
            if value is not None:
                gpus = _narrow(gpus, name, value, notes)
        if not gpus and not force_gfx:
            return ProviderResult(NAMESPACE, "absent", reason=f"{notes[-1]} hides every GPU")
        if gpus:
            sources["gfx_arch"] = KFD_NODES

    ordered = sorted(
        gpus, key=lambda g: (g.integrated, -g.compute_units, -g.target_version, g.index)
    )
    props: dict[str, tuple[str, ...]] = {}
    if force_gfx:
        props["gfx_arch"] = tuple(dict.fromkeys(split_list(force_gfx[1].lower())))
        sources["gfx_arch"] = f"override:{force_gfx[0]}"
    else:
        props["gfx_arch"] = tuple(dict.fromkeys(g.gfx for g in ordered))
    rocm: tuple[int, ...] | None = None
    if force_rocm:
        rocm = parse_version(force_rocm[1])
        sources["rocm_version"] = f"override:{force_rocm[0]}"
    else:
        found = read_rocm_version(probe)
        if found is None:
            notes.append("no ROCm installation found (/opt/rocm/.info/version): no rocm_version")
        else:
            rocm = parse_version(found[0])
            sources["rocm_version"] = found[1]
    if rocm is not None:
        props["rocm_version"] = (f"{rocm[0]}.{rocm[1]}",)
    visible_nodes = {g.node for g in gpus}
    linked = [g for g in gpus if g.xgmi_peers & (visible_nodes - {g.node})]
    reported = props["gfx_arch"]
    capabilities: dict[str, Any] = {
        "rocm_version": props["rocm_version"][0] if "rocm_version" in props else None,
        "mx_fp8": any(a.startswith("gfx95") for a in reported)
        and rocm is not None
        and rocm >= (7, 0),
        "flex_attention": any(
            a in ("gfx90a", "gfx950") or a.startswith(("gfx94", "gfx11", "gfx12")) for a in reported
        ),
        "peer_to_peer": len(linked) >= 2,
        "interconnect": "xgmi" if len(linked) >= 2 else None,
    }
    capabilities["mx_fp4"] = capabilities["mx_fp8"]
    if notes:
        capabilities["notes"] = notes
    return ProviderResult(NAMESPACE, "ok", props, _devices(ordered), capabilities, sources)


def _no_kfd(probe: Probe) -> ProviderResult:
    amd = pci.gpus(probe, pci.VENDOR_AMD)
    bound = [f for f in amd if f.driver == "amdgpu"]
    if not amd:
        return ProviderResult(NAMESPACE, "absent", reason="no AMD GPU on the PCI bus")
    if not bound:
        drivers = sorted({f.driver or "no driver" for f in amd})
        return ProviderResult(
            NAMESPACE,
            "absent",
            reason=f"AMD GPU found but not bound to the amdgpu driver ({', '.join(drivers)})",
        )
    return ProviderResult(
        NAMESPACE,
        "unknown",
        devices=[
            Device(NAMESPACE, i, "", f.pci_id, {}, {"pci_address": f.address})
            for i, f in enumerate(bound)
        ],
        reason="AMD GPU bound to amdgpu but no KFD topology (/sys/class/kfd): the kernel lacks "
        "ROCm compute support, or this is WSL",
    )


def _devices(gpus: list[_Gpu]) -> list[Device]:
    out = []
    for g in gpus:
        extra: dict[str, Any] = {
            "gfx_target_version": g.target_version,
            "compute_units": g.compute_units,
            "integrated": g.integrated,
        }
        if g.address:
            extra["pci_address"] = g.address
        if g.xgmi_peers:
            extra["xgmi_peers"] = sorted(g.xgmi_peers)
        props = {NAMESPACE: {"gfx_arch": (g.gfx,)}}
        out.append(Device(NAMESPACE, g.index, g.name, g.pci_id, props, extra))
    return out
