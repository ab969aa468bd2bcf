"""One writer for every wheel: a wheel the unpacked-wheel cache does not hold (given by path, or
installed without a cache) is unpacked by the same reader into a private entry inside the
install's transaction folder and placed from there like a cached one; the entry goes with the
folder on every exit."""

import os
import subprocess
from pathlib import Path

import pytest

from fitwheel.install.cache.unpacked import UnpackedCache
from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.install.env.recovery import state_dir
from fitwheel.install.place.core import InstallError, WheelToInstall, install_wheels
from fitwheel.install.place.transaction import Operation
from fitwheel.reporter import Reporter
from tests.kit import make_wheel, sha256_of, snapshot
from tests.wheel.hostile_zip import DIST_INFO, Entry, record_hash, write_zip


def _rich_wheel(folder: Path) -> Path:
    """Every kind of member: root modules, ``.data`` purelib, platlib, headers, data and scripts,
    console scripts, byte-code shipped inside the wheel (left out)."""
    return make_wheel(
        folder,
        "tool",
        "1.0",
        files={
            "tool/__init__.py": "V = 1\n",
            "tool/sub/deep.py": "D = 2\n",
            "tool/data.bin": bytes(range(256)) * 4,
            "tool/__pycache__/stale.cpython-311.pyc": b"stale",
            "tool_top.py": "T = 3\n",
        },
        entry_points={"tool": "tool:main", "tool-gui": "tool.sub.deep:run"},
        data_files={
            "scripts/tool-sh": "#!python\nprint(1)\n",
            "scripts/tool-plain": "#!/bin/sh\necho plain\n",
            "purelib/tool_extra/__init__.py": "E = 4\n",
            "platlib/tool_native.py": "N = 5\n",
            "headers/tool.h": "#define TOOL 1\n",
            "data/share/tool/readme.txt": "hello\n",
        },
    )


def _fresh(base: Path, where: Path) -> Path:
    subprocess.run(["rm", "-rf", str(where)], check=True)
    subprocess.run(["cp", "-a", str(base), str(where)], check=True)
    return where


def _user_files(venv: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


def _state(venv: Path) -> list[str]:
    """What fitwheel keeps in the environment besides its lock: nothing between installs."""
    folder = state_dir(venv)
    return sorted(p.name for p in folder.iterdir() if p.name != "lock") if folder.exists() else []


@pytest.mark.parametrize("mode", ["copy", "hardlink"])
def test_an_uncached_wheel_installs_exactly_as_a_cached_one(
    base_venv: Path, tmp_path: Path, mode: str
) -> None:
    wheel = _rich_wheel(tmp_path / "w")
    venv = tmp_path / "venv"  # one path for both installs: scripts name their interpreter
    cache = UnpackedCache(tmp_path / "unpacked")
    results = []
    for cached in (True, False):
        _fresh(base_venv, venv)
        env = inspect_environment(str(venv), {})
        item = WheelToInstall.from_path(wheel, direct=True)
        if cached:
            item.sha256 = sha256_of(wheel)
        install_wheels(env, [item], unpacked=cache if cached else None, link_mode=mode)
        assert _state(venv) == []
        files = _user_files(venv)
        site = Path(env.scheme["purelib"])
        record = (site / "tool-1.0.dist-info" / "RECORD").read_text()
        results.append((files, record))
        out = subprocess.run(
            [str(venv / "bin" / "tool-sh")], capture_output=True, text=True, check=True
        )
        assert out.stdout == "1\n"
    (cached_files, cached_record), (plain_files, plain_record) = results
    assert plain_files == cached_files
    assert plain_record == cached_record
    # .data/purelib and .data/platlib members, in the root scheme folder of this environment,
    # are named as the root's own files are
    assert "\ntool_extra/__init__.py,sha256=" in plain_record
    assert "\ntool_native.py,sha256=" in plain_record
    assert not [k for k in plain_files if "stale" in k]
    # the cache holds the one entry of the cached install: the other left nothing there
    assert len([p for p in (tmp_path / "unpacked").glob("*/*") if p.is_dir()]) == 1
    cache.close()


def test_an_uncached_wheel_is_checked_by_the_one_reader(base_venv: Path, tmp_path: Path) -> None:
    """A member that does not match its RECORD hash stops the install before anything changes,
    and the private entry goes with the transaction folder."""
    venv = _fresh(base_venv, tmp_path / "venv")
    before = _user_files(venv)
    good = make_wheel(tmp_path / "w", "good", "1.0")
    bad = make_wheel(tmp_path / "w", "bad", "1.0", corrupt=True)
    with pytest.raises(InstallError, match="does not match its RECORD entry"):
        install_wheels(
            inspect_environment(str(venv), {}),
            [WheelToInstall.from_path(good), WheelToInstall.from_path(bad)],
        )
    assert _state(venv) == []
    assert _user_files(venv) == before


def test_an_interrupt_while_unpacking_leaves_no_private_entry(
    base_venv: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C arrives while the reader unpacks (here: as it warns about a RECORD row for a file
    the archive lacks): nothing changes, and nothing is left in the environment."""
    files = {
        "ghosted/__init__.py": b"X = 1\n",
        f"{DIST_INFO}/METADATA": b"Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n",
        f"{DIST_INFO}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files.items())
    record += f"ghosted/ghost.py,{record_hash(b'')},0\n{DIST_INFO}/RECORD,,\n"
    wheel = write_zip(
        tmp_path / "w" / "hostile-1.0-py3-none-any.whl",
        [*(Entry(n, d) for n, d in files.items()), Entry(f"{DIST_INFO}/RECORD", record.encode())],
    )
    venv = _fresh(base_venv, tmp_path / "venv")
    env = inspect_environment(str(venv), {})
    seen: list[Path] = []

    class Interrupting(Reporter):
        def warning(self, message: str) -> None:
            seen.extend(state_dir(venv).glob("txn-*/unpacked/0"))
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        install_wheels(env, [WheelToInstall.from_path(wheel)], reporter=Interrupting())
    assert seen, "the wheel was being unpacked inside the transaction folder"
    assert _state(venv) == []
    assert not (Path(env.scheme["purelib"]) / "ghosted").exists()


def test_an_interrupt_while_committing_leaves_no_private_entry(
    base_venv: Path, tmp_path: Path
) -> None:
    wheel = _rich_wheel(tmp_path / "w")
    venv = _fresh(base_venv, tmp_path / "venv")
    before = _user_files(venv)
    steps = 0

    def hook(_op: Operation | None) -> None:
        nonlocal steps
        steps += 1
        if steps == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        install_wheels(
            inspect_environment(str(venv), {}),
            [WheelToInstall.from_path(wheel)],
            commit_hook=hook,
        )
    assert _state(venv) == []
    assert _user_files(venv) == before


def test_two_uncached_wheels_in_one_install(base_venv: Path, tmp_path: Path) -> None:
    venv = _fresh(base_venv, tmp_path / "venv")
    env = inspect_environment(str(venv), {})
    first = make_wheel(tmp_path / "w", "one", "1.0", files={"one.py": "A = 1\n"})
    second = make_wheel(tmp_path / "w", "two", "1.0", files={"two.py": "B = 2\n"})
    install_wheels(env, [WheelToInstall.from_path(first), WheelToInstall.from_path(second)])
    site = Path(env.scheme["purelib"])
    assert (site / "one.py").read_text() == "A = 1\n"
    assert (site / "two.py").read_text() == "B = 2\n"
    assert _state(venv) == []
    assert os.access(site / "one-1.0.dist-info" / "RECORD", os.R_OK)
