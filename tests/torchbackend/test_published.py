"""``--torch-backend auto`` against the "2.15 mirror": torch releases newer than fitwheel's
backend table, on backends it lacks (``rocm7.2``) or has no release data for (``cu132``), with
cu128 and rocm7.1 stopping at 2.11. The choice follows what the indexes publish."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.kit.torch_mirror import TorchMirror, build_published_mirror
from tests.torchbackend.conftest import Run, write_profiles

MACHINES = [
    "gpu-h100-open@580",
    "gpu-a100-legacy@535",
    "gpu-rtx4090-gtx1080ti",
    "gpu-intel-max",
    "x86-kvm-qemu64-guest",
    "gpu-rtx5090-igpu@570",
    "gpu-mi355x-rocm7",
]


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> TorchMirror:
    return build_published_mirror(tmp_path_factory.mktemp("mirror"))


@pytest.fixture(scope="module")
def profiles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return write_profiles(tmp_path_factory.mktemp("profiles"), MACHINES)


@pytest.fixture
def fitwheel(hermetic: Callable[[list[str]], Run]) -> Any:
    """``fitwheel`` in process, hermetic (see ``conftest.hermetic``)."""

    def run(*argv: str) -> Run:
        return hermetic(list(argv))

    return run


def install(fitwheel: Any, url: str, profile: str, *extra: str, venv: Path) -> Run:
    run: Run = fitwheel(
        "install",
        *(extra or ("torch",)),
        "--torch-backend",
        "auto",
        "--torch-index-url",
        f"{url}/whl",
        "--index-url",
        f"{url}/pypi/simple/",
        "--profile",
        profile,
        "--python",
        str(venv),
        "--dry-run",
        "--report",
        "-",
    )
    return run


@pytest.mark.parametrize(
    ("name", "backends", "version"),
    [
        # a 580 driver runs every CUDA build; cu132 is known by name only, cu130 by its 2.10
        ("gpu-h100-open@580", ("cu132", "cu130"), "2.15.0"),
        # a 535 driver (CUDA 12.2): CUDA 12 builds only, and cu128 stops at 2.11
        ("gpu-a100-legacy@535", ("cu126",), "2.15.0"),
        # sm_61 beside sm_89: only cu126 ships Pascal code
        ("gpu-rtx4090-gtx1080ti", ("cu126",), "2.15.0"),
        ("gpu-intel-max", ("xpu",), "2.15.0"),
        ("x86-kvm-qemu64-guest", ("cpu",), "2.15.0"),
        # sm_120 on a 570 driver: cu126 lacks Blackwell, cu130/cu132 need 580: 2.11's cu128
        ("gpu-rtx5090-igpu@570", ("cu128",), "2.11.0"),
    ],
)
def test_the_newest_published_release_with_a_fitting_build_wins(
    fitwheel: Any,
    url: str,
    venv: Path,
    profiles: dict[str, str],
    name: str,
    backends: tuple[str, ...],
    version: str,
) -> None:
    run = install(fitwheel, url, profiles[name], venv=venv)
    assert run.rc == 0, run.err
    torch = run.torch()
    assert torch["torch_backend"] in backends
    assert torch["version"] == f"{version}+{torch['torch_backend']}"
    assert torch["url"].startswith(f"{url}/whl/{torch['torch_backend']}/")
    upgrade = "torch 2.15.0 needs NVIDIA driver >= 580.65.06 (cu132, cu130)"
    if name == "gpu-rtx5090-igpu@570":
        assert f"fitwheel: {upgrade}; the driver here supports CUDA 12.8" in run.err
        assert "torch 2.11.0 (cu128) is the newest that runs here: update the driver" in run.err
    else:
        assert "needs NVIDIA driver" not in run.err


def test_a_pinned_release_that_needs_a_newer_driver_says_so(
    fitwheel: Any, url: str, venv: Path, profiles: dict[str, str]
) -> None:
    run = install(fitwheel, url, profiles["gpu-rtx5090-igpu@570"], "torch==2.15.0", venv=venv)
    assert run.rc == 1
    assert (
        "fitwheel: error: torch 2.15.0 needs NVIDIA driver >= 580.65.06 (cu132, cu130); the "
        "driver here supports CUDA 12.8: update the driver or pin torch<2.12."
    ) in run.err
    assert "has no torch wheel" not in run.err


def test_explain_marks_what_was_extrapolated(
    fitwheel: Any, url: str, venv: Path, profiles: dict[str, str]
) -> None:
    run = fitwheel(
        "install",
        "torch",
        "--torch-backend",
        "auto",
        "--torch-index-url",
        f"{url}/whl",
        "--index-url",
        f"{url}/pypi/simple/",
        "--profile",
        profiles["gpu-h100-open@580"],
        "--python",
        str(venv),
        "--dry-run",
        "--explain",
    )
    assert run.rc == 0, run.err
    assert "torch 2.15 cu132: fits  <- chosen (extrapolated from cu130 2.10)" in run.out
    assert "torch 2.15 cu130: fits (extrapolated from cu130 2.10)" in run.out
    assert "torch 2.15.0+cu132" in run.out
    assert "torch 2.10" not in run.out


def test_a_rocm_release_the_table_lacks_is_found_on_the_index_root(
    fitwheel: Any, url: str, venv: Path, profiles: dict[str, str]
) -> None:
    # ROCm 7.0.2 here: rocm7.2 (listed by the index root only) and rocm7.1 need other ROCm
    run = install(fitwheel, url, profiles["gpu-mi355x-rocm7"], venv=venv)
    assert run.rc == 1
    assert "rocm7.2: needs ROCm 7.2; ROCm 7.0" in run.err


def test_a_broken_cached_table_is_told_and_the_bundled_one_used(
    fitwheel: Any, url: str, venv: Path, profiles: dict[str, str], tmp_path: Path
) -> None:
    cached = tmp_path / "cache" / "torch_backends.json"
    cached.parent.mkdir(parents=True)
    cached.write_text("garbage")
    run = install(fitwheel, url, profiles["gpu-a100-legacy@535"], venv=venv)
    assert run.rc == 0, run.err
    assert f"fitwheel: warning: the cached torch backend table {cached} cannot be read" in run.err
    assert "run `fitwheel torch refresh` to rewrite it" in run.err
    assert run.torch()["version"] == "2.15.0+cu126"
    assert json.loads(run.out)["torch_backend"]["table"] == "the bundled table"
