"""``fitwheel download`` and source distributions, against an index served on 127.0.0.1: for
this machine the files ``pip download`` saves (a project with sdists only saved as its sdist,
its metadata prepared by its real build backend, as pip prepares it; pip runs in the same test);
for another target a project with sdists only is refused by name."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit import (
    BackendsUnavailable,
    backend_wheels,
    build_simple_index,
    clean_env,
    make_sdist,
    make_wheel,
    serve,
    sha256_of,
)

FITWHEEL = [sys.executable, "-m", "fitwheel", "download"]
PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    try:
        backends = backend_wheels()
    except BackendsUnavailable as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("sdists")
    files = root / "files"
    files.mkdir()
    for wheel in backends.glob("*.whl"):
        shutil.copy(wheel, files)
    make_wheel(files, "app", "1.0", requires=["srconly", "srctoo", "dep"])
    make_wheel(files, "dep", "1.0")
    make_sdist(files, "srconly", "1.0", requires=["dep"])
    make_sdist(files, "srctoo", "2.0")
    build_simple_index(files, root / "index")
    with serve(root / "index") as (url, _state):
        yield f"{url}/simple/"


def download(index: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    cmd = [*FITWHEEL, *args, "--index-url", index, "--cache-dir", str(tmp_path / "cache")]
    return subprocess.run(cmd, capture_output=True, text=True, env=clean_env(), timeout=600)


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_this_machine_saves_sdists_as_pip_download_does(index: str, tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "pip"
    done = download(index, tmp_path, "app", "-d", str(ours))
    assert done.returncode == 0, done.stderr
    pip = [sys.executable, "-m", "pip", "download", "-q", "--index-url", index]
    ran = subprocess.run(
        [*pip, "--no-cache-dir", "-d", str(theirs), "app"],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=600,
    )
    assert ran.returncode == 0, ran.stderr
    assert names(ours) == names(theirs)
    assert "srconly-1.0.tar.gz" in names(ours) and "srctoo-2.0.tar.gz" in names(ours)
    for path in ours.iterdir():
        assert sha256_of(path) == sha256_of(theirs / path.name)
    assert f"Saved {ours / 'srconly-1.0.tar.gz'}" in done.stdout


def test_another_target_refuses_source_only_projects(index: str, tmp_path: Path) -> None:
    """As pip download with --platform (which needs --only-binary :all:): the resolution stops
    at a project with sdists only, named with what needs it."""
    dest = tmp_path / "foreign"
    done = download(index, tmp_path, "app", "-d", str(dest), "--platform", "win_amd64")
    assert done.returncode == 1, done.stdout
    assert any(
        f"{name} (needed by app 1.0): only source distributions" in done.stderr
        for name in ("srconly", "srctoo")
    ), done.stderr
    assert "fitwheel download saves wheels only" in done.stderr
    assert not dest.exists()
