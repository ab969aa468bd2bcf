"""Tampered locks and failing servers: each refused, naming the entry, the environment as it was;
a sync killed with SIGKILL at any step of its commit leaves the environment before or after."""

from __future__ import annotations

import os
import random
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.install.place.core import install_wheels
from tests.kit import make_venv, serve, snapshot
from tests.lock.conftest import EXPECTED, Fleet, builds, fitwheel

CHILD = Path(__file__).with_name("child_sync.py")


@pytest.fixture(scope="module")
def synced_cpu(fleet: Fleet, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv holding the CPU target's set (what a faulty H100 sync must leave alone)."""
    venv = make_venv(tmp_path_factory.mktemp("cpu") / "venv")
    done = fitwheel(
        "sync", str(fleet.lock), "--python", str(venv),
        "--sysroot", str(fleet.machine("cpu-x86")), "--cache-dir", str(fleet.root / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return venv


@pytest.fixture
def venv(synced_cpu: Path, tmp_path: Path) -> Path:
    target = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(synced_cpu), str(target)], check=True)
    return target


@pytest.fixture
def index(fleet: Fleet, tmp_path: Path) -> Path:
    copy = tmp_path / "index"
    shutil.copytree(fleet.index, copy)
    return copy


@pytest.fixture
def server(index: Path) -> Iterator[tuple[str, dict[str, int]]]:
    fail: dict[str, int] = {}
    with serve(index, fail=fail) as (url, _state):
        yield url, fail


def _lock(fleet: Fleet, tmp_path: Path, url: str, edit: str | None = None) -> Path:
    text = fleet.lock.read_text().replace(fleet.url, url)
    path = tmp_path / "pylock.toml"
    path.write_text(text if edit is None else edit)
    return path


def _sync(fleet: Fleet, lock: Path, venv: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    return fitwheel(
        "sync", str(lock), "--python", str(venv), "--sysroot", str(fleet.machine("h100")),
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip


TORCH_CUDA = "torch-2.9.0-py3-none-any-cuda13.0.whl"


def _refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("fitwheel: error: "), done.stderr
    assert "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, (word, done.stderr)


def test_changed_hash(
    fleet: Fleet, venv: Path, server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    url, _fail = server
    text = _lock(fleet, tmp_path, url).read_text()
    digest = re.search(rf"{re.escape(TORCH_CUDA)}\", hashes = {{ sha256 = \"([0-9a-f]+)\"", text)
    assert digest is not None
    edited = text.replace(digest.group(1), "0" * 64)
    before = snapshot(venv)
    _refused(
        _sync(fleet, _lock(fleet, tmp_path, url, edited), venv, tmp_path), "torch 2.9.0", TORCH_CUDA
    )
    assert snapshot(venv) == before


def test_swapped_url(
    fleet: Fleet, venv: Path, server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    url, _fail = server
    text = _lock(fleet, tmp_path, url).read_text()
    rocm = "torch-2.9.0-py3-none-any-rocm6.4.whl"
    edited = text.replace(f'files/{TORCH_CUDA}"', f'files/{rocm}"', 1)
    assert edited != text
    before = snapshot(venv)
    _refused(
        _sync(fleet, _lock(fleet, tmp_path, url, edited), venv, tmp_path),
        "(torch 2.9.0)",
        TORCH_CUDA,
    )
    assert snapshot(venv) == before


def test_same_name_other_bytes(
    fleet: Fleet, venv: Path, server: tuple[str, dict[str, int]], index: Path, tmp_path: Path
) -> None:
    url, _fail = server
    # the server now has another file under the locked name
    target = index / "files" / TORCH_CUDA
    shutil.copyfile(index / "files" / "torch-2.9.0-py3-none-any-rocm6.4.whl", target)
    before = snapshot(venv)
    _refused(
        _sync(fleet, _lock(fleet, tmp_path, url), venv, tmp_path),
        "(torch 2.9.0)",
        TORCH_CUDA,
        "sha256",
    )
    assert snapshot(venv) == before


def test_entry_without_hashes(
    fleet: Fleet, venv: Path, server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    url, _fail = server
    text = _lock(fleet, tmp_path, url).read_text()
    edited = re.sub(
        rf"({re.escape(TORCH_CUDA)}\"), hashes = {{ sha256 = \"[0-9a-f]+\" }}", r"\1", text
    )
    assert edited != text
    before = snapshot(venv)
    _refused(
        _sync(fleet, _lock(fleet, tmp_path, url, edited), venv, tmp_path),
        "(torch 2.9.0)",
        TORCH_CUDA,
        "no hashes",
    )
    assert snapshot(venv) == before


def test_truncated_download(
    fleet: Fleet, venv: Path, server: tuple[str, dict[str, int]], index: Path, tmp_path: Path
) -> None:
    url, _fail = server
    served = index / "files" / TORCH_CUDA
    served.write_bytes(served.read_bytes()[:-100])
    before = snapshot(venv)
    _refused(_sync(fleet, _lock(fleet, tmp_path, url), venv, tmp_path), "(torch 2.9.0)", TORCH_CUDA)
    assert snapshot(venv) == before


def test_404_for_one_locked_file(
    fleet: Fleet, venv: Path, server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    url, fail = server
    fail["/files/nvidia_runtime-1.0-py3-none-any.whl"] = 404
    before = snapshot(venv)
    _refused(
        _sync(fleet, _lock(fleet, tmp_path, url), venv, tmp_path), "(nvidia-runtime 1.0)", "404"
    )
    assert snapshot(venv) == before


def test_invalid_toml(
    fleet: Fleet, venv: Path, server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    url, _fail = server
    text = _lock(fleet, tmp_path, url).read_text()
    edited = text.replace('name = "torch"', 'name = "torch', 1)
    before = snapshot(venv)
    _refused(
        _sync(fleet, _lock(fleet, tmp_path, url, edited), venv, tmp_path), "not valid TOML", "line"
    )
    assert snapshot(venv) == before


def _child(
    lock: Path, venv: Path, sysroot: Path, cache: Path, kill_at: int
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), str(lock), str(venv), str(sysroot), str(cache), str(kill_at)],
        capture_output=True,
        text=True,
        env={**os.environ, "PIP_CONFIG_FILE": os.devnull},
    )


def test_kill_9_during_sync_leaves_before_or_after(
    fleet: Fleet, venv: Path, tmp_path: Path
) -> None:
    before = builds(venv)
    cache = tmp_path / "cache"
    sysroot = fleet.machine("h100")
    scratch = tmp_path / "scratch"
    subprocess.run(["cp", "-a", str(venv), str(scratch)], check=True)
    done = _child(fleet.lock, scratch, sysroot, cache, -1)
    assert done.returncode == 0, done.stderr
    steps = int(done.stdout.split()[-2])
    assert builds(scratch) == EXPECTED["h100"]
    seed = int(os.environ.get("FITWHEEL_TEST_SEED", "825"))
    points = sorted({0, steps - 1, *random.Random(seed).sample(range(steps), min(3, steps))})
    for kill_at in points:
        killed = _child(fleet.lock, venv, sysroot, cache, kill_at)
        assert killed.returncode == -9, killed.stderr
        # the next run on the environment recovers before doing anything else
        install_wheels(inspect_environment(str(venv), {}), [])
        assert builds(venv) in (before, EXPECTED["h100"]), f"killed at step {kill_at} of {steps}"
        back = _child(fleet.lock, venv, fleet.machine("cpu-x86"), cache, -1)
        assert back.returncode == 0, back.stderr
        assert builds(venv) == before


def test_sync_asks_the_server_for_the_locked_files_only(
    fleet: Fleet, venv: Path, index: Path, tmp_path: Path
) -> None:
    with serve(index) as (url, state):
        lock = _lock(fleet, tmp_path, url)
        done = _sync(fleet, lock, venv, tmp_path)
        assert done.returncode == 0, done.stderr
        asked = sorted(path for method, path, _headers in state.requests)
    locked = sorted(
        f"/files/{name}"
        for name in (
            "cuda13_extras-1.0-py3-none-any.whl",
            "nvidia_runtime-1.0-py3-none-any.whl",
            TORCH_CUDA,
            "torchvision-0.24.0-py3-none-any-cuda13.0.whl",
        )
    )
    # no page, no metadata, no variants file; filelock and fastops (installed as locked already)
    # not at all
    assert asked == locked
    assert builds(venv) == EXPECTED["h100"]


def test_sync_on_a_terminal_shows_download_progress(
    fleet: Fleet, venv: Path, server: tuple[str, dict[str, int]], tmp_path: Path
) -> None:
    """On a terminal, sync draws a progress bar per locked file it downloads (and takes it
    down before the summary); the same sync with -q draws none."""
    import pty

    from tests.kit import clean_env
    from tests.lock.conftest import FITWHEEL

    url, _fail = server
    lock = _lock(fleet, tmp_path, url)

    def on_a_terminal(python: Path, *extra: str) -> tuple[int, bytes]:
        main, child = pty.openpty()
        args = [
            *FITWHEEL, "sync", str(lock), "--python", str(python),
            "--sysroot", str(fleet.machine("h100")), "--cache-dir", str(tmp_path / f"c{extra}"),
            *extra,
        ]  # fmt: skip
        proc = subprocess.Popen(args, stdin=child, stdout=child, stderr=child, env=clean_env())
        os.close(child)
        drawn = b""
        while True:
            try:
                chunk = os.read(main, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            drawn += chunk
        os.close(main)
        return proc.wait(timeout=120), drawn

    other = tmp_path / "other-venv"
    subprocess.run(["cp", "-a", str(venv), str(other)], check=True)
    code, drawn = on_a_terminal(venv)
    assert code == 0, drawn.decode(errors="replace")
    assert TORCH_CUDA.encode() in drawn  # the bar names the file it downloads
    assert b"Installed" in drawn
    code, quiet = on_a_terminal(other, "-q")
    assert code == 0, quiet.decode(errors="replace")
    assert TORCH_CUDA.encode() not in quiet
    assert inspect_environment(str(other), {}).installed().keys() == (
        inspect_environment(str(venv), {}).installed().keys()
    )
