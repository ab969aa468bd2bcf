"""Remembered resolutions, end to end: a second ``fitwheel install`` with every input unchanged
and every index page still fresh installs exactly what a full resolution installs, without
loading the resolver; any changed input means a full resolution.

Whether the resolver ran is read from ``python -X importtime`` (resolvelib is imported only to
resolve): the installed files and the printed lines are compared with a full resolution's."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fitwheel.fs import location_state
from fitwheel.publish.index_build import build_index
from tests.kit import H100, clean_env, make_wheel, serve, snapshot, torch_like

FRESH = "max-age=600"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    wheels = root / "wheels"
    torch_like(wheels, "torch", "2.9.0")
    make_wheel(wheels, "app", "1.0", requires=["lib>=1"])
    make_wheel(wheels, "app", "2.0", requires=["lib>=2"], extras={"more": ["extra-dep"]})
    make_wheel(wheels, "lib", "1.0")
    make_wheel(wheels, "lib", "2.0", entry_points={"lib-tool": "lib:main"})
    make_wheel(wheels, "extra-dep", "1.0")
    make_wheel(wheels, "other", "1.0")
    build_index(wheels, root / "out")
    return root / "out"


@pytest.fixture
def server(site: Path) -> Iterator[tuple[str, Any]]:
    with serve(site, cache_control=FRESH) as (url, state):
        yield f"{url}/simple/", state


class Run:
    """``fitwheel install`` runs sharing one cache, each into a fresh copy of the base venv."""

    def __init__(self, tmp_path: Path, base_venv: Path, index: str) -> None:
        self.tmp = tmp_path
        self.base = base_venv
        self.index = index
        self.cache = tmp_path / "cache"
        self.venv = tmp_path / "target"

    def fresh_venv(self) -> Path:
        if self.venv.exists():
            shutil.rmtree(self.venv)
        subprocess.run(["cp", "-a", str(self.base), str(self.venv)], check=True)
        return self.venv

    def install(
        self, *args: str, fresh: bool = True, ok: bool = True, **env: str
    ) -> tuple[subprocess.CompletedProcess[str], bool]:
        """The run, and whether it resolved (loaded the resolver); ``ok``: whether it must
        succeed (else fail)."""
        if fresh:
            self.fresh_venv()
        command = [sys.executable, "-X", "importtime", "-m", "fitwheel", "install"]
        command += ["--index-url", self.index, "--python", str(self.venv), *args]
        environ = clean_env(FITWHEEL_CACHE_DIR=str(self.cache), FITWHEEL_DETECT_TIMEOUT="1", **env)
        done = subprocess.run(
            command, capture_output=True, text=True, env=environ, timeout=300, cwd=self.tmp
        )
        assert (done.returncode == 0) == ok, done.stderr
        resolved = "resolvelib" in done.stderr
        done.stderr = "\n".join(
            line for line in done.stderr.splitlines() if not line.startswith("import time:")
        )
        return done, resolved

    def files(self) -> dict[str, str]:
        return {k: v for k, v in snapshot(self.venv).items() if not k.startswith(".fitwheel")}

    def records(self) -> list[Path]:
        return sorted((self.cache / "remembered").rglob("*.json"))


@pytest.fixture
def run(tmp_path: Path, base_venv: Path, server: tuple[str, Any]) -> Run:
    return Run(tmp_path, base_venv, server[0])


def test_a_remembered_install_installs_what_a_full_resolution_installs(run: Run) -> None:
    first, resolved = run.install("app[more]", "torch")
    assert resolved
    full = run.files()
    again, resolved = run.install("app[more]", "torch")
    assert not resolved, "the second run resolved again"
    assert run.files() == full
    assert again.stdout == first.stdout
    assert again.stderr == first.stderr
    assert "app 2.0" in again.stdout and "lib 2.0" in again.stdout
    # the console script of lib works in the remembered install too
    assert (run.venv / "bin" / "lib-tool").is_file()
    # and a full resolution, records off, gives the same files
    _, resolved = run.install("app[more]", "torch", FITWHEEL_NO_REMEMBER="1")
    assert resolved
    assert run.files() == full


def test_dry_run_is_remembered_apart_and_changes_nothing(run: Run) -> None:
    first, resolved = run.install("--dry-run", "app")
    assert resolved and "Would install: app 2.0, lib 2.0" in first.stdout
    before = run.files()
    again, resolved = run.install("--dry-run", "app")
    assert not resolved
    assert again.stdout == first.stdout
    assert run.files() == before
    # the dry run's record does not stand in for a real install
    _, resolved = run.install("app")
    assert resolved


def test_an_unchanged_environment_is_remembered_as_kept(run: Run) -> None:
    run.install("app")
    _, resolved = run.install("app", fresh=False)
    assert resolved  # the installed set changed: resolve against it
    again, resolved = run.install("app", fresh=False)
    assert not resolved
    assert "Already installed: app 2.0, lib 2.0" in again.stdout


@pytest.mark.parametrize(
    "change",
    ["requirement", "option", "env", "pip-config", "refresh"],
)
def test_a_changed_input_resolves_again(run: Run, tmp_path: Path, change: str) -> None:
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("app\n")
    run.install("-r", str(reqs))
    _, resolved = run.install("-r", str(reqs))
    assert not resolved
    args: list[str] = ["-r", str(reqs)]
    env: dict[str, str] = {}
    if change == "requirement":
        reqs.write_text("app==1.0\n")
    elif change == "option":
        args.append("--no-deps")
    elif change == "env":
        env["PIP_PRE"] = "1"
    elif change == "pip-config":
        conf = tmp_path / "pip.conf"
        conf.write_text("[global]\npre = true\n")
        env["PIP_CONFIG_FILE"] = str(conf)
    else:
        args.append("--refresh")
    done, resolved = run.install(*args, **env)
    assert resolved
    if change == "requirement":
        assert "app 1.0" in done.stdout and "lib 2.0" in done.stdout
    if change == "option":
        assert "lib" not in done.stdout


def test_a_nested_requirements_file_is_checked_too(run: Run, tmp_path: Path) -> None:
    (tmp_path / "inner.txt").write_text("lib==1.0\n")
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("app==1.0\n-r inner.txt\n")
    run.install("-r", str(reqs))
    _, resolved = run.install("-r", str(reqs))
    assert not resolved
    (tmp_path / "inner.txt").write_text("lib==2.0\n")
    done, resolved = run.install("-r", str(reqs))
    assert resolved and "lib 2.0" in done.stdout


def test_a_requirements_file_from_a_server_is_not_remembered(
    run: Run, site: Path, tmp_path: Path
) -> None:
    # the server's file may change at any time: nothing tells when, so each run reads it
    served = site / "url-reqs.txt"
    served.write_text("app==1.0\n")
    url = run.index.removesuffix("simple/") + "url-reqs.txt"
    outer = tmp_path / "outer.txt"
    outer.write_text(f"-r {url}\n")
    for reqs in (url, str(outer)):
        run.install("-r", reqs)
        done, resolved = run.install("-r", reqs)
        assert resolved and "app 1.0" in done.stdout
    assert not run.records()
    served.write_text("app==2.0\n")
    done, resolved = run.install("-r", str(outer))
    assert resolved and "app 2.0" in done.stdout


def test_another_installed_set_resolves_again(run: Run) -> None:
    run.install("app")
    run.fresh_venv()
    run.install("other", fresh=False)
    done, resolved = run.install("app", fresh=False)
    assert resolved and "Installed: app 2.0, lib 2.0" in done.stdout


def test_another_target_resolves_again(run: Run, tmp_path: Path) -> None:
    cpu = tmp_path / "cpu.json"
    cpu.write_text(json.dumps({"properties": {}}))
    h100 = tmp_path / "h100.json"
    h100.write_text(json.dumps(H100))
    first, _ = run.install("--profile", str(cpu), "torch")
    _, resolved = run.install("--profile", str(cpu), "torch")
    assert not resolved
    other, resolved = run.install("--profile", str(h100), "torch")
    assert resolved
    assert other.stdout != first.stdout


@pytest.mark.parametrize("damage", ["page-gone", "page-changed", "unpacked-gone", "record"])
def test_damaged_caches_mean_a_full_resolution(run: Run, damage: str) -> None:
    run.install("app")
    full = run.files()
    if damage == "page-gone":
        shutil.rmtree(run.cache / "http")
    elif damage == "page-changed":
        # a page kept fresh but with another body than the one the record was made from
        for entry in (run.cache / "http").rglob("*"):
            if entry.is_file():
                head, _, body = entry.read_bytes().partition(b"\n")
                meta = json.loads(head)
                meta["sha256"] = "0" * 64
                entry.write_bytes(json.dumps(meta).encode() + b"\n" + body)
    elif damage == "unpacked-gone":
        shutil.rmtree(run.cache / "unpacked")
    else:
        (record,) = run.records()
        record.write_bytes(b'{"format": 1, "plan": [["../../x"')
    _, resolved = run.install("app")
    assert resolved
    assert run.files() == full
    _, resolved = run.install("app")
    assert not resolved  # the full run filed a good record again


def test_pages_without_a_freshness_lifetime_are_not_remembered(
    site: Path, tmp_path: Path, base_venv: Path
) -> None:
    with serve(site, cache_control="no-cache") as (url, _state):
        run = Run(tmp_path, base_venv, f"{url}/simple/")
        run.install("app")
        _, resolved = run.install("app")
        assert resolved
        assert run.records() == []


def test_picks_from_find_links_and_local_files_are_not_remembered(
    run: Run, site: Path, tmp_path: Path
) -> None:
    links = tmp_path / "links"
    links.mkdir()
    make_wheel(links, "local-only", "1.0")
    run.install("-f", str(links), "local-only", "app")
    _, resolved = run.install("-f", str(links), "local-only", "app")
    assert resolved
    (wheel,) = links.glob("*.whl")
    run.install(str(wheel))
    _, resolved = run.install(str(wheel))
    assert resolved
    assert run.records() == []


def test_a_missing_project_on_an_extra_index_is_not_remembered(
    run: Run, site: Path, tmp_path: Path
) -> None:
    empty = tmp_path / "empty" / "simple"
    empty.mkdir(parents=True)
    (empty / "index.html").write_text("<!DOCTYPE html><html><body></body></html>\n")
    with serve(empty.parent, cache_control=FRESH) as (url, _state):
        run.install("--extra-index-url", f"{url}/simple/", "app")
        _, resolved = run.install("--extra-index-url", f"{url}/simple/", "app")
        assert resolved  # a 404 has no freshness: the project may appear there any time
    assert run.records() == []


# -- local sources, as real machines have them: a find-links folder (PIP_FIND_LINKS) and
# file:// extra indexes next to the index proper
def test_a_find_links_folder_is_remembered_by_its_state(run: Run, tmp_path: Path) -> None:
    links = tmp_path / "links"
    links.mkdir()
    make_wheel(links, "unrelated", "1.0")  # as a machine's folder holds: nothing this install picks
    first, resolved = run.install("app", PIP_FIND_LINKS=str(links))
    assert resolved and "app 2.0" in first.stdout
    again, resolved = run.install("app", PIP_FIND_LINKS=str(links))
    assert not resolved, "an unchanged find-links folder should replay"
    assert again.stdout == first.stdout
    # a newer lib appears in the folder: the full resolution picks it
    make_wheel(links, "lib", "3.0")
    done, resolved = run.install("app", PIP_FIND_LINKS=str(links))
    assert resolved and "lib 3.0" in done.stdout
    # a pick from the folder has no published hash: not remembered
    _, resolved = run.install("app", PIP_FIND_LINKS=str(links))
    assert resolved


def test_a_wheel_rewritten_in_a_find_links_folder_resolves_again(run: Run, tmp_path: Path) -> None:
    links = tmp_path / "links"
    links.mkdir()
    make_wheel(links, "lib", "0.5")  # older than the index's: never picked
    run.install("-f", str(links), "app")
    _, resolved = run.install("-f", str(links), "app")
    assert not resolved
    (wheel,) = links.glob("*.whl")
    stat = wheel.stat()
    # rewritten in place, same name, size and modification time: only its time of change moves
    wheel.write_bytes(wheel.read_bytes())
    os.utime(wheel, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    _, resolved = run.install("-f", str(links), "app")
    assert resolved
    wheel.unlink()
    _, resolved = run.install("-f", str(links), "app")
    assert resolved, "a wheel removed from the folder"


def test_a_file_index_is_remembered_by_its_project_folders(run: Run, tmp_path: Path) -> None:
    # like this kind of machine's configuration: a local extra index that lacks the projects
    local = tmp_path / "local-wheels"
    make_wheel(local, "other", "1.0")
    build_index(local, tmp_path / "local")
    extra = (tmp_path / "local" / "simple").as_uri()
    first, resolved = run.install("--extra-index-url", extra, "app")
    assert resolved and "lib 2.0" in first.stdout
    again, resolved = run.install("--extra-index-url", extra, "app")
    assert not resolved, "an unchanged file:// index should replay"
    assert again.stdout == first.stdout
    # the local index gains lib 3.0: a full resolution finds it (and does not remember the pick)
    make_wheel(local, "lib", "3.0")
    shutil.rmtree(tmp_path / "local")
    build_index(local, tmp_path / "local")
    done, resolved = run.install(
        "--extra-index-url", extra, "--index-strategy", "unsafe-best-match", "app"
    )
    assert resolved and "lib 3.0" in done.stdout


def test_a_missing_file_index_folder_is_a_change(run: Run, tmp_path: Path) -> None:
    index = tmp_path / "local" / "simple"
    index.mkdir(parents=True)
    extra = index.as_uri()
    run.install("--extra-index-url", extra, "app")
    _, resolved = run.install("--extra-index-url", extra, "app")
    assert not resolved
    shutil.rmtree(tmp_path / "local")
    done, _ = run.install("--extra-index-url", extra, "app", ok=False)
    assert "does not exist" in done.stderr


def test_a_machines_pip_configuration_is_remembered_and_matches_a_full_resolution(
    run: Run, tmp_path: Path
) -> None:
    # as such machines are set up: a pip.conf with two file:// extra indexes (one lacking every
    # project, one not there at all, as pip warns), a find-links folder holding a large wheel
    # of another project, and a constraints file
    links = tmp_path / "wheels"
    make_wheel(links, "torch", "2.13.0")
    partial = tmp_path / "pypi" / "simple"
    partial.mkdir(parents=True)
    (partial / "index.html").write_text("<!DOCTYPE html><html><body></body></html>\n")
    constraints = tmp_path / "constraints.txt"
    constraints.write_text("lib<3\n")
    conf = tmp_path / "pip.conf"
    conf.write_text(
        "[global]\n"
        f"extra-index-url = {partial.as_uri()} {(tmp_path / 'missing' / 'simple').as_uri()}\n"
        f"find-links = {links}\n"
        f"constraint = {constraints}\n"
    )
    env = {"PIP_CONFIG_FILE": str(conf)}
    first, resolved = run.install("app", **env)
    assert resolved and "app 2.0" in first.stdout and "lib 2.0" in first.stdout
    full = run.files()
    again, resolved = run.install("app", **env)
    assert not resolved, "a machine's own pip configuration should not stop a replay"
    assert (again.stdout, again.stderr) == (first.stdout, first.stderr)
    assert run.files() == full
    _, resolved = run.install("app", FITWHEEL_NO_REMEMBER="1", **env)
    assert resolved and run.files() == full
    constraints.write_text("lib<2\n")  # the constraints file is read again too
    done, resolved = run.install("app", **env)
    assert resolved and "lib 1.0" in done.stdout


@pytest.mark.parametrize("kind", ["file", "folder", "absent", "no-folder"])
def test_location_state_sees_what_reading_would(tmp_path: Path, kind: str) -> None:
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "a.whl").write_bytes(b"a")
    path = {
        "file": folder / "a.whl",
        "folder": folder,
        "absent": folder / "missing",
        "no-folder": folder / "missing" / "deeper",
    }[kind]
    before = location_state(str(path))
    assert location_state(str(path)) == before  # reading changes nothing
    if kind == "file":
        path.write_bytes(b"b")  # same size
    elif kind == "folder":
        (folder / "b.whl").write_bytes(b"")
    elif kind == "absent":
        path.mkdir()
    else:
        path.parent.mkdir()
    assert location_state(str(path)) != before
