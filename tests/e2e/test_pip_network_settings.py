"""pip's network settings (``trusted-host``, ``timeout``, ``retries``) reach every command that
makes requests: ``install`` and ``lock`` reading index pages, ``sync`` downloading locked
files. Each run reads only the pip configuration file it is given (``PIP_CONFIG_FILE``, with
the user and XDG folders pointed into the test's own folder)."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit import build_simple_index, clean_env, make_wheel, self_signed_cert, serve

WHEEL = "app-1.0-py3-none-any.whl"
#: a generous bound for a run whose every request may wait 1 s (the default waits 30 s)
QUICK = 25.0


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    make_wheel(root / "wheels", "app", "1.0")
    build_simple_index(root / "wheels", root / "index")
    return root / "index"


def _env(tmp_path: Path, conf: str | None) -> dict[str, str]:
    """An environment whose only pip configuration is ``conf`` (None: none at all)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = clean_env(HOME=str(home), XDG_CONFIG_HOME=str(home), XDG_CONFIG_DIRS=str(home))
    env["SSL_CERT_FILE"] = ""  # the self-signed certificate is in no trust store
    env["PIP_CERT"] = ""
    if conf is not None:
        path = tmp_path / "pip.conf"
        path.write_text(f"[global]\n{conf}\n")
        env["PIP_CONFIG_FILE"] = str(path)
    return env


def _profile(tmp_path: Path) -> str:
    path = tmp_path / "box.json"
    path.write_text('{"properties": {}}')
    return str(path)


def _run(tmp_path: Path, args: list[str], conf: str | None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fitwheel", *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path, conf),
        cwd=tmp_path,
        timeout=300,
    )


def _resolving(command: str, url: str, tmp_path: Path, venv: Path) -> list[str]:
    """A ``lock`` or ``install --dry-run`` of app from ``url``, with a cache of its own."""
    cache = tmp_path / f"cache-{time.monotonic_ns()}"
    args = [command, "app", "--index-url", f"{url}/simple/", "--cache-dir", str(cache)]
    args += ["--profile", _profile(tmp_path)]
    if command == "lock":
        return [*args, "-o", str(tmp_path / "pylock.toml")]
    return [*args, "--python", str(venv), "--dry-run"]


def _lock_of(url: str, tmp_path: Path, conf: str | None = None) -> Path:
    done = _run(tmp_path, _resolving("lock", url, tmp_path, tmp_path), conf)
    assert done.returncode == 0, done.stderr
    return tmp_path / "pylock.toml"


def _sync(lock: Path, tmp_path: Path, venv: Path) -> list[str]:
    """A ``sync`` of ``lock`` into ``venv``, with a cache of its own (so the file is fetched)."""
    cache = tmp_path / f"sync-cache-{time.monotonic_ns()}"
    args = ["sync", str(lock), "--python", str(venv), "--cache-dir", str(cache)]
    return [*args, "--profile", _profile(tmp_path)]


@pytest.fixture
def https(site: Path, tmp_path: Path) -> Iterator[str]:
    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = self_signed_cert(tmp_path / "tls")
    with serve(site, tls=(cert, key)) as (url, _state):
        yield url


@pytest.mark.parametrize("command", ["lock", "install"])
def test_trusted_host_from_pip_conf_reaches_lock_and_install(
    command: str, https: str, tmp_path: Path, venv: Path
) -> None:
    refused = _run(tmp_path, _resolving(command, https, tmp_path, venv), None)
    assert refused.returncode == 1
    assert "certificate" in refused.stderr
    done = _run(tmp_path, _resolving(command, https, tmp_path, venv), "trusted-host = 127.0.0.1")
    assert done.returncode == 0, done.stderr


def test_trusted_host_from_pip_conf_reaches_sync(https: str, tmp_path: Path, venv: Path) -> None:
    lock = _lock_of(https, tmp_path, "trusted-host = 127.0.0.1")
    refused = _run(tmp_path, _sync(lock, tmp_path, venv), None)
    assert refused.returncode == 1
    assert "certificate" in refused.stderr
    done = _run(tmp_path, _sync(lock, tmp_path, venv), "trusted-host = 127.0.0.1")
    assert done.returncode == 0, done.stderr
    assert list((venv / "lib").glob("python*/site-packages/app-1.0.dist-info"))


def test_trusted_host_flag_reaches_sync(https: str, tmp_path: Path, venv: Path) -> None:
    """sync takes the shared source options: ``--trusted-host`` on its command line too."""
    lock = _lock_of(https, tmp_path, "trusted-host = 127.0.0.1")
    done = _run(tmp_path, [*_sync(lock, tmp_path, venv), "--trusted-host", "127.0.0.1"], None)
    assert done.returncode == 0, done.stderr
    assert list((venv / "lib").glob("python*/site-packages/app-1.0.dist-info"))


@pytest.mark.parametrize("command", ["lock", "install"])
def test_timeout_from_pip_conf_reaches_lock_and_install(
    command: str, site: Path, tmp_path: Path, venv: Path
) -> None:
    with serve(site, stall={"/simple/app/"}) as (url, _state):
        started = time.monotonic()
        done = _run(tmp_path, _resolving(command, url, tmp_path, venv), "timeout = 1\nretries = 0")
        took = time.monotonic() - started
    assert done.returncode == 1
    assert "timed out" in done.stderr and "/simple/app/" in done.stderr
    assert took < QUICK


def test_timeout_from_pip_conf_reaches_sync(site: Path, tmp_path: Path, venv: Path) -> None:
    with serve(site) as (url, state):
        lock = _lock_of(url, tmp_path)
        state.stall.add(f"/files/{WHEEL}")
        started = time.monotonic()
        done = _run(tmp_path, _sync(lock, tmp_path, venv), "timeout = 1\nretries = 0")
        took = time.monotonic() - started
    assert done.returncode == 1
    assert "timed out" in done.stderr and WHEEL in done.stderr
    assert took < QUICK


def _asked(state: Any, path: str) -> int:
    return sum(1 for method, asked, _ in state.requests if asked == path and method == "GET")


@pytest.mark.parametrize("command", ["lock", "install"])
def test_retries_from_pip_conf_reach_lock_and_install(
    command: str, site: Path, tmp_path: Path, venv: Path
) -> None:
    # four failures: one more than the default number of retries
    with serve(site, flaky={"/simple/app/": 4}) as (url, state):
        done = _run(tmp_path, _resolving(command, url, tmp_path, venv), "retries = 4")
    assert done.returncode == 0, done.stderr
    assert _asked(state, "/simple/app/") == 5


def test_retries_from_pip_conf_reach_sync(site: Path, tmp_path: Path, venv: Path) -> None:
    with serve(site) as (url, state):
        lock = _lock_of(url, tmp_path)
        state.flaky[f"/files/{WHEEL}"] = 4
        done = _run(tmp_path, _sync(lock, tmp_path, venv), "retries = 4")
    assert done.returncode == 0, done.stderr
    assert _asked(state, f"/files/{WHEEL}") == 5
