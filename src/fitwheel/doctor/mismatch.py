"""Doctor's **build** check for a GPU build on a machine without its GPU.

Whether the machine has the GPU a CUDA, ROCm or XPU build needs is decided by
:func:`fitwheel.torchbackend.gpubuild.host_fit`, the rule install's warning uses too. No GPU a
build could use at all: a warning (the build runs, on the CPU only, and carries GPU code for
nothing); only another vendor's GPUs: a failure (the framework does not see them). The wheels
that exist only for such a build share its verdict and are named in its check instead of
having their own: torchvision and torchaudio of torch's backend, the triton of its kind and the
GPU runtime wheels (``nvidia-*-cuNN``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from fitwheel.doctor.builds import TORCH_FAMILY, Build
from fitwheel.doctor.report import FAIL, WARN, Check
from fitwheel.platform.profile import Device, Profile
from fitwheel.torchbackend.gpubuild import VENDOR_NAMES, HostFit, host_fit, usable_gpus

__all__ = ["Mismatch", "devices_text", "mismatch_check", "mismatches"]

_KIND_NAMES = {"cuda": "CUDA", "rocm": "ROCm", "xpu": "XPU"}
#: at most this many runtime wheels are named in a check
_NAMED = 4


@dataclass(slots=True)
class Mismatch:
    """A GPU framework build (``owner``) the machine lacks the GPU for, and the builds that
    exist only for it (``along``)."""

    owner: Build
    fit: HostFit
    along: list[Build] = field(default_factory=list)


def mismatches(
    builds: Mapping[str, Build], profile: Profile
) -> tuple[dict[str, Mismatch], set[str]]:
    """The mismatched framework builds by canonical name, and the names judged with one of them
    (not checked on their own). The runtime and triton wheels of a kind go with torch where it
    is of that kind, else with the first framework of the kind; a runtime wheel with no
    framework of its kind is left to its own check."""
    found: dict[str, Mismatch] = {}
    folded: set[str] = set()
    for kind in _KIND_NAMES:
        of_kind = [b for b in builds.values() if b.kind == kind]
        frameworks = [b for b in of_kind if b.role == "framework"]
        if not frameworks:
            continue
        fit = host_fit(kind, profile)
        if fit.verdict == "fits":
            continue
        torch = next((b for b in frameworks if b.dist.key == "torch"), None)
        for build in frameworks:
            if torch is not None and build is not torch and build.dist.key in TORCH_FAMILY:
                continue
            found[build.dist.key] = Mismatch(build, fit)
        first = found[torch.dist.key if torch is not None else frameworks[0].dist.key]
        for build in of_kind:
            if build.dist.key not in found:
                first.along.append(build)
                folded.add(build.dist.key)
    return found, folded


def devices_text(devices: Sequence[Device]) -> str:
    """``4 NVIDIA GPUs (0-3: NVIDIA H100 80GB HBM3, compute capability 9.0)``: alike devices
    named once."""
    groups: dict[str, list[int]] = {}
    for d in devices:
        text = d.describe()
        what = text.partition(" (")[2].rstrip(")") or d.vendor
        groups.setdefault(f"{VENDOR_NAMES.get(d.vendor, d.vendor)}\0{what}", []).append(d.index)
    parts = []
    for key, indexes in groups.items():
        vendor, what = key.split("\0")
        which = ", ".join(str(i) for i in indexes)
        noun = "GPU" if len(indexes) == 1 else f"{len(indexes)} {vendor} GPUs"
        parts.append(
            f"{vendor} GPU {which} ({what})" if len(indexes) == 1 else f"{noun} ({which}: {what})"
        )
    return "; ".join(parts)


def _along_text(along: Sequence[Build], kind: str) -> str:
    """``, with torchvision, triton and 3 CUDA runtime wheels (nvidia-cublas-cu12, ...)``."""
    named = [b.dist.name for b in along if b.role != "runtime"]
    runtimes = sorted(b.dist.name for b in along if b.role == "runtime")
    if runtimes:
        shown = ", ".join(runtimes[:_NAMED])
        more = f" and {len(runtimes) - _NAMED} more" if len(runtimes) > _NAMED else ""
        wheels = "wheel" if len(runtimes) == 1 else "wheels"
        named.append(f"{len(runtimes)} {_KIND_NAMES[kind]} runtime {wheels} ({shown}{more})")
    if not named:
        return ""
    return ", with " + (named[0] if len(named) == 1 else f"{', '.join(named[:-1])} and {named[-1]}")


def mismatch_check(found: Mismatch, profile: Profile, fix: str | None) -> Check:
    """The **build** check of a mismatched framework build: ``warn`` on a machine without any
    GPU a build could use, ``fail`` on one with another vendor's GPUs only."""
    build, fit = found.owner, found.fit
    what = f"{build.dist.version} is {build.describe()} (from {build.source})"
    what += _along_text(found.along, build.kind)
    if fit.verdict == "no-gpu":
        return Check(
            "build",
            build.dist.name,
            WARN,
            f"{what}, but this machine has no {fit.vendor_name} GPU, nor any other GPU a "
            f"build could use: it runs on the CPU only, and its {_KIND_NAMES[build.kind]} "
            "code is of no use here",
            fix,
        )
    gpus = usable_gpus(profile)
    has = (
        devices_text(gpus) if gpus else " and ".join(f"{VENDOR_NAMES[v]} GPUs" for v in fit.others)
    )
    return Check(
        "build",
        build.dist.name,
        FAIL,
        f"{what}, but this machine has no {fit.vendor_name} GPU; it has {has}, which this "
        "build cannot use",
        fix,
    )
