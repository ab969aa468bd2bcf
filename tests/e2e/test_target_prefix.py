"""``install --target DIR`` and ``--prefix DIR`` in real virtual environments, compared with
pip's layout for the same wheels (pip runs in the same test, offline, from the same folder)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit import clean_env, make_venv, make_wheel

FITWHEEL = [sys.executable, "-m", "fitwheel", "install"]


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    make_wheel(
        folder,
        "tool",
        "1.0",
        requires=["helper"],
        files={"tool/__init__.py": "V = 1\n", "tool/cli.py": "def main():\n    print('hi')\n"},
        entry_points={"tool-cli": "tool.cli:main"},
        data_files={
            "data/share/tool/notes.txt": "notes\n",
            "headers/tool.h": "int x;\n",
            "scripts/tool-sh": "#!/bin/sh\necho tool\n",
        },
    )
    make_wheel(folder, "helper", "2.0", files={"helper.py": "V = 2\n"})
    make_wheel(folder, "helper", "3.0", files={"helper.py": "V = 3\n"})
    return folder


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("venv") / "venv")


def fitwheel(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run(
        [*FITWHEEL, *args, "--no-variants"], capture_output=True, text=True, env=env, timeout=300
    )


def pip(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(PIP_NO_COMPILE="1")
    return subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def layout(root: Path) -> set[str]:
    """The files under ``root``, relative, without what differs between installers by design
    (the installer's name, RECORD, bytecode, fitwheel's own state)."""
    out = set()
    for path in root.rglob("*"):
        rel = path.relative_to(root).as_posix()
        if path.is_dir() or "__pycache__" in rel or rel.startswith(".fitwheel"):
            continue
        if rel.endswith((".dist-info/RECORD", ".dist-info/INSTALLER", ".dist-info/REQUESTED")):
            continue
        if rel.endswith(".dist-info/direct_url.json"):
            continue
        out.add(rel)
    return out


def run_module(venv: Path, where: Path, code: str) -> str:
    env = {**os.environ, "PYTHONPATH": str(where)}
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_target_lays_out_as_pip_and_leaves_the_environment_alone(
    tmp_path: Path, wheels: Path, venv: Path
) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    src = ("--no-index", "-f", str(wheels), "tool", "helper==2.0")
    done = fitwheel(tmp_path, "--python", str(venv), "--target", str(ours), *src)
    assert done.returncode == 0, done.stderr
    peer = pip(tmp_path, "--target", str(theirs), *src)
    assert peer.returncode == 0, peer.stderr
    assert layout(ours) == layout(theirs)
    assert "bin/tool-cli" in layout(ours) and "tool/cli.py" in layout(ours)
    assert not list(ours.glob(".fitwheel-target-*")), "the staging folder is removed"
    # nothing went into the environment itself
    site = next((venv / "lib").glob("python*/site-packages"))
    assert not list(site.glob("tool*")) and not list(site.glob("helper*"))
    assert run_module(venv, ours, "import tool, helper; print(tool.V, helper.V)") == "1 2"
    # what the environment has is not looked at: helper in the venv does not stop the install
    assert (
        fitwheel(
            tmp_path, "--python", str(venv), "--no-index", "-f", str(wheels), "helper==3.0"
        ).returncode
        == 0
    )
    again = tmp_path / "again"
    done = fitwheel(tmp_path, "--python", str(venv), "--target", str(again), *src)
    assert done.returncode == 0, done.stderr
    assert (again / "helper.py").read_text() == "V = 2\n"


def test_target_keeps_what_is_there_unless_upgrade(
    tmp_path: Path, wheels: Path, venv: Path
) -> None:
    target = tmp_path / "t"
    src = ("--no-index", "-f", str(wheels))
    assert (
        fitwheel(tmp_path, "--python", str(venv), "-t", str(target), *src, "helper==2.0").returncode
        == 0
    )
    kept = fitwheel(tmp_path, "--python", str(venv), "-t", str(target), *src, "helper==3.0")
    assert kept.returncode == 0, kept.stderr
    assert f"target directory {target / 'helper.py'} already exists" in kept.stderr
    assert "--upgrade" in kept.stderr
    assert (target / "helper.py").read_text() == "V = 2\n"
    # pip does the same: a warning, and the old file stays
    theirs = tmp_path / "theirs"
    assert pip(tmp_path, "-t", str(theirs), *src, "helper==2.0").returncode == 0
    peer = pip(tmp_path, "-t", str(theirs), *src, "helper==3.0")
    assert peer.returncode == 0 and "already exists" in peer.stderr
    assert (theirs / "helper.py").read_text() == "V = 2\n"
    replaced = fitwheel(
        tmp_path, "--python", str(venv), "-t", str(target), *src, "helper==3.0", "--upgrade"
    )
    assert replaced.returncode == 0, replaced.stderr
    assert (target / "helper.py").read_text() == "V = 3\n"
    assert pip(tmp_path, "-t", str(theirs), *src, "helper==3.0", "--upgrade").returncode == 0
    # entries are moved one by one, as in pip: the old .dist-info is another entry, and stays
    assert layout(target) == layout(theirs)
    assert {"helper-2.0.dist-info/METADATA", "helper-3.0.dist-info/METADATA"} <= layout(target)


def test_target_refuses_a_file(tmp_path: Path, wheels: Path, venv: Path) -> None:
    target = tmp_path / "file"
    target.write_text("x")
    done = fitwheel(
        tmp_path,
        "--python",
        str(venv),
        "-t",
        str(target),
        "--no-index",
        "-f",
        str(wheels),
        "helper",
    )
    assert done.returncode == 1 and "is not a folder" in done.stderr


def test_prefix_lays_out_as_pip(tmp_path: Path, wheels: Path, venv: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    src = ("--no-index", "-f", str(wheels), "tool", "helper==2.0")
    done = fitwheel(tmp_path, "--python", str(venv), "--prefix", str(ours), *src)
    assert done.returncode == 0, done.stderr
    # pip's prefix scheme is its interpreter's: the venv of the test runner is made the same way
    peer = pip(tmp_path, "--prefix", str(theirs), "--ignore-installed", *src)
    assert peer.returncode == 0, peer.stderr
    assert layout(ours) == layout(theirs)
    site = next((ours / "lib").glob("python*/site-packages"))
    assert run_module(venv, site, "import tool, helper; print(tool.V, helper.V)") == "1 2"
    script = (ours / "bin" / "tool-cli").read_text()
    assert script.startswith(f"#!{venv}/bin/python")
    # what the prefix holds counts as installed
    again = fitwheel(tmp_path, "--python", str(venv), "--prefix", str(ours), *src)
    assert again.returncode == 0 and "Already installed" in again.stdout
    upgraded = fitwheel(
        tmp_path, "--python", str(venv), "--prefix", str(ours), "--no-index", "-f", str(wheels),
        "helper==3.0",
    )  # fmt: skip
    assert upgraded.returncode == 0, upgraded.stderr
    assert (site / "helper.py").read_text() == "V = 3\n"
    assert not (site / "helper-2.0.dist-info").exists()


def test_target_and_prefix_together_are_refused(tmp_path: Path, venv: Path) -> None:
    done = fitwheel(tmp_path, "--python", str(venv), "-t", "a", "--prefix", "b", "x")
    assert done.returncode == 2 and "not allowed with" in done.stderr


def test_target_without_an_environment_and_dry_run(tmp_path: Path, wheels: Path) -> None:
    """No --python and no active environment: the interpreter running fitwheel, as pip uses its
    own; --dry-run leaves the target untouched."""
    target = tmp_path / "t"
    src = ("--no-index", "-f", str(wheels), "helper==2.0")
    planned = fitwheel(tmp_path, "-t", str(target), *src, "--dry-run")
    assert planned.returncode == 0, planned.stderr
    assert "Would install: helper 2.0" in planned.stdout
    assert not target.exists()
    done = fitwheel(tmp_path, "-t", str(target), *src)
    assert done.returncode == 0, done.stderr
    assert (target / "helper.py").read_text() == "V = 2\n"
