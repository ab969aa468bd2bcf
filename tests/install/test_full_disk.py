"""A full disk, as the environment or as the cache: one error naming the path, the filesystem
and "no space left", and the environment exactly as before.

The tests mount a small tmpfs, so they run only as root (they are skipped otherwise)."""

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit import build_simple_index, clean_env, make_wheel, serve_static, snapshot

FITWHEEL = [sys.executable, "-m", "fitwheel", "install"]


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 3 MiB tmpfs."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root")
    point = tmp_path / "small"
    point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(point)], capture_output=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield point
    finally:
        subprocess.run(["umount", "-l", str(point)], check=False)


@pytest.fixture(scope="module")
def big_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("big")
    files = {f"bulky/blob{i}.bin": os.urandom(1 << 20) for i in range(5)}
    return make_wheel(out, "bulky", "1.0", files={**files, "bulky/__init__.py": ""})


def _one_error(stderr: str) -> str:
    assert stderr.count("fitwheel: error:") == 1, stderr
    assert "Traceback" not in stderr and "could not reach" not in stderr, stderr
    return stderr


def test_a_full_environment(
    base_venv: Path, tmp_path: Path, small_disk: Path, big_wheel: Path
) -> None:
    venv = small_disk / "venv"
    subprocess.run(["cp", "-a", str(base_venv), str(venv)], check=True)
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    small = make_wheel(tmp_path / "w", "small", "1.0")
    args = ["--no-index", "--python", str(venv)]
    assert subprocess.run([*FITWHEEL, str(small), *args], env=env).returncode == 0
    before = snapshot(venv)
    for link_mode in ("hardlink", "copy"):
        done = subprocess.run(
            [*FITWHEEL, str(big_wheel), *args, "--link-mode", link_mode],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 1
        err = _one_error(done.stderr)
        assert "no space left on device" in err and str(small_disk) in err and "tmpfs" in err
        assert f"the environment {venv}" in err
        assert snapshot(venv) == before


def test_a_full_cache_while_unpacking(
    base_venv: Path, tmp_path: Path, small_disk: Path, big_wheel: Path
) -> None:
    venv = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(base_venv), str(venv)], check=True)
    before = snapshot(venv)
    env = clean_env(FITWHEEL_CACHE_DIR=str(small_disk / "cache"))
    done = subprocess.run(
        [*FITWHEEL, "--no-index", str(big_wheel), "--python", str(venv)],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 1
    err = _one_error(done.stderr)
    assert "the unpacked-wheel cache" in err and "no space left on device" in err
    assert str(small_disk) in err and "--cache-dir" in err
    after = {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}
    assert after == {k: v for k, v in before.items() if not k.startswith(".fitwheel")}


def test_a_full_cache_while_downloading(
    base_venv: Path, tmp_path: Path, small_disk: Path, big_wheel: Path
) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    (wheels / big_wheel.name).write_bytes(big_wheel.read_bytes())
    index = build_simple_index(wheels, tmp_path / "site")
    venv = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(base_venv), str(venv)], check=True)
    env = clean_env(FITWHEEL_CACHE_DIR=str(small_disk / "cache"))
    with serve_static(index.parent) as url:
        done = subprocess.run(
            [*FITWHEEL, "--index-url", f"{url}/simple/", "bulky", "--python", str(venv)],
            capture_output=True,
            text=True,
            env=env,
        )
    assert done.returncode == 1
    err = _one_error(done.stderr)
    assert "cannot write" in err and "no space left on device" in err.lower()
    assert str(small_disk) in err and "--cache-dir" in err
