import os
import subprocess
from pathlib import Path

import pytest
from fwtestkit import make_venv, make_wheel, sha256_of

from fitwheel.install.environment import inspect_environment
from fitwheel.install.installer import InstallError, WheelToInstall, install_wheels
from fitwheel.install.unpacked import UnpackedCache


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("unpacked") / "venv")


def fresh(base: Path, where: Path) -> Path:
    subprocess.run(["cp", "-a", str(base), str(where)], check=True)
    return where


def wheel_of(path: Path) -> WheelToInstall:
    item = WheelToInstall.from_path(path)
    return WheelToInstall(item.path, item.name, item.version, sha256=sha256_of(path))


@pytest.mark.parametrize("mode", ["copy", "hardlink"])
def test_install_from_the_unpacked_cache(base_venv: Path, tmp_path: Path, mode: str) -> None:
    wheel = make_wheel(
        tmp_path / "w",
        "tool",
        "1.0",
        files={"tool/__init__.py": "V = 1\n"},
        entry_points={"tool": "tool:main"},
        data_files={"scripts/tool-sh": "#!python\nprint(1)\n"},
    )
    cache = UnpackedCache(tmp_path / "unpacked")
    results = []
    for n in range(2):
        venv = fresh(base_venv, tmp_path / f"venv{n}")
        env = inspect_environment(str(venv), {})
        install_wheels(env, [wheel_of(wheel)], unpacked=cache, link_mode=mode)
        site = Path(env.scheme["purelib"])
        installed = site / "tool" / "__init__.py"
        assert installed.read_text() == "V = 1\n"
        record = (site / "tool-1.0.dist-info" / "RECORD").read_text()
        assert "tool/__init__.py,sha256=" in record
        assert (venv / "bin" / "tool-sh").read_text().startswith(f"#!{env.python}")
        results.append(installed)
    (folder,) = [p for p in (tmp_path / "unpacked").glob("*/*") if p.is_dir()]
    cached = folder / "files" / "tool" / "__init__.py"
    linked = os.path.samefile(cached, results[0])
    assert linked == (mode == "hardlink")
    # the installed RECORD matches what the plain installer writes from the archive
    plain = fresh(base_venv, tmp_path / "plain")
    penv = inspect_environment(str(plain), {})
    install_wheels(penv, [WheelToInstall.from_path(wheel)])

    def record_of(venv: Path) -> set[str]:
        site = next((venv / "lib").glob("python*/site-packages"))
        return {
            line.split(",")[0] + line.split(",")[1]
            for line in (site / "tool-1.0.dist-info" / "RECORD").read_text().splitlines()
            if "bin/tool" not in line
        }

    assert record_of(tmp_path / "venv0") == record_of(plain)


def test_a_changed_cache_entry_is_unpacked_again(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w", "tool", "1.0", files={"tool/__init__.py": "V = 1\n"})
    cache = UnpackedCache(tmp_path / "unpacked")
    first = cache.get(wheel, sha256_of(wheel))
    member = first.folder / "files" / "tool" / "__init__.py"
    member.write_text("V = 'edited in place'\n")
    again = cache.get(wheel, sha256_of(wheel))
    assert (again.folder / "files" / "tool" / "__init__.py").read_text() == "V = 1\n"


def test_a_corrupt_wheel_is_refused_before_anything_changes(
    base_venv: Path, tmp_path: Path
) -> None:
    bad = make_wheel(tmp_path / "w", "bad", "1.0", corrupt=True)
    venv = fresh(base_venv, tmp_path / "venv")
    with pytest.raises(InstallError, match="Nothing was changed"):
        install_wheels(
            inspect_environment(str(venv), {}),
            [wheel_of(bad)],
            unpacked=UnpackedCache(tmp_path / "unpacked"),
        )
    assert not list((tmp_path / "unpacked").glob("*/*/fitwheel-unpacked.json"))
