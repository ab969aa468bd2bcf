"""Detection and install keep their caches in the fixed subfolders of one cache root."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit import clean_env, make_venv, make_wheel

FITWHEEL = [sys.executable, "-m", "fitwheel"]
SUBFOLDERS = {"wheels", "unpacked", "http", "envs", "detect"}


def test_detection_and_install_caches_share_one_root(tmp_path: Path) -> None:
    if not Path("/proc/sys/kernel/random/boot_id").exists():
        pytest.skip("detection caches nothing without a boot id")
    cache = tmp_path / "cache"
    env = clean_env(FITWHEEL_CACHE_DIR=str(cache), FITWHEEL_DETECT_TIMEOUT="1")
    detected = subprocess.run(
        [*FITWHEEL, "detect", "--json"], capture_output=True, text=True, env=env, timeout=120
    )
    assert detected.returncode == 0, detected.stderr
    wheel = make_wheel(tmp_path / "wheels", "solo", "1.0", files={"solo.py": "X = 1\n"})
    venv = make_venv(tmp_path / "venv")
    args = ["solo", "--no-index", "--find-links", str(wheel.parent), "--python", str(venv)]
    installed = subprocess.run(
        [*FITWHEEL, "install", *args, "--no-variants"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert installed.returncode == 0, installed.stderr
    names = {p.name for p in cache.iterdir()}
    assert names <= SUBFOLDERS, names - SUBFOLDERS
    assert {"detect", "envs", "unpacked"} <= names
    assert all(p.is_dir() for p in cache.iterdir())
    assert list((cache / "detect").iterdir())
