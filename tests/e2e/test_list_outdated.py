"""``fitwheel list --outdated`` / ``--uptodate`` against loopback indexes with newer versions:
only builds that fit this environment and target count (a newer release with a wheel for
another platform only, or variants for another GPU only, is not newer here; a routed torch is
compared with its backend index). pip's columns and JSON entries."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fitwheel.cli.main import main
from tests.kit import build_simple_index, make_venv, make_wheel, serve

Fitwheel = Callable[..., tuple[int, str, str]]
H100 = Path(__file__).resolve().parents[1] / "data" / "profiles" / "h100.json"
CUDA14 = {
    "default-priorities": {"namespace": ["nvidia"]},
    "providers": {"nvidia": {"requires": ["nvidia-provider"]}},
}


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(main index URL, torch backend root URL)."""
    root = tmp_path_factory.mktemp("idx")
    w = root / "w"
    for version in ("1.0", "2.0"):
        make_wheel(w, "fresh", version)
    make_wheel(w, "fresh", "3.0b1")  # a pre-release: counts only with --pre
    make_wheel(w, "steady", "1.0")
    make_wheel(w, "foreign", "1.0")
    # newer, but only for another platform
    make_wheel(w, "foreign", "2.0", tag="cp311-cp311-win_amd64")
    make_wheel(w, "srconly", "1.0")
    (w / "srconly-1.5.tar.gz").write_bytes(b"not built: list never builds")
    make_wheel(w, "gpukit", "1.0")
    # 1.5 has a build for an H100; 2.0 only one that needs a newer CUDA than its driver has
    make_wheel(w, "gpukit", "1.5", label="cu12", variant={"nvidia": {"sm_arch": ["90_real"]}},
               variant_doc=CUDA14)  # fmt: skip
    make_wheel(
        w, "gpukit", "2.0", label="cu14", variant_doc=CUDA14,
        variant={"nvidia": {"cuda_version_lower_bound": ["14.0"], "sm_arch": ["100_real"]}},
    )  # fmt: skip
    make_wheel(w, "torch", "2.9.0+cpu")
    make_wheel(w, "torch", "2.12.0")
    build_simple_index(w, root / "site")
    backend = root / "backend"
    make_wheel(backend / "w", "torch", "2.9.0+cpu")
    make_wheel(backend / "w", "torch", "2.10.0+cpu")
    build_simple_index(backend / "w", root / "site", pages="whl/cpu")
    with serve(root / "site") as (url, _state):
        yield f"{url}/simple/", f"{url}/whl"


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory, index: tuple[str, str]) -> Path:
    folder = make_venv(tmp_path_factory.mktemp("venv") / "venv")
    cache = tmp_path_factory.mktemp("cache")
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("PIP_", "FITWHEEL_"))},
        "PIP_CONFIG_FILE": os.devnull,
        "FITWHEEL_CONFIG": os.devnull,
        "FITWHEEL_CACHE_DIR": str(cache),
    }
    done = subprocess.run(
        [sys.executable, "-m", "fitwheel", "install", "--python", str(folder), "-i", index[0],
         "--no-variants", "fresh==1.0", "steady", "foreign", "srconly==1.0", "gpukit==1.0",
         "torch==2.9.0+cpu"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return folder


@pytest.fixture
def fitwheel(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> Fitwheel:
    for key in list(os.environ):
        if key.startswith(("PIP_", "UV_", "FITWHEEL_", "VIRTUAL_ENV")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("FITWHEEL_CONFIG", os.devnull)
    monkeypatch.setenv("FITWHEEL_CACHE_DIR", str(tmp_path / "cache"))

    def run(*argv: str) -> tuple[int, str, str]:
        capsys.readouterr()
        rc = main(list(argv))
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def outdated(fitwheel: Fitwheel, venv: Path, index: str, *extra: str) -> dict[str, dict[str, str]]:
    rc, out, err = fitwheel(
        "list", "--outdated", "--format", "json", "--python", str(venv), "-i", index,
        "--profile", str(H100), *extra,
    )  # fmt: skip
    assert rc == 0, err
    return {entry["name"]: entry for entry in json.loads(out)}


def test_outdated_counts_only_what_fits(
    fitwheel: Fitwheel, venv: Path, index: tuple[str, str]
) -> None:
    found = outdated(fitwheel, venv, index[0])
    assert set(found) == {"fresh", "srconly", "gpukit", "torch"}
    assert found["fresh"]["version"] == "1.0"
    assert found["fresh"]["latest_version"] == "2.0"  # not the pre-release
    assert found["fresh"]["latest_filetype"] == "wheel"
    assert found["srconly"]["latest_version"] == "1.5"
    assert found["srconly"]["latest_filetype"] == "sdist"
    # gpukit 2.0 has no build for this H100's driver: 1.5, its cu12 variant, is the newest here
    assert found["gpukit"]["latest_version"] == "1.5"
    assert found["gpukit"]["latest_variant_label"] == "cu12"
    assert found["torch"]["latest_version"] == "2.12.0"
    with_pre = outdated(fitwheel, venv, index[0], "--pre")
    assert with_pre["fresh"]["latest_version"] == "3.0b1"


def test_a_routed_torch_is_compared_with_its_backend_index(
    fitwheel: Fitwheel, venv: Path, index: tuple[str, str]
) -> None:
    found = outdated(
        fitwheel, venv, index[0], "--torch-backend", "cpu", "--torch-index-url", index[1]
    )
    assert found["torch"]["latest_version"] == "2.10.0+cpu"


def test_uptodate_and_the_columns(fitwheel: Fitwheel, venv: Path, index: tuple[str, str]) -> None:
    rc, out, err = fitwheel(
        "list", "--uptodate", "--python", str(venv), "-i", index[0], "--profile", str(H100)
    )
    assert rc == 0, err
    names = [line.split()[0] for line in out.splitlines()[2:]]
    assert names == ["foreign", "steady"]
    assert out.splitlines()[0].split() == ["Package", "Version"]
    rc, out, err = fitwheel(
        "list", "-o", "--python", str(venv), "-i", index[0], "--profile", str(H100)
    )
    assert rc == 0, err
    lines = out.splitlines()
    assert lines[0].split()[:4] == ["Package", "Version", "Latest", "Type"]
    rows = {line.split()[0]: line.split() for line in lines[2:]}
    assert rows["fresh"][:4] == ["fresh", "1.0", "2.0", "wheel"]
    assert rows["srconly"][:4] == ["srconly", "1.0", "1.5", "sdist"]
    rc, _out, err = fitwheel(
        "list", "-o", "--format", "freeze", "--python", str(venv), "-i", index[0]
    )
    assert rc == 2 and "cannot be used with --outdated" in err
    rc, out, _err = fitwheel(
        "list", "-u", "--json", "--python", str(venv), "-i", index[0], "--profile", str(H100)
    )
    assert rc == 0
    assert [e["name"] for e in json.loads(out)] == ["foreign", "steady"]
    assert "latest_version" not in json.loads(out)[0]
