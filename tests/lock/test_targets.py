"""Targets that differ in OS, CPU architecture and Python version: each gets its own wheels and
versions, the entries carry the markers that tell them apart, and packaging's own selection
agrees with fitwheel's for every target."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from packaging.pylock import Pylock

from fitwheel.cli._lockhosts import lock_targets
from fitwheel.lock.document import read_lock
from tests.kit import make_wheel
from tests.lock.conftest import fitwheel

PROFILES = {
    "linux": {"properties": {}, "environment": {"sys_platform": "linux",
              "platform_machine": "x86_64", "python_version": "3.11"}},
    "mac": {"properties": {}, "environment": {"sys_platform": "darwin", "platform_system": "Darwin",
            "platform_machine": "arm64", "python_version": "3.12", "platform_release": "23.1.0"}},
    "windows": {"properties": {}, "environment": {"sys_platform": "win32", "os_name": "nt",
                "platform_system": "Windows", "platform_machine": "AMD64",
                "python_version": "3.12"}},
}  # fmt: skip


def test_os_arch_and_python_differ(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "app", "1.0", requires=["native", "newer"])
    for tag in ("cp311-cp311-manylinux_2_17_x86_64", "cp312-cp312-macosx_11_0_arm64",
                "cp312-cp312-win_amd64", "cp312-cp312-manylinux_2_17_x86_64"):  # fmt: skip
        make_wheel(wheels, "native", "1.0", tag=tag)
    make_wheel(wheels, "newer", "2.0", requires_python=">=3.12")
    make_wheel(wheels, "newer", "1.0")
    paths = []
    for name, data in PROFILES.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(data))
        paths += ["--profile", str(path)]
    lock = tmp_path / "pylock.toml"
    done = fitwheel(
        "lock", "app", *paths, "-o", str(lock), "--no-index", "-f", str(wheels),
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    ours = read_lock(str(lock))
    native = next(p for p in ours.packages if p.name == "native")
    assert native.targets == {
        "linux": "native-1.0-cp311-cp311-manylinux_2_17_x86_64.whl",
        "mac": "native-1.0-cp312-cp312-macosx_11_0_arm64.whl",
        "windows": "native-1.0-cp312-cp312-win_amd64.whl",
    }
    newer = {p.version: p for p in ours.packages if p.name == "newer"}
    assert set(newer["1.0"].targets) == {"linux"} and set(newer["2.0"].targets) == {
        "mac",
        "windows",
    }
    assert 'python_version == "3.11"' in (newer["1.0"].marker or "")
    assert len(ours.environments) == 3
    data = tomllib.loads(lock.read_text())
    pylock = Pylock.from_dict(data)
    targets = lock_targets(
        paths[1::2], python_version=None, platforms=(), gpu_policy=None, enabled=False
    )
    for target in targets:
        picked = {
            package.name: wheel.filename
            for package, wheel in pylock.select(environment=target.environment, tags=target.tags)
        }
        locked = {p.name: p.targets[target.name] for p in ours.packages if target.name in p.targets}
        assert picked == locked, target.name
