"""One lock for five targets (H100 on CUDA 13, MI300X on ROCm 6.4, Intel Max, a CPU-only x86-64
box, a Graviton): each fixture machine syncs exactly its target's builds, hash-checked; a machine
no profile covers is refused, naming what the lock covers."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.kit import make_venv, sha256_of, snapshot
from tests.lock.conftest import EXPECTED, TARGETS, Fleet, builds, fitwheel


@pytest.mark.parametrize("target", list(TARGETS))
def test_each_machine_syncs_its_targets_builds(fleet: Fleet, target: str, tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    report = tmp_path / "report.json"
    done = fitwheel(
        "sync", str(fleet.lock), "--python", str(venv), "--sysroot", str(fleet.machine(target)),
        "--cache-dir", str(tmp_path / "cache"), "--report", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert builds(venv) == EXPECTED[target]
    data = json.loads(report.read_text())
    assert data["target"] == target
    # every installed file is the locked one, byte for byte
    served = {p.name: sha256_of(p) for p in fleet.wheels.glob("*.whl")}
    for item in data["install"]:
        assert item["sha256"] == served[item["filename"]]
        assert item["action"] == "install"


def test_a_gpu_no_target_covers_is_refused_naming_what_the_lock_covers(
    fleet: Fleet, tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv")
    before = snapshot(venv)
    done = fitwheel(
        "sync", str(fleet.lock), "--python", str(venv),
        "--sysroot", str(fleet.machines["rtx5090-570"]), "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 1
    err = done.stderr
    assert "RTX 5090" in err and "cuda13.0" in err and "cuda_version_lower_bound" in err
    for name in TARGETS:
        assert name in err
    assert "--allow-fallback" in err and "Traceback" not in err
    assert snapshot(venv) == before
    fallback = fitwheel(
        "sync", str(fleet.lock), "--python", str(venv), "--allow-fallback",
        "--sysroot", str(fleet.machines["rtx5090-570"]), "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert fallback.returncode == 0, fallback.stderr
    assert builds(venv) == EXPECTED["cpu-x86"]


def test_sync_removes_what_the_lock_does_not_list_unless_inexact(
    fleet: Fleet, tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv")
    common = ["--python", str(venv), "--cache-dir", str(tmp_path / "cache")]
    h100 = ["--sysroot", str(fleet.machine("h100"))]
    cpu = ["--sysroot", str(fleet.machine("cpu-x86"))]
    assert fitwheel("sync", str(fleet.lock), *common, *h100).returncode == 0
    inexact = fitwheel("sync", str(fleet.lock), *common, *cpu, "--inexact")
    assert inexact.returncode == 0, inexact.stderr
    assert builds(venv) == {**EXPECTED["h100"], **EXPECTED["cpu-x86"]}
    exact = fitwheel("sync", str(fleet.lock), *common, *cpu)
    assert exact.returncode == 0, exact.stderr
    assert "Removed: cuda13-extras, nvidia-runtime" in exact.stdout
    assert builds(venv) == EXPECTED["cpu-x86"]
    again = fitwheel("sync", str(fleet.lock), *common, *cpu)
    assert again.returncode == 0 and "Installed" not in again.stdout


def test_lock_is_deterministic_and_pylock_shaped(fleet: Fleet, tmp_path: Path) -> None:
    again = tmp_path / "again.toml"
    args = ["lock", "torch==2.9.0", "torchvision", "fastops", "-o", str(again)]
    args += ["--index-url", f"{fleet.url}/simple/", "--cache-dir", str(tmp_path / "cache")]
    for name in TARGETS:
        args += ["--profile", str(fleet.profiles[name])]
    done = fitwheel(*args)
    assert done.returncode == 0, done.stderr
    assert again.read_bytes() == fleet.lock.read_bytes()
    data = tomllib.loads(fleet.lock.read_text())
    assert data["lock-version"] == "1.0" and data["requires-python"].startswith(">=3.")
    torch = next(p for p in data["packages"] if p["name"] == "torch")
    labels = {w["name"].rsplit("-", 1)[-1].removesuffix(".whl") for w in torch["wheels"]}
    assert labels == {"cuda13.0", "rocm6.4", "xpu", "null"}
    # pruned to the labels used, each used label complete (as published)
    published = json.loads((fleet.wheels / "torch-2.9.0-variants.json").read_text())
    assert torch["variants-json"]["variants"] == {
        k: v for k, v in published["variants"].items() if k in labels
    }
    assert torch["variants-json"]["$schema"] == published["$schema"]
    for package in data["packages"]:
        assert "variant" not in package.get("marker", "")
        for wheel in package["wheels"]:
            assert len(wheel["hashes"]["sha256"]) == 64
    fastops = next(p for p in data["packages"] if p["name"] == "fastops")
    assert len(fastops["wheels"]) == 2 and "marker" not in fastops
    extras = next(p for p in data["packages"] if p["name"] == "cuda13-extras")
    # only x86-64 targets can use it: the Graviton is excluded by the marker
    assert extras["marker"] == next(
        t["marker"] for t in data["tool"]["fitwheel"]["targets"] if t["name"] == "h100"
    )


def test_sync_explain_and_dry_run(fleet: Fleet, tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    before = snapshot(venv)
    done = fitwheel(
        "sync", str(fleet.lock), "--python", str(venv), "--sysroot", str(fleet.machine("mi300x")),
        "--dry-run", "--explain", "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert "torch 2.9.0: locked builds cuda13.0, null, rocm6.4, xpu" in out
    assert "rocm6.4  <- chosen" in out and "rejected cuda13.0" in out
    assert "target: mi300x" in out and "not h100: it has torch cuda13.0" in out
    assert "Would install: " in out
    assert snapshot(venv) == before


def test_a_gpu_whose_kind_the_lock_never_covered_is_refused(fleet: Fleet, tmp_path: Path) -> None:
    lock = tmp_path / "pylock.toml"
    done = fitwheel(
        "lock", "torch==2.9.0", "--profile", str(fleet.profiles["h100"]),
        "--profile", str(fleet.profiles["cpu-x86"]), "-o", str(lock),
        "--index-url", f"{fleet.url}/simple/", "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    venv = make_venv(tmp_path / "venv")
    refused = fitwheel(
        "sync", str(lock), "--python", str(venv), "--sysroot", str(fleet.machine("mi300x")),
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert refused.returncode == 1
    assert "other GPUs only (cuda13.0 (nvidia priority))" in refused.stderr
    assert "amd GPU 0" in refused.stderr and "h100 (" in refused.stderr
    assert "cpu-x86 (" in refused.stderr
