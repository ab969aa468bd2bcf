"""``fitwheel install`` against uv and pip, as whole processes, into fresh virtual environments.

Cases (each peer gets a fresh copy of one empty venv before every timed run; caches stay warm
after the warm-up round, as they would on a developer machine):

- 40 small wheels with a dependency chain, from a local find-links folder (no network);
- the same from a static simple index served on 127.0.0.1 (PEP 691 JSON + PEP 658 metadata);
- 5 wheels of 400 modules each, to show the unpacked-wheel cache (hard-link and copy modes);
- a variant package (torch stand-ins for every label of the published torch 2.9.0 file) from
  that index: fitwheel picks the variant for an H100 profile; uv and pip see only the
  non-variant wheel, so they do less work — the ratio is the price of variant selection.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import Case, compare, smoke
from benchmarks.user_install import program

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
COUNT = 8 if smoke() else 40


def _kit() -> object:
    sys.path.insert(0, str(ROOT))
    from tests import kit

    return kit


def _wheels(folder: Path) -> list[str]:
    kit = _kit()
    names = []
    for i in range(COUNT):
        name = f"pkg{i:02d}"
        deps = [f"pkg{i + 1:02d}>=1"] if i % 4 != 3 and i + 1 < COUNT else []
        files = {f"{name}/__init__.py": "X = 1\n", f"{name}/data.py": "Y = '" + "x" * 2000 + "'\n"}
        kit.make_wheel(folder, name, "1.0", requires=deps, files=files)  # type: ignore[attr-defined]
        kit.make_wheel(folder, name, "0.9", files=files)  # type: ignore[attr-defined]
        names.append(name)
    kit.torch_like(folder)  # type: ignore[attr-defined]
    return [n for i, n in enumerate(names) if i % 4 == 0]


def main() -> None:
    kit = _kit()
    work = Path(tempfile.mkdtemp(prefix="fitwheel-bench-"))
    try:
        wheels = work / "wheels"
        roots = _wheels(wheels)
        from fitwheel.publish.index_build import build_index

        build_index(wheels, work / "site")
        base = kit.make_venv(work / "base")  # type: ignore[attr-defined]
        target = work / "target"
        profile = work / "h100.json"
        profile.write_text(
            json.dumps(
                {
                    "properties": {
                        "nvidia": {
                            "cuda_version_lower_bound": ["13.0", "12.9", "12.8", "12.6", "12.0"],
                            "sm_arch": ["90_real", "90_virtual"],
                        }
                    },
                }
            )
        )
        env = kit.clean_env(
            FITWHEEL_CACHE_DIR=str(work / "fw-cache"),  # type: ignore[attr-defined]
            UV_CACHE_DIR=str(work / "uv-cache"),
            PIP_CACHE_DIR=str(work / "pip-cache"),
            UV_NO_CONFIG="1",
        )

        def fresh() -> None:
            shutil.rmtree(target, ignore_errors=True)
            subprocess.run(["cp", "-a", str(base), str(target)], check=True)

        fitwheel = [str(program()), "install", "-q", "--python", str(target)]
        uv = [str(BIN / "uv"), "pip", "install", "-q", "--python", str(target)]
        pip = [sys.executable, "-m", "pip", "--python", str(target), "install", "-q"]
        local = ["--no-index", "--find-links", str(wheels)]
        compare(
            f"install {len(roots)} requested, {COUNT} total wheels from a find-links folder",
            [
                Case.command(
                    "fitwheel", [*fitwheel, *local, "--no-variants", *roots], setup=fresh, env=env
                ),
                Case.command("uv", [*uv, *local, *roots], setup=fresh, env=env),
                Case.command("pip", [*pip, *local, *roots], setup=fresh, env=env),
            ],
            repeat=5,
        )
        big = work / "big"
        for i in range(5):
            modules = {f"big{i}/m{j:03d}.py": f"X = {j}\n" + "# padding\n" * 40 for j in range(400)}
            kit.make_wheel(big, f"big{i}", "1.0", files=modules)  # type: ignore[attr-defined]
        many = ["--no-index", "--find-links", str(big)] + [f"big{i}" for i in range(5)]
        compare(
            "install 5 wheels of 400 modules each (2,000 files) from a find-links folder",
            [
                Case.command("fitwheel", [*fitwheel, *many, "--no-variants"], setup=fresh, env=env),
                Case.command(
                    "fitwheel --link-mode copy",
                    [*fitwheel, *many, "--no-variants", "--link-mode", "copy"],
                    setup=fresh,
                    env=env,
                ),
                Case.command("uv", [*uv, *many], setup=fresh, env=env),
                Case.command("pip", [*pip, *many], setup=fresh, env=env),
            ],
            repeat=5,
        )
        with kit.serve(work / "site") as (url, _state):  # type: ignore[attr-defined]
            index = ["--index-url", f"{url}/simple/"]
            compare(
                f"install {COUNT} wheels from a loopback simple index",
                [
                    Case.command(
                        "fitwheel",
                        [*fitwheel, *index, "--no-variants", *roots],
                        setup=fresh,
                        env=env,
                    ),
                    Case.command("uv", [*uv, *index, *roots], setup=fresh, env=env),
                    Case.command("pip", [*pip, *index, *roots], setup=fresh, env=env),
                ],
                repeat=5,
            )
            compare(
                "install torch (7 variants + plain) from a loopback index",
                [
                    Case.command(
                        "fitwheel",
                        [*fitwheel, *index, "--profile", str(profile), "torch"],
                        setup=fresh,
                        env=env,
                    ),
                    Case.command(
                        "fitwheel --no-variants",
                        [*fitwheel, *index, "--no-variants", "torch"],
                        setup=fresh,
                        env=env,
                    ),
                    Case.command("uv (plain wheel)", [*uv, *index, "torch"], setup=fresh, env=env),
                    Case.command(
                        "pip (plain wheel)", [*pip, *index, "torch"], setup=fresh, env=env
                    ),
                ],
                repeat=5,
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
