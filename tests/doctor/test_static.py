"""The static checks on environments made wrong on purpose, and on correct ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.doctor.envs import (
    CUDA_128,
    by_name,
    doctor,
    environment,
    failed,
    plain_wheel,
    torch_wheel,
)
from tests.kit import make_wheel

TRITON = 'triton==3.5.0; platform_system == "Linux"'


def test_cu128_torch_on_a_gtx_1080_ti_has_no_sm_61_kernels(tmp_path: Path) -> None:
    wheel = torch_wheel(tmp_path / "w", archs=CUDA_128)
    venv = environment(tmp_path, [wheel])
    code, report, err = doctor(venv, machine="gpu-rtx4090-gtx1080ti")
    assert code == 1 and report["ok"] is False, err
    (arch,) = failed(report)
    assert arch["name"] == "gpu archs" and arch["package"] == "torch"
    assert "GTX 1080 Ti" in arch["detail"] and "6.1" in arch["detail"]
    assert "RTX 4090" not in arch["detail"]  # sm_86 code runs on the 8.9 card
    assert "libtorch_cuda.so" in arch["detail"] and "sm_70" in arch["detail"]
    assert arch["fix"] == "fitwheel install 'torch==2.9.0' --torch-backend cu126 --force-reinstall"
    (driver,) = by_name(report, "driver", "torch")
    assert driver["status"] == "pass"  # the 570 driver runs CUDA 12.8


def test_cu128_variant_wheel_recorded_for_other_hardware(tmp_path: Path) -> None:
    wheel = torch_wheel(tmp_path / "w", version="2.9.0", label="cuda12.8", cuda="12.8")
    venv = environment(tmp_path, [wheel])
    code, report, _ = doctor(venv, machine="gpu-rtx4090-gtx1080ti")
    assert code == 1
    (variant,) = [c for c in failed(report) if c["name"] == "variant"]
    assert "cuda12.8" in variant["detail"] and "sm_arch" in variant["detail"]
    assert "GTX 1080 Ti" in variant["detail"]
    assert variant["fix"] == "fitwheel install 'torch==2.9.0' --force-reinstall"
    # the same install on the machine it was made for is well
    code, report, _ = doctor(venv, machine="gpu-h100-open")
    assert code == 0 and report["ok"] is True, failed(report)
    assert by_name(report, "variant", "torch")[0]["status"] == "pass"


def test_cuda13_variant_after_a_driver_downgrade(tmp_path: Path) -> None:
    wheel = torch_wheel(tmp_path / "w", version="2.9.0", label="cuda13.0", cuda="13.0")
    venv = environment(tmp_path, [wheel])
    code, report, _ = doctor(venv, machine="gpu-h100-open")  # driver 550: CUDA 12.4
    assert code == 1
    (variant,) = failed(report)
    assert variant["name"] == "variant" and "cuda13.0" in variant["detail"]
    assert "cuda_version_lower_bound" in variant["detail"]


def test_rocm63_build_on_a_rocm64_host(tmp_path: Path) -> None:
    wheel = torch_wheel(
        tmp_path / "w", "2.9.0+rocm6.3", cuda=None, hip="6.3.42131-fa1d09cbd", gfx=["gfx942"]
    )
    venv = environment(tmp_path, [wheel])
    code, report, _ = doctor(venv, machine="gpu-mi300x")
    assert code == 1
    (driver,) = failed(report)
    assert driver["name"] == "driver"
    assert "ROCm 6.3" in driver["detail"] and "ROCm 6.4" in driver["detail"]
    assert driver["fix"] == (
        "fitwheel install 'torch==2.9.0' --torch-backend rocm6.4 --force-reinstall"
    )
    assert by_name(report, "gpu archs", "torch")[0]["status"] == "pass"  # gfx942 is there


def test_torchvision_of_another_torch_minor(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    wheels = [
        torch_wheel(folder, archs=CUDA_128, requires=[TRITON]),
        torch_wheel(folder, "0.23.0+cu128", project="torchvision", requires=["torch==2.8.0"]),
        plain_wheel(folder, "triton", "3.5.0"),
    ]
    venv = environment(tmp_path, wheels)
    code, report, _ = doctor(venv, machine="gpu-rtx5090-igpu")
    assert code == 1
    (companion,) = failed(report)
    assert companion["name"] == "companion" and companion["package"] == "torchvision"
    assert "torch==2.8.0" in companion["detail"] and "2.9.0+cu128" in companion["detail"]
    assert companion["fix"] == (
        "fitwheel install 'torchvision' 'torch==2.9.0' --torch-backend cu128"
    )


def test_triton_that_does_not_match(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    wheels = [torch_wheel(folder, archs=CUDA_128, requires=[TRITON])]
    wheels.append(plain_wheel(folder, "triton", "3.4.0"))
    venv = environment(tmp_path, wheels)
    code, report, _ = doctor(venv, machine="gpu-rtx5090-igpu")
    assert code == 1
    (companion,) = failed(report)
    assert companion["package"] == "triton" and "3.4.0" in companion["detail"]
    assert "triton==3.5.0" in companion["detail"]
    assert companion["fix"] == "fitwheel install 'triton==3.5.0' --force-reinstall"


def test_cuda12_runtime_wheel_under_a_cuda13_torch(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    wheels = [
        torch_wheel(folder, "2.9.0+cu130", cuda="13.0", archs=["90_real", "120_real"]),
        plain_wheel(folder, "nvidia-cublas-cu12", "12.8.4.1"),
    ]
    venv = environment(tmp_path, wheels)
    code, report, _ = doctor(venv, machine="gpu-rtx5090-igpu")
    assert code == 1
    (companion,) = failed(report)
    assert companion["package"] == "nvidia-cublas-cu12"
    assert "CUDA 12 runtime wheel under a CUDA 13.0 torch" in companion["detail"]
    assert companion["fix"] == "fitwheel uninstall nvidia-cublas-cu12"


def test_cuda13_build_on_a_cuda12_driver(tmp_path: Path) -> None:
    wheel = torch_wheel(tmp_path / "w", "2.9.0+cu130", cuda="13.0", archs=["90_real"])
    venv = environment(tmp_path, [wheel])
    code, report, _ = doctor(venv, machine="gpu-h100-open")
    assert code == 1
    (driver,) = failed(report)
    assert driver["name"] == "driver" and "CUDA 12.4 at most" in driver["detail"]
    assert "--torch-backend cu128" in driver["fix"]


@pytest.mark.parametrize(
    ("machine", "wheels"),
    [
        ("gpu-rtx5090-igpu", "cuda"),
        ("nogpu-server", "cpu"),
        ("gpu-h100-open", "variant"),
        ("gpu-mi300x", "rocm"),
    ],
)
def test_nothing_reported_for_correct_environments(
    tmp_path: Path, machine: str, wheels: str
) -> None:
    folder = tmp_path / "w"
    if wheels == "cuda":
        built = [
            torch_wheel(folder, archs=CUDA_128, requires=[TRITON, "nvidia-cublas-cu12"]),
            torch_wheel(folder, "0.24.0+cu128", project="torchvision", requires=["torch==2.9.0"]),
            torch_wheel(folder, "2.9.0+cu128", project="torchaudio", requires=["torch==2.9.0"]),
            plain_wheel(folder, "triton", "3.5.0"),
            plain_wheel(folder, "nvidia-cublas-cu12", "12.8.4.1"),
        ]
    elif wheels == "cpu":
        built = [torch_wheel(folder, "2.9.0+cpu", cuda=None)]
    elif wheels == "variant":
        built = [torch_wheel(folder, "2.9.0", label="cuda12.8", archs=CUDA_128)]
    else:
        built = [
            torch_wheel(folder, "2.9.0+rocm6.4", cuda=None, hip="6.4.43482", gfx=["gfx942"]),
            plain_wheel(folder, "pytorch-triton-rocm", "3.5.0"),
        ]
    venv = environment(tmp_path, built)
    code, report, err = doctor(venv, machine=machine)
    assert failed(report) == [] and report["ok"] is True and code == 0, err
    assert any(c["package"] == "torch" and c["status"] == "pass" for c in report["checks"])


def test_requirement_consistency(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    wheels = [
        make_wheel(
            folder, "app", "1.0", requires=["lib>=2", "gone", "skipped; python_version < '3'"]
        ),
        make_wheel(folder, "lib", "1.5"),
    ]
    venv = environment(tmp_path, wheels)
    code, report, _ = doctor(venv, machine="nogpu-server")
    assert code == 1
    problems = {c["detail"]: c["fix"] for c in failed(report)}
    assert problems == {
        "app 1.0 requires lib>=2, but lib 1.5 is installed": "fitwheel install 'lib>=2'",
        "app 1.0 requires gone, which is not installed": "fitwheel install 'gone'",
    }


def test_jax_without_a_gpu_plugin_on_a_gpu_host(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    wheels = [
        plain_wheel(folder, "jax", "0.7.2", ["jaxlib"]),
        plain_wheel(folder, "jaxlib", "0.7.2"),
    ]
    venv = environment(tmp_path, wheels)
    code, report, _ = doctor(venv, machine="gpu-h100-open")
    assert code == 1
    (build,) = failed(report)
    assert build["package"] == "jax" and build["detail"].startswith("CPU build on a GPU host")
    assert build["fix"] == "fitwheel install 'jax[cuda12]==0.7.2'"
    wheels.append(plain_wheel(folder, "jax-cuda12-plugin", "0.7.2"))
    venv = environment(tmp_path / "with-plugin", wheels)
    code, report, _ = doctor(venv, machine="gpu-h100-open")
    assert code == 0, failed(report)


def test_tensorflow_without_its_cuda_libraries_on_a_gpu_host(tmp_path: Path) -> None:
    venv = environment(tmp_path, [plain_wheel(tmp_path / "w", "tensorflow", "2.20.0")])
    code, report, _ = doctor(venv, machine="gpu-h100-open")
    assert code == 1
    (build,) = failed(report)
    assert build["package"] == "tensorflow" and "CPU build on a GPU host" in build["detail"]
    assert build["fix"] == "fitwheel install 'tensorflow[and-cuda]==2.20.0'"
    code, report, _ = doctor(venv, machine="nogpu-server")
    assert code == 0


def test_cuda_build_on_an_amd_host(tmp_path: Path) -> None:
    venv = environment(tmp_path, [torch_wheel(tmp_path / "w", archs=CUDA_128)])
    code, report, _ = doctor(venv, machine="gpu-mi300x")
    assert code == 1
    (build,) = failed(report)
    assert build["name"] == "build" and "no NVIDIA GPU" in build["detail"]
    assert "2 AMD GPUs" in build["detail"]
    assert (
        build["fix"] == "fitwheel install 'torch==2.9.0' --torch-backend rocm6.4 --force-reinstall"
    )


def test_a_fifo_named_like_a_library_is_not_opened(tmp_path: Path) -> None:
    import os

    venv = environment(tmp_path, [torch_wheel(tmp_path / "w", archs=CUDA_128)])
    (lib,) = venv.glob("lib/python*/site-packages/torch/lib/libtorch_cuda.so")
    lib.unlink()
    os.mkfifo(lib)
    code, report, _ = doctor(venv, machine="gpu-h100-open", timeout=60)
    # the arch list falls back to the cu128 builds' published list
    (arch,) = by_name(report, "gpu archs", "torch")
    assert arch["status"] == "pass" and "cu128" in arch["detail"] and code == 0
