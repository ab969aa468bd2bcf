"""Every fixture machine as a profile, and the torch backend a careful human would choose."""

from __future__ import annotations

import os
from pathlib import Path

from fitwheel.platform import detect
from fitwheel.platform.overrides import load_overrides
from fitwheel.platform.probe import Probe
from fitwheel.platform.profile import Profile

TESTS = Path(__file__).resolve().parents[1]
MACHINES = TESTS / "platform" / "machines"
REPLAYS = TESTS / "platform" / "replays"
#: what a driver of the 570 branch reports (CUDA 12.8): FITWHEEL_FORCE_* values
DRIVER_570 = ",".join([f"12.{m}" for m in range(8, -1, -1)] + ["12"])
#: a driver of the 580 branch (CUDA 13.0)
DRIVER_580 = "13.0,13," + ",".join([f"12.{m}" for m in range(9, -1, -1)] + ["12"])
#: a driver of the 535 branch (CUDA 12.2)
DRIVER_535 = ",".join([f"12.{m}" for m in range(2, -1, -1)] + ["12"])
_DRIVERS = {"570": DRIVER_570, "580": DRIVER_580, "535": DRIVER_535}

#: the backend (and torch release) each machine should get; None: an error unless the user
#: accepts the CPU build
EXPECTED: dict[str, tuple[str, str] | None] = {
    # 550.54.15 driver (CUDA 12.4): the CUDA 12 builds run (minor-version compatibility);
    # cu130 needs a 580 driver
    "gpu-h100-open": ("cu128", "2.10.0"),
    # 470 driver (CUDA 11.4): no build of torch 2.9 or 2.10 runs; update the driver
    "gpu-a100-legacy": None,
    # sm_89 + sm_61: only cu126 still ships Pascal code
    "gpu-rtx4090-gtx1080ti": ("cu126", "2.10.0"),
    # 580 driver (CUDA 13.0), sm_120: the newest; the Intel iGPU beside it has no XPU build
    "gpu-rtx5090-igpu": ("cu130", "2.10.0"),
    "gpu-rtx5090-igpu@570": ("cu128", "2.10.0"),
    # gfx942 with ROCm 6.4: torch 2.9's rocm6.4 (2.10 is built for ROCm 7 only)
    "gpu-mi300x": ("rocm6.4", "2.9.0"),
    # gfx1100 (the iGPU beside it does not count) with ROCm 6.3
    "gpu-radeon-igpu": ("rocm6.3", "2.9.0"),
    # gfx950 needs torch 2.10's ROCm 7.0 build, which matches the installed ROCm 7.0.2
    "gpu-mi355x-rocm7": ("rocm7.0", "2.10.0"),
    "gpu-intel-max": ("xpu", "2.10.0"),
    # the Arc A770 counts; the Tiger Lake iGPU beside it does not
    "gpu-intel-arc-igpu": ("xpu", "2.10.0"),
    # a GPU whose device IP nobody knows: no build can be shown to run on it
    "gpu-intel-future": None,
    # through NVML (driver for CUDA 12.6), sm_86
    "wsl2-rtx3080": ("cu128", "2.10.0"),
    # L4s visible from a container started without GPU access: no driver answers
    "container-nogpu": None,
    # a GPU whose driver files are garbage: nothing is known to run
    "gpu-garbage": None,
}
CPU_ONLY = [
    m
    for m in sorted(os.listdir(MACHINES))
    if (MACHINES / m).is_dir() and not m.startswith("__") and m not in EXPECTED
]


def machine_profile(name: str) -> Profile:
    """``name``'s profile as ``fitwheel detect --sysroot`` finds it, with what the tree alone
    cannot say given the way a user would (an NVML recording for WSL2, ``ROCM_PATH`` where ROCm
    is installed off the default path, a forced CUDA version for a 570, 580 or 535 driver:
    ``name@570``)."""
    machine, _, variant = name.partition("@")
    env: dict[str, str] = {}
    native = False
    forced: dict[str, str] = {}
    if machine == "wsl2-rtx3080":
        env["FITWHEEL_NVML_REPLAY"] = str(REPLAYS / "nvml" / "wsl2-rtx3080.json")
        native = True
    if machine == "gpu-mi355x-rocm7":
        env["ROCM_PATH"] = "/opt/rocm-7.0.2"
    if variant in _DRIVERS:
        forced["FITWHEEL_FORCE_NVIDIA__CUDA_VERSION_LOWER_BOUND"] = _DRIVERS[variant]
    probe = Probe(os.path.realpath(MACHINES / machine), env, allow_native=native)
    return detect.detect_profile(probe, use_cache=False, overrides=load_overrides(forced))


def grace_hopper() -> Profile:
    """A GH200: the Grace CPU tree with an H100 on a 570 driver (CUDA 12.8)."""
    overrides = load_overrides(
        {
            "FITWHEEL_FORCE_NVIDIA__CUDA_VERSION_LOWER_BOUND": DRIVER_570,
            "FITWHEEL_FORCE_NVIDIA__SM_ARCH": "90_real,90_virtual",
        }
    )
    probe = Probe(os.path.realpath(MACHINES / "arm-grace-neoverse-v2"), {}, allow_native=False)
    return detect.detect_profile(probe, use_cache=False, overrides=overrides)
