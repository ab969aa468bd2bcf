"""The PCI bus as sysfs shows it: which functions are GPUs, of which vendor, bound to which driver.

GPUs are counted by PCI function and recognised by class, not by vendor id alone: a vendor's
NVSwitch bridges (class 0x0680) and HDMI audio functions (0x0403) are not GPUs. A GPU is base
class 0x03 (display: 0x0300 VGA on consumer cards, 0x0302 3D controller on datacenter NVIDIA
parts, 0x0380 other, e.g. Intel Data Center GPU Max) or 0x1200 (processing accelerator, e.g. AMD
Instinct MI300).
"""

from __future__ import annotations

import threading

from fitwheel._values import Frozen
from fitwheel.platform.probe import Probe

PCI_DEVICES = "/sys/bus/pci/devices"
VENDOR_NVIDIA = 0x10DE
VENDOR_AMD = 0x1002
VENDOR_INTEL = 0x8086

CLASS_PROCESSING_ACCELERATOR = 0x1200
CLASS_BRIDGE_OTHER = 0x0680  # NVSwitch
CLASS_AUDIO = 0x0403

#: sysfs can list thousands of functions on large hosts; a bound keeps a broken tree cheap
_MAX_FUNCTIONS = 4096


class PciFunction(Frozen):
    """One function of the PCI bus: its address, identity, class and bound driver."""

    __slots__ = ("address", "class_code", "device", "driver", "revision", "vendor")

    address: str  # domain:bus:device.function, e.g. 0000:18:00.0
    vendor: int
    device: int
    class_code: int  # 24 bits: base class, subclass, programming interface
    driver: str | None  # name of the bound kernel driver, None when unbound
    revision: int | None

    def __init__(
        self,
        address: str,
        vendor: int,
        device: int,
        class_code: int,
        driver: str | None,
        revision: int | None = None,
    ) -> None:
        object.__setattr__(self, "address", address)
        object.__setattr__(self, "vendor", vendor)
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "class_code", class_code)
        object.__setattr__(self, "driver", driver)
        object.__setattr__(self, "revision", revision)

    @property
    def pci_id(self) -> str:
        return f"{self.vendor:04x}:{self.device:04x}"

    @property
    def subclass(self) -> int:
        """Base class and subclass (16 bits), e.g. 0x0302."""
        return self.class_code >> 8

    @property
    def is_gpu(self) -> bool:
        return self.class_code >> 16 == 0x03 or self.subclass == CLASS_PROCESSING_ACCELERATOR


def parse_hex(text: str | None, bits: int) -> int | None:
    """A sysfs hex attribute such as ``0x10de``; None when missing, garbage or too wide."""
    if text is None:
        return None
    token = text.strip()
    if not token:
        return None
    try:
        value = int(token, 16)
    except ValueError:
        return None
    return value if 0 <= value < (1 << bits) else None


def read_function(probe: Probe, address: str) -> PciFunction | None:
    """One function's identity; None when its vendor, device or class cannot be read."""
    base = f"{PCI_DEVICES}/{address}"
    vendor = parse_hex(probe.read_text(f"{base}/vendor", 64), 16)
    device = parse_hex(probe.read_text(f"{base}/device", 64), 16)
    class_code = parse_hex(probe.read_text(f"{base}/class", 64), 24)
    if vendor is None or device is None or class_code is None:
        return None
    revision = parse_hex(probe.read_text(f"{base}/revision", 64), 8)
    return PciFunction(address, vendor, device, class_code, driver_of(probe, base), revision)


def driver_of(probe: Probe, device_dir: str) -> str | None:
    """The driver bound to a sysfs device: the last component of its ``driver`` link."""
    target = probe.readlink(f"{device_dir}/driver")
    if not target or not probe.exists(f"{device_dir}/driver"):
        return None  # unbound, or a dangling or looping link
    name = target.rstrip("/").rpartition("/")[2]
    return name or None


class _SharedScan:
    __slots__ = ("found", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.found: list[PciFunction] | None = None


# id(probe) -> the scan its callers share, while shared_scan(probe) is open
_shared: dict[int, _SharedScan] = {}


def shared_scan(probe: Probe) -> _SharedScope:
    """While open (``with shared_scan(probe):``), :func:`scan` reads ``probe``'s bus once for
    every caller.

    Detection runs the GPU providers side by side and each looks at the whole bus; on a large
    host the same hundreds of sysfs files would otherwise be read once per provider. The scan is
    shared only for the duration of the block, so a later detection sees the bus afresh."""
    return _SharedScope(id(probe))


class _SharedScope:
    # a plain context manager: ``contextlib`` would be imported for this alone
    __slots__ = ("key",)

    def __init__(self, key: int) -> None:
        self.key = key

    def __enter__(self) -> None:
        _shared[self.key] = _SharedScan()

    def __exit__(self, *exc_info: object) -> None:
        _shared.pop(self.key, None)


def scan(probe: Probe) -> list[PciFunction]:
    """Every readable PCI function, in bus address order."""
    shared = _shared.get(id(probe))
    if shared is None:
        return _scan(probe)
    with shared.lock:
        if shared.found is None:
            shared.found = _scan(probe)
        return list(shared.found)


def _scan(probe: Probe) -> list[PciFunction]:
    out = []
    for address in probe.listdir(PCI_DEVICES)[:_MAX_FUNCTIONS]:
        fn = read_function(probe, address)
        if fn is not None:
            out.append(fn)
    return out


def gpus(probe: Probe, vendor: int | None = None) -> list[PciFunction]:
    """GPU functions (see the module docstring), optionally of one vendor, in bus order."""
    return [fn for fn in scan(probe) if fn.is_gpu and (vendor is None or fn.vendor == vendor)]


def normalise_address(text: str) -> str | None:
    """``0000:18:00.0`` from the spellings drivers use (``00000000:18:00.0``, upper case)."""
    token = text.strip().lower()
    head, sep, fn = token.rpartition(".")
    parts = head.split(":")
    if not sep or len(parts) not in (2, 3):
        return None
    try:
        if len(parts) == 2:
            domain, bus, dev = 0, int(parts[0], 16), int(parts[1], 16)
        else:
            domain, bus, dev = int(parts[0], 16), int(parts[1], 16), int(parts[2], 16)
        func = int(fn, 16)
    except ValueError:
        return None
    if domain > 0xFFFF or bus > 0xFF or dev > 0x1F or func > 7:
        return None
    return f"{domain:04x}:{bus:02x}:{dev:02x}.{func}"
