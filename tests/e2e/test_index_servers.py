"""Installs from real index servers: ``pypiserver`` and ``devpi-server``, started on 127.0.0.1
for the module (each under ``timeout``, so none outlives the run), filled by uploads over their
HTTP APIs (plain wheels, variant wheels and an sdist), then installed from on the fixture
profiles. Neither server serves a ``*-variants.json`` file, so fitwheel reads each variant
wheel's own ``variant.json`` (PEP 825), and ``--explain`` says so. A server that cannot start
here skips its tests with the reason."""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit import (
    H100,
    KEPLER,
    BackendsUnavailable,
    backend_wheels,
    clean_env,
    free_port,
    make_sdist,
    make_venv,
    make_wheel,
)

FITWHEEL = [sys.executable, "-m", "fitwheel"]
BIN = Path(sys.executable).parent
#: how long a server may live (seconds): the whole module, with room to spare
LIFETIME = 900
CUDA = {"nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["90_real"]}}


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    out = tmp_path_factory.mktemp("upload")
    files = [
        make_wheel(out, "gpu-demo", "1.0", label="cu12", variant=CUDA, requires=["helper-lib"]),
        make_wheel(out, "gpu-demo", "1.0"),
        make_wheel(out, "helper-lib", "2.0"),
    ]
    try:
        wheels = backend_wheels()
    except BackendsUnavailable:
        return files
    files += [w for w in wheels.glob("setuptools-*.whl")]
    files.append(make_sdist(out, "source-only", "0.5", requires=["helper-lib"]))
    return files


def _wait(url: str, proc: subprocess.Popen[bytes], log: Path, deadline: float) -> None:
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.skip(f"the server exited at start: {log.read_text()[-800:]}")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except (urllib.error.URLError, OSError):
            time.sleep(0.3)
    proc.kill()
    pytest.skip(f"the server did not answer {url} in time: {log.read_text()[-800:]}")


def _start(cmd: list[str], url: str, log: Path, start_within: float) -> subprocess.Popen[bytes]:
    with log.open("wb") as handle:
        proc = subprocess.Popen(
            ["timeout", str(LIFETIME), *cmd],
            stdout=handle,
            stderr=subprocess.STDOUT,
            env=clean_env(),
        )
    _wait(url, proc, log, time.monotonic() + start_within)
    return proc


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _multipart(fields: dict[str, str], file: Path) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    parts = []
    for key, value in fields.items():
        head = f'--{boundary}\r\nContent-Disposition: form-data; name="{key}"\r\n\r\n'
        parts.append(f"{head}{value}\r\n".encode())
    parts.append(
        (
            f'--{boundary}\r\nContent-Disposition: form-data; name="content"; '
            f'filename="{file.name}"\r\nContent-Type: application/octet-stream\r\n\r\n'
        ).encode()
        + file.read_bytes()
        + b"\r\n"
    )
    parts.append(f"--{boundary}--\r\n".encode())
    return b"".join(parts), f"multipart/form-data; boundary={boundary}"


def _name_version(file: Path) -> tuple[str, str]:
    if file.name.endswith(".whl"):
        name, version = file.name.split("-")[:2]
    else:
        name, version = file.name[: -len(".tar.gz")].rsplit("-", 1)
    return name, version


def upload(url: str, file: Path, headers: dict[str, str] | None = None) -> None:
    name, version = _name_version(file)
    body, ctype = _multipart(
        {
            ":action": "file_upload",
            "name": name,
            "version": version,
            "protocol_version": "1",
            "metadata_version": "2.1",
            "filetype": "bdist_wheel" if file.name.endswith(".whl") else "sdist",
            "pyversion": "py3" if file.name.endswith(".whl") else "source",
        },
        file,
    )
    request = urllib.request.Request(
        url, data=body, headers={"Content-Type": ctype, **(headers or {})}, method="POST"
    )
    with urllib.request.urlopen(request, timeout=30) as resp:
        assert resp.status in (200, 201), resp.read()


@pytest.fixture(scope="module")
def pypiserver(tmp_path_factory: pytest.TempPathFactory, dists: list[Path]) -> Iterator[str]:
    exe = BIN / "pypi-server"
    if not exe.exists():
        pytest.skip("pypiserver is not installed (it is in the test extra)")
    root = tmp_path_factory.mktemp("pypiserver")
    (root / "packages").mkdir()
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [str(exe), "run", "-i", "127.0.0.1", "-p", str(port), "-a", ".", "-P", "."]
    proc = _start([*cmd, str(root / "packages")], f"{base}/simple/", root / "log", 60)
    try:
        for file in dists:
            upload(f"{base}/", file)
        yield f"{base}/simple/"
    finally:
        _stop(proc)


@pytest.fixture(scope="module")
def devpi(tmp_path_factory: pytest.TempPathFactory, dists: list[Path]) -> Iterator[str]:
    exe = BIN / "devpi-server"
    if not exe.exists():
        pytest.skip("devpi-server is not installed (it is in the test extra)")
    root = tmp_path_factory.mktemp("devpi")
    serverdir = root / "server"
    # devpi's own tests lower the password hashing cost the same way (hidden options)
    cheap = ["--argon2-memory-cost", "8", "--argon2-parallelism", "1", "--argon2-time-cost", "1"]
    init = subprocess.run(
        [str(BIN / "devpi-init"), "--serverdir", str(serverdir), "--no-root-pypi"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=120,
        check=False,
    )
    if init.returncode != 0:
        pytest.skip(f"devpi-init failed: {(init.stdout + init.stderr)[-800:]}")
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    cmd = [str(exe), "--serverdir", str(serverdir), "--host", "127.0.0.1", "--port", str(port)]
    proc = _start([*cmd, *cheap], f"{base}/+api", root / "log", 120)
    try:
        login = urllib.request.Request(
            f"{base}/+login",
            data=json.dumps({"user": "root", "password": ""}).encode(),
            headers={"Content-Type": "application/json", "Accept": "application/json"},
            method="POST",
        )
        with urllib.request.urlopen(login, timeout=30) as resp:
            token = json.load(resp)["result"]["password"]
        auth = {
            "X-Devpi-Auth": base64.b64encode(f"root:{token}".encode()).decode(),
            "Accept": "application/json",
        }
        create = urllib.request.Request(
            f"{base}/root/dev",
            data=json.dumps({"type": "stage", "bases": [], "volatile": True}).encode(),
            headers={"Content-Type": "application/json", **auth},
            method="PUT",
        )
        with urllib.request.urlopen(create, timeout=30):
            pass
        for file in dists:
            upload(f"{base}/root/dev/", file, auth)
        yield f"{base}/root/dev/+simple/"
    finally:
        _stop(proc)


def _profile(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    return str(path)


def install(tmp_path: Path, index: str, venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"), FITWHEEL_DETECT_TIMEOUT="1")
    return subprocess.run(
        [*FITWHEEL, "install", "--index-url", index, "--python", str(venv), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )


def build_of(venv: Path) -> str:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import gpu_demo; print(gpu_demo.BUILD)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.strip()


@pytest.fixture(params=["pypiserver", "devpi"])
def server(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue(request.param))


def test_variant_wheels_from_the_wheels_own_variant_json(
    tmp_path: Path, server: str, venv: Path
) -> None:
    gpu = install(
        tmp_path, server, venv, "gpu-demo", "--profile", _profile(tmp_path, H100), "--explain"
    )
    assert gpu.returncode == 0, gpu.stderr
    assert build_of(venv) == "cu12"
    assert "gpu-demo 1.0: variants from the wheels' own variant.json" in gpu.stdout
    assert "the index serves no gpu_demo-1.0-variants.json" in gpu.stdout
    assert "helper-lib 2.0" in gpu.stdout
    # a GPU the build does not support gets the plain wheel only when told so
    other = make_venv(tmp_path / "kepler")
    old = install(
        tmp_path,
        server,
        other,
        "gpu-demo",
        "--profile",
        _profile(tmp_path, KEPLER),
        "--allow-fallback",
    )
    assert old.returncode == 0, old.stderr
    assert build_of(other) == "plain"


def test_an_sdist_from_the_server_is_built(
    tmp_path: Path, server: str, venv: Path, dists: list[Path]
) -> None:
    if not any(p.name.startswith("setuptools-") for p in dists):
        pytest.skip("the build backend's wheel could not be downloaded for this run")
    proc = install(tmp_path, server, venv, "source-only", "--no-variants")
    assert proc.returncode == 0, proc.stderr
    assert "source-only 0.5" in proc.stdout and "helper-lib 2.0" in proc.stdout
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import source_only; print(source_only.__version__)"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "0.5"
