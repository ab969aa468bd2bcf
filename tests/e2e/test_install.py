"""Whole ``fitwheel install`` runs against a static variant index served on 127.0.0.1, with the
published torch/torchvision variants files and stand-in wheels, into real virtual environments."""

import hashlib
import json
import shutil
import socket
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fitwheel.publish.index_build import build_index
from tests.kit import (
    FIXTURES,
    H100,
    KEPLER,
    clean_env,
    make_wheel,
    serve,
    sha256_of,
    snapshot,
    torch_like,
)

FITWHEEL = [sys.executable, "-m", "fitwheel"]

CPU: dict[str, Any] = {"properties": {}}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    wheels = root / "wheels"
    torch_like(wheels, "torch", "2.9.0")
    torch_like(wheels, "torchvision", "0.24.0", deps=("torch==2.9.0",), extra_projects=False)
    make_wheel(wheels, "requests-lite", "1.0", requires=["filelock"])
    for stray in wheels.glob("*-variants.json"):
        stray.unlink()  # the index build derives its own; the published files replace them below
    build_index(wheels, root / "out")
    for name, version in (("torch", "2.9.0"), ("torchvision", "0.24.0")):
        (built,) = (root / "out" / "files").rglob(f"{name}-{version}-variants.json")
        before = hashlib.sha256(built.read_bytes()).hexdigest()
        shutil.copy(FIXTURES / built.name, built)
        after = hashlib.sha256(built.read_bytes()).hexdigest()
        # the pages publish each file's hash, which fitwheel checks: publish the new one
        for page in (root / "out" / "simple").rglob("index.*"):
            page.write_text(page.read_text().replace(before, after))
    return root / "out"


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    with serve(site) as (url, _state):
        yield url


def user_files(venv: Path) -> dict[str, str]:
    """The environment's files, without fitwheel's own lock and journal folder."""
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


def profile(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    return str(path)


def fitwheel(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"), FITWHEEL_DETECT_TIMEOUT="1")
    return subprocess.run(
        [*FITWHEEL, "install", *args], capture_output=True, text=True, env=env, timeout=300
    )


def from_index(
    tmp_path: Path, server: str, venv: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``fitwheel install ARGS`` from the test index into ``venv``."""
    return fitwheel(tmp_path, *args, "--index-url", f"{server}/simple/", "--python", str(venv))


def build_of(venv: Path, module: str) -> str:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import {module}; print({module}.BUILD)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_gpu_machine_gets_matching_cuda_builds_with_report(
    tmp_path: Path, server: str, venv: Path, site: Path
) -> None:
    report = tmp_path / "report.json"
    done = from_index(
        tmp_path,
        server,
        venv,
        "torchvision",
        "--profile",
        profile(tmp_path, H100),
        "--report",
        str(report),
    )
    assert done.returncode == 0, done.stderr
    assert build_of(venv, "torch") == "cuda13.0"
    assert build_of(venv, "torchvision") == "cuda13.0"
    entries = {e["name"]: e for e in json.loads(report.read_text())["install"]}
    assert set(entries) == {"torch", "torchvision", "filelock", "nvidia-runtime", "cuda13-extras"}
    tv = entries["torchvision"]
    assert tv["requested"] is True and entries["torch"]["requested"] is False
    assert tv["variant_label"] == "cuda13.0"
    assert tv["variant_properties"]["nvidia"]["cuda_version_lower_bound"] == ["13.0"]
    assert (
        entries["filelock"]["variant_label"] is None
        and entries["filelock"]["variant_properties"] == {}
    )
    (wheel,) = site.rglob(tv["filename"])
    assert tv["sha256"] == sha256_of(wheel)
    assert tv["url"].startswith(server)


def test_cpu_machine_gets_the_null_builds(tmp_path: Path, server: str, venv: Path) -> None:
    done = from_index(
        tmp_path,
        server,
        venv,
        "torchvision",
        "--profile",
        profile(tmp_path, CPU),
    )
    assert done.returncode == 0, done.stderr
    assert build_of(venv, "torch") == "null"
    assert "Installed:" in done.stdout
    listed = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import importlib.metadata as m; "
            "print(sorted(d.metadata['Name'] for d in m.distributions()))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "nvidia-runtime" not in listed
    again = from_index(
        tmp_path,
        server,
        venv,
        "torchvision",
        "--profile",
        profile(tmp_path, CPU),
    )
    assert again.returncode == 0, again.stderr
    assert (
        "Already installed: filelock 1.0, torch 2.9.0 [null], torchvision 0.24.0 [null]"
        in again.stdout
    )
    assert "Installed:" not in again.stdout


def test_unsupported_gpu_fails_loudly_and_changes_nothing(
    tmp_path: Path, server: str, venv: Path
) -> None:
    before = user_files(venv)
    done = from_index(
        tmp_path,
        server,
        venv,
        "torch",
        "--profile",
        profile(tmp_path, KEPLER),
    )
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, "one paragraph"
    for part in ("Tesla K40", "35_real", "cuda12.6", "cuda13.0", "--allow-fallback"):
        assert part in done.stderr
    assert user_files(venv) == before
    fallback = from_index(
        tmp_path,
        server,
        venv,
        "torch",
        "--profile",
        profile(tmp_path, KEPLER),
        "--allow-fallback",
    )
    assert fallback.returncode == 0, fallback.stderr
    assert build_of(venv, "torch") == "null"


def test_explain_and_dry_run(tmp_path: Path, server: str, venv: Path) -> None:
    before = user_files(venv)
    done = from_index(
        tmp_path,
        server,
        venv,
        "torch",
        "--profile",
        profile(tmp_path, H100),
        "--dry-run",
        "--explain",
        "--report",
        "-",
    )
    assert done.returncode == 0, done.stderr
    explain, _, report = done.stdout.partition("{")
    assert "torch 2.9.0: variants from" in explain and "torch-2.9.0-variants.json" in explain
    assert "rejected xpu: intel" in explain
    assert "rejected rocm6.4: amd" in explain
    assert "nvidia (sysfs+nvml)" in explain
    data = json.loads("{" + report)
    assert [e["variant_label"] for e in data["install"] if e["name"] == "torch"] == ["cuda13.0"]
    assert user_files(venv) == before


def test_no_variants_and_forced_variant(tmp_path: Path, server: str, venv: Path) -> None:
    done = from_index(
        tmp_path,
        server,
        venv,
        "torch",
        "--no-variants",
    )
    assert done.returncode == 0, done.stderr
    assert build_of(venv, "torch") == "plain"
    done = from_index(
        tmp_path,
        server,
        venv,
        "torch",
        "--profile",
        profile(tmp_path, CPU),
        "--variant",
        "torch=cuda12.6",
    )
    assert done.returncode == 0, done.stderr
    assert build_of(venv, "torch") == "cuda12.6"
    assert "Replaced: torch 2.9.0" in done.stdout


def test_missing_or_unreachable_index_is_an_error(tmp_path: Path, server: str, venv: Path) -> None:
    done = fitwheel(
        tmp_path,
        "torch",
        "--index-url",
        f"{server}/simpel/",
        "--python",
        str(venv),
        "--no-variants",
    )
    assert done.returncode == 1
    assert f"{server}/simpel" in done.stderr and "404" in done.stderr
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    done = fitwheel(
        tmp_path,
        "torch",
        "--index-url",
        f"http://127.0.0.1:{port}/simple/",
        "--python",
        str(venv),
        "--no-variants",
    )
    assert done.returncode == 1
    assert "cannot be reached" in done.stderr and "Traceback" not in done.stderr


def test_require_hashes(tmp_path: Path, server: str, venv: Path, site: Path) -> None:
    (wheel,) = site.rglob("requests_lite-1.0-py3-none-any.whl")
    (dep,) = site.rglob("filelock-1.0-py3-none-any.whl")
    reqs = tmp_path / "req.txt"
    reqs.write_text(f"requests-lite==1.0 --hash=sha256:{sha256_of(wheel)}\n")
    args = [
        "--index-url",
        f"{server}/simple/",
        "--python",
        str(venv),
        "--no-variants",
        "--require-hashes",
    ]
    done = fitwheel(tmp_path, "-r", str(reqs), *args)
    assert done.returncode == 1 and "filelock" in done.stderr  # a dependency without a hash
    reqs.write_text(
        f"requests-lite==1.0 --hash=sha256:{sha256_of(wheel)}\n"
        f"filelock==1.0 --hash=sha256:{'0' * 64}\n"
    )
    before = user_files(venv)
    done = fitwheel(tmp_path, "-r", str(reqs), *args)
    assert done.returncode == 1 and "hash" in done.stderr
    assert user_files(venv) == before
    reqs.write_text(
        f"requests-lite==1.0 --hash=sha256:{sha256_of(wheel)}\n"
        f"filelock==1.0 --hash=sha256:{sha256_of(dep)}\n"
    )
    done = fitwheel(tmp_path, "-r", str(reqs), *args)
    assert done.returncode == 0, done.stderr


def test_local_wheel_file_and_usage_errors(tmp_path: Path, venv: Path) -> None:
    wheel = make_wheel(tmp_path / "w", "solo", "1.0", files={"solo.py": "BUILD = 'solo'\n"})
    done = fitwheel(tmp_path, str(wheel), "--no-index", "--python", str(venv), "--no-variants")
    assert done.returncode == 0, done.stderr
    assert build_of(venv, "solo") == "solo"
    site_packages = next((venv / "lib").glob("python*/site-packages"))
    direct = json.loads((site_packages / "solo-1.0.dist-info" / "direct_url.json").read_text())
    assert direct["url"] == wheel.resolve().as_uri()
    assert fitwheel(tmp_path, "x", "--variant", "nolabel", "--python", str(venv)).returncode == 2
    no_env = fitwheel(tmp_path, "x", "--no-index", "--no-variants")
    assert no_env.returncode == 1 and "--python" in no_env.stderr


def test_a_wheel_file_with_no_cache_dir_and_compile_leaves_nothing_behind(
    tmp_path: Path, venv: Path
) -> None:
    """``--no-cache-dir``: the temporary cache and the transaction folder are gone afterwards;
    ``--compile``: the byte-code is listed in RECORD, and uninstalling removes it."""
    wheel = make_wheel(tmp_path / "w", "solo", "1.0", files={"solo/__init__.py": "BUILD = 1\n"})
    temp = tmp_path / "tmp"
    temp.mkdir()
    env = clean_env(TMPDIR=str(temp), FITWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    args = ["--no-index", "--no-variants", "--no-cache-dir", "--compile", "--python", str(venv)]
    done = subprocess.run(
        [*FITWHEEL, "install", *args, str(wheel)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert list(temp.iterdir()) == []
    assert not (tmp_path / "cache").exists()
    assert sorted(p.name for p in (venv / ".fitwheel").iterdir()) == ["lock"]
    site = next((venv / "lib").glob("python*/site-packages"))
    (pyc,) = (site / "solo" / "__pycache__").glob("__init__.*.pyc")
    record = (site / "solo-1.0.dist-info" / "RECORD").read_text()
    assert f"{pyc.relative_to(site).as_posix()},,\n" in record
    gone = subprocess.run(
        [*FITWHEEL, "uninstall", "--python", str(venv), "-y", "solo"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert gone.returncode == 0, gone.stderr
    assert not list(site.glob("solo*"))


def test_installed_wheels_are_valid_for_uv(tmp_path: Path, server: str, venv: Path) -> None:
    done = from_index(
        tmp_path,
        server,
        venv,
        "requests-lite",
        "--no-variants",
    )
    assert done.returncode == 0, done.stderr
    uv = Path(sys.executable).with_name("uv")
    check = subprocess.run(
        [str(uv), "pip", "check", "--python", str(venv)],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert check.returncode == 0, check.stdout + check.stderr
    _ = zipfile  # wheels are inspected through the index build


def test_force_reinstall_repairs_a_cache_file_edited_through_a_link(
    tmp_path: Path, base_venv: Path
) -> None:
    wheel = make_wheel(tmp_path / "w", "solo", "1.0", files={"solo/__init__.py": "V = 1\n"})
    first, second = tmp_path / "first", tmp_path / "second"
    for target in (first, second):
        subprocess.run(["cp", "-a", str(base_venv), str(target)], check=True)
    args = ("solo", "--no-index", "--find-links", str(wheel.parent))
    assert fitwheel(tmp_path, *args, "--python", str(first)).returncode == 0
    # edited in place in the first environment: the cached copy is the same file
    installed = next(first.glob("lib/python*/site-packages/solo/__init__.py"))
    with installed.open("w") as handle:
        handle.write("V = 'edited'\n")
    done = fitwheel(tmp_path, *args, "--force-reinstall", "--python", str(second))
    assert done.returncode == 0, done.stderr
    again = next(second.glob("lib/python*/site-packages/solo/__init__.py"))
    assert again.read_text() == "V = 1\n"
