"""Stand-in environments for the doctor tests: wheels with the metadata shapes of the real
builds (local version labels, ``torch/version.py``, ``variant.json``, libraries with GPU code),
installed by fitwheel into real virtual environments."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.kit import FIXTURES, clean_env, elf_library, make_venv, make_wheel

ROOT = Path(__file__).resolve().parents[2]
MACHINES = ROOT / "tests" / "platform" / "machines"
FITWHEEL = [sys.executable, "-m", "fitwheel"]

CUDA_128 = ["70_real", "75_real", "80_real", "86_real", "90_real", "100_real", "120_real"]


def version_py(cuda: str | None = None, hip: str | None = None, xpu: str | None = None) -> str:
    def lit(value: str | None) -> str:
        return repr(value) if value is not None else "None"

    return (
        "from typing import Optional\n\n"
        "__all__ = ['__version__', 'debug', 'cuda', 'git_version', 'hip', 'xpu']\n"
        "debug = False\n"
        f"cuda: Optional[str] = {lit(cuda)}\n"
        "git_version = '0123456789abcdef'\n"
        f"hip: Optional[str] = {lit(hip)}\n"
        f"xpu: Optional[str] = {lit(xpu)}\n"
    )


def torch_wheel(
    folder: Path,
    version: str = "2.9.0+cu128",
    *,
    cuda: str | None = "12.8",
    hip: str | None = None,
    xpu: str | None = None,
    archs: Sequence[str] = (),
    gfx: Sequence[str] = (),
    requires: Sequence[str] = (),
    label: str | None = None,
    init: str = "__version__ = 'stand-in'\n",
    project: str = "torch",
) -> Path:
    """A torch-like wheel: ``{project}/version.py`` as torch writes it, and, for ``archs`` or
    ``gfx``, a ``lib/libtorch_cuda.so`` (or ``libtorch_hip.so``) with that GPU code. ``label``
    (a label of the published torch 2.9.0 variants file) makes it that variant wheel."""
    files: dict[str, str | bytes] = {
        f"{project}/__init__.py": init,
        f"{project}/version.py": version_py(cuda=cuda, hip=hip, xpu=xpu),
    }
    scratch = folder / ".libs"
    if archs:
        files[f"{project}/lib/libtorch_cuda.so"] = elf_library(
            scratch / "libtorch_cuda.so", cuda=archs, containers=3
        ).read_bytes()
    if gfx:
        files[f"{project}/lib/libtorch_hip.so"] = elf_library(
            scratch / "libtorch_hip.so", rocm=gfx
        ).read_bytes()
    variant = None
    if label is not None:
        published = json.loads((FIXTURES / "torch-2.9.0-variants.json").read_text())
        variant = {k: v for k, v in published["variants"][label].items() if k != "priority"}
    return make_wheel(
        folder,
        project,
        version,
        files=files,
        requires=requires,
        label=label,
        variant=variant,
        tag="py3-none-any",
    )


def plain_wheel(folder: Path, name: str, version: str, requires: Sequence[str] = ()) -> Path:
    return make_wheel(folder, name, version, requires=requires)


def install(venv: Path, wheels: Sequence[Path], cache: Path) -> None:
    """Install ``wheels`` with fitwheel (no dependencies, no variant checks: wrong on purpose)."""
    forced = []
    for wheel in wheels:
        parts = wheel.stem.split("-")
        if len(parts) == 6:  # a variant wheel: name-version-py-abi-plat-label
            forced += ["--variant", f"{parts[0]}={parts[5]}"]
    subprocess.run(
        [
            *FITWHEEL,
            "install",
            "-q",
            "--no-deps",
            "--no-index",
            "--python",
            str(venv),
            "--cache-dir",
            str(cache),
            "--profile",
            str(cache / "empty-profile.json"),
            *forced,
            *map(str, wheels),
        ],
        check=True,
        env=clean_env(),
        capture_output=True,
    )


def environment(tmp: Path, wheels: Sequence[Path]) -> Path:
    """A fresh virtual environment with ``wheels`` installed by fitwheel."""
    venv = make_venv(tmp / "venv")
    cache = tmp / "cache"
    cache.mkdir(exist_ok=True)
    (cache / "empty-profile.json").write_text('{"properties": {}}')
    if wheels:
        install(venv, wheels, cache)
    return venv


def doctor(
    venv: Path,
    *args: str,
    machine: str | None = None,
    profile: Path | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> tuple[int, dict[str, Any], str]:
    """``fitwheel doctor --json`` on ``venv``: exit status, the JSON report, stderr."""
    target = []
    if machine is not None:
        target = ["--sysroot", str(MACHINES / machine)]
    elif profile is not None:
        target = ["--profile", str(profile)]
    proc = subprocess.run(
        [*FITWHEEL, "doctor", "--json", "--python", str(venv), *target, *args],
        capture_output=True,
        text=True,
        env=dict(env) if env is not None else clean_env(),
        timeout=timeout,
    )
    report = json.loads(proc.stdout) if proc.stdout.strip() else {}
    return proc.returncode, report, proc.stderr


def failed(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c for c in report["checks"] if c["status"] == "fail"]


def by_name(
    report: Mapping[str, Any], name: str, package: str | None = None
) -> list[dict[str, str]]:
    return [
        c
        for c in report["checks"]
        if c["name"] == name and (package is None or c["package"] == package)
    ]
