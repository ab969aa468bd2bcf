"""A CUDA or ROCm build of a torch project resolved for a target without such a GPU.

Whatever index it came from (the default index carries the CUDA build on Linux x86-64), a build
is a CUDA build when its local version says so (``+cu128``), its variant label does
(``cuda12.8``), or the resolution pulled NVIDIA's CUDA runtime packages along with it; a ROCm
build likewise (``+rocm6.4``, ``pytorch-triton-rocm``). Pure: sizes are given by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence

from packaging.utils import NormalizedName

from fitwheel.platform.profile import Profile
from fitwheel.resolve.candidates import Candidate
from fitwheel.torchbackend.builds import local_backend
from fitwheel.torchbackend.table import backend_from_name

_CUDA_DEP = re.compile(r"(nvidia-.*|cuda-.*|triton|pytorch-triton)$")
_CUDA_RUNTIME = re.compile(r"nvidia-(cuda-runtime|cublas)(-cu\d+)?$")
_ROCM_DEP = re.compile(r"pytorch-triton-rocm$")


def build_kind(cand: Candidate, pinned: Collection[str]) -> str | None:
    """ "cuda", "rocm" or None for a candidate, given the names of everything pinned."""
    local = cand.version.local or ""
    label = cand.label or ""
    named = local_backend(local)
    vendor = backend_from_name(named).vendor if named is not None else None
    if vendor == "nvidia" or label.startswith(("cuda", "cu1")):
        return "cuda"
    if vendor == "amd" or label.startswith("rocm"):
        return "rocm"
    if local or label:
        return None
    if any(_CUDA_RUNTIME.match(n) for n in pinned):
        return "cuda"
    if any(_ROCM_DEP.match(n) for n in pinned):
        return "rocm"
    return None


def _has(profile: Profile, vendor: str) -> bool:
    return vendor in profile.properties or any(d.vendor == vendor for d in profile.devices)


def _size(total: int | None) -> str:
    if total is None:
        return "size unknown"
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("kB", 1 << 10)):
        if total >= scale:
            return f"{total / scale:.1f} {unit}"
    return f"{total} bytes"


def gpu_build_warnings(
    pins: Sequence[Candidate],
    projects: Collection[str],
    profile: Profile | None,
    size_of: Callable[[Candidate], int | None],
    fitting: Callable[[], str | None],
) -> list[str]:
    """One warning per torch-ecosystem pin that is a GPU build for a GPU the target lacks.
    ``fitting`` names the backend that fits (asked only when a warning is due)."""
    if profile is None:
        return []
    names: list[NormalizedName] = [c.name for c in pins]
    out = []
    for cand in pins:
        if cand.name not in projects:
            continue
        kind = build_kind(cand, names)
        if kind is None or (kind == "cuda" and _has(profile, "nvidia")):
            continue
        if kind == "rocm" and _has(profile, "amd"):
            continue
        if kind == "cuda":
            along = [c for c in pins if c.name != cand.name and _CUDA_DEP.match(c.name)]
            what, vendor = "CUDA", "NVIDIA"
        else:
            along = [c for c in pins if c.name != cand.name and _ROCM_DEP.match(c.name)]
            what, vendor = "ROCm", "AMD"
        sizes = [size_of(c) for c in (cand, *along)]
        total = None if any(s is None for s in sizes) else sum(s for s in sizes if s is not None)
        extra = f", with {len(along)} GPU runtime packages" if along else ""
        backend = fitting() or "cpu"
        out.append(
            f"{cand.name} {cand.version} ({cand.link.filename}{extra}: {_size(total)}) is a "
            f"{what} build, but the target has no {vendor} GPU: --torch-backend {backend} "
            f"installs the build that fits (`fitwheel config set torch-backend auto` makes "
            "that the default)"
        )
    return out
