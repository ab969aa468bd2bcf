"""``export``: one target's locked files as a hash-pinned requirements file that pip and uv
install to the same set that ``sync`` installs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.kit import UV, build_simple_index, make_venv, make_wheel, offline_env, serve
from tests.lock.conftest import Fleet, fitwheel


def _dists(venv: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json\n"
        "print(json.dumps({d.metadata['Name'].lower().replace('_', '-'): d.version "
        "for d in m.distributions()}))\n"
    )
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    return dict(json.loads(out.stdout))


def test_pip_uv_and_sync_install_the_same_set(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "app", "1.0", requires=["lib-a>=1", "lib-b; python_version >= '3'"])
    make_wheel(wheels, "lib-a", "1.0", requires=["lib-c"])
    make_wheel(wheels, "lib-a", "2.0", requires=["lib-c<2"])
    make_wheel(wheels, "lib-b", "1.5")
    make_wheel(wheels, "lib-c", "1.0")
    make_wheel(wheels, "lib-c", "2.0")
    build_simple_index(wheels, tmp_path / "index")
    profile = tmp_path / "box.json"
    profile.write_text('{"properties": {}}')
    with serve(tmp_path / "index") as (url, _state):
        lock = tmp_path / "pylock.toml"
        done = fitwheel(
            "lock", "app", "--profile", str(profile), "-o", str(lock),
            "--index-url", f"{url}/simple/", "--cache-dir", str(tmp_path / "cache"),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        requirements = tmp_path / "requirements.txt"
        exported = fitwheel("export", str(lock), "--profile", str(profile), "-o", str(requirements))
        assert exported.returncode == 0, exported.stderr
        text = requirements.read_text()
        assert text.count("--hash=sha256:") == 4
        assert "lib-a @ " in text and "/lib_a-2.0-py3-none-any.whl" in text
        assert "/lib_c-1.0-py3-none-any.whl" in text  # lib-a 2.0 wants lib-c<2

        via_uv = make_venv(tmp_path / "uv")
        subprocess.run(
            [str(UV), "pip", "sync", "--python", str(via_uv / "bin" / "python"),
             "--require-hashes", str(requirements)],
            check=True, capture_output=True, env=offline_env(),
        )  # fmt: skip
        via_pip = make_venv(tmp_path / "pip")
        subprocess.run(
            [sys.executable, "-m", "pip", "--python", str(via_pip / "bin" / "python"), "install",
             "-q", "--require-hashes", "--no-deps", "-r", str(requirements)],
            check=True, capture_output=True, env=offline_env(PIP_CONFIG_FILE="/dev/null"),
        )  # fmt: skip
        via_sync = make_venv(tmp_path / "sync")
        synced = fitwheel(
            "sync", str(lock), "--python", str(via_sync), "--profile", str(profile),
            "--cache-dir", str(tmp_path / "cache"),
        )  # fmt: skip
        assert synced.returncode == 0, synced.stderr
    expected = {"app": "1.0", "lib-a": "2.0", "lib-b": "1.5", "lib-c": "1.0"}
    assert _dists(via_sync) == expected
    assert _dists(via_uv) == expected
    assert _dists(via_pip) == expected


def test_export_of_a_gpu_target_names_its_builds_and_warns(fleet: Fleet, tmp_path: Path) -> None:
    out = tmp_path / "h100.txt"
    done = fitwheel(
        "export", str(fleet.lock), "--profile", str(fleet.profiles["h100"]), "-o", str(out)
    )
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert "torch-2.9.0-py3-none-any-cuda13.0.whl" in text and "nvidia-runtime @ " in text
    assert "variant build cuda13.0" in done.stderr
    refused = fitwheel(
        "export", str(fleet.lock), "--sysroot", str(fleet.machines["rtx5090-570"]), "-o", str(out)
    )
    assert refused.returncode == 1 and "RTX 5090" in refused.stderr
    assert out.read_text() == text
