"""``bundle``: the files of some targets, the lock and a static index in one folder; syncing from
it needs no network, and served by nginx it feeds a fleet of machines syncing at once."""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.kit import clean_env, make_venv, nginx_binary, serve_nginx, snapshot
from tests.lock.conftest import EXPECTED, FITWHEEL, Fleet, builds, fitwheel

BUNDLED = ("h100", "mi300x", "cpu-x86", "graviton")
DEAD = "http://127.0.0.1:9"


@pytest.fixture(scope="module")
def bundle_dir(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("bundle") / "bundle"
    args = ["bundle", str(fleet.lock), "-o", str(out), "--cache-dir", str(fleet.root / "cache")]
    for name in BUNDLED:
        args += ["--profile", str(fleet.profiles[name])]
    done = fitwheel(*args)
    assert done.returncode == 0, done.stderr
    return out


def _user_view(venv: Path) -> dict[str, str]:
    """The venv's files but fitwheel's own lock file (which any run on it creates once)."""
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel/")}


def _dead(lock: Path, fleet: Fleet, out: Path) -> Path:
    """``lock`` with every URL pointing at a port nothing listens on."""
    out.write_text(lock.read_text().replace(fleet.url, DEAD))
    return out


def test_bundle_holds_the_targets_files_the_lock_and_an_index(
    fleet: Fleet, bundle_dir: Path
) -> None:
    data = tomllib.loads((bundle_dir / "pylock.toml").read_text())
    paths = {w["name"]: w.get("path") for p in data["packages"] for w in p["wheels"]}
    # every bundled target's files are in the bundle; the Intel build was not asked for
    assert paths["torch-2.9.0-py3-none-any-xpu.whl"] is None
    for name in (
        "torch-2.9.0-py3-none-any-cuda13.0.whl",
        "fastops-1.0-py3-none-manylinux_2_17_aarch64.whl",
    ):
        assert paths[name] is not None and (bundle_dir / paths[name]).is_file()
    assert (bundle_dir / "simple" / "torch" / "index.html").is_file()
    assert list((bundle_dir / "files" / "torch").glob("torch-2.9.0-variants.json"))


def test_sync_from_a_bundle_needs_no_network(
    fleet: Fleet, bundle_dir: Path, tmp_path: Path
) -> None:
    copy = tmp_path / "bundle"
    subprocess.run(["cp", "-a", str(bundle_dir), str(copy)], check=True)
    _dead(copy / "pylock.toml", fleet, copy / "pylock.toml")
    venv = make_venv(tmp_path / "venv")
    done = fitwheel(
        "sync", str(copy), "--python", str(venv), "--sysroot", str(fleet.machine("mi300x")),
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert builds(venv) == EXPECTED["mi300x"]
    # the plain lock, its files found by name in the bundle, --offline
    other = make_venv(tmp_path / "other")
    lock = _dead(fleet.lock, fleet, tmp_path / "pylock.toml")
    offline = fitwheel(
        "sync", str(lock), "--python", str(other), "--sysroot", str(fleet.machine("graviton")),
        "--find-links", str(copy), "--offline", "--cache-dir", str(tmp_path / "cache2"),
    )  # fmt: skip
    assert offline.returncode == 0, offline.stderr
    assert builds(other) == EXPECTED["graviton"]
    # a target the bundle lacks is refused offline, naming the missing file
    intel = make_venv(tmp_path / "intel")
    before = _user_view(intel)
    missing = fitwheel(
        "sync", str(lock), "--python", str(intel), "--sysroot", str(fleet.machine("intel-max")),
        "--find-links", str(copy), "--offline", "--cache-dir", str(tmp_path / "cache3"),
    )  # fmt: skip
    assert missing.returncode == 1
    assert "torch-2.9.0-py3-none-any-xpu.whl" in missing.stderr and "--offline" in missing.stderr
    assert _user_view(intel) == before


@pytest.mark.skipif(nginx_binary() is None, reason="nginx is not installed")
def test_fleet_rehearsal_four_machines_sync_at_once_from_nginx(
    fleet: Fleet, bundle_dir: Path, tmp_path: Path
) -> None:
    lock = _dead(fleet.lock, fleet, tmp_path / "pylock.toml")
    with serve_nginx(bundle_dir, tmp_path / "nginx", negotiate=True) as url:
        procs = {}
        venvs = {}
        for name in BUNDLED:
            venvs[name] = make_venv(tmp_path / name)
            procs[name] = subprocess.Popen(
                [*FITWHEEL, "sync", str(lock), "--python", str(venvs[name]),
                 "--sysroot", str(fleet.machine(name)), "--index-url", f"{url}/simple/",
                 "--cache-dir", str(tmp_path / f"cache-{name}")],
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=clean_env(),
            )  # fmt: skip
        for name, proc in procs.items():
            _out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, (name, err)
    for name in BUNDLED:
        assert builds(venvs[name]) == EXPECTED[name], name
