"""Every requirement form pip takes, in one requirements file, installed by fitwheel and by pip.

The file uses index options (``-i`` and ``--extra-index-url`` on loopback index servers, ``-f``
a find-links folder), ``-r`` and ``-c``, ``-e ./proj[extra]`` (a local project with an extra),
``name @ file:`` of an sdist and of a wheel (with ``#sha256=``), a bare wheel path, archive
URLs on a loopback file server, and ``git+file://`` of a git repository made here, at a tag and
in a subdirectory. Real pip (the test environment's, configuration-free) installs the same file
into a second environment: both hold the same names and versions, the editable, local and VCS
projects import, and ``freeze`` writes the URL, VCS and editable requirements as pip's does.
``--hash`` turns pip's hash-checking mode on, in which pip refuses editables and repositories:
it is shown with a second file of its own."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit import (
    BackendsUnavailable,
    backend_wheels,
    build_simple_index,
    clean_env,
    make_sdist,
    make_source_tree,
    make_venv,
    make_wheel,
    serve,
    sha256_of,
)

FITWHEEL = [sys.executable, "-m", "fitwheel"]
pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git (make system-deps)")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        cwd=repo, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout.strip()


def _flit_project(folder: Path, name: str, version: str, **extra: str) -> Path:
    """A flit project (fast to build, PEP 660 editable), with ``extra`` optional dependencies
    (extra name -> requirement)."""
    make_source_tree(folder, name, version, backend="flit")
    if extra:
        pyproject = folder / "pyproject.toml"
        table = "".join(f'{k} = ["{v}"]\n' for k, v in extra.items())
        text = pyproject.read_text().replace(
            "\n[tool.flit.module]",
            f"\n[project.optional-dependencies]\n{table}\n[tool.flit.module]",
        )
        pyproject.write_text(text)
    return folder


def _git_repository(root: Path) -> tuple[Path, str]:
    """A repository whose ``pkg`` folder holds vcs-proj: 1.0 at the tag v1.0, 2.0 after it."""
    repo = root / "repo"
    _flit_project(repo / "pkg", "vcs-proj", "1.0")
    (repo / "README").write_text("a repository with a project in a subdirectory\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "one")
    _git(repo, "tag", "v1.0")
    tagged = _git(repo, "rev-parse", "HEAD")
    _flit_project(repo / "pkg", "vcs-proj", "2.0")
    _git(repo, "commit", "-q", "-am", "two")
    return repo, tagged


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    try:
        backends = backend_wheels()
    except BackendsUnavailable as exc:
        pytest.skip(str(exc))
    root = tmp_path_factory.mktemp("forms")
    main, extra, links, files, local = (
        root / n for n in ("main", "extra", "links", "files", "local")
    )
    for wheel in backends.glob("*.whl"):
        main.mkdir(exist_ok=True)
        shutil.copy(wheel, main / wheel.name)
    make_wheel(main, "dep-a", "1.0")
    make_wheel(main, "dep-a", "2.0")
    make_wheel(main, "extra-dep", "1.0")
    make_wheel(main, "hashed", "1.0")
    make_wheel(extra, "from-extra", "1.0", requires=["dep-a"])
    make_wheel(links, "from-links", "1.0")
    make_wheel(files, "url-wheel", "1.0")
    make_sdist(files, "url-sdist", "1.0", backend="flit", fmt="zip")
    make_wheel(local, "wheel-path", "1.0")
    make_wheel(local, "file-wheel", "1.0")
    make_sdist(local, "file-sdist", "1.0", backend="flit", requires=["dep-a"], fmt="zip")
    project = root / "project"
    _flit_project(project / "proj", "editable-proj", "1.0", extra="extra-dep")
    repo, tagged = _git_repository(root)
    build_simple_index(main, root / "main-site")
    build_simple_index(extra, root / "extra-site")
    env = clean_env(HOME=str(root), PIP_NO_INPUT="1", FITWHEEL_DETECT_TIMEOUT="1")
    with (
        serve(root / "main-site") as (main_url, _),
        serve(root / "extra-site") as (extra_url, _),
        serve(files) as (files_url, _),
    ):
        env["MAIN_INDEX"] = f"{main_url}/simple/"
        env["EXTRA_INDEX"] = f"{extra_url}/simple/"
        shutil.copytree(links, project / "links")
        (project / "constraints.txt").write_text("dep-a<2\n")
        (project / "more.txt").write_text("from-extra\n-c constraints.txt\n")
        file_wheel = local / "file_wheel-1.0-py3-none-any.whl"
        (project / "requirements.txt").write_text(
            "-i ${MAIN_INDEX}\n"
            "--extra-index-url ${EXTRA_INDEX}\n"
            "-f ./links\n"
            "-r more.txt\n"
            "-e ./proj[extra]\n"
            f"file-sdist @ {(local / 'file_sdist-1.0.zip').as_uri()}\n"
            f"file-wheel @ {file_wheel.as_uri()}#sha256={sha256_of(file_wheel)}\n"
            f"{local / 'wheel_path-1.0-py3-none-any.whl'}\n"
            f"git+{repo.as_uri()}@v1.0#egg=vcs-proj&subdirectory=pkg\n"
            f"url-wheel @ {files_url}/url_wheel-1.0-py3-none-any.whl\n"
            f"{files_url}/url_sdist-1.0.zip#egg=url-sdist\n"
            "from-links\n"
        )
        wheel_path = local / "wheel_path-1.0-py3-none-any.whl"
        hashed = main / "hashed-1.0-py3-none-any.whl"
        (project / "hashed.txt").write_text(
            "-i ${MAIN_INDEX}\n"
            f"hashed==1.0 --hash=sha256:{sha256_of(hashed)}\n"
            f"{wheel_path} --hash=sha256:{sha256_of(wheel_path)}\n"
        )
        yield {"root": root, "project": project, "env": env, "repo": repo, "tagged": tagged}


def _installed(venv: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))"
    )
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    return {k.lower().replace("_", "-"): v for k, v in json.loads(done.stdout).items()}


def _pip(setup: dict[str, Any], venv: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), *args],
        capture_output=True, text=True, env=setup["env"], cwd=setup["project"], timeout=300,
    )  # fmt: skip


def _fitwheel(setup: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FITWHEEL, *args], capture_output=True, text=True, env=setup["env"],
        cwd=setup["project"], timeout=300,
    )  # fmt: skip


def _direct_lines(freeze: str) -> list[str]:
    """The lines of a freeze that pin a URL, a repository or an editable install."""
    return sorted(
        line for line in freeze.splitlines() if " @ " in line or line.startswith(("-e", "#"))
    )


def test_every_form_installs_what_pip_installs(setup: dict[str, Any]) -> None:
    root = setup["root"]
    ours, theirs = make_venv(root / "ours"), make_venv(root / "theirs")
    done = _fitwheel(
        setup, "install", "--python", str(ours), "--cache-dir", str(root / "cache"),
        "--no-variants", "-r", "requirements.txt",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pip = _pip(setup, theirs, "install", "-q", "-r", "requirements.txt")
    assert pip.returncode == 0, pip.stderr
    installed = _installed(ours)
    assert installed == _installed(theirs)
    assert installed["vcs-proj"] == "1.0"  # the tag, not the branch's newer commit
    assert installed["dep-a"] == "1.0"  # the constraint, from a file -r names
    assert installed["extra-dep"] == "1.0"  # the editable project's extra
    python = str(ours / "bin" / "python")
    imported = subprocess.run(
        [python, "-c", "import editable_proj, file_sdist, vcs_proj, url_sdist; print('ok')"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert imported.stdout.strip() == "ok", imported.stderr
    # the editable install reads the project folder as it is now
    (setup["project"] / "proj" / "editable_proj.py").write_text("CHANGED = True\n")
    changed = subprocess.run(
        [python, "-c", "import editable_proj; print(editable_proj.CHANGED)"],
        capture_output=True, text=True,
    )  # fmt: skip
    assert changed.stdout.strip() == "True", changed.stderr
    frozen = _fitwheel(setup, "freeze", "--python", str(ours))
    assert frozen.returncode == 0, frozen.stderr
    pip_frozen = _pip(setup, theirs, "freeze")
    assert _direct_lines(frozen.stdout) == _direct_lines(pip_frozen.stdout)
    repo, tagged = setup["repo"], setup["tagged"]
    assert f"vcs-proj @ git+{repo.as_uri()}@{tagged}#subdirectory=pkg" in frozen.stdout
    record = json.loads(
        next(
            ours.glob("lib/python*/site-packages/vcs_proj-1.0.dist-info/direct_url.json")
        ).read_text()
    )
    assert record["vcs_info"] == {"vcs": "git", "commit_id": tagged, "requested_revision": "v1.0"}


def test_hash_checking_file_installs_what_pip_installs(setup: dict[str, Any]) -> None:
    root = setup["root"]
    ours, theirs = make_venv(root / "ours-hashed"), make_venv(root / "theirs-hashed")
    done = _fitwheel(
        setup, "install", "--python", str(ours), "--cache-dir", str(root / "cache"),
        "--no-variants", "-r", "hashed.txt",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    pip = _pip(setup, theirs, "install", "-q", "-r", "hashed.txt")
    assert pip.returncode == 0, pip.stderr
    assert _installed(ours) == _installed(theirs) == {"hashed": "1.0", "wheel-path": "1.0"}


def test_a_wrong_hash_in_the_url_changes_nothing(setup: dict[str, Any], tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    wheel = setup["root"] / "local" / "file_wheel-1.0-py3-none-any.whl"
    bad = tmp_path / "bad.txt"
    bad.write_text(f"file-wheel @ {wheel.as_uri()}#sha256={'0' * 64}\n")
    done = _fitwheel(setup, "install", "--python", str(venv), "--no-index", "-r", str(bad))
    assert done.returncode != 0
    assert f"{bad}:1" in done.stderr and "sha256" in done.stderr
    assert "file-wheel" not in _installed(venv)


def test_an_unknown_revision_names_the_line_and_the_way_on(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv")
    bad = tmp_path / "bad.txt"
    bad.write_text(f"vcs-proj @ git+{setup['repo'].as_uri()}@no-such-tag#subdirectory=pkg\n")
    done = _fitwheel(setup, "install", "--python", str(venv), "--no-index", "-r", str(bad))
    assert done.returncode == 1
    assert f"{bad}:1" in done.stderr and "'no-such-tag'" in done.stderr
    assert "vcs-proj" not in _installed(venv)


def test_credentials_in_a_vcs_url_are_never_shown(setup: dict[str, Any], tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    bad = tmp_path / "bad.txt"
    bad.write_text("vcs-proj @ git+https://user:${SECRET_TOKEN}@127.0.0.1:9/repo.git@v1\n")
    env = {**setup["env"], "SECRET_TOKEN": "s3cr3t-value"}
    done = subprocess.run(
        [*FITWHEEL, "install", "--python", str(venv), "--no-index", "-r", str(bad)],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    assert "s3cr3t-value" not in done.stderr + done.stdout
    assert f"{bad}:1" in done.stderr
