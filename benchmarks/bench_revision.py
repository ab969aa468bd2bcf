"""This tree's fitwheel against the fitwheel of an earlier revision, in one run.

    FITWHEEL_BENCH_BASE=<git revision> .venv/bin/python -m benchmarks revision

Both are installed as ``pip install`` installs them (not editable) into venvs of their own, and
run as whole processes, alternately, on the same inputs, each with a cache of its own:

- install, warm cache: 40 small wheels from a find-links folder; 5 wheels of 400 modules each;
  a variant package (stand-ins for every torch 2.9.0 label) from a loopback simple index for an
  H100 profile;
- publish: ``variant make`` of a 3,000-member wheel (every member inflated and checked against
  RECORD), and ``index build`` of 300 small wheels, cold;
- select: ``fitwheel select`` of the published torch 2.9.0 variants file for an H100 profile.

The ratio printed for each case is the earlier revision's time to this tree's; a change that
keeps speed stays within a few percent. Without ``FITWHEEL_BENCH_BASE`` the benchmark says so and
does nothing (``make bench`` then skips it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.bench_publish import CONFIG
from benchmarks.harness import Case, compare
from benchmarks.kit import kit
from benchmarks.user_install import install as _install_fitwheel
from benchmarks.user_install import revision_program

ROOT = Path(__file__).resolve().parents[1]
PROFILE = ROOT / "tests" / "data" / "profiles" / "h100.json"
VARIANTS = ROOT / "tests" / "variants" / "data" / "published" / "torch-2.9.0-variants.json"


def _wheels(folder: Path) -> list[str]:
    names = []
    for i in range(40):
        name = f"pkg{i:02d}"
        deps = [f"pkg{i + 1:02d}>=1"] if i % 4 != 3 and i + 1 < 40 else []
        files = {f"{name}/__init__.py": "X = 1\n", f"{name}/data.py": "Y = '" + "x" * 2000 + "'\n"}
        kit.make_wheel(folder, name, "1.0", requires=deps, files=files)
        names.append(name)
    kit.torch_like(folder)
    return [n for i, n in enumerate(names) if i % 4 == 0]


def _pairs(
    title: str,
    programs: dict[str, Path],
    args: Callable[[Path, str], list[str]],
    *,
    setup: Callable[[str], Callable[[], object]] | None = None,
    env: Callable[[str], dict[str, str]],
    repeat: int,
) -> None:
    cases = [
        Case.command(
            name,
            [str(program), *args(program, name)],
            setup=setup(name) if setup is not None else None,
            env=env(name),
        )
        for name, program in programs.items()
    ]
    results = compare(title, cases, repeat=repeat)
    base, head = results[0].median, results[1].median
    print(f"   -> this tree takes {head / base:.3f}x the time of the base revision")


def main() -> None:
    revision = os.environ.get("FITWHEEL_BENCH_BASE")
    if not revision:
        print("\n== revision: skipped (set FITWHEEL_BENCH_BASE to the git revision to compare)")
        return
    work = Path(tempfile.mkdtemp(prefix="fitwheel-bench-rev-"))
    try:
        programs = {
            f"fitwheel {revision}": revision_program(revision),
            "fitwheel (this tree)": _install_fitwheel(ROOT, work / "head-venv"),
        }
        keys = {name: f"c{i}" for i, name in enumerate(programs)}
        wheels = work / "wheels"
        roots = _wheels(wheels)
        big = work / "big"
        for i in range(5):
            modules = {f"big{i}/m{j:03d}.py": f"X = {j}\n" + "# padding\n" * 40 for j in range(400)}
            kit.make_wheel(big, f"big{i}", "1.0", files=modules)
        base_venv = kit.make_venv(work / "target-base")
        site = work / "site"
        subprocess.run(
            [str(programs[f"fitwheel {revision}"]), "index", "build", str(wheels), "-o", str(site)],
            check=True,
            capture_output=True,
        )

        def env(name: str) -> dict[str, str]:
            return kit.clean_env(FITWHEEL_CACHE_DIR=str(work / "cache" / keys[name]))

        def fresh(name: str) -> Callable[[], object]:
            def setup() -> None:
                target = work / f"target-{keys[name]}"
                shutil.rmtree(target, ignore_errors=True)
                subprocess.run(["cp", "-a", str(base_venv), str(target)], check=True)

            return setup

        def install(*extra: str) -> Callable[[Path, str], list[str]]:
            def argv(_program: Path, name: str) -> list[str]:
                target = work / f"target-{keys[name]}"
                return ["install", "-q", "--python", str(target), *extra]

            return argv

        local = ["--no-index", "--find-links", str(wheels), "--no-variants", *roots]
        _pairs(
            "install 10 requested, 40 total wheels, warm, find-links",
            programs,
            install(*local),
            setup=fresh,
            env=env,
            repeat=7,
        )
        many = ["--no-index", "--find-links", str(big), "--no-variants"]
        _pairs(
            "install 5 wheels of 400 modules, warm, find-links",
            programs,
            install(*many, *(f"big{i}" for i in range(5))),
            setup=fresh,
            env=env,
            repeat=7,
        )
        with kit.serve(site) as (url, _state):
            _pairs(
                "install torch (7 variants + plain) for an H100, warm, loopback index",
                programs,
                install("--index-url", f"{url}/simple/", "--profile", str(PROFILE), "torch"),
                setup=fresh,
                env=env,
                repeat=7,
            )
        member_count = 3000
        files = {f"wide/m{j:04d}.py": f"X = {j}\n" + "# filler line\n" * 200 for j in range(3000)}
        made = kit.make_wheel(work / "wide", "wide", "1.0", files=files)
        config = work / "variants.toml"
        config.write_text(CONFIG)

        def out(name: str) -> Path:
            return work / f"made-{keys[name]}"

        def fresh_out(name: str) -> Callable[[], object]:
            def setup() -> None:
                shutil.rmtree(out(name), ignore_errors=True)
                out(name).mkdir()

            return setup

        _pairs(
            f"variant make of a {member_count}-member wheel (verified)",
            programs,
            lambda _p, name: [
                "variant",
                "make",
                str(made),
                "--property",
                "x86_64 :: level :: v3",
                "--variants-config",
                str(config),
                "-o",
                str(out(name)),
            ],
            setup=fresh_out,
            env=env,
            repeat=7,
        )
        small = work / "small"
        for i in range(300):
            kit.make_wheel(small, f"proj{i // 3:03d}", f"1.{i % 3}")

        def fresh_site(name: str) -> Callable[[], object]:
            def setup() -> None:
                shutil.rmtree(out(name), ignore_errors=True)

            return setup

        _pairs(
            "index build of 300 small wheels, cold",
            programs,
            lambda _p, name: ["index", "build", str(small), "-o", str(out(name))],
            setup=fresh_site,
            env=env,
            repeat=7,
        )
        _pairs(
            "select torch-2.9.0 for an H100 profile (whole process)",
            programs,
            lambda _p, _n: ["select", str(VARIANTS), "--profile", str(PROFILE), "--json"],
            env=env,
            repeat=15,
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
