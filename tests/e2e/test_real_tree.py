"""``fitwheel install`` of a real tree of 35 distributions (pure-Python and manylinux wheels from
the package index) out of a loopback mirror into a fresh virtual environment, checked against
pip installing the same requirements from the same mirror."""

from __future__ import annotations

import base64
import csv
import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.e2e.mirror import (
    CLOSURE,
    IMPORTS,
    MANIFEST,
    SCRIPTS,
    TOP_LEVEL,
    MirrorUnavailable,
    build_index,
    ensure_wheels,
    serve,
)
from tests.kit import clean_env, make_venv

FITWHEEL = [sys.executable, "-m", "fitwheel"]
PIP = [sys.executable, "-m", "pip"]
# Files every installer writes its own way; the rest of each RECORD must match pip's.
_INSTALLER_OWN = {"INSTALLER", "REQUESTED", "direct_url.json", "RECORD"}
_VENV_OWN = ("python", "activate", "Activate")


@dataclass(frozen=True)
class Tree:
    url: str
    wheels: Path
    fitwheel_venv: Path
    pip_venv: Path
    cache: Path
    report: dict[str, Any]


def _run(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False, **kwargs)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}"
    return proc


def _fitwheel_install(tree_venv: Path, url: str, cache: Path, report: Path) -> None:
    _run(
        [
            *FITWHEEL,
            "install",
            "--python",
            str(tree_venv),
            "--index-url",
            url,
            "--cache-dir",
            str(cache),
            "--report",
            str(report),
            *TOP_LEVEL,
        ],
        env=clean_env(),
    )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Tree]:
    try:
        wheels = ensure_wheels()
    except MirrorUnavailable as exc:
        pytest.skip(f"the real-tree mirror cannot be downloaded: {exc}")
    root = tmp_path_factory.mktemp("real-tree")
    with serve(build_index(wheels, root / "index")) as url:
        fw_venv = root / "fitwheel-venv"
        make_venv(fw_venv, via="venv")
        report = root / "report.json"
        _fitwheel_install(fw_venv, url, root / "cache", report)
        pip_venv = root / "pip-venv"
        make_venv(pip_venv, via="venv")
        _run(
            [
                *PIP,
                "--python",
                str(pip_venv / "bin" / "python"),
                "install",
                "--no-cache-dir",
                "--only-binary=:all:",
                "--index-url",
                url,
                *TOP_LEVEL,
            ],
            env=clean_env(),
        )
        yield Tree(
            url=url,
            wheels=wheels,
            fitwheel_venv=fw_venv,
            pip_venv=pip_venv,
            cache=root / "cache",
            report=json.loads(report.read_text(encoding="utf-8")),
        )


_LIST_DISTS = """
import importlib.metadata as m, json, sys
out = {}
for d in m.distributions():
    out[d.metadata["Name"]] = [d.version, str(d._path)]
json.dump(out, sys.stdout)
"""


def _installed(venv: Path) -> dict[str, tuple[str, Path]]:
    """canonical name -> (version, dist-info folder), as the venv's own interpreter sees it."""
    proc = _run([str(venv / "bin" / "python"), "-I", "-c", _LIST_DISTS])
    raw: dict[str, list[str]] = json.loads(proc.stdout)
    return {str(canonicalize_name(n)): (v, Path(p)) for n, (v, p) in raw.items()}


def _versions(venv: Path) -> dict[str, str]:
    return {name: version for name, (version, _) in _installed(venv).items()}


def test_installs_the_pinned_closure_as_pip_does(tree: Tree) -> None:
    ours = _versions(tree.fitwheel_venv)
    assert ours == _versions(tree.pip_venv)
    assert ours == {str(canonicalize_name(n)): v for n, v in CLOSURE.items()}
    assert len(ours) >= 30


def test_report_names_the_mirror_files_and_the_requested_projects(tree: Tree) -> None:
    manifest = json.loads((tree.wheels / MANIFEST).read_text(encoding="utf-8"))["files"]
    entries = tree.report["install"]
    assert {e["name"]: e["version"] for e in entries} == _versions(tree.fitwheel_venv)
    for entry in entries:
        assert entry["sha256"] == manifest[entry["filename"]], entry["filename"]
        assert entry["url"].startswith(tree.url.rsplit("/simple/", 1)[0])
        assert entry["variant_label"] is None
    requested = {e["name"] for e in entries if e["requested"]}
    assert requested == {str(canonicalize_name(Requirement(r).name)) for r in TOP_LEVEL}


def test_pip_check_passes(tree: Tree) -> None:
    proc = _run([*PIP, "--python", str(tree.fitwheel_venv / "bin" / "python"), "check"])
    assert "No broken requirements" in proc.stdout


def test_packages_import_including_compiled_extensions(tree: Tree) -> None:
    code = (
        f"import {', '.join(IMPORTS)}\n"
        "import pydantic_core._pydantic_core, yaml._yaml, msgpack._cmsgpack, rpds.rpds\n"
        "import flask, requests, sys\n"
        "assert requests.get.__module__ == 'requests.api'\n"
        "print(flask.__file__)\n"
    )
    proc = _run([str(tree.fitwheel_venv / "bin" / "python"), "-I", "-c", code])
    assert proc.stdout.strip().startswith(str(tree.fitwheel_venv))


def test_console_scripts_run(tree: Tree) -> None:
    bindir = tree.fitwheel_venv / "bin"
    for script, args in SCRIPTS.items():
        path = bindir / script
        assert os.access(path, os.X_OK), script
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == f"#!{bindir / 'python'}", (script, first)
        # No PATH lookups: the script must find its own interpreter and packages.
        proc = _run([str(path), *args], env={"HOME": str(tree.fitwheel_venv), "PATH": "/usr/bin"})
        assert proc.stdout or proc.stderr
    version = _run([str(bindir / "flask"), "--version"]).stdout
    assert "Flask 3.1.0" in version and "Werkzeug 3.1.9" in version

    def scripts(venv: Path) -> set[str]:
        return {p.name for p in (venv / "bin").iterdir() if not p.name.startswith(_VENV_OWN)}

    assert scripts(tree.fitwheel_venv) == scripts(tree.pip_venv) >= set(SCRIPTS)


def _record_hash(path: Path) -> str:
    digest = hashlib.sha256(path.read_bytes()).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _record_rows(dist_info: Path) -> list[list[str]]:
    with (dist_info / "RECORD").open(newline="", encoding="utf-8") as fh:
        return [row for row in csv.reader(fh) if row]


def _recorded_files(venv: Path) -> dict[str, set[str]]:
    """canonical name -> the files its RECORD lists (absolute, resolved), without bytecode and
    the per-installer files."""
    out: dict[str, set[str]] = {}
    for name, (_, dist_info) in _installed(venv).items():
        files = set()
        for path, _hash, _size in _record_rows(dist_info):
            full = (dist_info.parent / path).resolve()
            if "__pycache__" in full.parts or full.name in _INSTALLER_OWN:
                continue
            files.add(str(full.relative_to(venv.resolve())))
        out[name] = files
    return out


def test_record_files_are_complete_and_hashes_hold(tree: Tree) -> None:
    venv = tree.fitwheel_venv
    checked = 0
    for name, (_, dist_info) in _installed(venv).items():
        assert (dist_info / "INSTALLER").read_text(encoding="utf-8").strip(), name
        rows = _record_rows(dist_info)
        assert any(Path(p).name == "RECORD" and not h for p, h, _ in rows), name
        for path, hash_, size in rows:
            full = (dist_info.parent / path).resolve()
            assert full.is_file(), (name, path)
            assert venv.resolve() in full.parents, (name, path)
            if hash_:
                assert _record_hash(full) == hash_, (name, path)
                assert full.stat().st_size == int(size), (name, path)
                checked += 1
    assert checked > 1000
    # Same files, placed in the same places, as pip installs.
    assert _recorded_files(venv) == _recorded_files(tree.pip_venv)


def _state(venv: Path) -> dict[str, tuple[int, int]]:
    out = {}
    for dirpath, dirnames, filenames in os.walk(venv):
        dirnames[:] = [d for d in dirnames if d != "__pycache__"]
        for f in filenames:
            st = os.stat(os.path.join(dirpath, f), follow_symlinks=False)
            out[os.path.relpath(os.path.join(dirpath, f), venv)] = (st.st_size, st.st_mtime_ns)
    return out


def test_second_install_changes_nothing(tree: Tree, tmp_path: Path) -> None:
    before = _state(tree.fitwheel_venv)
    report = tmp_path / "again.json"
    _fitwheel_install(tree.fitwheel_venv, tree.url, tree.cache, report)
    entries = json.loads(report.read_text(encoding="utf-8"))["install"]
    assert {e["action"] for e in entries} == {"keep"}
    assert len(entries) == len(CLOSURE)
    assert _state(tree.fitwheel_venv) == before


def test_pip_uninstalls_what_fitwheel_installed(tree: Tree, tmp_path: Path) -> None:
    """The RECORD is usable by another installer: pip removes a distribution completely."""
    venv = tree.fitwheel_venv
    files = _recorded_files(venv)["rich"]
    python = str(venv / "bin" / "python")
    try:
        _run([*PIP, "--python", python, "uninstall", "-y", "rich"], env=clean_env())
        assert "rich" not in _versions(venv)
        leftovers = [f for f in files if (venv / f).exists()]
        assert leftovers == []
    finally:
        _fitwheel_install(venv, tree.url, tree.cache, tmp_path / "restore.json")
    assert _versions(venv)["rich"] == CLOSURE["rich"]


def test_what_pip_installed_counts_as_installed(tree: Tree, tmp_path: Path) -> None:
    before = _state(tree.pip_venv)
    report = tmp_path / "over-pip.json"
    _fitwheel_install(tree.pip_venv, tree.url, tmp_path / "cache", report)
    entries = json.loads(report.read_text(encoding="utf-8"))["install"]
    assert {e["action"] for e in entries} == {"keep"}
    assert {e["name"]: e["version"] for e in entries} == _versions(tree.pip_venv)
    # fitwheel keeps its environment lock file in the environment; nothing else may change
    after = {k: v for k, v in _state(tree.pip_venv).items() if not k.startswith(".fitwheel/")}
    assert after == before
