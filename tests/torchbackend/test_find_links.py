"""Once a torch backend is chosen, a torch-ecosystem project never comes from a find-links folder
(or an extra index) in another backend's build: the machine's pip configuration names a folder
and an index holding a newer ``+cpu`` torch, and ``--torch-backend`` still installs (and locks)
the chosen backend's build, saying what it left out and why. A build of the chosen backend, a
pure-Python wheel, and a wheel the user names on the command line still come through."""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.kit import (
    TorchMirror,
    build_simple_index,
    build_torch_mirror,
    clean_env,
    make_wheel,
)
from tests.kit.torch_mirror import LINUX, PY
from tests.torchbackend.conftest import Run

PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"
H100 = str(PROFILES / "h100.json")  # driver 580: auto chooses cu130
LINUX_TAG = f"{PY}-{PY}-{LINUX}"


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> TorchMirror:
    root = tmp_path_factory.mktemp("mirror")
    mirror = build_torch_mirror(root, variant_versions=())
    # an extra index, as a machine's pip configuration may name, with a newer cpu torch
    staging = tmp_path_factory.mktemp("extra-wheels")
    make_wheel(staging, "torch", "2.13.0+cpu", tag=LINUX_TAG)
    build_simple_index(staging, root / "extra", pages="")
    return mirror


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """The find-links folder the pip configuration names (filled by each test)."""
    path = tmp_path / "find-links"
    path.mkdir()
    return path


@pytest.fixture
def pip_config(tmp_path: Path, folder: Path, url: str) -> Path:
    path = tmp_path / "pip.conf"
    path.write_text(f"[global]\nfind-links = {folder}\nextra-index-url = {url}/extra/\n")
    return path


@pytest.fixture
def fitwheel(
    monkeypatch: pytest.MonkeyPatch,
    hermetic: Callable[[list[str]], Run],
    url: str,
    mirror: TorchMirror,
    venv: Path,
    pip_config: Path,
) -> Any:
    """``fitwheel install --dry-run`` in process with the pip configuration above and nothing
    else of the host's (see ``conftest.hermetic``)."""

    def run(*args: str, backend: str = "auto") -> Run:
        monkeypatch.setenv("PIP_CONFIG_FILE", str(pip_config))
        monkeypatch.setenv("FITWHEEL_CONFIG", os.devnull)
        argv = ["install", *args, "--python", str(venv), "--dry-run"]
        argv += ["--index-url", mirror.default_index(url)]
        argv += ["--torch-backend", backend, "--torch-index-url", mirror.torch_index(url)]
        argv += ["--profile", H100]
        return hermetic(argv)

    return run


@pytest.mark.parametrize("backend", ["auto", "cu130"])
def test_a_cpu_torch_in_find_links_does_not_stand_in_for_the_chosen_backend(
    fitwheel: Any, folder: Path, url: str, backend: str
) -> None:
    make_wheel(folder, "torch", "2.13.0+cpu", tag=LINUX_TAG)
    make_wheel(folder, "torchvision", "0.28.0+cpu", requires=["torch"], tag=LINUX_TAG)
    run = fitwheel("torch", "torchvision", "--report", "-", backend=backend)
    assert run.rc == 0, run.err
    pins = run.pins()
    for name, version in (("torch", "2.10.0+cu130"), ("torchvision", "0.25.0+cu130")):
        assert pins[name]["version"] == version
        assert pins[name]["torch_backend"] == "cu130"
        assert pins[name]["url"].startswith(f"{url}/whl/cu130/")
    assert (
        f"fitwheel: torch 2.13.0+cpu in {folder}: dropped, the cu130 backend was chosen"
        in run.err.splitlines()
    )
    assert f"fitwheel: torchvision 0.28.0+cpu in {folder}: dropped" in run.err
    dropped = run.report()["torch_backend"]["dropped"]
    assert {d["file"] for d in dropped} == {
        f"torch-2.13.0+cpu-{LINUX_TAG}.whl",
        f"torchvision-0.28.0+cpu-{LINUX_TAG}.whl",
    }
    assert all(d["from"] == str(folder) for d in dropped)


def test_explain_says_what_was_dropped_and_why(fitwheel: Any, folder: Path) -> None:
    make_wheel(folder, "torch", "2.13.0+cpu", tag=LINUX_TAG)
    run = fitwheel("torch", "--explain")
    assert run.rc == 0, run.err
    assert (
        f"    dropped torch-2.13.0+cpu-{LINUX_TAG}.whl from {folder}: the cpu build (its local "
        "version); a torch project comes from your find-links only in the cu130 build or as a "
        "pure-Python wheel"
    ) in run.out.splitlines()
    assert "torch 2.10.0+cu130" in run.out


def test_the_cpu_choice_drops_cuda_builds_plain_versions_and_sdists(
    fitwheel: Any, folder: Path, url: str
) -> None:
    make_wheel(folder, "torch", "2.13.0+cu126", tag=LINUX_TAG)
    make_wheel(folder, "torch", "2.12.0", tag=LINUX_TAG)  # the default index's (CUDA) build
    (folder / "torch-2.11.0.tar.gz").write_bytes(b"not read")
    run = fitwheel("torch", "--report", "-", backend="cpu")
    assert run.rc == 0, run.err
    torch = run.pins()["torch"]
    assert torch["version"] == "2.10.0+cpu"
    assert torch["url"].startswith(f"{url}/whl/cpu/")
    lines = run.err.splitlines()
    assert f"fitwheel: torch 2.13.0+cu126 in {folder}: dropped, the cpu backend was chosen" in lines
    plain = next(line for line in lines if line.startswith("fitwheel: torch 2.12.0 in"))
    assert f"(torch-2.12.0-{LINUX_TAG}.whl is a build its name does not name" in plain
    assert "default index's CUDA build" in plain
    source = next(line for line in lines if line.startswith("fitwheel: torch 2.11.0 in"))
    assert "is a source distribution" in source


def test_the_chosen_backends_build_and_pure_wheels_still_come_from_find_links(
    fitwheel: Any, folder: Path
) -> None:
    make_wheel(folder, "torch", "2.13.0+cu130", requires=["filelock"], tag=LINUX_TAG)
    # a pure-Python wheel of a routed project, and a newer pure dependency
    make_wheel(folder, "torchvision", "0.28.1", requires=["torch"])
    make_wheel(folder, "filelock", "900.0")
    run = fitwheel("torch", "torchvision", "--report", "-")
    assert run.rc == 0, run.err
    pins = run.pins()
    assert pins["torch"]["version"] == "2.13.0+cu130"
    assert pins["torchvision"]["version"] == "0.28.1"
    assert pins["filelock"]["version"] == "900.0"
    for name in ("torch", "torchvision", "filelock"):
        assert pins[name]["url"].startswith(folder.as_uri()), name
        assert "torch_backend" not in pins[name]  # not from the backend index
    assert "dropped" not in run.err


@pytest.mark.parametrize("form", ["path", "url"])
def test_a_wheel_named_by_hand_is_installed_with_a_warning(
    fitwheel: Any, tmp_path: Path, folder: Path, form: str
) -> None:
    own = make_wheel(tmp_path / "mine", "torch", "2.13.0+cpu", tag=LINUX_TAG)
    named = str(own) if form == "path" else f"torch @ {own.resolve().as_uri()}"
    run = fitwheel(named, "--report", "-", backend="cu130")
    assert run.rc == 0, run.err
    torch = run.pins()["torch"]
    assert torch["version"] == "2.13.0+cpu"
    assert torch["url"] == own.resolve().as_uri()
    assert "torch_backend" not in torch
    warning = next(line for line in run.err.splitlines() if line.startswith("fitwheel: warning:"))
    assert f"torch 2.13.0+cpu ({own.resolve()}) is the cpu build" in warning
    assert "the cu130 backend was chosen (from --torch-backend)" in warning
    assert "dropped" not in run.err


def _lock(
    tmp_path: Path, pip_config: Path, mirror: TorchMirror, url: str, *args: str
) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "fitwheel", "lock", *args, "-o", str(tmp_path / "pylock.toml")]
    argv += ["--index-url", mirror.default_index(url), "--profile", H100]
    argv += ["--torch-index-url", mirror.torch_index(url)]
    argv += ["--cache-dir", str(tmp_path / "cache"), "--explain"]
    env = clean_env(PIP_CONFIG_FILE=str(pip_config))
    return subprocess.run(argv, capture_output=True, text=True, env=env)


def test_lock_locks_the_chosen_backends_build(
    tmp_path: Path, folder: Path, pip_config: Path, mirror: TorchMirror, url: str
) -> None:
    make_wheel(folder, "torch", "2.13.0+cpu", tag=LINUX_TAG)
    done = _lock(tmp_path, pip_config, mirror, url, "torch", "--torch-backend", "auto")
    assert done.returncode == 0, done.stderr
    lock = tomllib.loads((tmp_path / "pylock.toml").read_text())
    torch = next(p for p in lock["packages"] if p["name"] == "torch")
    assert torch["version"] == "2.10.0+cu130"
    assert torch["index"] == f"{mirror.torch_index(url)}/cu130/"
    assert "dropped, the cu130 backend was chosen" in done.stderr
    assert f"fitwheel: target h100: torch 2.13.0+cpu in {folder}: dropped" in done.stderr
    assert f"dropped torch-2.13.0+cpu-{LINUX_TAG}.whl from {folder}" in done.stdout


def test_a_lock_that_only_another_backend_could_satisfy_says_what_was_dropped(
    tmp_path: Path, folder: Path, pip_config: Path, mirror: TorchMirror, url: str
) -> None:
    make_wheel(folder, "torch", "2.13.0+cpu", tag=LINUX_TAG)
    done = _lock(tmp_path, pip_config, mirror, url, "torch==2.13.0", "--torch-backend", "cu130")
    assert done.returncode != 0
    assert f"(torch 2.13.0+cpu in {folder}: dropped, the cu130 backend was chosen)" in (done.stderr)


def test_a_version_only_another_backend_has_fails_and_says_what_was_dropped(
    fitwheel: Any, folder: Path
) -> None:
    make_wheel(folder, "torch", "2.13.0+cpu", tag=LINUX_TAG)
    run = fitwheel("torch==2.13.0", backend="cu130")
    assert run.rc != 0
    assert f"fitwheel: torch 2.13.0+cpu in {folder}: dropped, the cu130 backend was chosen" in (
        run.err.splitlines()
    )
