"""uv 0.13.8's ``--torch-backend auto`` on the fixture machines, against the same loopback mirror.

uv asks PyTorch's download host and nothing else, so the test answers for that host through an
HTTPS proxy on 127.0.0.1 (``tests.kit.impersonate``) serving the mirror; the hardware is told
with uv's own override variables (``UV_CUDA_DRIVER_VERSION``, ``UV_AMD_GPU_ARCHITECTURE``).
uv has no override for Intel GPUs, so those rows of docs/torch-backends.md are derived from its
documented rule (XPU whenever an Intel GPU is present). These are the rows of that table.
"""

from __future__ import annotations

import os
import subprocess
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest

from fitwheel.torchbackend.table import DEFAULT_INDEX_URL
from tests.kit import UV, TorchMirror, build_torch_mirror, impersonate, make_venv, serve

pytestmark = pytest.mark.slow
#: the host uv asks (the default of --torch-index-url is on the same one)
HOST = str(urllib.parse.urlsplit(DEFAULT_INDEX_URL).hostname)

#: machine -> (uv's override variables, the torch build uv chooses)
UV_CASES: dict[str, tuple[dict[str, str], str]] = {
    # the driver alone decides: cu129 is the newest index whose minimum driver is met, and
    # the first index with torch wins, so an older torch from it beats a newer one elsewhere
    "gpu-h100-open": ({"UV_CUDA_DRIVER_VERSION": "550.54.15"}, "2.8.0+cu129"),
    "gpu-rtx4090-gtx1080ti": ({"UV_CUDA_DRIVER_VERSION": "570.133.07"}, "2.8.0+cu129"),
    "gpu-rtx5090-igpu": ({"UV_CUDA_DRIVER_VERSION": "580.82.07"}, "2.10.0+cu130"),
    "gpu-rtx5090-igpu@570": ({"UV_CUDA_DRIVER_VERSION": "570.133.07"}, "2.8.0+cu129"),
    "wsl2-rtx3080": ({"UV_CUDA_DRIVER_VERSION": "560.94"}, "2.8.0+cu129"),
    # the host's driver file is visible in the container, the GPU is not
    "container-nogpu": ({"UV_CUDA_DRIVER_VERSION": "535.183.01"}, "2.8.0+cu129"),
    # no CUDA 12/13 index takes a 470 driver; the mirror has no cu118 (the real one has
    # torch 2.7.1+cu118 there, which uv would take)
    "gpu-a100-legacy": ({"UV_CUDA_DRIVER_VERSION": "470.82.01"}, "2.10.0+cpu"),
    # the architecture alone decides; the installed ROCm is not looked at
    "gpu-mi300x": ({"UV_AMD_GPU_ARCHITECTURE": "gfx942"}, "2.10.0+rocm7.1"),
    "gpu-radeon-igpu": ({"UV_AMD_GPU_ARCHITECTURE": "gfx1100"}, "2.10.0+rocm7.1"),
    "gpu-mi355x-rocm7": ({"UV_AMD_GPU_ARCHITECTURE": "gfx950"}, "2.10.0+rocm7.1"),
    # no GPU (this host has none, and nothing is forced)
    "nogpu-server": ({}, "2.10.0+cpu"),
}


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> TorchMirror:
    return build_torch_mirror(
        tmp_path_factory.mktemp("mirror"), ("2.8.0", "2.9.0", "2.10.0"), variant_versions=()
    )


@pytest.fixture(scope="module")
def uv_env(
    mirror: TorchMirror, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, str]]:
    workdir = tmp_path_factory.mktemp("proxy")
    with (
        serve(mirror.root) as (url, _),
        impersonate(mirror.root, HOST, workdir) as (
            proxy,
            ca,
            _seen,
        ),
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "UV_"))}
        env.update(
            UV_NO_CONFIG="1",
            UV_NO_CACHE="1",
            HTTPS_PROXY=proxy,
            NO_PROXY="127.0.0.1",
            SSL_CERT_FILE=str(ca),
            MIRROR=mirror.default_index(url),
        )
        yield env


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("venv") / "venv")


def uv_choice(env: dict[str, str], venv: Path, overrides: dict[str, str]) -> str:
    proc = subprocess.run(
        [
            str(UV),
            *("pip", "install", "--dry-run", "--python", str(venv), "torch"),
            *("--torch-backend", "auto", "--index-url", env["MIRROR"]),
        ],
        capture_output=True,
        text=True,
        env={**env, **overrides},
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith(" + torch==")]
    return line.removeprefix(" + torch==")


@pytest.mark.skipif(not UV.exists(), reason="uv is not installed")
@pytest.mark.parametrize("machine", sorted(UV_CASES))
def test_uv_torch_backend_auto(uv_env: dict[str, str], venv: Path, machine: str) -> None:
    overrides, expected = UV_CASES[machine]
    assert uv_choice(uv_env, venv, overrides) == expected
