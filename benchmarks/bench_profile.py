"""Where the time of an install goes, phase by phase: the profile behind each target of
``install_peers`` that fitwheel misses (``docs/performance.md``, "Where the time went").

Each run is ``fitwheel install`` as users install it (:mod:`benchmarks.user_install`), into a
fresh venv, against the same static index on loopback as ``install_peers`` (nginx, tmpfs),
started through a small tracer in the same interpreter that times the install's stages from
outside fitwheel's code (nothing in fitwheel is changed for it):

- *start-up*: from the spawn until the tracer's first line (the interpreter and ``site``);
- *stage modules*: importing the modules whose stages are timed (a real run loads them lazily,
  inside the first stage that needs them; here they load ahead so their stages can be wrapped);
- *command*: from there to the first stage (arguments, settings, the target's detection, the
  target interpreter's answers, the environment's lock);
- the stages: a full install's ``plan`` (resolution, with the speculative downloads beside it),
  ``fetch`` (the downloads and unpacking left after the pins), ``place`` (linking into the
  environment) and ``remember`` (filing the record); a remembered one's ``replay`` (reading and
  checking the record, then ``place``);
- *exit*: from the last stage to the process's end.

Each phase has its wall-clock time and the CPU time the whole process spent meanwhile (all
threads): CPU over wall near 2 on this 2-core machine means both cores were busy, near 1 one
thread bound it, below 1 it waited. Medians of ``FITWHEEL_BENCH_ROUNDS`` runs (default 5), uv's
whole run alternately for scale.

    python -m benchmarks profile                  # the tree and torch, cold and warm
    python -m benchmarks.bench_profile tree       # one scenario
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from benchmarks.harness import Case, smoke
from benchmarks.peers import (
    TORCH,
    Peers,
    isolated_environ,
    mirror_module,
    scratch,
    serve_index,
    torch_site,
    torch_wheel,
)

PARTS = ("tree", "torch")

# Runs in the installed fitwheel's interpreter: times the named stages from outside fitwheel.
# Its settings are not FITWHEEL_* variables: those are part of a remembered resolution's key.
_TRACER = r"""
import os, sys, time
entered, entered_cpu = time.time(), time.process_time()
import functools, importlib, json
marks = []

def wrap(spec, label):
    module, _, qual = spec.partition(":")
    owner = importlib.import_module(module)
    *path, name = qual.split(".")
    for part in path:
        owner = getattr(owner, part)
    inner = getattr(owner, name)

    @functools.wraps(inner)
    def timed(*args, **kwargs):
        start, cpu = time.time(), time.process_time()
        try:
            return inner(*args, **kwargs)
        finally:
            marks.append([label, start, time.time(), cpu, time.process_time()])

    setattr(owner, name, timed)

import fitwheel.cli.main as cli
for item in os.environ["BENCH_PROFILE_STAGES"].split("|"):
    spec, _, label = item.partition("=")
    wrap(spec, label)
loaded, loaded_cpu = time.time(), time.process_time()
code = 1
try:
    import gc
    gc.set_threshold(50_000, 20, 20)  # as the fitwheel program sets it
    code = cli.main(sys.argv[1:])
finally:
    sys.stdout.flush()
    sys.stderr.flush()
    with open(os.environ["BENCH_PROFILE_OUT"], "w") as out:
        json.dump({"entered": [entered, entered_cpu], "loaded": [loaded, loaded_cpu],
                   "marks": marks, "end": [time.time(), time.process_time()]}, out)
    os._exit(code)
"""

#: the stages timed, by path (``module:qualified name=label``); nested ones are listed indented
_FULL = (
    "fitwheel.install.planning:plan_stage=plan (resolve; speculative downloads beside it)",
    "fitwheel.install.fetching:fetch_stage=fetch (downloads and unpacking after the pins)",
    "fitwheel.install.placement:place_stage=place (link into the environment)",
    "fitwheel.install.remembered:Recall.keep=remember (file the record)",
)
_REPLAY = (
    "fitwheel.install.remembered:Recall.replay=replay (read and check the record, then place)",
    "fitwheel.install.place.core:install_wheels=  place (link into the environment)",
)


class Phases:
    """One run's phases: label -> (wall seconds, CPU seconds), in the order they came."""

    def __init__(self, t0: float, raw: dict[str, object], total: float, cpu_total: float):
        self.rows: dict[str, tuple[float, float]] = {}
        entered, entered_cpu = raw["entered"]  # type: ignore[misc]
        loaded, loaded_cpu = raw["loaded"]  # type: ignore[misc]
        marks = sorted(raw["marks"], key=lambda m: m[1])  # type: ignore[arg-type]
        self.rows["start-up (interpreter, site)"] = (entered - t0, entered_cpu)
        self.rows["stage modules (loaded ahead)"] = (loaded - entered, loaded_cpu - entered_cpu)
        first = marks[0] if marks else None
        if first is not None:
            self.rows["command (arguments, target, environment)"] = (
                first[1] - loaded,
                first[3] - loaded_cpu,
            )
        last_end, last_cpu = loaded, loaded_cpu
        for label, start, stop, cpu, cpu_stop in marks:
            self.rows[label] = (stop - start, cpu_stop - cpu)
            if not label.startswith(" ") and stop > last_end:
                last_end, last_cpu = stop, cpu_stop
        self.rows["exit"] = (total - (last_end - t0), max(0.0, cpu_total - last_cpu))
        self.rows["whole run"] = (total, cpu_total)


def _run(case: Case, stages: tuple[str, ...], program_python: Path) -> Phases:
    assert case.argv is not None and case.setup is not None
    case.setup()
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as out:
        path = out.name
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(case.env or {})
    env["BENCH_PROFILE_STAGES"] = "|".join(stages)
    env["BENCH_PROFILE_OUT"] = path
    argv = [str(program_python), "-c", _TRACER, *case.argv[1:]]
    try:
        before = os.times()
        t0 = time.time()
        done = subprocess.run(argv, env=env, capture_output=True, text=True, check=False)
        total = time.time() - t0
        after = os.times()
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv[3:])} exited {done.returncode}:\n{done.stderr}")
        cpu = (after.children_user - before.children_user) + (
            after.children_system - before.children_system
        )
        raw = json.loads(Path(path).read_text())
    finally:
        os.unlink(path)
    return Phases(t0, raw, total, cpu)


def _timed(case: Case) -> float:
    assert case.argv is not None and case.setup is not None
    case.setup()
    env = dict(os.environ)
    env.update(case.env or {})
    start = time.perf_counter()
    subprocess.run(case.argv, env=env, capture_output=True, check=True)
    return time.perf_counter() - start


def _report(title: str, runs: list[Phases], uv: list[float]) -> None:
    print(f"\n== {title}: medians of {len(runs)} runs (CPU: the whole process, all threads)")
    print("| phase | wall | CPU | CPU / wall |")
    print("| --- | --- | --- | --- |")
    for label in runs[0].rows:
        walls = [r.rows[label][0] for r in runs if label in r.rows]
        cpus = [r.rows[label][1] for r in runs if label in r.rows]
        wall, cpu = statistics.median(walls) * 1000, statistics.median(cpus) * 1000
        ratio = f"{cpu / wall:.2f}" if wall > 0.5 else ""
        print(f"| {label} | {wall:.1f} ms | {cpu:.1f} ms | {ratio} |")
    if uv:
        uv_ms = statistics.median(uv) * 1000
        print(f"| uv pip install, whole run (same index) | {uv_ms:.1f} ms | | |")


def _profile(peers: Peers, title: str, rounds: int) -> None:
    from benchmarks.user_install import program

    python = program().parent / "python"
    for cold in (True, False):
        stages = _FULL if cold else _REPLAY
        runs: list[Phases] = []
        uv: list[float] = []
        _run(peers.fitwheel(cold), stages, python)  # warm-up (and, for warm, the record)
        for _ in range(rounds):
            runs.append(_run(peers.fitwheel(cold), stages, python))
            uv.append(_timed(peers.uv(cold)))
        _report(f"{title}, {'cold' if cold else 'warm'}", runs, uv)


def main(parts: tuple[str, ...] = PARTS, *, rounds: int | None = None) -> None:
    configured = os.environ.get("FITWHEEL_BENCH_ROUNDS", "").strip()
    rounds = rounds or (1 if smoke() else int(configured) if configured else 5)
    mirror = mirror_module()
    if smoke():
        # only what is already here: the verified mirror cache, never the torch download
        from benchmarks.bench_install_peers import _tree_cached

        for part in parts:
            if part == "torch" or not _tree_cached():
                print(f"\n== {part}: skipped (smoke run: only inputs already on this machine)")
        parts = tuple(p for p in parts if p == "tree" and _tree_cached())
    tree_wheels = mirror.ensure_wheels() if "tree" in parts else None
    torch = None
    if "torch" in parts:
        from benchmarks.bench_install_peers import _torch_dir

        torch = torch_wheel(_torch_dir())
    with isolated_environ(), scratch("fitwheel-bench-profile-") as work:
        if tree_wheels is not None:
            site = mirror.build_index(tree_wheels, work / "tree-site")
            with serve_index(site, work / "tree-server") as url:
                peers = Peers(work / "tree", url, list(mirror.TOP_LEVEL))
                title = f"install a real tree of {len(mirror.CLOSURE)} distributions"
                _profile(peers, title, rounds)
        if torch is not None:
            site = torch_site(torch, work)
            with serve_index(site, work / "torch-server") as url:
                peers = Peers(work / "torch", url, [TORCH], ["--no-deps"])
                _profile(peers, "install the torch 2.13.0 CPU wheel", rounds)


def _cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_profile")
    parser.add_argument("parts", nargs="*", metavar="PART", help=f"of {', '.join(PARTS)}")
    parser.add_argument("--rounds", type=int, default=None, help="runs per scenario (default 5)")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.parts) - set(PARTS))
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}: choose from {', '.join(PARTS)}")
    main(tuple(args.parts) or PARTS, rounds=args.rounds)


if __name__ == "__main__":
    _cli()
