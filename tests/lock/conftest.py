"""A fleet for the lock tests: stand-in wheels for every build of the real torch 2.9 and
torchvision 0.24 variants files (plus a package with x86-64 and aarch64 wheels) on a loopback
index, the fixture machines, and one profile per target as ``fitwheel detect --sysroot`` saves
it. Two machines are copies with another driver: an H100 on a CUDA 13 driver (580) and an
RTX 5090 on a 570 driver (CUDA 12.8, which no CUDA 13 build accepts)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.kit import build_simple_index, clean_env, make_wheel, serve, torch_like

MACHINES = Path(__file__).resolve().parents[1] / "platform" / "machines"
FITWHEEL = [sys.executable, "-m", "fitwheel"]

#: target name -> fixture machine (a folder under tests/platform/machines, or a driver copy)
TARGETS = {
    "h100": "h100-cuda13",
    "mi300x": "gpu-mi300x",
    "intel-max": "gpu-intel-max",
    "cpu-x86": "nogpu-server",
    "graviton": "arm-graviton3-neoverse-v1",
}
#: what each target installs: project -> BUILD (the variant label, or 'plain')
EXPECTED = {
    "h100": {"torch": "cuda13.0", "torchvision": "cuda13.0", "nvidia-runtime": "plain",
             "cuda13-extras": "plain"},
    "mi300x": {"torch": "rocm6.4", "torchvision": "rocm6.4"},
    "intel-max": {"torch": "xpu", "torchvision": "xpu"},
    "cpu-x86": {"torch": "null", "torchvision": "null"},
    "graviton": {"torch": "null", "torchvision": "null"},
}  # fmt: skip
for _name, _builds in EXPECTED.items():
    _builds.update({"filelock": "plain"})
    _builds["fastops"] = "aarch64" if _name == "graviton" else "x86_64"


@dataclass
class Fleet:
    root: Path
    wheels: Path
    index: Path
    url: str
    machines: dict[str, Path]
    profiles: dict[str, Path]
    lock: Path

    def machine(self, target: str) -> Path:
        return self.machines[TARGETS[target]]


def fitwheel(*args: str, cwd: Path | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FITWHEEL, *args], capture_output=True, text=True, env=clean_env(**env), cwd=cwd
    )


def _driver_copy(src: str, dst: Path, driver: str) -> Path:
    shutil.copytree(MACHINES / src, dst, symlinks=True)
    for rel in ("proc/driver/nvidia/version", "sys/module/nvidia/version"):
        path = dst / rel
        path.write_text(re.sub(r"\d{3}\.\d+\.\d+", driver, path.read_text()))
    return dst


def fleet_wheels(folder: Path) -> Path:
    torch_like(folder)
    torch_like(folder, "torchvision", "0.24.0", deps=("torch==2.9.0",))
    for arch in ("x86_64", "aarch64"):
        make_wheel(
            folder,
            "fastops",
            "1.0",
            tag=f"py3-none-manylinux_2_17_{arch}",
            files={"fastops/__init__.py": f"BUILD = {arch!r}\n"},
        )
    return folder


def profile_of(machine: Path, out: Path) -> Path:
    from fitwheel.cli._targets import sysroot_probe
    from fitwheel.platform.detect import detect_profile

    out.write_text(detect_profile(sysroot_probe(str(machine))).dumps())
    return out


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    root = tmp_path_factory.mktemp("fleet")
    wheels = fleet_wheels(root / "wheels")
    index = root / "index"
    build_simple_index(wheels, index)
    machines = {name: MACHINES / name for name in TARGETS.values()}
    machines["h100-cuda13"] = _driver_copy("gpu-h100-open", root / "h100-cuda13", "580.82.07")
    machines["rtx5090-570"] = _driver_copy("gpu-rtx5090-igpu", root / "rtx5090-570", "570.133.07")
    profiles = {
        name: profile_of(machines[machine], root / f"{name}.json")
        for name, machine in TARGETS.items()
    }
    with serve(index) as (url, _state):
        lock = root / "pylock.toml"
        args = ["lock", "torch==2.9.0", "torchvision", "fastops", "-o", str(lock)]
        args += ["--index-url", f"{url}/simple/", "--cache-dir", str(root / "cache")]
        for name in TARGETS:
            args += ["--profile", str(profiles[name])]
        done = fitwheel(*args)
        assert done.returncode == 0, done.stderr
        yield Fleet(root, wheels, index, url, machines, profiles, lock)


def builds(venv: Path) -> dict[str, str]:
    """Every distribution installed in ``venv`` with the BUILD its module declares."""
    code = (
        "import importlib, importlib.metadata as m, json\n"
        "out = {}\n"
        "for d in m.distributions():\n"
        "    n = d.metadata['Name']\n"
        "    mod = importlib.import_module(n.replace('-', '_'))\n"
        "    out[n] = getattr(mod, 'BUILD', 'plain')\n"
        "print(json.dumps(out))\n"
    )
    import json

    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    return {k.replace("_", "-"): v for k, v in json.loads(done.stdout).items()}
