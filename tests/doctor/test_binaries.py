"""GPU code read from ELF libraries without loading them, and the backend picked for a machine."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from fitwheel.doctor.backends import cuda_arch_runs, pick_backend
from fitwheel.doctor.binaries import MAX_CONTAINERS, read_gpu_code
from fitwheel.platform.detect import detect_profile
from fitwheel.platform.probe import Probe
from tests.kit import elf_library
from tests.kit.elf import fatbin

MACHINES = Path(__file__).resolve().parents[1] / "platform" / "machines"


def test_cuda_fatbin_archs(tmp_path: Path) -> None:
    lib = elf_library(tmp_path / "libx.so", cuda=["80_real", "90_real", "90_virtual"], containers=5)
    code = read_gpu_code(str(lib))
    assert code is not None
    assert code.cuda == {"80_real", "90_real", "90_virtual"} and code.rocm == frozenset()
    assert code.containers == 5


def test_rocm_offload_targets(tmp_path: Path) -> None:
    lib = elf_library(tmp_path / "libhip.so", rocm=["gfx90a", "gfx942"])
    code = read_gpu_code(str(lib))
    assert code is not None and code.rocm == {"gfx90a", "gfx942"} and not code.cuda


def test_reading_is_bounded(tmp_path: Path) -> None:
    lib = elf_library(tmp_path / "libmany.so", cuda=["90_real"], containers=MAX_CONTAINERS + 50)
    code = read_gpu_code(str(lib))
    assert code is not None and code.containers == MAX_CONTAINERS


def test_libraries_without_gpu_code_and_garbage(tmp_path: Path) -> None:
    plain = elf_library(tmp_path / "libplain.so")
    assert read_gpu_code(str(plain)) is None
    (tmp_path / "text.so").write_text("not an ELF file")
    assert read_gpu_code(str(tmp_path / "text.so")) is None
    assert read_gpu_code(str(tmp_path / "missing.so")) is None
    # a section table pointing past the end, a truncated fat binary
    lib = elf_library(tmp_path / "libcut.so", cuda=["90_real", "100_real"])
    data = lib.read_bytes()
    broken = tmp_path / "libbroken.so"
    broken.write_bytes(data[:40] + struct.pack("<Q", 1 << 40) + data[48:])
    assert read_gpu_code(str(broken)) is None
    cut = bytearray(data)
    start = data.index(fatbin(["90_real"])[:4])
    cut[start + 8 : start + 16] = struct.pack("<Q", 1 << 50)  # a container claiming 1 PiB
    (tmp_path / "libhuge.so").write_bytes(bytes(cut))
    code = read_gpu_code(str(tmp_path / "libhuge.so"))
    assert code is not None and code.cuda <= {"90_real", "100_real"}


@pytest.mark.parametrize(
    ("archs", "cc", "runs"),
    [
        (["80_real"], (8, 6), True),  # same major, older minor
        (["86_real"], (8, 0), False),
        (["90_real"], (10, 0), False),  # cubins do not cross majors
        (["90_virtual"], (12, 0), True),  # PTX is compiled for newer GPUs
        (["90a_real"], (9, 0), True),
        (["70_real", "75_real"], (6, 1), False),
    ],
)
def test_cuda_arch_rules(archs: list[str], cc: tuple[int, int], runs: bool) -> None:
    assert cuda_arch_runs(archs, cc) is runs


@pytest.mark.parametrize(
    ("machine", "torch", "backend"),
    [
        ("gpu-rtx4090-gtx1080ti", (2, 9), "cu126"),  # only cu126 still has sm_60 code
        ("gpu-h100-open", (2, 9), "cu128"),  # a 550 driver: no CUDA 13
        ("gpu-rtx5090-igpu", (2, 9), "cu130"),
        ("gpu-rtx5090-igpu", (2, 8), "cu129"),
        ("gpu-a100-legacy", (2, 9), "cpu"),  # a 470 driver runs no CUDA 12 build
        ("gpu-mi300x", (2, 9), "rocm6.4"),
        ("gpu-mi300x", (2, 10), "cpu"),  # torch 2.10 has ROCm 7 builds only; ROCm 6.4 here
        ("gpu-radeon-igpu", (2, 9), "rocm6.3"),
        # ROCm 7.0.2 lies outside /opt/rocm and the probe sees no ROCM_PATH: no ROCm found,
        # and a ROCm build only runs on the ROCm it was built for
        ("gpu-mi355x-rocm7", (2, 10), "cpu"),
        ("gpu-intel-max", (2, 9), "xpu"),
        ("gpu-intel-future", (2, 9), "cpu"),  # a device IP no xpu build ships
        ("nogpu-server", (2, 9), "cpu"),
    ],
)
def test_pick_backend(machine: str, torch: tuple[int, int], backend: str) -> None:
    """Doctor names what ``--torch-backend auto`` chooses (the fallback to cpu accepted)."""
    profile = detect_profile(Probe.for_sysroot(str(MACHINES / machine), env={}))
    assert pick_backend(profile, torch, {"python_version": "3.12"}).backend == backend


def test_pick_backend_finds_rocm_named_by_rocm_path() -> None:
    root = MACHINES / "gpu-mi355x-rocm7"
    profile = detect_profile(Probe.for_sysroot(str(root), env={"ROCM_PATH": "/opt/rocm-7.0.2"}))
    assert pick_backend(profile, (2, 10)).backend == "rocm7.0"
