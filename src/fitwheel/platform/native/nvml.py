"""NVML (``libnvidia-ml.so.1``): the CUDA driver version and each GPU's compute capability.

NVML is used rather than libcuda because it needs no ``cuInit`` (which can take seconds and
creates a context) and ignores ``CUDA_VISIBLE_DEVICES``, so the answer is machine-wide.
"""

from __future__ import annotations

import contextlib
import ctypes
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fitwheel.platform.native.transport import (
    NativeError,
    Transport,
    load_first,
)

SONAME = "libnvidia-ml.so.1"
WSL_PATH = "/usr/lib/wsl/lib/libnvidia-ml.so.1"

NVML_SUCCESS = 0
NVML_ERROR_INVALID_ARGUMENT = 2
NVML_ERROR_NOT_SUPPORTED = 3
NVML_ERROR_NO_PERMISSION = 4
NVML_ERROR_DRIVER_NOT_LOADED = 9
NVML_ERROR_LIBRARY_NOT_FOUND = 12
NVML_ERROR_FUNCTION_NOT_FOUND = 13
NVML_ERROR_LIB_RM_VERSION_MISMATCH = 18

ERROR_NAMES = {
    1: "NVML not initialised",
    2: "invalid argument",
    3: "not supported",
    4: "no permission",
    6: "not found",
    7: "insufficient size",
    9: "driver not loaded",
    10: "timeout",
    12: "library not found",
    13: "function not found",
    15: "GPU is lost",
    17: "operating system call failed",
    18: "driver/library version mismatch",
    999: "unknown error",
}

#: NVLink links per GPU that NVML may report (NVML_NVLINK_MAX_LINKS)
MAX_NVLINKS = 18


def describe(code: int | None) -> str:
    if code is None:
        return "no answer"
    return f"{ERROR_NAMES.get(code, 'error')} ({code})"


@dataclass
class NvmlDevice:
    index: int
    compute_capability: tuple[int, int] | None = None
    capability_error: int | None = None
    uuid: str = ""
    name: str = ""
    bus_id: str = ""
    pci_device_id: int | None = None  # (device << 16) | vendor, as NVML packs it
    nvlinks_active: int | None = None  # None: unknown


@dataclass
class NvmlReport:
    cuda_version: tuple[int, int]
    devices: list[NvmlDevice] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def decode_cuda_version(value: int) -> tuple[int, int]:
    """NVML's integer CUDA version: 12080 -> (12, 8)."""
    return value // 1000, (value % 1000) // 10


def _first_present(transport: Transport, names: Sequence[str]) -> str:
    for name in names:
        if transport.has(name):
            return name
    raise NativeError(names[-1], NVML_ERROR_FUNCTION_NOT_FOUND, "symbol missing")


def _versioned(transport: Transport, names: Sequence[str], *args: Any) -> Any:
    """Call the newest present version of a function, falling back to the next one when the
    library lacks it or reports it missing."""
    last: NativeError | None = None
    for name in names:
        if not transport.has(name):
            continue
        try:
            return transport.call(name, *args)
        except NativeError as exc:
            if exc.code not in (NVML_ERROR_FUNCTION_NOT_FOUND, None):
                raise
            last = exc
    raise last or NativeError(names[-1], NVML_ERROR_FUNCTION_NOT_FOUND, "symbol missing")


def query(transport: Transport, want_nvlink: bool = True) -> NvmlReport:
    """Init, read the CUDA version and every device, shut down. Raises :class:`NativeError`
    when NVML cannot start or cannot say the CUDA version or device count."""
    transport.call(_first_present(transport, ("nvmlInit_v2", "nvmlInit")))
    try:
        raw = _versioned(
            transport, ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion")
        )
        if not isinstance(raw, int) or raw <= 0:
            raise NativeError("nvmlSystemGetCudaDriverVersion", None, f"bad answer {raw!r}")
        report = NvmlReport(decode_cuda_version(raw))
        count = _versioned(transport, ("nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"))
        if not isinstance(count, int) or count < 0:
            raise NativeError("nvmlDeviceGetCount", None, f"bad answer {count!r}")
        for index in range(min(count, 64)):
            device = _device(transport, index, report.notes, want_nvlink)
            if device is not None:
                report.devices.append(device)
    finally:
        # a failed shutdown leaves nothing to undo; the answers already read stay valid
        with contextlib.suppress(NativeError):
            transport.call("nvmlShutdown")
    return report


def _device(
    transport: Transport, index: int, notes: list[str], want_nvlink: bool
) -> NvmlDevice | None:
    try:
        handle = _versioned(
            transport, ("nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"), index
        )
    except NativeError as exc:
        notes.append(f"GPU {index}: no handle: {describe(exc.code)}")
        return None
    dev = NvmlDevice(index)
    try:
        cc = transport.call("nvmlDeviceGetCudaComputeCapability", handle)
        if (
            isinstance(cc, list)
            and len(cc) == 2
            and all(isinstance(x, int) and 0 <= x < 100 for x in cc)
        ):
            dev.compute_capability = (cc[0], cc[1])
        else:
            notes.append(f"GPU {index}: unreadable compute capability {cc!r}")
    except NativeError as exc:
        dev.capability_error = exc.code
        notes.append(f"GPU {index}: compute capability: {describe(exc.code)}")
    dev.uuid = _optional_str(transport, "nvmlDeviceGetUUID", handle)
    dev.name = _optional_str(transport, "nvmlDeviceGetName", handle)
    if transport.has("nvmlDeviceGetPciInfo_v3"):
        try:
            pci = transport.call("nvmlDeviceGetPciInfo_v3", handle)
            if isinstance(pci, dict):
                dev.bus_id = str(pci.get("busId", ""))
                pid = pci.get("pciDeviceId")
                dev.pci_device_id = pid if isinstance(pid, int) else None
        except NativeError:
            pass
    if want_nvlink and transport.has("nvmlDeviceGetNvLinkState"):
        dev.nvlinks_active = _nvlinks(transport, handle)
    return dev


def _optional_str(transport: Transport, function: str, handle: Any) -> str:
    if not transport.has(function):
        return ""
    try:
        value = transport.call(function, handle)
    except NativeError:
        return ""
    return value if isinstance(value, str) else ""


def _nvlinks(transport: Transport, handle: Any) -> int | None:
    active = 0
    for link in range(MAX_NVLINKS):
        try:
            state = transport.call("nvmlDeviceGetNvLinkState", handle, link)
        except NativeError as exc:
            if exc.code in (NVML_ERROR_NOT_SUPPORTED, NVML_ERROR_INVALID_ARGUMENT):
                break  # no (further) links on this GPU
            return None if link == 0 else active
        if state == 1:
            active += 1
    return active


# -- the real library ------------------------------------------------------------------------


class _PciInfo(ctypes.Structure):
    _fields_ = [
        ("busIdLegacy", ctypes.c_char * 16),
        ("domain", ctypes.c_uint),
        ("bus", ctypes.c_uint),
        ("device", ctypes.c_uint),
        ("pciDeviceId", ctypes.c_uint),
        ("pciSubSystemId", ctypes.c_uint),
        ("busId", ctypes.c_char * 32),
    ]


class CtypesNvml:
    """NVML through ctypes. ``paths``: sonames or absolute paths, tried in order."""

    def __init__(self, paths: Sequence[str] = (SONAME,)) -> None:
        self._lib, path = load_first(paths)
        self.key = f"nvml:{path}"

    def has(self, function: str) -> bool:
        return hasattr(self._lib, function)

    def _fn(self, function: str) -> Callable[..., int]:
        try:
            fn = getattr(self._lib, function)
        except AttributeError:
            raise NativeError(function, NVML_ERROR_FUNCTION_NOT_FOUND, "symbol missing") from None
        fn.restype = ctypes.c_int
        return fn  # type: ignore[no-any-return]

    def _check(self, function: str, *args: Any) -> None:
        rc = self._fn(function)(*args)
        if rc != NVML_SUCCESS:
            raise NativeError(function, rc, describe(rc))

    def call(self, function: str, *args: Any) -> Any:
        if function in ("nvmlInit_v2", "nvmlInit", "nvmlShutdown"):
            self._check(function)
            return None
        if function.startswith(("nvmlSystemGetCudaDriverVersion", "nvmlDeviceGetCount")):
            out = ctypes.c_int()
            self._check(function, ctypes.byref(out))
            return out.value
        if function.startswith("nvmlDeviceGetHandleByIndex"):
            handle = ctypes.c_void_p()
            self._check(function, ctypes.c_uint(int(args[0])), ctypes.byref(handle))
            return handle.value
        handle = ctypes.c_void_p(int(args[0]))
        if function == "nvmlDeviceGetCudaComputeCapability":
            major, minor = ctypes.c_int(), ctypes.c_int()
            self._check(function, handle, ctypes.byref(major), ctypes.byref(minor))
            return [major.value, minor.value]
        if function in ("nvmlDeviceGetUUID", "nvmlDeviceGetName"):
            buf = ctypes.create_string_buffer(96)
            self._check(function, handle, buf, ctypes.c_uint(96))
            return buf.value.decode("utf-8", "replace")
        if function == "nvmlDeviceGetPciInfo_v3":
            info = _PciInfo()
            self._check(function, handle, ctypes.byref(info))
            return {
                "busId": info.busId.decode("ascii", "replace"),
                "pciDeviceId": info.pciDeviceId,
            }
        if function == "nvmlDeviceGetNvLinkState":
            state = ctypes.c_uint()
            self._check(function, handle, ctypes.c_uint(int(args[1])), ctypes.byref(state))
            return state.value
        raise NativeError(function, None, "not bound")

    def close(self) -> None:
        pass  # the library stays loaded: unloading driver libraries is not safe
