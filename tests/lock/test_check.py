"""``lock --check``, ``--upgrade`` and ``--upgrade-package``: locked versions are kept while they
still fit; a lock that the requirements or the index no longer give is reported stale."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit import build_simple_index, make_wheel, serve
from tests.lock.conftest import fitwheel


@pytest.fixture
def project(tmp_path: Path) -> Iterator[tuple[Path, Path, str]]:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "app", "1.0", requires=["lib-a", "lib-b"])
    make_wheel(wheels, "lib-a", "1.0")
    make_wheel(wheels, "lib-b", "1.0")
    index = tmp_path / "index"
    build_simple_index(wheels, index)
    (tmp_path / "box.json").write_text('{"properties": {}}')
    with serve(index) as (url, _state):
        yield tmp_path, wheels, url


def _lock(root: Path, url: str, *extra: str) -> tuple[int, str, str]:
    done = fitwheel(
        "lock", *extra, "--index-url", f"{url}/simple/", "--cache-dir", str(root / "cache"),
        cwd=root,
    )  # fmt: skip
    return done.returncode, done.stdout, done.stderr


def _versions(root: Path) -> dict[str, str]:
    import tomllib

    data = tomllib.loads((root / "pylock.toml").read_text())
    return {p["name"]: p["version"] for p in data["packages"]}


def _republish(root: Path, wheels: Path) -> None:
    import shutil

    shutil.rmtree(root / "index")
    build_simple_index(wheels, root / "index")


def test_check_upgrade_and_upgrade_package(project: tuple[Path, Path, str]) -> None:
    root, wheels, url = project
    code, out, err = _lock(root, url, "app", "--profile", "box.json")
    assert code == 0, err
    assert _versions(root) == {"app": "1.0", "lib-a": "1.0", "lib-b": "1.0"}
    assert _lock(root, url, "--check")[0] == 0
    # new releases: the lock still holds, and locking again keeps its versions
    make_wheel(wheels, "lib-a", "2.0")
    make_wheel(wheels, "lib-b", "2.0")
    _republish(root, wheels)
    code, out, err = _lock(root, url, "--check")
    assert code == 0, err
    assert "up to date" in out
    assert _lock(root, url)[0] == 0
    assert _versions(root)["lib-a"] == "1.0"
    assert _lock(root, url, "--upgrade-package", "lib-a")[0] == 0
    assert _versions(root) == {"app": "1.0", "lib-a": "2.0", "lib-b": "1.0"}
    assert _lock(root, url, "--upgrade")[0] == 0
    assert _versions(root) == {"app": "1.0", "lib-a": "2.0", "lib-b": "2.0"}


def test_check_reports_changed_requirements_and_files(project: tuple[Path, Path, str]) -> None:
    root, wheels, url = project
    assert _lock(root, url, "app", "--profile", "box.json")[0] == 0
    before = (root / "pylock.toml").read_bytes()
    make_wheel(wheels, "lib-a", "2.0")
    _republish(root, wheels)
    code, _out, err = _lock(root, url, "app", "lib-a>=2", "--check")
    assert code == 1
    assert "out of date" in err and "requirements: app -> app, lib-a>=2" in err
    assert "lib-a for box: 1.0 lib_a-1.0-py3-none-any.whl" in err and "-> 2.0" in err
    # the same file name with other bytes on the index: the locked hash no longer holds
    make_wheel(wheels, "lib-b", "1.0", files={"lib_b/__init__.py": "CHANGED = 1\n"})
    _republish(root, wheels)
    code, _out, err = _lock(root, url, "--check")
    assert code == 1 and "lib-b for box" in err and "sha256:" in err
    assert (root / "pylock.toml").read_bytes() == before  # --check writes nothing


def test_lock_report_and_explain(project: tuple[Path, Path, str]) -> None:
    root, _wheels, url = project
    code, out, err = _lock(root, url, "app", "--profile", "box.json", "--explain", "--report", "-")
    assert code == 0, err
    report = json.loads(out[out.index("{") :])
    assert [t["name"] for t in report["targets"]] == ["box"]
    assert {p["name"] for p in report["targets"][0]["packages"]} == {"app", "lib-a", "lib-b"}
    assert out.startswith("target box (box.json)")
