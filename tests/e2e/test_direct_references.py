"""Direct references end to end, beyond the one file of every form: credentials in an archive
URL (used, never shown or recorded), an editable checkout (``-e git+...#egg=``) as pip makes it,
``-e ./proj[extra]`` on the command line, a bare archive URL that only its build names, a direct
reference that an index dependency contradicts, and URLs that fail: each error names its line
and leaves the environment as it was."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.test_requirements_all_forms import _flit_project, _git_repository, _installed
from tests.kit import (
    BackendsUnavailable,
    backend_wheels,
    build_simple_index,
    clean_env,
    make_sdist,
    make_venv,
    make_wheel,
    serve,
    snapshot,
)

FITWHEEL = [sys.executable, "-m", "fitwheel"]
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git (make system-deps)")
SECRET = "s3cr3t-token"


def env_files(venv: Path) -> dict[str, str]:
    """The environment's files, without the lock file an install takes."""
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    try:
        backends = backend_wheels()
    except BackendsUnavailable as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("direct")
    main, files = root / "main", root / "files"
    main.mkdir()
    for wheel in backends.glob("*.whl"):
        shutil.copy(wheel, main / wheel.name)
    make_wheel(main, "extra-dep", "1.0")
    make_wheel(main, "needs-new-dep", "1.0", requires=["dep>=2"])
    make_wheel(main, "dep", "2.0")
    make_wheel(files, "dep", "1.0")
    make_wheel(files, "private", "1.0")
    make_sdist(files, "nameless", "1.0", backend="flit", fmt="zip")
    _flit_project(root / "proj", "editable-proj", "1.0", extra="extra-dep")
    repo, tagged = _git_repository(root)
    build_simple_index(main, root / "main-site")
    env = clean_env(HOME=str(root), PIP_NO_INPUT="1", FITWHEEL_DETECT_TIMEOUT="1")
    env["TOKEN"] = SECRET
    with (
        serve(root / "main-site") as (main_url, _),
        serve(files) as (files_url, _),
        serve(files, credentials=("user", SECRET)) as (private_url, _),
    ):
        yield {
            "root": root,
            "env": env,
            "index": f"{main_url}/simple/",
            "files": files_url,
            "private": private_url,
            "repo": repo,
            "tagged": tagged,
        }


def fitwheel(
    setup: dict[str, Any],
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``fitwheel ARGS`` in the setup's environment (``env`` overrides some variables)."""
    return subprocess.run(
        [*FITWHEEL, *args], capture_output=True, text=True, env={**setup["env"], **(env or {})},
        cwd=cwd or setup["root"], timeout=300,
    )  # fmt: skip


def install(
    setup: dict[str, Any],
    venv: Path,
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return fitwheel(
        setup, "install", "--python", str(venv), "--no-variants", "-i", setup["index"],
        "--cache-dir", str(setup["root"] / "cache"), *args, cwd=cwd, env=env,
    )  # fmt: skip


def requirements(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    return path


def test_credentials_in_a_url_are_used_never_shown_or_recorded(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv")
    url = setup["private"].replace("http://", "http://user:${TOKEN}@")
    req = requirements(tmp_path, f"private @ {url}/private-1.0-py3-none-any.whl\n")
    done = install(setup, venv, "-r", str(req), "--report", str(tmp_path / "report.json"))
    assert done.returncode == 0, done.stderr
    record = next(venv.glob("lib/python*/site-packages/private-1.0.dist-info/direct_url.json"))
    frozen = fitwheel(setup, "freeze", "--python", str(venv)).stdout
    said = done.stdout + done.stderr + record.read_text() + frozen
    said += (tmp_path / "report.json").read_text()
    assert SECRET not in said
    expected = f"private @ {setup['private']}/private-1.0-py3-none-any.whl#sha256="
    assert expected in frozen


def test_an_editable_checkout_is_made_as_pip_makes_it(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    ours, theirs = make_venv(tmp_path / "ours"), make_venv(tmp_path / "theirs")
    line = f"git+{setup['repo'].as_uri()}@v1.0#egg=vcs-proj&subdirectory=pkg"
    done = install(setup, ours, "-e", line)
    assert done.returncode == 0, done.stderr
    assert (ours / "src" / "vcs-proj" / "pkg" / "vcs_proj.py").is_file()
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(theirs / "bin" / "python"), "install",
         "-q", "-i", setup["index"], "-e", line],
        capture_output=True, text=True, env=setup["env"], cwd=tmp_path, timeout=300,
    )  # fmt: skip
    assert pip.returncode == 0, pip.stderr
    assert _installed(ours) == _installed(theirs)
    frozen = fitwheel(setup, "freeze", "--python", str(ours)).stdout
    assert f"-e git+{setup['repo'].as_uri()}@{setup['tagged']}#egg=vcs_proj" in frozen
    assert frozen.strip().endswith("&subdirectory=pkg")


def test_an_editable_project_with_an_extra_on_the_command_line(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv")
    done = install(setup, venv, "-e", ".[extra]", cwd=setup["root"] / "proj")
    assert done.returncode == 0, done.stderr
    assert _installed(venv) == {"editable-proj": "1.0", "extra-dep": "1.0"}


def test_a_bare_archive_url_is_named_by_its_build(setup: dict[str, Any], tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    done = install(setup, venv, f"{setup['files']}/nameless-1.0.zip")
    assert done.returncode == 0, done.stderr
    assert _installed(venv) == {"nameless": "1.0"}
    record = next(venv.glob("lib/python*/site-packages/nameless-1.0.dist-info/direct_url.json"))
    assert json.loads(record.read_text())["url"] == f"{setup['files']}/nameless-1.0.zip"


def test_a_direct_reference_is_its_projects_only_candidate(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv")
    before = env_files(venv)
    req = requirements(
        tmp_path, f"dep @ {setup['files']}/dep-1.0-py3-none-any.whl\nneeds-new-dep\n"
    )
    done = install(setup, venv, "-r", str(req))
    assert done.returncode == 1
    assert "dep" in done.stderr and "needs-new-dep" in done.stderr
    assert env_files(venv) == before


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("dep @ {files}/dep-1.0-py3-none-any.whl#sha256=" + "0" * 64, "sha256"),
        ("dep @ {files}/no-such-1.0-py3-none-any.whl", "404"),
        ("dep @ {files}/dep-1.0-py3-none-any.whl --hash=sha256:" + "1" * 64, "sha256"),
        ("hg+https://h.invalid/r#egg=x", "Mercurial"),
    ],
)
def test_a_failing_reference_names_its_line_and_changes_nothing(
    setup: dict[str, Any], tmp_path: Path, line: str, words: str
) -> None:
    venv = make_venv(tmp_path / "venv")
    before = env_files(venv)
    req = requirements(tmp_path, "extra-dep\n" + line.format(files=setup["files"]) + "\n")
    done = install(setup, venv, "-r", str(req))
    assert done.returncode == 1, done.stderr
    assert f"{req}:2" in done.stderr and words in done.stderr
    assert env_files(venv) == before


def test_a_commits_build_is_cached_and_needs_no_git_again(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    line = f"vcs-proj @ git+{setup['repo'].as_uri()}@{setup['tagged']}#subdirectory=pkg"
    cache = tmp_path / "cache"
    first = install(setup, make_venv(tmp_path / "one"), "--cache-dir", str(cache), line)
    assert first.returncode == 0, first.stderr
    assert "building a wheel" in first.stderr
    no_git = {"PATH": str(tmp_path)}
    second = install(
        setup, make_venv(tmp_path / "two"), "--cache-dir", str(cache), line, env=no_git
    )
    assert second.returncode == 0, second.stderr
    assert "building" not in second.stderr
    assert _installed(tmp_path / "two") == {"vcs-proj": "1.0"}
