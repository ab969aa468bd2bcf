"""Which GPU a build needs, whether the target has it, and install's warning for a CUDA, ROCm or
XPU build of a torch project resolved for a target without that GPU.

The one rule, used by install's warning and by doctor's **build** check alike:
:func:`host_fit` says for a build kind ("cuda", "rocm", "xpu") and a target whether the target
has a GPU of the vendor the build needs ("fits"), has no GPU a framework can use at all
("no-gpu": the build runs on the CPU only, a warning), or has only another vendor's GPUs
("other-gpu": the build cannot use them, a failure where a command judges an installed
environment). :func:`local_build` reads a build kind from a local version label (``+cu128``,
``+rocm6.4``, ``+xpu``, ``+cpu``).

Whatever index a build came from (the default index carries the CUDA build on Linux x86-64), a
resolved candidate is a CUDA build when its local version says so (``+cu128``), its variant
label does (``cuda12.8``), or the resolution pulled NVIDIA's CUDA runtime packages along with
it; a ROCm build likewise (``+rocm6.4``, ``pytorch-triton-rocm``). Pure: sizes are given by the
caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from fitwheel.platform.profile import Device, Profile
from fitwheel.torchbackend.builds import local_backend

if TYPE_CHECKING:
    from packaging.utils import NormalizedName

    from fitwheel.resolve.candidates import Candidate

__all__ = [
    "BUILD_VENDOR",
    "VENDOR_NAMES",
    "HostFit",
    "build_kind",
    "gpu_build_warnings",
    "host_fit",
    "local_build",
    "usable_gpus",
]

#: the GPU vendor each kind of build needs
BUILD_VENDOR = {"cuda": "nvidia", "rocm": "amd", "xpu": "intel"}
#: how messages name each vendor
VENDOR_NAMES = {"nvidia": "NVIDIA", "amd": "AMD", "intel": "Intel"}

_CUDA_DEP = re.compile(r"(nvidia-.*|cuda-.*|triton|pytorch-triton)$")
_CUDA_RUNTIME = re.compile(r"nvidia-(cuda-runtime|cublas)(-cu\d+)?$")
_ROCM_DEP = re.compile(r"pytorch-triton-rocm$")
_XPU_DEP = re.compile(r"(pytorch-triton-xpu|intel-.*)$")


def local_build(local: str) -> tuple[str, str] | None:
    """The build kind and its CUDA or ROCm version a local version label names: ``cu128`` ->
    ("cuda", "12.8"), ``rocm6.4.1`` -> ("rocm", "6.4"), ``xpu`` -> ("xpu", ""), ``cpu`` ->
    ("cpu", ""); None for any other label (the backend read by
    :func:`~fitwheel.torchbackend.builds.local_backend`, the one reader of local versions)."""
    named = local_backend(local)
    if named is None:
        return None
    if named.startswith("cu"):
        digits = named[2:]
        return "cuda", f"{digits[:-1]}.{digits[-1]}"
    if named.startswith("rocm"):
        return "rocm", ".".join(named[4:].split(".")[:2])
    return named, ""


def usable_gpus(profile: Profile, vendor: str | None = None) -> list[Device]:
    """The GPUs a framework build can use (of ``vendor``, or of any): every NVIDIA GPU, the
    discrete AMD and Intel ones (no torch, JAX or CuPy build runs on their integrated GPUs)."""
    return [
        d
        for d in profile.devices
        if d.vendor in VENDOR_NAMES
        and (vendor is None or d.vendor == vendor)
        and not (d.vendor != "nvidia" and d.extra.get("integrated"))
    ]


def _has(profile: Profile, vendor: str) -> bool:
    """Whether the target has a GPU of ``vendor`` a framework can use: by its devices where the
    profile lists any of that vendor, else by its properties (a profile that holds only
    ``properties``)."""
    if any(d.vendor == vendor for d in profile.devices):
        return bool(usable_gpus(profile, vendor))
    return vendor in profile.properties


@dataclass(frozen=True, slots=True)
class HostFit:
    """How a GPU build meets the target. ``vendor``: the GPU vendor the build needs;
    ``verdict``: "fits" (the target has such a GPU), "no-gpu" (no GPU a framework can use: the
    build runs on the CPU only) or "other-gpu" (only GPUs of ``others``, which the build cannot
    use)."""

    kind: str
    vendor: str
    verdict: Literal["fits", "no-gpu", "other-gpu"]
    others: tuple[str, ...] = ()

    @property
    def vendor_name(self) -> str:
        return VENDOR_NAMES[self.vendor]


def host_fit(kind: str, profile: Profile) -> HostFit:
    """Whether the target ``profile`` describes has the GPU a ``kind`` build ("cuda", "rocm",
    "xpu") needs; the one rule install and doctor judge GPU builds by."""
    vendor = BUILD_VENDOR[kind]
    if _has(profile, vendor):
        return HostFit(kind, vendor, "fits")
    others = tuple(v for v in VENDOR_NAMES if v != vendor and _has(profile, v))
    return HostFit(kind, vendor, "other-gpu" if others else "no-gpu", others)


def build_kind(cand: Candidate, pinned: Collection[str]) -> str | None:
    """ "cuda", "rocm", "xpu" or None for a candidate, given the names of everything pinned."""
    local = cand.version.local or ""
    label = cand.label or ""
    found = local_build(str(local)) if local else None
    if found is not None and found[0] != "cpu":
        return found[0]
    if label.startswith(("cuda", "cu1")):
        return "cuda"
    if label.startswith("rocm"):
        return "rocm"
    if label == "xpu":
        return "xpu"
    if local or label:
        return None
    if any(_CUDA_RUNTIME.match(n) for n in pinned):
        return "cuda"
    if any(_ROCM_DEP.match(n) for n in pinned):
        return "rocm"
    return None


def _size(total: int | None) -> str:
    if total is None:
        return "size unknown"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if total >= scale:
            return f"{total / scale:.1f} {unit}"
    return f"{total} bytes"


_WHAT = {"cuda": ("CUDA", _CUDA_DEP), "rocm": ("ROCm", _ROCM_DEP), "xpu": ("XPU", _XPU_DEP)}


def gpu_build_warnings(
    pins: Sequence[Candidate],
    projects: Collection[str],
    profile: Profile | None,
    size_of: Callable[[Candidate], int | None],
    fitting: Callable[[], str | None],
) -> list[str]:
    """One warning per torch-ecosystem pin that is a GPU build for a GPU the target lacks
    (:func:`host_fit` is not "fits"). ``fitting`` names the backend that fits (asked only when
    a warning is due)."""
    if profile is None:
        return []
    names: list[NormalizedName] = [c.name for c in pins]
    out = []
    for cand in pins:
        if cand.name not in projects:
            continue
        kind = build_kind(cand, names)
        if kind is None:
            continue
        fit = host_fit(kind, profile)
        if fit.verdict == "fits":
            continue
        what, deps = _WHAT[kind]
        along = [c for c in pins if c.name != cand.name and deps.match(c.name)]
        sizes = [size_of(c) for c in (cand, *along)]
        total = None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)
        extra = f", with {len(along)} GPU runtime packages" if along else ""
        instead = ""
        if fit.verdict == "other-gpu":
            gpus = " and ".join(VENDOR_NAMES[v] for v in fit.others)
            instead = f" (only {gpus} GPUs, which it cannot use)"
        backend = fitting() or "cpu"
        out.append(
            f"{cand.name} {cand.version} ({cand.link.filename}{extra}: {_size(total)}) is "
            f"{'an' if kind == 'xpu' else 'a'} {what} build, but the target has no "
            f"{fit.vendor_name} GPU{instead}: "
            f"--torch-backend {backend} installs the build that fits (`fitwheel config set "
            "torch-backend auto` makes that the default)"
        )
    return out
