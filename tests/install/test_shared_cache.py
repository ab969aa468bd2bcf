"""One cache shared by many processes and environments, and a cache that has been damaged."""

import base64
import csv
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fitwheel.paths import CacheLayout
from tests.kit import build_simple_index, clean_env, make_wheel, serve_static

FITWHEEL = [sys.executable, "-m", "fitwheel"]


def _copy_venv(base: Path, target: Path) -> Path:
    subprocess.run(["cp", "-a", str(base), str(target)], check=True)
    return target


def _site(venv: Path) -> Path:
    return next((venv / "lib").glob("python*/site-packages"))


def _record_matches(venv: Path, dist_info: str) -> None:
    """Every RECORD row of the installed distribution matches its file."""
    site = _site(venv)
    rows = list(csv.reader((site / dist_info / "RECORD").read_text().splitlines()))
    checked = 0
    for path, digest, size in rows:
        if not digest:
            continue
        data = (site / path).read_bytes()
        algo, _, value = digest.partition("=")
        assert algo == "sha256"
        expect = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert value == expect, f"{path} does not match RECORD in {venv}"
        assert int(size) == len(data)
        checked += 1
    assert checked >= 1000


def _damage(cache: Path) -> list[Path]:
    """A truncated file and a same-size garbage file in every unpacked entry."""
    damaged = []
    for entry in CacheLayout(cache).unpacked.glob("??/" + "?" * 64):
        files = sorted(p for p in (entry / "files").rglob("*.py") if p.stat().st_size > 4)
        truncated, garbage = files[3], files[7]
        truncated.write_bytes(truncated.read_bytes()[:2])
        garbage.write_bytes(b"#" * garbage.stat().st_size)
        damaged += [truncated, garbage]
    return damaged


@pytest.fixture(scope="module")
def big_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("big")
    files = {f"big/p{i % 40}/m{i}.py": f"VALUE = {i}\n" + "# pad\n" * (i % 9) for i in range(2000)}
    return make_wheel(out, "big", "1.0", files={**files, "big/__init__.py": ""})


def test_four_processes_three_rounds_share_one_cache(
    base_venv: Path, tmp_path: Path, big_wheel: Path
) -> None:
    cache = tmp_path / "cache"
    venvs = [_copy_venv(base_venv, tmp_path / f"env{i}") for i in range(4)]
    env = clean_env(FITWHEEL_CACHE_DIR=str(cache))
    for round_ in range(3):
        if round_ == 2:
            _damage(cache)  # every process finds the entry damaged at once
        extra = ["--force-reinstall"] if round_ else []
        procs = [
            subprocess.Popen(
                [*FITWHEEL, "install", "--no-index", str(big_wheel), "--python", str(v), *extra],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            for v in venvs
        ]
        for proc in procs:
            _out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, err
        for venv in venvs:
            _record_matches(venv, "big-1.0.dist-info")
    # the entry is whole again, and no process left a private copy behind
    assert not list((CacheLayout(cache).unpacked / "tmp").iterdir())
    done = subprocess.run([*FITWHEEL, "cache", "verify"], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_damaged_unpacked_entry_is_never_installed(
    base_venv: Path, tmp_path: Path, big_wheel: Path
) -> None:
    cache = tmp_path / "cache"
    env = clean_env(FITWHEEL_CACHE_DIR=str(cache))
    first = _copy_venv(base_venv, tmp_path / "first")
    install = [*FITWHEEL, "install", "--no-index", str(big_wheel)]
    subprocess.run([*install, "--python", str(first)], check=True, env=env, capture_output=True)
    truncated, garbage = _damage(cache)
    # verify names both; the first environment's files are hard links to the cache, so they
    # changed too: a reinstall puts them right
    done = subprocess.run([*FITWHEEL, "cache", "verify"], capture_output=True, text=True, env=env)
    assert done.returncode == 1
    assert "damaged" in done.stdout and done.stderr.count("fitwheel: error:") == 1
    # sizes are checked on every install: the truncated file makes the entry a miss
    second = _copy_venv(base_venv, tmp_path / "second")
    done = subprocess.run([*install, "--python", str(second)], capture_output=True, env=env)
    assert done.returncode == 0, done.stderr
    _record_matches(second, "big-1.0.dist-info")
    # same-size garbage is caught by the hashes of --force-reinstall
    garbage.write_bytes(b"#" * garbage.stat().st_size)
    done = subprocess.run(
        [*install, "--python", str(first), "--force-reinstall"], capture_output=True, env=env
    )
    assert done.returncode == 0, done.stderr
    _record_matches(first, "big-1.0.dist-info")
    assert (
        subprocess.run([*FITWHEEL, "cache", "verify"], env=env, capture_output=True).returncode == 0
    )
    assert truncated.exists()


@pytest.mark.parametrize("damage", ["truncated", "garbage"])
def test_a_damaged_cached_wheel_is_downloaded_again(
    base_venv: Path, tmp_path: Path, damage: str
) -> None:
    wheels = tmp_path / "wheels"
    wheel = make_wheel(wheels, "small", "1.0", files={"small/__init__.py": "S = 1\n"})
    index = build_simple_index(wheels, tmp_path / "site")
    cache = tmp_path / "cache"
    env = clean_env(FITWHEEL_CACHE_DIR=str(cache))
    with serve_static(index.parent) as url:
        args = ["--index-url", f"{url}/simple/", "small"]
        venv = _copy_venv(base_venv, tmp_path / "a")
        done = subprocess.run(
            [*FITWHEEL, "install", *args, "--python", str(venv)], capture_output=True, env=env
        )
        assert done.returncode == 0, done.stderr
        layout = CacheLayout(cache)
        subprocess.run(["rm", "-rf", str(layout.unpacked)], check=True)
        (cached,) = layout.wheels.glob(f"??/*/{wheel.name}")
        size = cached.stat().st_size
        cached.write_bytes(
            cached.read_bytes()[: size // 2] if damage == "truncated" else b"x" * size
        )
        again = _copy_venv(base_venv, tmp_path / "b")
        done = subprocess.run(
            [*FITWHEEL, "install", *args, "--python", str(again)],
            capture_output=True,
            text=True,
            env=env,
        )
        assert done.returncode == 0, done.stderr
        assert "BadZipFile" not in done.stderr and "internal error" not in done.stderr
        assert cached.read_bytes() == wheel.read_bytes()
        assert (_site(again) / "small" / "__init__.py").read_text() == "S = 1\n"


def test_cache_commands(base_venv: Path, tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w", "tiny", "1.0", files={"tiny/__init__.py": "T = 1\n"})
    cache = tmp_path / "cache"
    env = clean_env(FITWHEEL_CACHE_DIR=str(cache))
    venv = _copy_venv(base_venv, tmp_path / "venv")
    subprocess.run(
        [*FITWHEEL, "install", "--no-index", str(wheel), "--python", str(venv)],
        check=True,
        env=env,
        capture_output=True,
    )

    def cache_cmd(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*FITWHEEL, "cache", *args], capture_output=True, text=True, env=env)

    assert cache_cmd("dir").stdout.strip() == str(cache)
    assert "unpacked" in cache_cmd("info").stdout
    assert cache_cmd("verify").returncode == 0
    (entry,) = CacheLayout(cache).unpacked.glob("??/" + "?" * 64)
    (entry / "files" / "tiny" / "__init__.py").write_text("T = 2\n")  # same size, other bytes
    done = cache_cmd("verify")
    assert done.returncode == 1 and "tiny/__init__.py" in done.stdout
    done = cache_cmd("clean")
    assert done.returncode == 0 and f"removed: {entry}" in done.stdout
    assert not entry.exists() and cache_cmd("verify").returncode == 0
    assert cache_cmd("prune", "--older-than", "0").returncode == 0
    parts = json.loads(cache_cmd("info", "--json").stdout)["parts"]
    assert parts["wheels"]["entries"] == parts["unpacked"]["entries"] == 0
