"""The ``intel`` namespace: GPU device IPs, as the published intel-variant-provider spells them.

Property: ``device_ip`` (``architecture.release.revision``, e.g. ``12.60.7`` for Data Center GPU
Max, ``12.55.8`` for Arc A770). Each GPU contributes its own IP and then the base IP whose code
also runs on it (Arc A380 ``12.56.5`` -> ``12.55.8``); discrete GPUs come before integrated
ones. IPs missing from the bundled table are left out, as the published provider does.

How: the PCI bus (vendor 0x8086, a GPU class, bound to ``i915`` or ``xe``) and the bundled PCI
device id -> IP table. Level Zero (``libze_loader.so.1``) is asked only for GPUs the table does
not know, and only where native code is allowed. ``ZE_AFFINITY_MASK`` (``0,1.0,2``) keeps the
root devices it names, counted in PCI bus order (Level Zero's order; with the FLAT device
hierarchy on multi-tile GPUs Level Zero counts tiles instead, which files cannot tell).

Capabilities (rules):

- ``flex_attention``: a visible Data Center GPU Max (12.60) or Arc / Flex discrete GPU (12.55,
  12.56, 12.57, 20.1, 20.2): the XPU devices PyTorch's Triton backend supports for it.
- ``mx_fp8``/``mx_fp4``: not claimed for any Intel GPU (no MX block-scaled matrix formats).
- ``peer_to_peer``: not claimed (Xe Link between Max GPUs is not visible in files).
"""

from __future__ import annotations

import re

from fitwheel.data import load_table
from fitwheel.platform import pci
from fitwheel.platform.gpuenv import forced
from fitwheel.platform.probe import Probe
from fitwheel.platform.profile import Device
from fitwheel.platform.result import ProviderResult

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from fitwheel.platform.native.runner import TransportSource

NAMESPACE = "intel"
FORCE_IP = "INTEL_VARIANT_PROVIDER_FORCE_DEVICE_IP"
REPLAY_ENV = "FITWHEEL_LEVEL_ZERO_REPLAY"
DRIVERS = ("i915", "xe")
FLEX_ATTENTION_IPS = ("12.55.", "12.56.", "12.57.", "12.60.", "20.1.", "20.2.")


def known_ips() -> dict[str, dict[str, Any]]:
    ips: dict[str, dict[str, Any]] = load_table("intel_gpus.json")["ips"]
    return ips


def ip_values(ip: str) -> tuple[str, ...]:
    """The IP and the base IP whose code runs on it."""
    compat = known_ips().get(ip, {}).get("compat")
    return (ip, compat) if compat else (ip,)


class _Gpu:
    """One Intel GPU found on the PCI bus, with its IP version once known."""

    __slots__ = (
        "address",
        "device_id",
        "driver",
        "index",
        "integrated",
        "ip",
        "ip_source",
        "name",
        "pci_id",
    )

    def __init__(
        self,
        index: int,
        address: str,
        pci_id: str,
        device_id: int,
        driver: str | None,
        ip: str | None = None,
        ip_source: str = "",
        integrated: bool = False,
        name: str = "",
    ) -> None:
        self.index = index
        self.address = address
        self.pci_id = pci_id
        self.device_id = device_id
        self.driver = driver
        self.ip = ip
        self.ip_source = ip_source
        self.integrated = integrated
        self.name = name


def detect(probe: Probe, *, ze_transport: TransportSource | None = None) -> ProviderResult:
    """The ``intel`` namespace of the machine ``probe`` looks at. ``ze_transport`` replaces the
    real Level Zero loader (tests pass a recording)."""
    try:
        return _detect(probe, ze_transport)
    except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
        reason = f"unexpected {type(exc).__name__}: {exc}"
        return ProviderResult(NAMESPACE, "unknown", reason=reason)


def _detect(probe: Probe, transport: TransportSource | None) -> ProviderResult:
    force = forced(probe, FORCE_IP)
    if force:
        if force[1] not in known_ips():
            return ProviderResult(
                NAMESPACE,
                "unknown",
                reason=f"{FORCE_IP}={force[1]!r} is not a known device IP (such as 12.60.7)",
            )
        values = ip_values(force[1])
        return ProviderResult(
            NAMESPACE,
            "ok",
            {"device_ip": values},
            capabilities=_capabilities(values, []),
            sources={"device_ip": f"override:{FORCE_IP}"},
        )
    found = pci.gpus(probe, pci.VENDOR_INTEL)
    if not found:
        return ProviderResult(NAMESPACE, "absent", reason="no Intel GPU on the PCI bus")
    table = load_table("intel_gpus.json")["devices"]
    gpus = []
    for index, fn in enumerate(found):
        gpu = _Gpu(index, fn.address, fn.pci_id, fn.device, fn.driver)
        entry = table.get(f"{fn.device:04x}")
        if entry is not None:
            gpu.ip, gpu.ip_source = entry[0], "pci-table"
            gpu.integrated, gpu.name = entry[1] == "integrated", entry[2]
        else:
            # the integrated GPU sits at device 2 of the root bus on every Intel platform
            gpu.integrated = fn.address.endswith(":00:02.0")
        gpus.append(gpu)
    usable = [g for g in gpus if g.driver in DRIVERS]
    if not usable:
        drivers = sorted({g.driver or "no driver" for g in gpus})
        return ProviderResult(
            NAMESPACE,
            "absent",
            devices=_devices(gpus),
            reason=f"Intel GPU found but not bound to i915 or xe ({', '.join(drivers)})",
        )
    notes: list[str] = []
    mask = probe.env.get("ZE_AFFINITY_MASK", "").strip()
    if mask:
        roots = {int(t.split(".")[0]) for t in mask.split(",") if re.fullmatch(r"\d+(\.\d+)*", t)}
        usable = [g for i, g in enumerate(usable) if i in roots]
        notes.append(f"ZE_AFFINITY_MASK={mask!r}")
        if not usable:
            return ProviderResult(
                NAMESPACE, "absent", reason=f"ZE_AFFINITY_MASK={mask!r} hides every GPU"
            )
    missing = [g for g in usable if g.ip is None]
    if missing:
        if probe.allow_native:
            _ask_level_zero(probe, transport, missing, notes)
        else:
            notes.append("Level Zero not loaded (sysroot or native code disabled)")
    for gpu in missing:
        if gpu.ip is None:
            notes.append(f"{gpu.pci_id} at {gpu.address}: device IP unknown")
    known = known_ips()
    for gpu in usable:
        if gpu.ip is not None and gpu.ip not in known:
            notes.append(f"{gpu.pci_id}: device IP {gpu.ip} is not a known device IP; left out")
    ordered = sorted(usable, key=lambda g: (g.integrated, g.index))
    values = tuple(
        dict.fromkeys(v for g in ordered if g.ip in known for v in ip_values(g.ip or ""))
    )
    if not values:
        return ProviderResult(
            NAMESPACE,
            "unknown",
            devices=_devices(ordered),
            capabilities={"notes": notes},
            reason="no Intel GPU with a known device IP: " + "; ".join(notes),
        )
    sources = {"device_ip": "+".join(sorted({g.ip_source for g in ordered if g.ip}))}
    return ProviderResult(
        NAMESPACE,
        "ok",
        {"device_ip": values},
        _devices(ordered),
        _capabilities(values, notes),
        sources,
    )


def _ask_level_zero(
    probe: Probe, transport: TransportSource | None, missing: list[_Gpu], notes: list[str]
) -> None:
    # imported here: ctypes and threads are needed only for GPUs the table does not know
    from fitwheel.platform.native import level_zero
    from fitwheel.platform.native.runner import choose_source, run_query

    key, source = choose_source(
        probe, transport, REPLAY_ENV, level_zero.CtypesLevelZero, "level_zero"
    )
    outcome = run_query(probe, key, source, level_zero.query)
    if outcome.report is None:
        notes.append(f"Level Zero: {outcome.failure}: {outcome.detail}")
        return
    notes.extend(outcome.report.notes)
    unused = [d for d in outcome.report.devices if d.vendor_id == pci.VENDOR_INTEL and d.ip_version]
    for gpu in missing:
        match = next((d for d in unused if d.device_id == gpu.device_id), None)
        if match is not None and match.ip_version is not None:
            unused.remove(match)
            gpu.ip, gpu.ip_source = level_zero.decode_ip(match.ip_version), "level_zero"
            gpu.name = gpu.name or match.name


def _capabilities(values: tuple[str, ...], notes: list[str]) -> dict[str, Any]:
    caps: dict[str, Any] = {
        "mx_fp8": False,
        "mx_fp4": False,
        "flex_attention": any(v.startswith(FLEX_ATTENTION_IPS) for v in values),
        "peer_to_peer": False,
        "interconnect": None,
    }
    if notes:
        caps["notes"] = notes
    return caps


def _devices(gpus: list[_Gpu]) -> list[Device]:
    out = []
    for g in gpus:
        extra: dict[str, Any] = {"integrated": g.integrated, "pci_address": g.address}
        if g.driver:
            extra["driver"] = g.driver
        props: dict[str, dict[str, tuple[str, ...]]] = {}
        if g.ip is not None:
            extra["device_ip"] = g.ip
            if g.ip in known_ips():
                props[NAMESPACE] = {"device_ip": ip_values(g.ip)}
        out.append(Device(NAMESPACE, g.index, g.name, g.pci_id, props, extra))
    return out
