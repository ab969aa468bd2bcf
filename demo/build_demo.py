"""Build the demo wheels and the demo index.

    .venv/bin/python demo/build_demo.py            # -> demo/out/wheels, demo/out/index

Every build of ``fitwheel-demo`` is first a plain wheel (written with zipfile: the package is pure
Python, so no build backend is needed), then ``fitwheel variant make`` turns it into a variant
wheel with the providers of ``demo/project/pyproject.toml``. Finally ``fitwheel index build``
makes a static simple index of all of them.
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROJECT = HERE / "project"
OUT = HERE / "out"
NAME = "fitwheel_demo"
VERSION = "1.0"
#: fixed timestamps, so the same sources always give the same wheels
DATE_TIME = (2026, 1, 1, 0, 0, 0)


@dataclass(frozen=True)
class Build:
    label: str | None  # None: the plain wheel; "null": the null variant
    description: str
    properties: tuple[str, ...] = ()


BUILDS = (
    Build(
        "cuda12",
        "CUDA 12 build for Ampere, Ada and Hopper",
        (
            "nvidia :: cuda_version_lower_bound :: 12.0",
            "nvidia :: sm_arch :: 80_real",
            "nvidia :: sm_arch :: 86_real",
            "nvidia :: sm_arch :: 89_real",
            "nvidia :: sm_arch :: 90_real",
        ),
    ),
    Build(
        "cuda13",
        "CUDA 13 build for Hopper and Blackwell",
        (
            "nvidia :: cuda_version_lower_bound :: 13.0",
            "nvidia :: sm_arch :: 90_real",
            "nvidia :: sm_arch :: 100_real",
            "nvidia :: sm_arch :: 120_real",
        ),
    ),
    Build(
        "rocm6.4",
        "ROCm 6.4 build for MI200 and MI300",
        ("amd :: gfx_arch :: gfx90a", "amd :: gfx_arch :: gfx942", "amd :: rocm_version :: 6.4"),
    ),
    Build(
        "rocm7.0",
        "ROCm 7.0 build for MI300 and MI350",
        ("amd :: gfx_arch :: gfx942", "amd :: gfx_arch :: gfx950", "amd :: rocm_version :: 7.0"),
    ),
    Build(
        "xpu",
        "Intel GPU build (Data Center GPU Max, Arc)",
        ("intel :: device_ip :: 12.60.7", "intel :: device_ip :: 12.55.8"),
    ),
    Build("x86_64_v3", "CPU build for x86-64-v3 (AVX2)", ("x86_64 :: level :: v3",)),
    Build("aarch64", "CPU build for Armv8.2-A", ("aarch64 :: version :: 8.2a",)),
    Build("null", "the null variant: generic CPU code, chosen when no other build fits"),
    Build(None, "plain wheel for installers without wheel-variant support"),
)


def _b64_sha256(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _metadata() -> bytes:
    import tomllib

    project = tomllib.loads((PROJECT / "pyproject.toml").read_text())["project"]
    return (
        "Metadata-Version: 2.1\n"
        f"Name: {project['name']}\n"
        f"Version: {project['version']}\n"
        f"Summary: {project['description']}\n"
        f"Requires-Python: {project['requires-python']}\n"
    ).encode()


def build_plain_wheel(build: Build, folder: Path) -> Path:
    """The plain wheel of one build: the package with its own ``_build.py``."""
    files: dict[str, bytes] = {}
    for path in sorted((PROJECT / NAME).glob("*.py")):
        files[f"{NAME}/{path.name}"] = path.read_bytes()
    files[f"{NAME}/_build.py"] = (
        f"BUILD = {build.label or 'plain'!r}\nDESCRIPTION = {build.description!r}\n"
    ).encode()
    dist_info = f"{NAME}-{VERSION}.dist-info"
    files[f"{dist_info}/METADATA"] = _metadata()
    files[f"{dist_info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: fitwheel-demo\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    record = "".join(f"{name},sha256={_b64_sha256(d)},{len(d)}\n" for name, d in files.items())
    files[f"{dist_info}/RECORD"] = (record + f"{dist_info}/RECORD,,\n").encode()
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"{NAME}-{VERSION}-py3-none-any.whl"
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in files.items():
            info = zipfile.ZipInfo(name, date_time=DATE_TIME)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(info, data)
    return target


def build_all(out: Path = OUT, *, quiet: bool = False) -> Path:
    """Build every wheel into ``out/wheels`` and the index into ``out/index``; returns the index."""
    from fitwheel.publish.config import load_config
    from fitwheel.publish.index_build import build_index
    from fitwheel.publish.make import make_variant
    from fitwheel.variants.model import VariantProperty

    config = load_config(PROJECT / "pyproject.toml", pyproject=True)
    wheels = out / "wheels"
    scratch = out / "plain"
    shutil.rmtree(wheels, ignore_errors=True)
    shutil.rmtree(scratch, ignore_errors=True)
    wheels.mkdir(parents=True)
    for build in BUILDS:
        plain = build_plain_wheel(build, scratch / (build.label or "plain"))
        if build.label is None:
            shutil.copy2(plain, wheels / plain.name)
            made = wheels / plain.name
        else:
            props = [VariantProperty.parse(p) for p in build.properties]
            made = make_variant(
                plain,
                props,
                config,
                label=build.label,
                null=build.label == "null",
                out_dir=wheels,
            ).path
        if not quiet:
            print(f"  built {made.name}")
    shutil.rmtree(scratch, ignore_errors=True)
    index = out / "index"
    report = build_index(wheels, index)
    if not quiet:
        print(
            f"  index: {report.wheels} wheels, {len(report.variants_files)} variants.json "
            f"-> {index}"
        )
    return index


def main() -> int:
    build_all()
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE.parent / "src"))
    raise SystemExit(main())
