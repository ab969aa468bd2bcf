"""Publishing: ``variant make`` on a real ~190 MB wheel, and ``index build`` of 2,000 wheels.

    .venv/bin/python -m benchmarks publish

``variant make`` on torch 2.13.0 (CPU, x86_64, 12,248 members) against copying the file (the
baseline: ``shutil.copyfile`` plus an fsync of the copy, in a fresh interpreter, as fitwheel
flushes its output before the atomic rename; also ``cp`` without and with ``sync FILE``) and
against variantlib 0.2.2 ``make-variant --skip-plugin-validation``. fitwheel runs with its default
verification (every member inflated and hashed against RECORD), with ``--no-verify``, and with
verification on plain zlib (as where ISA-L is not installed). The wheel is taken from
``$FITWHEEL_BENCH_TORCH_WHEEL``, else from a local wheel store (``/opt/wheels``), else fetched
once with ``pip download torch==2.13.0 --no-deps`` into ``~/.cache/fitwheel-bench``.

``index build`` of 2,000 wheels (400 projects x 5 versions) in two shapes: tiny wheels (4 KB,
the worst case: all cost is per file) and a realistic mix (50 KB to 2 MB, about 500 MB in all).
Each is built cold, against hashing the same files with sha256 (Python's hashlib in a fresh
interpreter, the baseline, and ``sha256sum``), against a floor script that hashes them and
creates the same files and folders as the index (nothing else), and rebuilt with nothing changed.

Targets: make <= variantlib and <= 1.5x a plain copy; cold index build < 2x the sha256 time.
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from benchmarks.harness import Case, compare, smoke

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
    if smoke():
        return None  # a 200 MB wheel is no smoke input: the index part covers the code
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
    outs = {name: work / name for name in ("fw", "fwnv", "fwz", "vl", "cp", "cps", "py")}
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
    copy_outs = outs["py"]
    cases = [
        Case.command(
            "copyfile + fsync (python)",
            [PY, "-c", COPY_AND_SYNC, str(wheel), str(copy_outs / wheel.name)],
            setup=lambda: _fresh(copy_outs),
        ),
        Case.command(
            "cp (no sync)",
            ["cp", str(wheel), str(outs["cp"] / wheel.name)],
            setup=lambda: _fresh(outs["cp"]),
        ),
        Case.command(
            "cp + sync FILE",
            ["sh", "-c", 'cp "$0" "$1" && sync "$1"', str(wheel), str(outs["cps"] / wheel.name)],
            setup=lambda: _fresh(outs["cps"]),
        ),
        Case.command(
            "fitwheel make --no-verify",
            [*fitwheel, "--no-verify", "-o", str(outs["fwnv"])],
            setup=lambda: _fresh(outs["fwnv"]),
        ),
        Case.command(
            "fitwheel variant make",
            [*fitwheel, "-o", str(outs["fw"])],
            setup=lambda: _fresh(outs["fw"]),
        ),
        Case.command(
            "fitwheel make, zlib only",
            [PY, "-c", WITHOUT_ISAL, *fitwheel[3:], "-o", str(outs["fwz"])],
            setup=lambda: _fresh(outs["fwz"]),
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
    results = compare(f"variant make: {wheel.name} ({size_mb:.0f} MB)", cases, repeat=3)
    median = {r.name: r.median for r in results}
    copy = median["copyfile + fsync (python)"]
    print("   targets (same run):")
    for name in ("fitwheel make --no-verify", "fitwheel variant make", "fitwheel make, zlib only"):
        print(
            f"     {name:<28} {median[name] / copy:5.2f}x copyfile+fsync   "
            f"{median[name] / median['cp + sync FILE']:5.2f}x cp+sync   "
            f"{median['variantlib make-variant'] / median[name]:5.1f}x faster than variantlib"
        )


def _wheels(folder: Path, sizes: list[int]) -> None:
    """One wheel per size (400 projects x 5 versions for 2,000): a module, a payload of the
    given size (random bytes, stored: as incompressible as compiled code) and dist-info."""
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(2026)
    for i, size in enumerate(sizes):
        name, version = f"pkg{i // 5:04d}", f"1.{i % 5}"
        dist_info = f"{name}-{version}.dist-info"
        members = {
            f"{name}/__init__.py": f"VERSION = {version!r}\n".encode(),
            f"{dist_info}/METADATA": (
                f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\nRequires-Python: >=3.9\n"
            ).encode(),
            f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        }
        record = "".join(f"{m},,\n" for m in members)
        record += f"{name}/data.bin,,\n{dist_info}/RECORD,,\n"
        with zipfile.ZipFile(
            folder / f"{name}-{version}-py3-none-any.whl", "w", zipfile.ZIP_DEFLATED
        ) as zf:
            zf.writestr(f"{name}/data.bin", rng.randbytes(size), zipfile.ZIP_STORED)
            for member, data in members.items():
                zf.writestr(member, data)
            zf.writestr(f"{dist_info}/RECORD", record)


def tiny_sizes(count: int = 2000) -> list[int]:
    return [4096] * count


def mixed_sizes(count: int = 2000) -> list[int]:
    """50 KB to 2 MB, most of them small (about 500 MB in all)."""
    rng = random.Random(7)
    return [int(50_000 * 40 ** (rng.random() ** 3)) for _ in range(count)]


HASH_ALL = """
import hashlib, os, sys
for entry in os.scandir(sys.argv[1]):
    with open(entry.path, "rb") as fh:
        hashlib.sha256(fh.read()).hexdigest()
"""

COPY_AND_SYNC = """
import os, shutil, sys
shutil.copyfile(sys.argv[1], sys.argv[2])
fd = os.open(sys.argv[2], os.O_RDONLY)
os.fsync(fd)
os.close(fd)
"""

#: fitwheel as where ISA-L is not installed: verification inflates with zlib
WITHOUT_ISAL = """
import sys
sys.modules["isal"] = None
from fitwheel.cli.main import main
raise SystemExit(main(sys.argv[1:]))
"""

#: the floor for any static index of these wheels: hash every wheel and create the files and
#: folders a cold build creates (a link and a .metadata file per wheel, two pages per project)
HASH_AND_CREATE = """
import hashlib, os, sys
src, out = sys.argv[1], sys.argv[2]
projects = {}
for entry in sorted(os.scandir(src), key=lambda e: e.name):
    with open(entry.path, "rb") as fh:
        hashlib.sha256(fh.read()).hexdigest()
    projects.setdefault(entry.name.split("-")[0], []).append(entry)
for sub in ("files", "simple"):
    os.makedirs(f"{out}/{sub}")
for p, entries in projects.items():
    for sub in ("files", "simple"):
        os.mkdir(f"{out}/{sub}/{p}")
    for entry in entries:
        os.link(entry.path, f"{out}/files/{p}/{entry.name}")
        with open(f"{out}/files/{p}/{entry.name}.metadata", "wb") as fh:
            fh.write(b"x" * 100)
    for name in ("index.html", "index.json"):
        with open(f"{out}/simple/{p}/{name}", "wb") as fh:
            fh.write(b"x" * 2000)
"""


def bench_index(work: Path, label: str, sizes: list[int]) -> None:
    wheels = work / "wheels"
    _wheels(wheels, sizes)
    total_mb = sum(p.stat().st_size for p in wheels.iterdir()) / 1e6
    cold = work / "index-cold"
    warm = work / "index-warm"
    build = [PY, "-m", "fitwheel", "index", "build", str(wheels)]
    subprocess.run([*build, "-o", str(warm)], check=True, capture_output=True)
    files = sorted(str(p) for p in wheels.iterdir())
    cases = [
        Case.command("python sha256 of the wheels", [PY, "-c", HASH_ALL, str(wheels)]),
        Case.command("sha256sum of the wheels", ["sha256sum", *files]),
        Case.command(
            "fitwheel index build (cold)",
            [*build, "-o", str(cold)],
            setup=lambda: shutil.rmtree(cold, ignore_errors=True),
        ),
        Case.command(
            "floor: sha256 + same files",
            [PY, "-c", HASH_AND_CREATE, str(wheels), str(work / "floor")],
            setup=lambda: shutil.rmtree(work / "floor", ignore_errors=True),
        ),
        Case.command("fitwheel index build (no change)", [*build, "-o", str(warm)]),
    ]
    title = f"index build: {len(sizes):,} {label} wheels ({total_mb:.0f} MB)"
    results = compare(f"{title}, {len(sizes) // 5} projects", cases, repeat=5)
    median = {r.name: r.median for r in results}
    build_s = median["fitwheel index build (cold)"]
    print(
        f"   target (same run): cold build {build_s / median['python sha256 of the wheels']:.2f}x "
        f"python sha256, {build_s / median['sha256sum of the wheels']:.2f}x sha256sum, "
        f"{build_s / median['floor: sha256 + same files']:.2f}x the floor"
    )
    shutil.rmtree(work, ignore_errors=True)


def main(parts: tuple[str, ...] = ("index", "make")) -> None:
    with tempfile.TemporaryDirectory(prefix="fitwheel-bench-publish-") as tmp:
        work = Path(tmp)
        if "index" in parts:
            count = 40 if smoke() else 2000
            bench_index(work / "tiny", "tiny", tiny_sizes(count))
            bench_index(work / "mixed", "mixed-size", mixed_sizes(count))
        if "make" in parts:
            bench_make(work / "make")


if __name__ == "__main__":
    main(tuple(sys.argv[1:]) or ("index", "make"))
