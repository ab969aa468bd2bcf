"""A wheel may not replace files that belong to someone else: another installed distribution
(by its RECORD) or the environment itself (interpreter, pyvenv.cfg, activation scripts)."""

import hashlib
import subprocess
import sys
from pathlib import Path

import pytest

from fitwheel.install.cache.unpacked import UnpackedCache
from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.install.env.recovery import state_dir
from fitwheel.install.place.core import InstallError, WheelToInstall, install_wheels
from tests.kit import clean_env, make_wheel, snapshot

FITWHEEL = [sys.executable, "-m", "fitwheel", "install", "--no-index"]


def _items(paths: list[Path], cached: bool) -> list[WheelToInstall]:
    items = [WheelToInstall.from_path(p) for p in paths]
    if not cached:
        return items
    return [
        WheelToInstall(
            i.path, i.name, i.version, sha256=hashlib.sha256(i.path.read_bytes()).hexdigest()
        )
        for i in items
    ]


def _view(venv: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


PATHS = pytest.mark.parametrize("path", ["general", "cached"])


@PATHS
def test_a_file_of_another_distribution_is_refused(venv: Path, tmp_path: Path, path: str) -> None:
    env = inspect_environment(str(venv), {})
    owner = make_wheel(tmp_path / "w", "owner", "1.0", files={"shared/util.py": "OWNER = 1\n"})
    intruder = make_wheel(
        tmp_path / "w", "intruder", "1.0", files={"shared/util.py": "OWNER = 'me'\n"}
    )
    cache = UnpackedCache(tmp_path / "unpacked") if path == "cached" else None
    install_wheels(env, _items([owner], path == "cached"), unpacked=cache)
    before = _view(venv)
    with pytest.raises(InstallError) as caught:
        install_wheels(env, _items([intruder], path == "cached"), unpacked=cache)
    message = str(caught.value)
    assert "shared/util.py" in message and "owner 1.0" in message and "--allow-overwrite" in message
    assert _view(venv) == before
    assert not list(state_dir(venv).glob("txn-*"))
    # with the flag it is replaced, and said so
    result = install_wheels(
        env, _items([intruder], path == "cached"), unpacked=cache, allow_overwrite=True
    )
    util = Path(env.scheme["purelib"]) / "shared" / "util.py"
    assert util.read_text() == "OWNER = 'me'\n"
    assert any("belonged to owner 1.0" in note for note in result.notes)


@PATHS
def test_an_upgrade_replaces_its_own_files(venv: Path, tmp_path: Path, path: str) -> None:
    env = inspect_environment(str(venv), {})
    old = make_wheel(tmp_path / "w", "same", "1.0", files={"same/a.py": "V = 1\n", "top.py": ""})
    new = make_wheel(tmp_path / "w", "same", "2.0", files={"same/a.py": "V = 2\n", "top.py": "#"})
    cache = UnpackedCache(tmp_path / "unpacked") if path == "cached" else None
    install_wheels(env, _items([old], path == "cached"), unpacked=cache)
    install_wheels(env, _items([new], path == "cached"), unpacked=cache)
    site = Path(env.scheme["purelib"])
    assert (site / "same" / "a.py").read_text() == "V = 2\n"
    assert (site / "top.py").read_text() == "#"
    assert not (site / "same-1.0.dist-info").exists()


@PATHS
@pytest.mark.parametrize(
    "member",
    ["scripts/python", "scripts/python3", "scripts/activate", "data/pyvenv.cfg", "data/bin/python"],
)
def test_the_environment_s_own_files_are_refused(
    venv: Path, tmp_path: Path, path: str, member: str
) -> None:
    env = inspect_environment(str(venv), {})
    hostile = make_wheel(
        tmp_path / "w", "hostile", "1.0", data_files={member: "#!/bin/sh\necho owned\n"}
    )
    before = _view(venv)
    cache = UnpackedCache(tmp_path / "unpacked") if path == "cached" else None
    with pytest.raises(InstallError) as caught:
        install_wheels(
            env, _items([hostile], path == "cached"), unpacked=cache, allow_overwrite=True
        )
    message = str(caught.value)
    name = member.rpartition("/")[2]
    assert name in message and "environment" in message
    assert _view(venv) == before


def test_the_command_line_says_which_file_and_whose(venv: Path, tmp_path: Path) -> None:
    owner = make_wheel(tmp_path / "w", "owner", "1.0", files={"shared/util.py": "OWNER = 1\n"})
    python_wheel = make_wheel(
        tmp_path / "w", "pyreplacer", "1.0", data_files={"scripts/python": "#!/bin/sh\n"}
    )
    intruder = make_wheel(tmp_path / "w", "intruder", "1.0", files={"shared/util.py": "X\n"})
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    args = ["--python", str(venv)]
    done = subprocess.run([*FITWHEEL, str(owner), *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    before = _view(venv)
    for wheel, words in ((intruder, "belongs to owner 1.0"), (python_wheel, "interpreter")):
        done = subprocess.run(
            [*FITWHEEL, str(wheel), *args], capture_output=True, text=True, env=env
        )
        assert done.returncode == 1
        assert done.stderr.count("fitwheel: error:") == 1 and "Traceback" not in done.stderr
        assert words in done.stderr and wheel.name in done.stderr
        assert _view(venv) == before
