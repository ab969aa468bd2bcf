"""``fitwheel install torch --torch-backend ...`` against a loopback mirror of PyTorch's download
root (per-backend indexes, the default index, the variant index), for every fixture machine."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from fitwheel.cli.main import main
from fitwheel.torchbackend.refresh import backend_of_label
from tests.kit import TorchMirror, build_torch_mirror, make_venv, serve
from tests.torchbackend.conftest import Run, write_profiles
from tests.torchbackend.machines import CPU_ONLY, EXPECTED

#: machines run through every path (the rest of the CPU-only ones only through the first)
SOME_CPU = ["nogpu-server", "arm-grace-neoverse-v2", "x86-v1-core2"]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> TorchMirror:
    return build_torch_mirror(tmp_path_factory.mktemp("mirror"))


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return write_profiles(tmp_path_factory.mktemp("profiles"), [*EXPECTED, *CPU_ONLY])


@pytest.fixture
def fitwheel(
    monkeypatch: pytest.MonkeyPatch,
    hermetic: Callable[[list[str]], Run],
    url: str,
    mirror: TorchMirror,
    venv: Path,
) -> Any:
    """``fitwheel install`` in process, hermetic (see ``conftest.hermetic``), from the mirror's
    default index."""

    def run(*args: str, index: bool = True, python: Path | None = None, **env: str) -> Run:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        argv = ["install", *args, "--python", str(python or venv)]
        if index:
            argv += ["--index-url", mirror.default_index(url)]
        return hermetic(argv)

    return run


def auto(fitwheel: Any, url: str, profile: str, *extra: str) -> Run:
    return fitwheel(
        "torch",
        "torchvision",
        "--torch-backend",
        "auto",
        "--torch-index-url",
        f"{url}/whl",
        "--profile",
        profile,
        "--dry-run",
        "--report",
        "-",
        *extra,
    )


@pytest.mark.parametrize("name", [*sorted(EXPECTED), *CPU_ONLY])
def test_every_machine_gets_its_backend_from_its_index(
    fitwheel: Any, url: str, profiles: dict[str, str], name: str
) -> None:
    run = auto(fitwheel, url, profiles[name])
    expected = EXPECTED.get(name, ("cpu", "2.10.0"))
    if expected is None:
        assert run.rc == 1, run.err
        assert "no build of torch 2.10 or 2.9 runs on the GPU here" in run.err
        assert "--allow-fallback" in run.err and "--torch-backend cpu" in run.err
        return
    assert run.rc == 0, run.err
    backend, version = expected
    pins = run.pins()
    torch, vision = pins["torch"], pins["torchvision"]
    assert torch["version"] == f"{version}+{backend}"
    assert torch["url"].startswith(f"{url}/whl/{backend}/")
    assert torch["filename"].startswith(f"torch-{version}+{backend}-cp")
    assert torch["torch_backend"] == vision["torch_backend"] == backend
    assert vision["version"].endswith(f"+{backend}")
    report = run.report()["torch_backend"]
    assert report["backend"] == backend and report["index_url"] == f"{url}/whl/{backend}/"
    names = set(pins)
    if backend == "cpu":
        # never the CUDA build of the default index, nor anything it pulls in
        assert not any(n.startswith(("nvidia-", "triton")) for n in names)
    elif backend.startswith("cu"):
        assert pins["triton"]["torch_backend"] == backend
        cuda = "-cu12" if backend != "cu130" else ""
        assert f"nvidia-cuda-runtime{cuda}" in names
    elif backend.startswith("rocm"):
        assert pins["pytorch-triton-rocm"]["torch_backend"] == backend
    else:
        assert pins["pytorch-triton-xpu"]["torch_backend"] == "xpu" and "intel-sycl-rt" in names


def test_explain_names_every_backend_and_why(
    fitwheel: Any, url: str, profiles: dict[str, str]
) -> None:
    run = fitwheel(
        "torch",
        "--torch-backend",
        "auto",
        "--torch-index-url",
        f"{url}/whl",
        "--profile",
        profiles["gpu-rtx4090-gtx1080ti"],
        "--dry-run",
        "--explain",
    )
    assert run.rc == 0, run.err
    lines = run.out.splitlines()
    assert f"torch backend: auto (from --torch-backend) -> cu126, index {url}/whl/cu126/" in lines
    assert (
        "  torch 2.10 cu128: rejected: ships sm_70, sm_75, sm_80, sm_86, sm_90, sm_100, sm_120; "
        "nvidia GPU 1 (NVIDIA GeForce GTX 1080 Ti, compute capability 6.1) is sm_61"
    ) in lines
    assert "  torch 2.10 cu126: fits  <- chosen" in lines
    assert any(
        line.startswith("  torch 2.10 cu130: rejected: needs an NVIDIA driver") for line in lines
    )
    assert f"  torch: from the cu126 index {url}/whl/cu126/" in lines
    assert "Would install:" in run.out and "torch 2.10.0+cu126" in run.out


@pytest.mark.parametrize("how", [["--allow-fallback"], ["--torch-backend", "cpu"]])
def test_an_unsupported_gpu_takes_cpu_only_when_asked(
    fitwheel: Any, url: str, profiles: dict[str, str], how: list[str]
) -> None:
    args = ["torch", "--torch-index-url", f"{url}/whl", "--profile", profiles["gpu-a100-legacy"]]
    if how[0] == "--allow-fallback":
        args += ["--torch-backend", "auto"]
    run = fitwheel(*args, *how, "--dry-run", "--report", "-")
    assert run.rc == 0, run.err
    assert run.pins()["torch"]["version"] == "2.10.0+cpu"
    if how[0] == "--allow-fallback":
        assert "no torch backend runs on the GPU here" in run.err
        assert "NVIDIA A100-PCIE-40GB" in run.err


def test_the_default_index_cuda_build_on_a_cpu_machine_is_flagged(
    fitwheel: Any, profiles: dict[str, str]
) -> None:
    run = fitwheel("torch", "--profile", profiles["nogpu-server"], "--dry-run")
    assert run.rc == 0, run.err
    warning = next(line for line in run.err.splitlines() if "is a CUDA build" in line)
    assert warning.startswith("fitwheel: warning: torch 2.10.0 (torch-2.10.0-cp")
    assert "with 16 GPU runtime packages:" in warning and "kB)" in warning
    assert "the target has no NVIDIA GPU: --torch-backend cpu installs the build" in warning
    explained = fitwheel("torch", "--profile", profiles["nogpu-server"], "--dry-run", "--explain")
    assert f"gpu build without the gpu: {warning.removeprefix('fitwheel: warning: ')}" in (
        explained.out.splitlines()
    )
    # the same on a GPU machine is no news
    quiet = fitwheel("torch", "--profile", profiles["gpu-h100-open"], "--dry-run")
    assert quiet.rc == 0 and "CUDA build" not in quiet.err


def test_a_rocm_build_named_by_hand_on_an_nvidia_machine_is_flagged(
    fitwheel: Any, url: str, profiles: dict[str, str]
) -> None:
    run = fitwheel(
        "torch==2.9.0",
        "--torch-backend",
        "rocm6.4",
        "--torch-index-url",
        f"{url}/whl",
        "--profile",
        profiles["gpu-h100-open"],
        "--dry-run",
    )
    assert run.rc == 0, run.err
    assert "torch 2.9.0+rocm6.4" in run.err and "is a ROCm build" in run.err
    assert "--torch-backend cu128 installs the build that fits" in run.err


def test_one_setting_makes_auto_the_default(
    fitwheel: Any, url: str, profiles: dict[str, str], tmp_path: Path
) -> None:
    assert main(["config", "set", "torch-backend", "auto"]) == 0
    assert main(["config", "set", "torch-index-url", f"{url}/whl"]) == 0
    config = tmp_path / "config" / "fitwheel" / "config.toml"
    assert 'torch-backend = "auto"' in config.read_text()
    h100 = ["torch", "--profile", profiles["gpu-h100-open"], "--dry-run", "--report", "-"]
    run = fitwheel(*h100)
    assert run.rc == 0, run.err
    assert run.pins()["torch"]["version"] == "2.10.0+cu128"
    assert run.report()["torch_backend"]["origin"] == f"{config} [install]"
    # the environment wins over the file, the flag over both
    env = fitwheel(*h100, FITWHEEL_TORCH_BACKEND="cu126")
    assert env.pins()["torch"]["version"] == "2.10.0+cu126"
    flag = fitwheel(*h100, "--torch-backend", "cpu", FITWHEEL_TORCH_BACKEND="cu126")
    assert flag.pins()["torch"]["version"] == "2.10.0+cpu"
    # other projects keep the user's indexes
    other = fitwheel("filelock", "--profile", profiles["gpu-h100-open"], "--dry-run")
    assert other.rc == 0 and "filelock 100.0" in other.out


def test_a_site_setting_counts_and_the_user_one_wins(
    fitwheel: Any, url: str, profiles: dict[str, str], tmp_path: Path
) -> None:
    assert main(["config", "set", "--site", "torch-backend", "cu126"]) == 0
    assert main(["config", "set", "--site", "torch-index-url", f"{url}/whl"]) == 0
    args = ["torch", "--profile", profiles["gpu-h100-open"], "--dry-run", "--report", "-"]
    assert fitwheel(*args).pins()["torch"]["version"] == "2.10.0+cu126"
    assert main(["config", "set", "torch-backend", "cu128"]) == 0
    assert fitwheel(*args).pins()["torch"]["version"] == "2.10.0+cu128"
    assert main(["config", "unset", "torch-backend"]) == 0
    assert fitwheel(*args).pins()["torch"]["version"] == "2.10.0+cu126"


def test_an_unreachable_backend_index_names_the_setting(
    fitwheel: Any, profiles: dict[str, str], tmp_path: Path
) -> None:
    from tests.kit import free_port

    dead = f"http://127.0.0.1:{free_port()}/whl"
    assert main(["config", "set", "torch-backend", "auto"]) == 0
    run = fitwheel(
        "torch",
        "--torch-index-url",
        dead,
        "--profile",
        profiles["nogpu-server"],
        "--dry-run",
    )
    assert run.rc == 1
    config = tmp_path / "config" / "fitwheel" / "config.toml"
    assert f"the torch backend index {dead}/cpu/ cannot be reached" in run.err
    assert f"torch-backend auto comes from {config} [install]" in run.err
    assert "fitwheel config unset torch-backend" in run.err
    assert "Traceback" not in run.err


def test_an_index_without_the_best_backend_falls_to_the_next(
    tmp_path: Path, fitwheel: Any, profiles: dict[str, str]
) -> None:
    partial = build_torch_mirror(
        tmp_path / "partial", ("2.10.0",), skip=[("cu130", "2.10.0")], variant_versions=()
    )
    with serve(partial.root) as (base, _state):
        run = fitwheel(
            "torch",
            "--torch-backend",
            "auto",
            "--torch-index-url",
            f"{base}/whl",
            "--index-url",
            partial.default_index(base),
            "--profile",
            profiles["gpu-rtx5090-igpu"],
            "--dry-run",
            "--explain",
            index=False,
        )
    assert run.rc == 0, run.err
    assert f"  skipped cu130: {base}/whl/cu130/ does not exist (HTTP 404)" in run.out
    assert "torch 2.10.0+cu128" in run.out


@pytest.mark.parametrize("version", ["2.9.0", "2.10.0"])
@pytest.mark.parametrize("name", [*sorted(EXPECTED), *SOME_CPU])
def test_the_variant_index_and_the_backend_index_agree(
    fitwheel: Any, url: str, mirror: TorchMirror, profiles: dict[str, str], name: str, version: str
) -> None:
    common = [f"torch=={version}", "--profile", profiles[name], "--dry-run", "--report", "-"]
    per_backend = fitwheel(*common, "--torch-backend", "auto", "--torch-index-url", f"{url}/whl")
    variants = fitwheel(*common, "--variant-index-url", mirror.variant_index(url), "--explain")
    assert (per_backend.rc == 0) == (variants.rc == 0), (per_backend.err, variants.err)
    if per_backend.rc != 0:
        assert "--allow-fallback" in variants.err
        return
    chosen = per_backend.pins()["torch"]["torch_backend"]
    report = json.loads(variants.out[variants.out.index("{") :])
    torch = next(e for e in report["install"] if e["name"] == "torch")
    assert torch["variant_index"] == mirror.variant_index(url)
    assert backend_of_label(torch["variant_label"]) == chosen
    assert (
        f"  torch: from the variant index {mirror.variant_index(url)} (it publishes variants)"
        in variants.out
    )


def test_a_real_install_on_a_cpu_machine(
    fitwheel: Any, url: str, profiles: dict[str, str], tmp_path: Path
) -> None:
    target = make_venv(tmp_path / "target")
    run = fitwheel(
        "torch",
        "--torch-backend",
        "auto",
        "--torch-index-url",
        f"{url}/whl",
        "--profile",
        profiles["nogpu-server"],
        python=target,
    )
    assert run.rc == 0, run.err
    build = subprocess.run(
        [str(target / "bin" / "python"), "-c", "import torch; print(torch.BUILD)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert build == "cpu"
    assert "Installed:" in run.out and "torch 2.10.0+cpu" in run.out


def test_a_backend_named_by_hand_that_does_not_run_here_is_flagged(
    fitwheel: Any, url: str, profiles: dict[str, str]
) -> None:
    run = fitwheel(
        "torch",
        "--torch-backend",
        "cu128",
        "--torch-index-url",
        f"{url}/whl",
        "--profile",
        profiles["gpu-rtx4090-gtx1080ti"],
        "--dry-run",
        "--explain",
    )
    assert run.rc == 0, run.err
    assert "torch 2.10.0+cu128" in run.out  # the user's choice stands
    assert (
        "fitwheel: warning: --torch-backend cu128 (from --torch-backend) was named by hand, but "
        "its build does not run here: torch 2.10 cu128: ships sm_70"
    ) in run.err
    assert "GTX 1080 Ti, compute capability 6.1) is sm_61; --torch-backend auto" in run.err
    assert "  named by the user: it does not run here (torch 2.10 cu128: ships" in run.out


def test_an_unreachable_variant_index_names_the_setting(
    fitwheel: Any, profiles: dict[str, str]
) -> None:
    from tests.kit import free_port

    dead = f"http://127.0.0.1:{free_port()}/variant/"
    run = fitwheel("torch", "--variant-index-url", dead, "--profile", profiles["nogpu-server"])
    assert run.rc == 1
    assert f"the variant index {dead} cannot be reached" in run.err
    assert "It comes from --variant-index-url" in run.err


def test_no_index_asks_no_backend_index(
    fitwheel: Any, profiles: dict[str, str], tmp_path: Path
) -> None:
    from tests.kit import free_port, make_wheel

    make_wheel(tmp_path / "wheels", "torch", "2.9.0+cpu")
    dead = f"http://127.0.0.1:{free_port()}/whl"
    run = fitwheel(
        "torch",
        "--no-index",
        "--find-links",
        str(tmp_path / "wheels"),
        "--torch-backend",
        "auto",
        "--torch-index-url",
        dead,
        "--profile",
        profiles["nogpu-server"],
        "--dry-run",
        index=False,
    )
    assert run.rc == 0, run.err
    assert "torch 2.9.0+cpu" in run.out


def test_the_unsupported_gpu_error_names_what_matters(
    fitwheel: Any, url: str, profiles: dict[str, str]
) -> None:
    run = auto(fitwheel, url, profiles["gpu-a100-legacy"])
    assert run.rc == 1
    assert run.err.startswith(
        "fitwheel: error: no build of torch 2.10 or 2.9 runs on the GPU here (nvidia GPU 0 "
        "(NVIDIA A100-PCIE-40GB, compute capability 8.0); nvidia GPU 1 (NVIDIA A100-PCIE-40GB, "
        "compute capability 8.0)): cu130: needs an NVIDIA driver for CUDA 13.0 or newer "
        "(>= 580.65.06); the driver here supports CUDA 11.4; cu128: needs"
    )
    assert "AMD" not in run.err and "cpu: None" not in run.err
    container = auto(fitwheel, url, profiles["container-nogpu"])
    assert "no usable NVIDIA driver answers here (in a container, start it with access" in (
        container.err
    )
