"""Level Zero (``libze_loader.so.1``): the device IP version of each Intel GPU.

Used only for GPUs whose PCI device id is missing from the bundled table. The 32-bit IP version
(``ze_device_ip_version_ext_t``) packs revision (bits 0-5), release (bits 14-21) and
architecture (bits 22-31); it is spelled ``architecture.release.revision``.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fitwheel.platform.native.transport import (
    NativeError,
    Transport,
    load_first,
)

SONAME = "libze_loader.so.1"

ZE_RESULT_SUCCESS = 0
ZE_INIT_FLAG_GPU_ONLY = 1
ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES = 0x3
ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT = 0x1000F
_MAX_HANDLES = 64


def decode_ip(value: int) -> str:
    """``0x030dc008`` -> ``12.55.8``."""
    return f"{value >> 22}.{(value >> 14) & 0xFF}.{value & 0x3F}"


@dataclass
class ZeDevice:
    index: int
    vendor_id: int
    device_id: int
    name: str = ""
    ip_version: int | None = None


@dataclass
class ZeReport:
    devices: list[ZeDevice] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def query(transport: Transport) -> ZeReport:
    """Every GPU of every Level Zero driver, in enumeration order (the order ``ZE_AFFINITY_MASK``
    indexes). Raises :class:`NativeError` when Level Zero cannot start."""
    transport.call("zeInit", ZE_INIT_FLAG_GPU_ONLY)
    report = ZeReport()
    drivers = transport.call("zeDriverGet")
    if not isinstance(drivers, list):
        raise NativeError("zeDriverGet", None, f"bad answer {drivers!r}")
    index = 0
    for driver in drivers[:_MAX_HANDLES]:
        try:
            devices = transport.call("zeDeviceGet", driver)
        except NativeError as exc:
            report.notes.append(f"driver {driver}: zeDeviceGet: {exc}")
            continue
        for handle in devices[:_MAX_HANDLES] if isinstance(devices, list) else []:
            try:
                props = transport.call("zeDeviceGetProperties", handle)
            except NativeError as exc:
                report.notes.append(f"device {index}: {exc}")
                index += 1
                continue
            if isinstance(props, dict):
                ip = props.get("ipVersion")
                report.devices.append(
                    ZeDevice(
                        index,
                        int(props.get("vendorId", 0)),
                        int(props.get("deviceId", 0)),
                        str(props.get("name", "")),
                        ip if isinstance(ip, int) and ip > 0 else None,
                    )
                )
            index += 1
    return report


# -- the real library ------------------------------------------------------------------------


class _IpVersionExt(ctypes.Structure):
    _fields_ = [
        ("stype", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("ipVersion", ctypes.c_uint32),
    ]


class _DeviceProperties(ctypes.Structure):
    _fields_ = [
        ("stype", ctypes.c_uint32),
        ("pNext", ctypes.c_void_p),
        ("type", ctypes.c_uint32),
        ("vendorId", ctypes.c_uint32),
        ("deviceId", ctypes.c_uint32),
        ("flags", ctypes.c_uint32),
        ("subdeviceId", ctypes.c_uint32),
        ("coreClockRate", ctypes.c_uint32),
        ("maxMemAllocSize", ctypes.c_uint64),
        ("maxHardwareContexts", ctypes.c_uint32),
        ("maxCommandQueuePriority", ctypes.c_uint32),
        ("numThreadsPerEU", ctypes.c_uint32),
        ("physicalEUSimdWidth", ctypes.c_uint32),
        ("numEUsPerSubslice", ctypes.c_uint32),
        ("numSubslicesPerSlice", ctypes.c_uint32),
        ("numSlices", ctypes.c_uint32),
        ("timerResolution", ctypes.c_uint64),
        ("timestampValidBits", ctypes.c_uint32),
        ("kernelTimestampValidBits", ctypes.c_uint32),
        ("uuid", ctypes.c_uint8 * 16),
        ("name", ctypes.c_char * 256),
        ("_reserved", ctypes.c_uint8 * 256),  # room for fields of newer struct versions
    ]


class CtypesLevelZero:
    def __init__(self, paths: Sequence[str] = (SONAME,)) -> None:
        self._lib, path = load_first(paths)
        self.key = f"level_zero:{path}"

    def has(self, function: str) -> bool:
        return hasattr(self._lib, function)

    def _check(self, function: str, *args: Any) -> None:
        try:
            fn: Callable[..., int] = getattr(self._lib, function)
        except AttributeError:
            raise NativeError(function, None, "symbol missing") from None
        fn.restype = ctypes.c_int  # type: ignore[attr-defined]
        rc = fn(*args)
        if rc != ZE_RESULT_SUCCESS:
            raise NativeError(function, rc & 0xFFFFFFFF, f"result 0x{rc & 0xFFFFFFFF:08x}")

    def _handles(self, function: str, *prefix: Any) -> list[int]:
        count = ctypes.c_uint32(0)
        self._check(function, *prefix, ctypes.byref(count), None)
        n = min(count.value, _MAX_HANDLES)
        array = (ctypes.c_void_p * max(n, 1))()
        count = ctypes.c_uint32(n)
        self._check(function, *prefix, ctypes.byref(count), array)
        return [int(array[i] or 0) for i in range(min(count.value, n))]

    def call(self, function: str, *args: Any) -> Any:
        if function == "zeInit":
            self._check(function, ctypes.c_uint32(int(args[0])))
            return None
        if function == "zeDriverGet":
            return self._handles(function)
        if function == "zeDeviceGet":
            return self._handles(function, ctypes.c_void_p(int(args[0])))
        if function == "zeDeviceGetProperties":
            ext = _IpVersionExt(ZE_STRUCTURE_TYPE_DEVICE_IP_VERSION_EXT, None, 0)
            props = _DeviceProperties()
            props.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES
            props.pNext = ctypes.cast(ctypes.pointer(ext), ctypes.c_void_p)
            self._check(function, ctypes.c_void_p(int(args[0])), ctypes.byref(props))
            return {
                "vendorId": props.vendorId,
                "deviceId": props.deviceId,
                "name": props.name.decode("utf-8", "replace"),
                "ipVersion": ext.ipVersion,
            }
        raise NativeError(function, None, "not bound")

    def close(self) -> None:
        pass
