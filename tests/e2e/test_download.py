"""Whole ``fitwheel download`` runs against indexes served on 127.0.0.1: plain wheels for this
machine (the files ``pip download`` picks), the variant wheels an H100 profile takes, torch for
a Windows CUDA box from a mirror of PyTorch's per-backend indexes, and the refusals (a project
with source distributions only, a folder that cannot hold the files, a file of the same name
with other contents)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.kit import (
    build_simple_index,
    build_torch_mirror,
    clean_env,
    make_sdist,
    make_wheel,
    serve,
    sha256_of,
    torch_like,
)
from tests.kit.torch_mirror import PY, add_platform_builds

FITWHEEL = [sys.executable, "-m", "fitwheel"]
PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"


@dataclass
class Site:
    root: Path
    url: str

    @property
    def index(self) -> str:
        return f"{self.url}/simple/"

    def download(self, *args: str) -> subprocess.CompletedProcess[str]:
        cmd = [*FITWHEEL, "download", *args, "--index-url", self.index]
        cmd += ["--cache-dir", str(self.root / "cache")]
        return subprocess.run(cmd, capture_output=True, text=True, env=clean_env())


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    root = tmp_path_factory.mktemp("download")
    wheels = root / "wheels"
    make_wheel(wheels, "app", "1.0", requires=["dep>=2", "winonly; sys_platform == 'win32'"])
    make_wheel(wheels, "dep", "1.0")
    make_wheel(wheels, "dep", "2.0")
    make_wheel(wheels, "dep", "2.0", tag=f"{PY}-{PY}-manylinux_2_17_x86_64")
    make_wheel(wheels, "winonly", "1.0")
    make_wheel(wheels, "needs-source", "1.0", requires=["srconly"])
    make_sdist(wheels, "srconly", "1.0")
    torch_like(wheels)
    build_simple_index(wheels, root / "index")
    with serve(root / "index") as (url, _state):
        yield Site(root, url)


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_this_machine_gets_the_files_pip_download_picks(site: Site, tmp_path: Path) -> None:
    ours, pips = tmp_path / "ours", tmp_path / "pip"
    done = site.download("app", "-d", str(ours))
    assert done.returncode == 0, done.stderr
    pip = [sys.executable, "-m", "pip", "download", "-q", "--index-url", site.index]
    pip += ["--no-cache-dir", "-d", str(pips), "app"]
    ran = subprocess.run(pip, capture_output=True, text=True, env=clean_env())
    assert ran.returncode == 0, ran.stderr
    assert _names(ours) == _names(pips)
    # the binary build of dep fits this interpreter better than the pure one, for both
    assert f"dep-2.0-{PY}-{PY}-manylinux_2_17_x86_64.whl" in _names(ours)
    for path in ours.iterdir():
        assert sha256_of(path) == sha256_of(pips / path.name)
    lines = done.stdout.splitlines()
    assert lines[:-1] == [f"Saved {ours / name}" for name in _names(ours)]
    assert lines[-1].startswith(f"2 files saved in {ours}")
    # --no-deps: the named projects alone, as pip's
    alone, pip_alone = tmp_path / "alone", tmp_path / "pip-alone"
    assert site.download("app", "--no-deps", "-d", str(alone), "-q").returncode == 0
    pip[pip.index(str(pips))] = str(pip_alone)
    ran = subprocess.run([*pip, "--no-deps"], capture_output=True, text=True, env=clean_env())
    assert ran.returncode == 0, ran.stderr
    assert _names(alone) == _names(pip_alone) == ["app-1.0-py3-none-any.whl"]


def test_a_rerun_keeps_the_files_and_dry_run_writes_nothing(site: Site, tmp_path: Path) -> None:
    dest = tmp_path / "out"
    planned = site.download("app", "-d", str(dest), "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert not dest.exists()
    assert planned.stdout.splitlines()[0].startswith(f"Would save {dest}/")
    assert "2 files would be saved" in planned.stdout
    assert site.download("app", "-d", str(dest)).returncode == 0
    before = {p.name: (p.stat().st_ino, sha256_of(p)) for p in dest.iterdir()}
    # copies, not links to the cache (which a change to the folder's files would spoil)
    assert all(p.stat().st_nlink == 1 for p in dest.iterdir())
    report = tmp_path / "report.json"
    again = site.download("app", "-d", str(dest), "--report", str(report))
    assert again.returncode == 0, again.stderr
    assert {p.name: (p.stat().st_ino, sha256_of(p)) for p in dest.iterdir()} == before
    assert "0 files saved" in again.stdout and "2 already there" in again.stdout
    entries = json.loads(report.read_text())["download"]
    assert {e["filename"]: e["action"] for e in entries} == dict.fromkeys(before, "kept")
    assert all(e["sha256"] == before[e["filename"]][1] for e in entries)
    assert all(e["url"].startswith(site.url) and e["variant_label"] is None for e in entries)
    # a file of that name with other contents is refused, named, and left as it is
    (stray,) = [dest / n for n in before if n.startswith("app-")]
    stray.write_bytes(b"not the wheel")
    refused = site.download("app", "-d", str(dest))
    assert refused.returncode == 1
    assert f"{stray} exists with other contents" in refused.stderr
    assert "remove it, or save into another folder" in refused.stderr
    assert stray.read_bytes() == b"not the wheel"


def test_an_h100_profile_gets_its_variant_wheel(site: Site, tmp_path: Path) -> None:
    dest, report = tmp_path / "h100", tmp_path / "report.json"
    done = site.download(
        "torch==2.9.0", "-d", str(dest), "--profile", str(PROFILES / "h100.json"),
        "--report", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    entries = {e["name"]: e for e in json.loads(report.read_text())["download"]}
    torch = entries["torch"]
    assert torch["variant_label"] == "cuda13.0"
    assert _names(dest) == sorted(e["filename"] for e in entries.values())
    assert torch["filename"] in _names(dest) and torch["filename"].endswith("-cuda13.0.whl")
    # the CUDA builds' own dependencies, through their variant markers
    assert {"nvidia-runtime", "cuda13-extras", "filelock"} <= set(entries)
    assert f"Saved {dest / torch['filename']} [cuda13.0]" in done.stdout
    # a machine without a GPU takes the build without GPU support
    cpu = tmp_path / "cpu"
    no_gpu = ["--profile", str(PROFILES / "no-gpu.json")]
    plain = site.download("torch==2.9.0", "-d", str(cpu), *no_gpu)
    assert plain.returncode == 0, plain.stderr
    assert _names(cpu) == ["filelock-1.0-py3-none-any.whl", "torch-2.9.0-py3-none-any-null.whl"]


def test_source_only_dependencies_are_refused_by_name(site: Site, tmp_path: Path) -> None:
    foreign = (
        ["--profile", str(PROFILES / "windows-rtx4090.json")],
        ["--platform", "manylinux_2_17_x86_64"],
        ["--python-version", "3.12"],
    )
    for number, target in enumerate(foreign):
        dest = tmp_path / f"foreign{number}"
        done = site.download("needs-source", "-d", str(dest), *target)
        assert done.returncode == 1, done.stdout
        assert "srconly (needed by needs-source 1.0): only source distributions" in done.stderr
        assert "fitwheel download saves wheels only" in done.stderr
        assert "drop --only-binary" not in done.stderr  # not an option the user gave
        assert not dest.exists()


def test_a_folder_that_cannot_hold_the_files_is_refused(site: Site, tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    done = site.download("app", "-d", str(missing))
    assert done.returncode == 1
    assert f"its parent folder {tmp_path / 'no'} does not exist" in done.stderr
    a_file = tmp_path / "file"
    a_file.write_text("")
    done = site.download("app", "-d", str(a_file))
    assert done.returncode == 1 and "is a file, not a folder" in done.stderr


def test_windows_cuda_torch_from_a_linux_machine(tmp_path: Path) -> None:
    mirror = add_platform_builds(build_torch_mirror(tmp_path / "mirror", variant_versions=()))
    dest = tmp_path / "wheels"
    with serve(mirror.root) as (url, _state):
        cmd = [*FITWHEEL, "download", "torch", "-d", str(dest)]
        cmd += ["--profile", str(PROFILES / "windows-rtx4090.json")]
        cmd += ["--index-url", mirror.default_index(url), "--torch-backend", "auto"]
        cmd += ["--torch-index-url", mirror.torch_index(url)]
        cmd += ["--cache-dir", str(tmp_path / "cache"), "--report", str(tmp_path / "r.json")]
        done = subprocess.run(cmd, capture_output=True, text=True, env=clean_env())
    assert done.returncode == 0, done.stderr
    names = _names(dest)
    assert f"torch-2.10.0+cu130-{PY}-{PY}-win_amd64.whl" in names
    assert not [n for n in names if n.startswith("nvidia_") or "triton" in n or "linux" in n]
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["target"]["torch_backend"]["backend"] == "cu130"
    (torch,) = [e for e in report["download"] if e["name"] == "torch"]
    assert torch["url"].startswith(f"{mirror.torch_index(url)}/cu130/")
    # a backend whose builds do not run on the target: the torch route's own error, named
    mac = tmp_path / "mac"
    with serve(mirror.root) as (url, _state):
        cmd = [*FITWHEEL, "download", "torch", "-d", str(mac)]
        cmd += ["--profile", str(PROFILES / "macos-arm64.json")]
        cmd += ["--index-url", mirror.default_index(url), "--torch-backend", "cu130"]
        cmd += ["--torch-index-url", mirror.torch_index(url)]
        cmd += ["--cache-dir", str(tmp_path / "cache")]
        done = subprocess.run(cmd, capture_output=True, text=True, env=clean_env())
    assert done.returncode == 1
    assert "target macos-arm64" in done.stderr and "no wheel of torch" in done.stderr
    assert not mac.exists()


def test_python_version_and_platform_name_another_machine(site: Site, tmp_path: Path) -> None:
    dest = tmp_path / "win"
    done = site.download(
        "app", "-d", str(dest), "--python-version", "3.12", "--platform", "win_amd64"
    )
    assert done.returncode == 0, done.stderr
    # its markers are Windows' (winonly comes along), its tags cp312 on win_amd64
    assert _names(dest) == [
        "app-1.0-py3-none-any.whl",
        "dep-2.0-py3-none-any.whl",
        "winonly-1.0-py3-none-any.whl",
    ]
    assert "(for no GPU; python 3.12, win32 AMD64)" in done.stdout


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write in any folder")
def test_an_unwritable_folder_is_refused(site: Site, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    done = site.download("app", "-d", str(locked))
    assert done.returncode == 1
    assert f"no permission to write in {locked}" in done.stderr
