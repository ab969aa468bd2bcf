"""``--compile``: the installed modules are byte-compiled by the environment's interpreter once
the install has committed, within a time bound; RECORD lists the byte-code, and uninstalling
removes it."""

import re
import struct
import subprocess
from pathlib import Path

import pytest

from fitwheel.install.cache.unpacked import UnpackedCache
from fitwheel.install.env.interpreter import TargetEnvironment, inspect_environment
from fitwheel.install.env.recovery import state_dir
from fitwheel.install.place.core import WheelToInstall, install_wheels
from fitwheel.install.place.uninstall import uninstall
from fitwheel.reporter import SILENT, Recorder, Reporter
from fitwheel.wheel.record import installed_paths
from tests.kit import make_wheel, sha256_of

MODULES = ("tool/__init__.py", "tool/sub/deep.py", "tool_top.py", "tool_extra/__init__.py")


@pytest.fixture
def wheel(tmp_path: Path) -> Path:
    return make_wheel(
        tmp_path / "w",
        "tool",
        "1.0",
        files={
            "tool/__init__.py": "V = 1\n",
            "tool/sub/deep.py": "D = 2\n",
            "tool/broken.py": "def (:\n",  # cannot be compiled: left to import time
            "tool_top.py": "T = 3\n",
        },
        entry_points={"tool": "tool:main"},
        data_files={
            "purelib/tool_extra/__init__.py": "E = 4\n",
            "data/share/tool/example.py": "not compiled = 1\n",
        },
    )


def _install(
    env: TargetEnvironment,
    wheel: Path,
    cache: UnpackedCache | None,
    *,
    link_mode: str = "copy",
    compile_timeout: float | None = None,
    reporter: Reporter = SILENT,
) -> None:
    item = WheelToInstall.from_path(wheel)
    if cache is not None:
        item.sha256 = sha256_of(wheel)
    install_wheels(
        env,
        [item],
        unpacked=cache,
        compile_bytecode=True,
        link_mode=link_mode,
        compile_timeout=compile_timeout,
        reporter=reporter,
    )


def _pyc_of(module: Path) -> list[Path]:
    return sorted((module.parent / "__pycache__").glob(f"{module.stem}.*.pyc"))


def _record(site: Path) -> str:
    return (site / "tool-1.0.dist-info" / "RECORD").read_text()


@pytest.mark.parametrize(("cached", "mode"), [(True, "hardlink"), (True, "copy"), (False, "copy")])
def test_compiled_bytecode_is_recorded_and_uninstalled(
    venv: Path,
    tmp_path: Path,
    wheel: Path,
    cached: bool,
    mode: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SOURCE_DATE_EPOCH", raising=False)  # time-stamped byte-code, not hashed
    env = inspect_environment(str(venv), {})
    cache = UnpackedCache(tmp_path / "unpacked") if cached else None
    _install(env, wheel, cache, link_mode=mode)
    site = Path(env.scheme["purelib"])
    record = _record(site)
    lines = record.splitlines()
    assert lines[-1] == "tool-1.0.dist-info/RECORD,,"
    for rel in MODULES:
        (pyc,) = _pyc_of(site / rel)
        # valid for the installed file: its time stamp and size, as Python checks them
        source = (site / rel).stat()
        flags, mtime, size = struct.unpack("<III", pyc.read_bytes()[4:16])
        assert flags == 0 and (mtime, size) == (int(source.st_mtime), source.st_size)
        assert f"{pyc.relative_to(site).as_posix()},," in lines
    assert _pyc_of(site / "tool" / "broken.py") == []
    assert not list((venv / "share").rglob("__pycache__"))
    # the interpreter uses the byte-code where it lies
    cached_path = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import tool.sub.deep as m; print(m.__cached__)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(cached_path) == _pyc_of(site / "tool" / "sub" / "deep.py")[0]
    # every path RECORD lists exists; uninstalling removes them all, byte-code included
    listed = [site / p for p in installed_paths(record)]
    assert all(p.exists() for p in listed)
    uninstall(env, ["tool"])
    assert not [p for p in listed if p.exists()]
    assert not list(site.glob("tool*"))
    assert not list((state_dir(venv)).glob("txn-*"))
    if cache is not None:
        cache.close()


def test_a_compile_past_its_time_bound_warns_and_the_install_stands(
    venv: Path, wheel: Path
) -> None:
    env = inspect_environment(str(venv), {})
    told = Recorder()
    _install(env, wheel, None, compile_timeout=0.001, reporter=told)
    assert len(told.warnings) == 1
    assert re.search(r"byte-compiling tool 1\.0 .*time bound of 0\.001 s", told.warnings[0])
    site = Path(env.scheme["purelib"])
    assert (site / "tool" / "sub" / "deep.py").read_text() == "D = 2\n"
    assert not list(state_dir(venv).glob("txn-*"))
    # RECORD lists only what exists; the modules import, and uninstalling leaves nothing
    record = _record(site)
    listed = [site / p for p in installed_paths(record)]
    assert all(p.exists() for p in listed)
    subprocess.run([str(venv / "bin" / "python"), "-c", "import tool.sub.deep"], check=True)
    uninstall(env, ["tool"])
    assert not list(site.glob("tool*"))


def test_an_upgrade_with_compile_replaces_the_old_bytecode(
    venv: Path, tmp_path: Path, wheel: Path
) -> None:
    env = inspect_environment(str(venv), {})
    _install(env, wheel, None)
    site = Path(env.scheme["purelib"])
    newer = make_wheel(tmp_path / "w2", "tool", "2.0", files={"tool/__init__.py": "V = 2\n"})
    _install(env, newer, None)
    assert not (site / "tool" / "sub").exists()
    (pyc,) = _pyc_of(site / "tool" / "__init__.py")
    assert (
        f"{pyc.relative_to(site).as_posix()},,"
        in (site / "tool-2.0.dist-info" / "RECORD").read_text()
    )
    assert not list(site.glob("tool_top*")) and not list(site.glob("__pycache__/tool_top*"))
