"""``fitwheel lock --torch-backend auto`` for an H100, an MI300X and a CPU-only box against a
loopback mirror of PyTorch's per-backend indexes: each target's torch comes from the index of
the backend its own profile calls for (not this machine's), the lock is deterministic whether
the setting comes from the flag, the environment or the settings file, and ``sync`` on each
fixture machine installs that target's build, hash-checked."""

from __future__ import annotations

import json
import tomllib
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.kit import TorchMirror, build_torch_mirror, make_venv, serve, sha256_of, snapshot
from tests.lock.conftest import MACHINES, builds, fitwheel, profile_of

#: target -> (fixture machine, the backend auto gives it, torch release)
TARGETS = {
    "h100": ("gpu-h100-open", "cu128", "2.10.0"),  # 550 driver (CUDA 12.4): no cu130
    "mi300x": ("gpu-mi300x", "rocm6.4", "2.9.0"),  # gfx942, ROCm 6.4: torch 2.10 has ROCm 7 only
    "cpu-x86": ("nogpu-server", "cpu", "2.10.0"),
}


@dataclass
class Locked:
    mirror: TorchMirror
    url: str
    root: Path
    profiles: dict[str, Path]
    lock: Path
    report: dict[str, Any]
    explain: str

    def served(self, url: str) -> str:
        """The sha256 of the file the mirror serves at ``url``."""
        assert url.startswith(self.url + "/")
        return sha256_of(self.mirror.root / urllib.parse.unquote(url[len(self.url) + 1 :]))

    def args(self, output: Path) -> list[str]:
        args = ["lock", "torch", "torchvision", "-o", str(output)]
        args += ["--index-url", self.mirror.default_index(self.url)]
        args += ["--cache-dir", str(self.root / "cache")]
        for name in TARGETS:
            args += ["--profile", str(self.profiles[name])]
        return args


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Locked]:
    root = tmp_path_factory.mktemp("torchlock")
    mirror = build_torch_mirror(root / "mirror", variant_versions=())
    profiles = {
        name: profile_of(MACHINES / machine, root / f"{name}.json")
        for name, (machine, _b, _v) in TARGETS.items()
    }
    with serve(mirror.root) as (url, _state):
        it = Locked(mirror, url, root, profiles, root / "pylock.toml", {}, "")
        done = fitwheel(
            *it.args(it.lock),
            "--torch-backend", "auto", "--torch-index-url", mirror.torch_index(url),
            "--report", str(root / "report.json"), "--explain",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        it.report = json.loads((root / "report.json").read_text())
        it.explain = done.stdout
        yield it


def _entries(lock: Path, name: str) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """target -> (the entry of ``name`` it uses, the wheel it installs)."""
    data = tomllib.loads(lock.read_text())
    out = {}
    for p in data["packages"]:
        if p["name"] != name:
            continue
        for target, filename in p["tool"]["fitwheel"]["targets"].items():
            out[target] = (p, next(w for w in p["wheels"] if w["name"] == filename))
    return out


def test_each_target_takes_torch_from_its_own_backend_index(locked: Locked) -> None:
    base = locked.mirror.torch_index(locked.url)
    for project in ("torch", "torchvision"):
        entries = _entries(locked.lock, project)
        assert set(entries) == set(TARGETS)
        for target, (_machine, backend, version) in TARGETS.items():
            entry, wheel = entries[target]
            assert entry["version"].endswith(f"+{backend}")
            if project == "torch":
                assert entry["version"] == f"{version}+{backend}"
            assert entry["index"] == f"{base}/{backend}/"
            assert wheel["url"].startswith(f"{base}/{backend}/")
            # the URL as the index wrote it: a local version's + percent-encoded
            assert wheel["url"].endswith("/" + urllib.parse.quote(wheel["name"]))
            assert "%2B" in wheel["url"]
            assert wheel["hashes"]["sha256"] == locked.served(wheel["url"])
    data = tomllib.loads(locked.lock.read_text())
    records = {t["name"]: t for t in data["tool"]["fitwheel"]["targets"]}
    for target, (_machine, backend, _version) in TARGETS.items():
        assert records[target]["torch-backend"] == backend
        assert records[target]["torch-backend-requested"] == "auto"
    # the CUDA runtime only where the CUDA build needs it, the ROCm triton only for the MI300X
    runtime = _entries(locked.lock, "nvidia-cuda-runtime-cu12")
    assert set(runtime) == {"h100"}
    assert set(_entries(locked.lock, "pytorch-triton-rocm")) == {"mi300x"}
    assert set(_entries(locked.lock, "triton")) == {"h100"}


def test_explain_and_report_say_which_backend_each_target_got(locked: Locked) -> None:
    base = locked.mirror.torch_index(locked.url)
    by_name = {t["name"]: t for t in locked.report["targets"]}
    lines = locked.explain.splitlines()
    for target, (_machine, backend, version) in TARGETS.items():
        torch = by_name[target]["torch_backend"]
        assert torch["requested"] == "auto" and torch["origin"] == "--torch-backend"
        assert torch["backend"] == backend
        assert torch["index_url"] == f"{base}/{backend}/"
        assert torch["sources"]["torch"] == {
            "kind": "torch-backend", "url": f"{base}/{backend}/", "backend": backend,
        }  # fmt: skip
        pins = {p["name"]: p["version"] for p in by_name[target]["packages"]}
        assert pins["torch"] == f"{version}+{backend}"
        head = f"  torch backend: auto (from --torch-backend) -> {backend}, index {base}/{backend}/"
        at = lines.index(next(line for line in lines if line.startswith(f"target {target} (")))
        assert head in lines[at : at + 3]
    # each target's choice is its own: the H100's driver rules out cu130 there
    assert any(
        line.startswith("    torch 2.10 cu130: rejected: needs an NVIDIA driver") for line in lines
    )


def test_the_lock_is_the_same_from_the_environment_or_the_settings_file(
    locked: Locked, tmp_path: Path
) -> None:
    first = locked.lock.read_text()
    root = locked.mirror.torch_index(locked.url)
    again = tmp_path / "again.toml"
    done = fitwheel(
        *locked.args(again), FITWHEEL_TORCH_BACKEND="auto", FITWHEEL_TORCH_INDEX_URL=root
    )
    assert done.returncode == 0, done.stderr
    assert again.read_text() == first
    config = tmp_path / "config.toml"
    config.write_text(f'[install]\ntorch-backend = "auto"\ntorch-index-url = "{root}"\n')
    third = tmp_path / "third.toml"
    done = fitwheel(*locked.args(third), FITWHEEL_CONFIG=str(config))
    assert done.returncode == 0, done.stderr
    assert third.read_text() == first
    check = fitwheel(*locked.args(locked.lock), "--check", FITWHEEL_CONFIG=str(config))
    assert check.returncode == 0, check.stderr
    # without any torch setting, --check re-locks with the backend and root the lock records
    index = ["--index-url", locked.mirror.default_index(locked.url)]
    common = ["lock", "--check", "-o", str(locked.lock), "--cache-dir", str(tmp_path), *index]
    recorded = fitwheel(*common)
    assert recorded.returncode == 0, recorded.stderr
    # a backend named now wins over the recorded one: the lock is stale
    named = fitwheel(*common, "--torch-backend", "cpu")
    assert named.returncode == 1
    assert "target h100: torch backend cu128 -> cpu" in named.stderr
    assert "torch for h100: 2.10.0+cu128 torch-2.10.0+cu128-" in named.stderr
    assert "-> 2.10.0+cpu torch-2.10.0+cpu-" in named.stderr


@pytest.mark.parametrize("target", list(TARGETS))
def test_sync_on_each_machine_installs_its_backends_build(
    locked: Locked, target: str, tmp_path: Path
) -> None:
    machine, backend, version = TARGETS[target]
    venv = make_venv(tmp_path / "venv")
    report = tmp_path / "report.json"
    # sync reads the locked URLs only (no --index-url, no --torch-backend)
    done = fitwheel(
        "sync", str(locked.lock), "--python", str(venv), "--sysroot", str(MACHINES / machine),
        "--cache-dir", str(tmp_path / "cache"), "--report", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(report.read_text())
    assert data["target"] == target
    installed = builds(venv)
    assert installed["torch"] == installed["torchvision"] == backend
    files = {item["name"]: item for item in data["install"]}
    assert files["torch"]["filename"].startswith(f"torch-{version}+{backend}-")
    for item in data["install"]:
        assert item["sha256"] == locked.served(item["url"])
    names = set(installed)
    assert ("nvidia-cuda-runtime-cu12" in names) == (backend == "cu128")
    assert ("pytorch-triton-rocm" in names) == backend.startswith("rocm")


def test_a_gpu_machine_no_target_was_locked_for_does_not_take_the_cpu_build(
    locked: Locked, tmp_path: Path
) -> None:
    # an RTX 4090 + GTX 1080 Ti box: the cu128 build of the lock lacks Pascal code, and the
    # cpu build would leave both GPUs unused
    venv = make_venv(tmp_path / "venv")
    before = snapshot(venv)
    done = fitwheel(
        "sync", str(locked.lock), "--python", str(venv), "--dry-run",
        "--sysroot", str(MACHINES / "gpu-rtx4090-gtx1080ti"),
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 1, done.stdout
    err = done.stderr
    assert "Traceback" not in err
    assert "h100: its torch 2.10.0+cu128 is the cu128 build, which does not run here: ships" in err
    assert "GTX 1080 Ti" in err and "is sm_61" in err
    assert "cpu-x86: its torch 2.10.0+cpu is the cpu build, which would leave" in err
    assert "the cu126 build runs here (--allow-fallback takes it)" in err and "mi300x:" in err
    assert "--profile this.json" in err
    assert snapshot(venv) == before
    fallback = fitwheel(
        "sync", str(locked.lock), "--python", str(venv), "--dry-run", "--allow-fallback",
        "--sysroot", str(MACHINES / "gpu-rtx4090-gtx1080ti"), "--report", "-",
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert fallback.returncode == 0, fallback.stderr
    assert json.loads(fallback.stdout)["target"] == "cpu-x86"


def test_a_backend_named_by_hand_is_locked_for_every_target_and_synced_as_locked(
    locked: Locked, tmp_path: Path
) -> None:
    lock = tmp_path / "named.toml"
    done = fitwheel(
        "lock", "torch", "-o", str(lock), "--cache-dir", str(tmp_path / "cache"),
        "--index-url", locked.mirror.default_index(locked.url),
        "--torch-backend", "cu128", "--torch-index-url", locked.mirror.torch_index(locked.url),
        "--profile", str(locked.profiles["h100"]), "--profile", str(locked.profiles["cpu-x86"]),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    entries = _entries(lock, "torch")
    assert {t: e["version"] for t, (e, _w) in entries.items()} == {
        "h100": "2.10.0+cu128", "cpu-x86": "2.10.0+cu128",
    }  # fmt: skip
    records = tomllib.loads(lock.read_text())["tool"]["fitwheel"]["targets"]
    assert {r["torch-backend-requested"] for r in records} == {"cu128"}
    # the CPU-only machine gets what was named for it: no check against its hardware
    venv = make_venv(tmp_path / "venv")
    sync = fitwheel(
        "sync", str(lock), "--python", str(venv), "--dry-run", "--report", "-",
        "--sysroot", str(MACHINES / "nogpu-server"), "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert sync.returncode == 0, sync.stderr
    files = {f["name"]: f["filename"] for f in json.loads(sync.stdout)["install"]}
    assert files["torch"].startswith("torch-2.10.0+cu128-")
