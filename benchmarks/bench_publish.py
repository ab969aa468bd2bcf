"""Publishing: ``variant make`` on a real ~190 MB wheel, and ``index build`` of 2,000 wheels.

    .venv/bin/python -m benchmarks publish

``variant make`` on torch 2.13.0 (CPU, x86_64) against variantlib 0.2.2 ``make-variant
--skip-plugin-validation`` and against copying the file (``cp``; ``cp`` + ``sync FILE``, which
forces the bytes to disk as fitwheel does before its atomic rename). The wheel is taken from
``$FITWHEEL_BENCH_TORCH_WHEEL``, else from a local wheel store (``/opt/wheels``), else fetched
once with ``pip download torch==2.13.0 --no-deps`` into ``~/.cache/fitwheel-bench``.

``index build`` of 2,000 small wheels (400 projects x 5 versions), cold, against hashing the same
files with sha256 (``sha256sum``, and Python's hashlib in a fresh interpreter); plus a rebuild
with nothing changed (the incremental path).

Targets: make <= variantlib and <= 1.5x a plain copy; cold index build < 2x the sha256 time.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from benchmarks.harness import Case, compare

PY = sys.executable
BIN = Path(PY).parent
TORCH = "torch==2.13.0"
CONFIG = """
[variant.default-priorities]
namespace = ["x86_64"]
[variant.providers.x86_64]
requires = ["x86-64-variant-provider"]
"""


def find_torch_wheel() -> Path | None:
    env = os.environ.get("FITWHEEL_BENCH_TORCH_WHEEL")
    if env:
        return Path(env)
    for folder in (Path("/opt/wheels"), Path.home() / ".cache" / "fitwheel-bench"):
        found = sorted(folder.glob("torch-2.13.0*.whl")) if folder.is_dir() else []
        if found:
            return found[0]
    cache = Path.home() / ".cache" / "fitwheel-bench"
    cache.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            PY,
            "-m",
            "pip",
            "download",
            TORCH,
            "--no-deps",
            "--only-binary",
            ":all:",
            "-d",
            str(cache),
        ],
        capture_output=True,
    )
    found = sorted(cache.glob("torch-2.13.0*.whl"))
    if proc.returncode != 0 or not found:
        return None
    return found[0]


def _fresh(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)


def bench_make(work: Path) -> None:
    wheel = find_torch_wheel()
    if wheel is None:
        print("\n== variant make: skipped (no torch 2.13.0 wheel found or downloadable)")
        return
    size_mb = wheel.stat().st_size / 1e6
    work.mkdir(parents=True, exist_ok=True)
    config = work / "pyproject.toml"
    config.write_text(CONFIG)
    outs = {name: work / name for name in ("fw", "fwnv", "vl", "cp", "cps")}
    prop = "x86_64 :: level :: v3"
    fitwheel = [
        PY,
        "-m",
        "fitwheel",
        "variant",
        "make",
        str(wheel),
        "-p",
        prop,
        "--variants-config",
        str(config),
    ]
    cases = [
        Case.command(
            "fitwheel variant make",
            [*fitwheel, "-o", str(outs["fw"])],
            setup=lambda: _fresh(outs["fw"]),
        ),
        Case.command(
            "fitwheel make --no-verify",
            [*fitwheel, "--no-verify", "-o", str(outs["fwnv"])],
            setup=lambda: _fresh(outs["fwnv"]),
        ),
        Case.command(
            "cp", ["cp", str(wheel), str(outs["cp"] / wheel.name)], setup=lambda: _fresh(outs["cp"])
        ),
        Case.command(
            "cp + sync FILE",
            ["sh", "-c", 'cp "$0" "$1" && sync "$1"', str(wheel), str(outs["cps"] / wheel.name)],
            setup=lambda: _fresh(outs["cps"]),
        ),
        Case.command(
            "variantlib make-variant",
            [
                str(BIN / "variantlib"),
                "make-variant",
                "-f",
                str(wheel),
                "-o",
                str(outs["vl"]),
                "-p",
                prop,
                "--skip-plugin-validation",
                "--pyproject-toml",
                str(config),
            ],
            setup=lambda: _fresh(outs["vl"]),
        ),
    ]
    compare(f"variant make: {wheel.name} ({size_mb:.0f} MB)", cases, repeat=3)


def _small_wheels(folder: Path, count: int = 2000) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    payload = bytes(range(256)) * 16
    for i in range(count):
        name, version = f"pkg{i // 5:04d}", f"1.{i % 5}"
        dist_info = f"{name}-{version}.dist-info"
        members = {
            f"{name}/__init__.py": f"VERSION = {version!r}\n".encode(),
            f"{name}/data.bin": payload,
            f"{dist_info}/METADATA": (
                f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: >=3.9\n"
            ).encode(),
            f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        }
        record = "".join(f"{m},,\n" for m in members) + f"{dist_info}/RECORD,,\n"
        members[f"{dist_info}/RECORD"] = record.encode()
        with zipfile.ZipFile(
            folder / f"{name}-{version}-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED
        ) as zf:
            for member, data in members.items():
                zf.writestr(member, data)


HASH_ALL = """
import hashlib, os, sys
for entry in os.scandir(sys.argv[1]):
    with open(entry.path, "rb") as fh:
        hashlib.sha256(fh.read()).hexdigest()
"""

#: the floor for any static index: hash every wheel and create as many small files as a cold
#: build writes (one .metadata per wheel, two pages per project), in as many folders
HASH_AND_CREATE = """
import hashlib, os, sys
out = sys.argv[2]
for entry in os.scandir(sys.argv[1]):
    with open(entry.path, "rb") as fh:
        hashlib.sha256(fh.read()).hexdigest()
for p in range(400):
    for sub in ("files", "simple"):
        os.makedirs(f"{out}/{sub}/p{p}")
    for name in ("index.html", "index.json"):
        with open(f"{out}/simple/p{p}/{name}", "wb") as fh:
            fh.write(b"x" * 2000)
    for v in range(5):
        os.link(f"{sys.argv[1]}/pkg{p:04d}-1.{v}-py3-none-any.whl", f"{out}/files/p{p}/w{v}.whl")
        with open(f"{out}/files/p{p}/w{v}.whl.metadata", "wb") as fh:
            fh.write(b"x" * 100)
"""


def bench_index(work: Path) -> None:
    wheels = work / "wheels"
    _small_wheels(wheels)
    cold = work / "index-cold"
    warm = work / "index-warm"
    build = [PY, "-m", "fitwheel", "index", "build", str(wheels)]
    subprocess.run([*build, "-o", str(warm)], check=True, capture_output=True)
    files = sorted(str(p) for p in wheels.iterdir())
    cases = [
        Case.command(
            "fitwheel index build (cold)",
            [*build, "-o", str(cold)],
            setup=lambda: shutil.rmtree(cold, ignore_errors=True),
        ),
        Case.command("python sha256 of the wheels", [PY, "-c", HASH_ALL, str(wheels)]),
        Case.command("sha256sum of the wheels", ["sha256sum", *files]),
        Case.command(
            "floor: sha256 + same file writes",
            [PY, "-c", HASH_AND_CREATE, str(wheels), str(work / "floor")],
            setup=lambda: shutil.rmtree(work / "floor", ignore_errors=True),
        ),
        Case.command("fitwheel index build (no change)", [*build, "-o", str(warm)]),
    ]
    compare("index build: 2,000 small wheels, 400 projects", cases, repeat=5)


def main(parts: tuple[str, ...] = ("index", "make")) -> None:
    with tempfile.TemporaryDirectory(prefix="fitwheel-bench-publish-") as tmp:
        work = Path(tmp)
        if "index" in parts:
            bench_index(work / "index")
        if "make" in parts:
            bench_make(work / "make")


if __name__ == "__main__":
    main(tuple(sys.argv[1:]) or ("index", "make"))
