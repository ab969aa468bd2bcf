import os
import shutil
from pathlib import Path

import pytest
from packaging.tags import Tag

from fitwheel.install.env.interpreter import (
    EnvironmentError_,
    find_interpreter,
    inspect_environment,
)
from tests.kit import make_venv


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("env") / "venv")


def test_venv_folder_or_interpreter_or_active_env(venv: Path) -> None:
    python = str(venv / "bin" / "python")
    assert find_interpreter(str(venv), {}) == python
    assert find_interpreter(python, {}) == python
    assert find_interpreter(None, {"VIRTUAL_ENV": str(venv)}) == python
    with pytest.raises(EnvironmentError_, match="--python"):
        find_interpreter(None, {})
    with pytest.raises(EnvironmentError_, match="does not exist"):
        find_interpreter(str(venv / "nope"), {})
    with pytest.raises(EnvironmentError_, match="not a virtual environment"):
        find_interpreter(str(venv / "lib"), {})


def test_inspection_describes_the_target(venv: Path, tmp_path: Path) -> None:
    env = inspect_environment(str(venv), {}, cache_dir=tmp_path / "envs")
    assert env.prefix == venv.resolve() or env.prefix == venv
    assert env.is_venv
    assert Path(env.scheme["purelib"]).is_relative_to(env.prefix)
    assert Path(env.scheme["scripts"]) == env.prefix / "bin"
    assert Tag("py3", "none", "any") in env.tags
    assert env.tags.index(Tag("py3", "none", "any")) > 0  # specific tags first
    assert env.markers["python_version"] == ".".join(env.python_version.split(".")[:2])
    assert env.installed() == {} or all(env.installed())
    # the second look comes from the cache: same answer, and it follows the venv if it changes
    assert inspect_environment(str(venv), {}, cache_dir=tmp_path / "envs") == env

    def entries() -> int:
        return sum(1 for p in (tmp_path / "envs").iterdir() if not p.name.startswith("venv-"))

    assert entries() == 1
    cfg = venv / "pyvenv.cfg"
    saved = cfg.read_text()
    try:
        cfg.write_text(saved + "prompt = changed\n")
        assert inspect_environment(str(venv), {}, cache_dir=tmp_path / "envs") == env
        assert entries() == 2
    finally:
        cfg.write_text(saved)


def test_a_new_venv_of_a_known_base_needs_no_interpreter_run(
    venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "envs"
    first = inspect_environment(str(venv), {}, cache_dir=cache)
    other = make_venv(tmp_path / "other venv")  # a space: paths are filled in, not re-parsed
    import subprocess

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the interpreter was run")

    monkeypatch.setattr(subprocess, "run", no_run)
    second = inspect_environment(str(other), {}, cache_dir=cache)
    monkeypatch.undo()
    # exactly what asking the new interpreter says
    asked = inspect_environment(str(other), {}, cache_dir=None)
    assert second == asked
    assert second.prefix == other and second.python == str(other / "bin" / "python")
    assert second.scheme["purelib"].startswith(str(other) + os.sep)
    assert first.markers == second.markers and first.tags == second.tags


def test_a_venv_of_fitwheels_own_interpreter_needs_no_interpreter_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import subprocess
    import sys

    from fitwheel.install.env.interpreter import _venv_of

    if _venv_of(sys.executable) is None:
        pytest.skip("fitwheel itself runs outside a virtual environment here")
    target = tmp_path / "fresh"
    # made as python -m venv makes it, from the interpreter running fitwheel
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True)
    asked = inspect_environment(str(target), {}, cache_dir=None)

    def no_run(*args: object, **kwargs: object) -> None:
        raise AssertionError("the interpreter was run")

    monkeypatch.setattr(subprocess, "run", no_run)
    # an empty cache: nothing asked before
    assert inspect_environment(str(target), {}, cache_dir=tmp_path / "envs") == asked


def test_an_environment_without_metadata_folders_has_nothing_installed(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv", via="venv")
    env = inspect_environment(str(venv), {})
    site = Path(env.scheme["purelib"])
    for entry in site.iterdir():  # whatever the venv seeded
        if entry.name.endswith((".dist-info", ".egg-info")):
            shutil.rmtree(entry)
    assert env.installed() == {}
    (site / "Zope.Interface-5.0.dist-info").mkdir()
    (site / "Zope.Interface-5.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: zope.interface\nVersion: 5.0\n"
    )
    (site / "old_style.egg-info").mkdir()
    (site / "old_style.egg-info" / "PKG-INFO").write_text(
        "Metadata-Version: 1.0\nName: old-style\nVersion: 1\n"
    )
    (site / "not_metadata-1.0.txt").write_text("")
    assert set(env.installed()) == {"zope-interface", "old-style"}


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("echo 'boom: no such module' >&2\nexit 1", "exit status 1: boom: no such module"),
        ("echo 'not json'", "Expecting value"),
    ],
)
def test_an_interpreter_that_cannot_answer_is_named_with_why(
    tmp_path: Path, body: str, said: str
) -> None:
    fake = tmp_path / "fake"
    (fake / "bin").mkdir(parents=True)
    (fake / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = fake / "bin" / "python"
    python.write_text(f"#!/bin/sh\n{body}\n")
    python.chmod(0o755)
    with pytest.raises(EnvironmentError_) as info:
        inspect_environment(str(python), {})
    message = str(info.value)
    assert f"cannot run the interpreter {python}" in message and said in message
