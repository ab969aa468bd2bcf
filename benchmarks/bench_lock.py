"""``fitwheel sync`` and ``fitwheel lock``, as whole processes, from a loopback simple index;
fitwheel as users install it (:mod:`benchmarks.user_install`).

- ``sync`` of a lock of 30 small wheels (a dependency chain) into a fresh empty virtual
  environment, caches warm after the warm-up round, against ``uv pip sync`` of the requirements
  file ``fitwheel export`` writes for the same target (hash-pinned URLs), with ``fitwheel
  install`` of the same set for scale. Target: at most 1.5x uv.
- ``lock`` of those requirements plus a variant package (torch stand-ins for every label of the
  published torch 2.9.0 file) for four profiles (H100, MI300X, Intel Max, CPU-only), against one
  ``fitwheel install --dry-run`` of the same requirements for one profile (the H100). Pages,
  variants files and wheel metadata are read once and shared by the four resolutions. Target: at
  most 2x.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import Case, Result, compare, smoke
from benchmarks.kit import kit
from benchmarks.user_install import program

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
COUNT = 8 if smoke() else 30

PROFILES: dict[str, dict[str, Any]] = {
    "h100": dict(kit.H100),
    "mi300x": {
        "properties": {"amd": {"gfx_arch": ["gfx942"], "rocm_version": ["6.4"]}},
        "devices": [{"vendor": "amd", "index": 0, "properties": {"amd": {"gfx_arch": ["gfx942"]}}}],
    },
    "intel-max": {
        "properties": {"intel": {"device_ip": ["12.60.7"]}},
        "devices": [
            {"vendor": "intel", "index": 0, "properties": {"intel": {"device_ip": ["12.60.7"]}}}
        ],
    },
    "cpu": {"properties": {}},
}


def _verdict(results: list[Result], limit: float, what: str) -> None:
    ratio = results[0].median / results[-1].median
    print(
        f"   target: <= {limit:.1f}x {what} ({ratio:.2f}x: {'met' if ratio <= limit else 'MISSED'})"
    )


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="fitwheel-bench-"))
    try:
        wheels = work / "wheels"
        for i in range(COUNT):
            name = f"pkg{i:02d}"
            deps = [f"pkg{i + 1:02d}>=1"] if i + 1 < COUNT else []
            files = {
                f"{name}/__init__.py": "X = 1\n",
                f"{name}/data.py": "Y = '" + "x" * 2000 + "'\n",
            }
            kit.make_wheel(wheels, name, "1.0", requires=deps, files=files)
            kit.make_wheel(wheels, name, "0.9", files=files)
        kit.torch_like(wheels)
        from fitwheel.publish.index_build import build_index

        build_index(wheels, work / "site")
        for name, data in PROFILES.items():
            (work / f"{name}.json").write_text(json.dumps(data))
        base = kit.make_venv(work / "base")
        target = work / "target"
        env = kit.clean_env(
            FITWHEEL_CACHE_DIR=str(work / "fw-cache"),
            UV_CACHE_DIR=str(work / "uv-cache"),
            UV_NO_CONFIG="1",
        )

        def fresh() -> None:
            shutil.rmtree(target, ignore_errors=True)
            subprocess.run(["cp", "-a", str(base), str(target)], check=True)

        fitwheel = str(program())
        with kit.serve(work / "site") as (url, _state):
            index = ["--index-url", f"{url}/simple/"]
            plain_lock = work / "plain.toml"
            subprocess.run(
                [fitwheel, "lock", "-q", "pkg00", "--profile", str(work / "cpu.json"),
                 "-o", str(plain_lock), *index],
                check=True, env=env,
            )  # fmt: skip
            requirements = work / "requirements.txt"
            subprocess.run(
                [fitwheel, "export", "-q", str(plain_lock), "--profile", str(work / "cpu.json"),
                 "-o", str(requirements)],
                check=True, env=env,
            )  # fmt: skip
            results = compare(
                f"sync a {COUNT}-package lock into an empty venv (warm caches)",
                [
                    Case.command(
                        "fitwheel sync",
                        [
                            fitwheel,
                            "sync",
                            "-q",
                            str(plain_lock),
                            "--python",
                            str(target),
                            "--profile",
                            str(work / "cpu.json"),
                        ],
                        setup=fresh,
                        env=env,
                    ),
                    Case.command(
                        "fitwheel install (same set, for scale)",
                        [
                            fitwheel,
                            "install",
                            "-q",
                            "--python",
                            str(target),
                            "--no-variants",
                            *index,
                            "pkg00",
                        ],
                        setup=fresh,
                        env=env,
                    ),
                    Case.command(
                        "uv pip sync (exported requirements)",
                        [
                            str(BIN / "uv"),
                            "pip",
                            "sync",
                            "-q",
                            "--python",
                            str(target),
                            "--require-hashes",
                            str(requirements),
                        ],
                        setup=fresh,
                        env=env,
                    ),
                ],
                repeat=7,
            )
            _verdict(results, 1.5, "uv pip sync")
            requirements_args = ["pkg00", "torch"]
            profiles = [a for n in PROFILES for a in ("--profile", str(work / f"{n}.json"))]
            results = compare(
                f"lock {COUNT + 2} packages (one with variants) for 4 profiles vs one dry run",
                [
                    Case.command(
                        "fitwheel lock (4 profiles)",
                        [
                            fitwheel,
                            "lock",
                            "-q",
                            *requirements_args,
                            *profiles,
                            "-o",
                            str(work / "fleet.toml"),
                            *index,
                        ],
                        setup=lambda: (work / "fleet.toml").unlink(missing_ok=True),
                        env=env,
                    ),
                    Case.command(
                        "fitwheel install --dry-run (1 profile)",
                        [
                            fitwheel,
                            "install",
                            "-q",
                            "--dry-run",
                            "--python",
                            str(base),
                            "--profile",
                            str(work / "h100.json"),
                            *index,
                            *requirements_args,
                        ],
                        env=env,
                    ),
                ],
                repeat=7,
            )
            _verdict(results, 2.0, "one install --dry-run")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
