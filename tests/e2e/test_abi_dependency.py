"""abi_dependency builds end to end: ``flashkern`` 1.0 has one build per torch minor version
(2.9 and 2.10, made by ``fitwheel variant make``) and a null build; the resolver pairs each build
with the torch of the same resolution, keeps an installed torch, and takes the null build (with a
notice) when no build matches. Loopback index, real virtual environments."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fitwheel.lock.document import read_lock
from fitwheel.publish.config import parse_config
from fitwheel.publish.index_build import build_index
from fitwheel.publish.make import make_variant
from fitwheel.variants.model import VariantProperty
from tests.kit import clean_env, installed_build, make_wheel, serve

FITWHEEL = [sys.executable, "-m", "fitwheel"]
NO_GPU = Path(__file__).resolve().parents[1] / "data" / "profiles" / "no-gpu.json"
#: label -> the torch ranges the build is made for
BUILDS = {"torch29": ["2.9"], "torch210": ["2.10"]}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("abi")
    wheels = root / "wheels"
    for version in ("2.8.0", "2.9.0", "2.10.0"):
        make_wheel(wheels, "torch", version)
    config = parse_config({"default-priorities": {"namespace": ["abi_dependency"]}}, source="cfg")
    for label, values in BUILDS.items():
        src = make_wheel(root / label, "flashkern", "1.0", requires=["torch"], label=label)
        props = [VariantProperty("abi_dependency", "torch", v) for v in values]
        make_variant(src, props, config, label=label, out_dir=wheels)
    null = make_wheel(root / "null", "flashkern", "1.0", requires=["torch"], label="null")
    make_variant(null, [], config, null=True, out_dir=wheels)
    # one build for two torch minors (several values: either), and a null build
    both = make_wheel(root / "both", "anykern", "1.0", requires=["torch"], label="torch2x")
    props = [VariantProperty("abi_dependency", "torch", v) for v in ("2.9", "2.10")]
    make_variant(both, props, config, label="torch2x", out_dir=wheels)
    null = make_wheel(root / "anynull", "anykern", "1.0", requires=["torch"], label="null")
    make_variant(null, [], config, null=True, out_dir=wheels)
    build_index(wheels, root / "out")
    return root / "out"


@pytest.fixture(scope="module")
def server(site: Path) -> Iterator[str]:
    with serve(site) as (url, _state):
        yield url


def fitwheel(tmp_path: Path, url: str, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FITWHEEL, *args, "--index-url", f"{url}/simple/"],
        capture_output=True,
        text=True,
        env=clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"), **env),
        timeout=300,
    )


def install(
    tmp_path: Path, url: str, venv: Path, *reqs: str, **env: str
) -> subprocess.CompletedProcess[str]:
    python = str(venv / "bin" / "python")
    done = fitwheel(
        tmp_path, url, "install", *reqs, "--python", python, "--profile", str(NO_GPU), **env
    )
    assert done.returncode == 0, done.stderr
    return done


def _version(venv: Path) -> str:
    """The installed torch's version (the stand-in wheels' module says it)."""
    found = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import torch; print(torch.VERSION)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return found.stdout.strip()


def flashkern(venv: Path) -> str:
    return installed_build(venv / "bin" / "python", "flashkern")


def test_co_resolution_takes_the_build_for_the_pinned_torch(
    tmp_path: Path, server: str, venv: Path
) -> None:
    done = install(tmp_path, server, venv, "torch==2.9.0", "flashkern")
    assert (_version(venv), flashkern(venv)) == ("2.9.0", "torch29")
    assert "no build matches" not in done.stderr


def test_a_free_torch_follows_the_preferred_build(tmp_path: Path, server: str, venv: Path) -> None:
    install(tmp_path, server, venv, "flashkern")
    assert (_version(venv), flashkern(venv)) == ("2.10.0", "torch210")


def test_an_installed_torch_gets_its_build_and_stays(
    tmp_path: Path, server: str, venv: Path
) -> None:
    install(tmp_path, server, venv, "torch==2.10.0")
    install(tmp_path, server, venv, "flashkern")
    assert (_version(venv), flashkern(venv)) == ("2.10.0", "torch210")


def test_an_installed_torch_2_9_is_not_moved(tmp_path: Path, server: str, venv: Path) -> None:
    install(tmp_path, server, venv, "torch==2.9.0")
    install(tmp_path, server, venv, "flashkern", "--upgrade")
    assert (_version(venv), flashkern(venv)) == ("2.9.0", "torch29")


def test_pinning_another_torch_moves_it_and_the_build_follows(
    tmp_path: Path, server: str, venv: Path
) -> None:
    install(tmp_path, server, venv, "torch==2.10.0")
    install(tmp_path, server, venv, "torch==2.9.0", "flashkern")
    assert (_version(venv), flashkern(venv)) == ("2.9.0", "torch29")


def test_no_build_for_the_installed_torch_gives_the_null_build_and_a_notice(
    tmp_path: Path, server: str, venv: Path
) -> None:
    install(tmp_path, server, venv, "torch==2.8.0")
    done = install(tmp_path, server, venv, "flashkern")
    assert (_version(venv), flashkern(venv)) == ("2.8.0", "null")
    assert "flashkern 1.0: no build matches torch 2.8.0" in done.stderr
    assert "builds exist for torch 2.10, 2.9" in done.stderr


def test_no_build_for_the_pinned_torch_gives_the_null_build_and_a_notice(
    tmp_path: Path, server: str, venv: Path
) -> None:
    done = install(tmp_path, server, venv, "torch==2.8.0", "flashkern")
    assert (_version(venv), flashkern(venv)) == ("2.8.0", "null")
    assert "flashkern 1.0: no build matches torch 2.8.0 (in this resolution)" in done.stderr


def test_the_environment_variable_overrides_the_version(
    tmp_path: Path, server: str, venv: Path
) -> None:
    install(tmp_path, server, venv, "torch==2.10.0")
    done = install(
        tmp_path, server, venv, "flashkern", VARIANT_ABI_DEPENDENCY="torch==2.9.1,bad-entry"
    )
    # the variable says which torch the build is for; it never installs or moves torch
    assert (_version(venv), flashkern(venv)) == ("2.10.0", "torch29")
    assert "VARIANT_ABI_DEPENDENCY: ignoring 'bad-entry'" in done.stderr


def locked(tmp_path: Path, url: str) -> Path:
    """A lock of flashkern for Python 3.11 and 3.12 targets, whose torch differs by a marker."""
    profiles = []
    for python in ("3.11", "3.12"):
        data = json.loads(NO_GPU.read_text())
        data["environment"].update(python_version=python, python_full_version=f"{python}.1")
        path = tmp_path / f"py{python}.json"
        path.write_text(json.dumps(data))
        profiles += ["--profile", str(path)]
    lock = tmp_path / "pylock.toml"
    done = fitwheel(
        tmp_path, url, "lock", 'torch==2.9.0; python_version < "3.12"',
        'torch==2.10.0; python_version >= "3.12"', "flashkern", *profiles, "-o", str(lock),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return lock


def test_a_lock_records_the_build_of_each_target_s_torch(tmp_path: Path, server: str) -> None:
    ours = read_lock(str(locked(tmp_path, server)))
    (kern,) = [p for p in ours.packages if p.name == "flashkern"]
    by_target = dict(kern.targets)
    assert sorted(by_target.values()) == [
        "flashkern-1.0-py3-none-any-torch210.whl",
        "flashkern-1.0-py3-none-any-torch29.whl",
    ]
    torch = {p.version: set(p.targets) for p in ours.packages if p.name == "torch"}
    assert set(torch) == {"2.9.0", "2.10.0"}
    target_of = {v: t for v, ts in torch.items() for t in ts}
    assert by_target[target_of["2.9.0"]].endswith("torch29.whl")
    assert by_target[target_of["2.10.0"]].endswith("torch210.whl")


def test_sync_installs_the_build_its_target_locked(tmp_path: Path, server: str, venv: Path) -> None:
    lock = locked(tmp_path, server)
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    done = subprocess.run(
        [*FITWHEEL, "sync", str(lock), "--python", str(venv / "bin" / "python"), "--profile",
         str(tmp_path / f"py{here}.json")],
        capture_output=True, text=True, env=clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "c")),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = {"3.11": ("2.9.0", "torch29"), "3.12": ("2.10.0", "torch210")}
    assert (_version(venv), flashkern(venv)) == expected[here]


def test_explain_says_why_a_build_for_another_torch_is_passed_over(
    tmp_path: Path, server: str, venv: Path
) -> None:
    install(tmp_path, server, venv, "torch==2.10.0")
    done = install(tmp_path, server, venv, "flashkern", "--explain")
    assert "built for torch 2.9, and torch is 2.10.0 (installed)" in done.stdout + done.stderr
    assert flashkern(venv) == "torch210"


@pytest.mark.parametrize(
    ("torch", "build"), [("2.8.0", "null"), ("2.9.0", "torch2x"), ("2.10.0", "torch2x")]
)
def test_a_build_for_several_minors_fits_any_of_them(
    tmp_path: Path, server: str, venv: Path, torch: str, build: str
) -> None:
    # co-resolution: the build's first range (2.10) conflicts with the pin, its second does not
    install(tmp_path, server, venv, f"torch=={torch}", "anykern")
    assert (_version(venv), installed_build(venv / "bin" / "python", "anykern")) == (torch, build)


def test_a_conflicting_range_of_a_build_leaves_its_other_range(
    tmp_path: Path, server: str, venv: Path
) -> None:
    # anykern is decided first (nothing pins torch exactly): its 2.10 range conflicts with
    # torch<2.10, and the same file's 2.9 range is tried next
    install(tmp_path, server, venv, "anykern", "torch<2.10")
    assert (_version(venv), installed_build(venv / "bin" / "python", "anykern")) == (
        "2.9.0",
        "torch2x",
    )
