"""Which PyTorch backend index (``cu126``, ``rocm6.4``, ``xpu``, ``cpu``) fits a machine, for the
fix commands that doctor prints.

A small table of its own, kept apart from the checks: the GPU architectures each CUDA backend's
builds carry (as the published torch variants files list them for their CUDA builds), the gfx
targets of each ROCm backend, and the torch releases that have each backend. :func:`pick_backend`
chooses, for the devices detected, the newest backend that the driver allows and whose builds
run on every GPU (the default multi-GPU policy).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fitwheel.platform.profile import Device, Profile

__all__ = [
    "CUDA_BACKENDS",
    "ROCM_BACKENDS",
    "Backend",
    "backend_named",
    "cuda_arch_runs",
    "device_cc",
    "pick_backend",
]


@dataclass(frozen=True, slots=True)
class Backend:
    name: str
    #: "cuda", "rocm", "xpu" or "cpu"
    kind: str
    #: CUDA or ROCm version, "" for xpu and cpu
    version: str = ""
    #: sm_arch values (``90_real``, ``120_virtual``) or gfx targets
    archs: frozenset[str] = frozenset()
    #: the torch minor versions (``(2, 9)``) with builds on this backend: first, last (None: open)
    torch_from: tuple[int, int] = (2, 0)
    torch_to: tuple[int, int] | None = None

    def offers(self, torch_version: tuple[int, int] | None) -> bool:
        if torch_version is None:
            return True
        if torch_version < self.torch_from:
            return False
        return self.torch_to is None or torch_version <= self.torch_to


def _real(*archs: int, virtual: Sequence[int] = ()) -> frozenset[str]:
    return frozenset([f"{a}_real" for a in archs] + [f"{a}_virtual" for a in virtual])


#: newest first
CUDA_BACKENDS = (
    Backend("cu130", "cuda", "13.0", _real(75, 80, 86, 90, 100, 120, virtual=(120,)), (2, 9)),
    Backend("cu129", "cuda", "12.9", _real(70, 75, 80, 86, 90, 100, 120), (2, 8), (2, 8)),
    Backend("cu128", "cuda", "12.8", _real(70, 75, 80, 86, 90, 100, 120), (2, 7)),
    Backend("cu126", "cuda", "12.6", _real(50, 60, 70, 75, 80, 86, 90), (2, 6)),
    Backend("cu124", "cuda", "12.4", _real(50, 60, 70, 75, 80, 86, 90), (2, 4), (2, 6)),
    Backend("cu121", "cuda", "12.1", _real(50, 60, 70, 75, 80, 86, 90), (2, 1), (2, 5)),
    Backend("cu118", "cuda", "11.8", _real(37, 50, 60, 70, 75, 80, 86, 90), (2, 0), (2, 7)),
)
_GFX_62 = frozenset(["gfx900", "gfx906", "gfx908", "gfx90a", "gfx942", "gfx1030", "gfx1100"])
_GFX_64 = _GFX_62 | frozenset(["gfx1101", "gfx1102", "gfx1200", "gfx1201"])
_GFX_70 = _GFX_64 | {"gfx950"}
ROCM_BACKENDS = (
    Backend("rocm7.2", "rocm", "7.2", _GFX_70 | {"gfx1150", "gfx1151"}, (2, 11)),
    Backend("rocm7.1", "rocm", "7.1", _GFX_70, (2, 10)),
    Backend("rocm7.0", "rocm", "7.0", _GFX_70, (2, 9), (2, 9)),
    Backend("rocm6.4", "rocm", "6.4", _GFX_64, (2, 8)),
    Backend("rocm6.3", "rocm", "6.3", _GFX_64, (2, 7), (2, 9)),
    Backend("rocm6.2.4", "rocm", "6.2", _GFX_64, (2, 6), (2, 7)),
    Backend("rocm6.1", "rocm", "6.1", _GFX_62 | {"gfx1101"}, (2, 4), (2, 6)),
)
XPU = Backend("xpu", "xpu")
CPU = Backend("cpu", "cpu")


def backend_named(name: str) -> Backend | None:
    for backend in (*CUDA_BACKENDS, *ROCM_BACKENDS, XPU, CPU):
        if backend.name == name:
            return backend
    return None


def device_cc(device: Device) -> tuple[int, int] | None:
    """A CUDA device's compute capability, from detection's fact or its own ``sm_arch``."""
    text = str(device.extra.get("compute_capability") or "")
    major, _, minor = text.partition(".")
    if major.isdigit() and minor.isdigit():
        return int(major), int(minor)
    reals = [
        int(v.split("_")[0])
        for v in device.properties.get("nvidia", {}).get("sm_arch", ())
        if v.endswith("_real") and v.split("_")[0].isdigit()
    ]
    return divmod(max(reals), 10) if reals else None


def cuda_arch_runs(archs: Iterable[str], cc: tuple[int, int]) -> bool:
    """Whether code built for ``archs`` runs on a GPU of compute capability ``cc``: a cubin of
    the same major and a minor not above the GPU's, or PTX of an older or equal arch (JIT)."""
    for arch in archs:
        number, _, kind = arch.partition("_")
        digits = number.rstrip("af")
        if not digits.isdigit():
            continue
        major, minor = divmod(int(digits), 10)
        if kind == "real" and major == cc[0] and minor <= cc[1] and digits == number:
            return True
        if kind == "real" and (major, minor) == cc:
            return True  # an arch-specific cubin (sm_90a) on exactly that GPU
        if kind == "virtual" and (major, minor) <= cc:
            return True
    return False


def driver_cuda(profile: Profile) -> tuple[int, int] | None:
    """The newest CUDA version the NVIDIA driver supports (detection lists it first)."""
    values = profile.properties.get("nvidia", {}).get("cuda_version_lower_bound", ())
    for value in values:
        major, _, minor = value.partition(".")
        if major.isdigit() and minor.isdigit():
            return int(major), int(minor)
    return None


def host_rocm(profile: Profile) -> tuple[int, int] | None:
    values = profile.properties.get("amd", {}).get("rocm_version", ())
    for value in values:
        parts = value.split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            return int(parts[0]), int(parts[1])
    return None


def _gpus(profile: Profile, vendor: str) -> list[Device]:
    return [
        d
        for d in profile.devices
        if d.vendor == vendor and not (vendor != "nvidia" and d.extra.get("integrated"))
    ]


def _version(text: str) -> tuple[int, int]:
    major, _, minor = text.partition(".")
    return int(major), int(minor.partition(".")[0] or 0)


def pick_backend(profile: Profile, torch_version: tuple[int, int] | None = None) -> Backend:
    """The backend whose torch builds fit ``profile``'s GPUs best (``cpu`` when none does).

    NVIDIA first (as uv's ``auto`` does), then AMD, then Intel discrete GPUs. CUDA: the newest
    backend of a CUDA major the driver supports whose archs run on every NVIDIA GPU. ROCm: the
    host's ROCm version when a backend of it lists every GPU's gfx target, else the newest one
    that does (not newer than the host's ROCm when that is known)."""
    nvidia = _gpus(profile, "nvidia")
    if nvidia:
        driver = driver_cuda(profile)
        ccs = [cc for d in nvidia if (cc := device_cc(d)) is not None]
        for backend in CUDA_BACKENDS:
            if not backend.offers(torch_version):
                continue
            if driver is not None and _version(backend.version)[0] > driver[0]:
                continue
            if all(cuda_arch_runs(backend.archs, cc) for cc in ccs):
                return backend
    amd = _gpus(profile, "amd")
    if amd:
        host = host_rocm(profile)
        targets = {v for d in amd for v in d.properties.get("amd", {}).get("gfx_arch", ())[:1]}
        fitting = [b for b in ROCM_BACKENDS if b.offers(torch_version) and targets <= b.archs]
        if host is not None:
            same = [b for b in fitting if _version(b.version) == host]
            older = [b for b in fitting if _version(b.version) <= host]
            fitting = same or older or fitting
        if fitting:
            return fitting[0]
    if _gpus(profile, "intel"):
        return XPU
    return CPU
