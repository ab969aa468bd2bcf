"""``fitwheel install`` of real wheels against ``uv pip install`` and ``pip install``, as whole
processes, each from the same static index (``fitwheel index build``) served on 127.0.0.1 by
nginx (Python's static server where nginx is missing), into a fresh virtual environment before
every timed run. fitwheel runs as ``pip install .`` installs it (:mod:`benchmarks.user_install`);
targets, caches and temporary files sit on a tmpfs when the run may mount one (root).

Scenarios (medians of alternating runs; ratios in one run):

- the torch 2.13.0 CPU wheel (about 190 MB, 12,248 files; ``--no-deps``), cold (every peer's cache
  emptied before each run) and warm (cache kept, fresh venv); fitwheel both with its default
  (hard links from its unpacked-wheel cache, as uv does on Linux) and with ``--link-mode copy``;
- the real 35-distribution tree of the e2e tests (flask, requests, rich, pydantic, httpx, ...),
  cold and warm;
- the same tree resolved only (``--dry-run``), cold and warm;
- ``install -r`` of a real-looking requirements file (``service_freeze.txt``: a service's
  ``pip freeze`` of 42 pins, :data:`benchmarks.kit.REQUIREMENTS_FILE`), cold and warm;
- the tree with the local sources a real machine's pip configuration adds (``local``): a
  find-links folder and a ``file://`` extra index, neither holding what the tree picks, cold
  and warm.

The wheels come from ``pip download`` (torch: ``$FITWHEEL_BENCH_TORCH_DIR``, default
``~/.cache/fitwheel-bench``; the tree: the e2e mirror cache; the requirements file:
:func:`benchmarks.kit.requirements_dir`). Targets: torch cold <= 1.0x uv, warm <= 1.5x; the tree
cold <= 1.5x, warm <= 2x; every scenario >= 3x faster than pip ``--no-compile``; peak memory no
more than 2x uv's.

Each scenario runs ``FITWHEEL_BENCH_ROUNDS`` interleaved rounds (default 9, at least 9 unless a
smaller number is asked for explicitly) after one untimed warm-up round, and the run ends with
one table of every scenario: each peer's median with its interquartile range and its fastest
and slowest run.

    python -m benchmarks install_peers                        # all scenarios
    python -m benchmarks.bench_install_peers torch tree resolve requirements  # some of them
    python -m benchmarks.bench_install_peers --rounds 15 requirements
    FITWHEEL_BENCH_ROUNDS=15 python -m benchmarks install_peers
    FITWHEEL_BENCH_BASE=<revision> python -m benchmarks install_peers   # plus that revision

With ``FITWHEEL_BENCH_BASE``, an earlier revision of fitwheel, installed the same way, runs as
one more peer in every scenario (before and after in one run).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from benchmarks.harness import Case, Result, compare, fmt_spread, smoke
from benchmarks.kit import (
    REQUIREMENTS_FILE,
    download_requirements,
    requirement_count,
    requirements_dir,
    requirements_downloaded,
)
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

PARTS = ("torch", "tree", "resolve", "requirements", "local")
#: interleaved rounds per scenario, unless ``FITWHEEL_BENCH_ROUNDS`` or ``--rounds`` says
ROUNDS = 9
UV, PIP = "uv pip install", "pip install"


def rounds() -> int:
    """The rounds each scenario runs (``FITWHEEL_BENCH_ROUNDS``, default :data:`ROUNDS`)."""
    configured = os.environ.get("FITWHEEL_BENCH_ROUNDS", "")
    return int(configured) if configured.strip() else ROUNDS


class Table:
    """Every scenario's results, for the table printed at the end of the run."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, list[Result], float]] = []

    def add(self, scenario: str, results: list[Result], limit_vs_uv: float) -> None:
        self.rows.append((scenario, results, limit_vs_uv))
        _verdict(results, limit_vs_uv)

    def print(self) -> None:
        if not self.rows:
            return
        print("\n== every scenario: medians (interquartile range, fastest-slowest run)")
        print("| scenario | fitwheel | uv | pip | fitwheel / uv | target | pip / fitwheel |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for scenario, results, limit in self.rows:
            by_name = {r.name: r for r in results}
            ours, uv, pip = by_name["fitwheel"], by_name[UV], by_name[PIP]
            vs_uv, vs_pip = ours.median / uv.median, pip.median / ours.median
            met = "met" if vs_uv <= limit else "missed"
            print(
                f"| {scenario} | {fmt_spread(ours)} | {fmt_spread(uv)} | {fmt_spread(pip)} "
                f"| {vs_uv:.2f}x | <= {limit:.1f}x: {met} | {vs_pip:.1f}x |"
            )


def _torch_dir() -> Path:
    configured = os.environ.get("FITWHEEL_BENCH_TORCH_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "fitwheel-bench"


def _tree_cached() -> bool:
    mirror = mirror_module()
    return bool(mirror._verify(mirror.cache_root() / mirror.mirror_key()))


def _base_cases(peers: Peers, cold: bool) -> list[Case]:
    """The earlier revision ``FITWHEEL_BENCH_BASE`` names, as one more peer (none unset)."""
    revision = os.environ.get("FITWHEEL_BENCH_BASE")
    if not revision or smoke():
        return []
    from benchmarks.user_install import revision_program

    return [peers.fitwheel(cold, program=revision_program(revision), name=f"fitwheel {revision}")]


def _verdict(results: list[Result], limit_vs_uv: float, min_vs_pip: float = 3.0) -> None:
    by_name = {r.name: r for r in results}
    ours, uv, pip = by_name["fitwheel"], by_name[UV], by_name[PIP]
    vs_uv = ours.median / uv.median
    vs_pip = pip.median / ours.median
    mem, uv_mem = ours.peak_rss_mib or 0.0, uv.peak_rss_mib or 0.0
    mem_ok = mem <= 2 * uv_mem if uv_mem else True
    print(
        f"   target: <= {limit_vs_uv:.1f}x uv ({vs_uv:.2f}x: "
        f"{'met' if vs_uv <= limit_vs_uv else 'MISSED'}), "
        f">= {min_vs_pip:.1f}x faster than pip ({vs_pip:.2f}x: "
        f"{'met' if vs_pip >= min_vs_pip else 'MISSED'}), "
        f"peak {mem:.0f} MiB vs uv's {uv_mem:.0f} ({'met' if mem_ok else 'MISSED'} <= 2x)"
    )


def _label(cold: bool) -> str:
    return "cold" if cold else "warm"


def bench_torch(work: Path, wheel: Path, table: Table, *, repeat: int) -> None:
    site = torch_site(wheel, work)
    with serve_index(site, work / "torch-server") as url:
        peers = Peers(work / "torch", url, [TORCH], ["--no-deps"])
        for cold in (True, False):
            scenario = f"torch 2.13.0 CPU wheel ({wheel.stat().st_size >> 20} MiB), {_label(cold)}"
            results = compare(
                f"install {scenario}",
                [
                    peers.fitwheel(cold),
                    peers.fitwheel(cold, link_mode="copy"),
                    *_base_cases(peers, cold),
                    peers.uv(cold),
                    peers.pip(cold),
                ],
                repeat=repeat,
            )
            table.add(scenario, results, 1.0 if cold else 1.5)


def bench_tree(work: Path, wheels: Path, table: Table, *, resolve_only: bool, repeat: int) -> None:
    mirror = mirror_module()
    site = mirror.build_index(wheels, work / "tree-site")
    job = "resolve (--dry-run)" if resolve_only else "install"
    flags = ["--dry-run"] if resolve_only else []
    with serve_index(site, work / "tree-server") as url:
        folder = work / ("resolve" if resolve_only else "tree")
        peers = Peers(folder, url, list(mirror.TOP_LEVEL), flags)
        for cold in (True, False):
            scenario = f"{job} a real tree of {len(mirror.CLOSURE)} distributions, {_label(cold)}"
            results = compare(
                scenario,
                [peers.fitwheel(cold), *_base_cases(peers, cold), peers.uv(cold), peers.pip(cold)],
                repeat=repeat,
            )
            if resolve_only:
                table.add(scenario, results, 2.5 if cold else 2.0)
            else:
                table.add(scenario, results, 1.5 if cold else 2.0)
            if cold and not resolve_only:
                from benchmarks.bench_speculation import speculation_line

                print(speculation_line(peers.fitwheel(cold), work / "tree-report.json"))


def bench_requirements(work: Path, wheels: Path, table: Table, *, repeat: int) -> None:
    """``install -r`` of :data:`benchmarks.kit.REQUIREMENTS_FILE`, cold and warm."""
    site = mirror_module().build_index(wheels, work / "requirements-site")
    with serve_index(site, work / "requirements-server") as url:
        peers = Peers(work / "requirements", url, ["-r", str(REQUIREMENTS_FILE)])
        title = f"install -r {REQUIREMENTS_FILE.name} ({requirement_count()} pinned requirements)"
        _cold_and_warm(peers, title, table, repeat=repeat)


def _cold_and_warm(peers: Peers, title: str, table: Table, *, repeat: int) -> None:
    """``title``'s scenario cold and warm, fitwheel (and the base revision) against uv and pip;
    targets 1.5x uv cold and 2x warm."""
    for cold in (True, False):
        scenario = f"{title}, {_label(cold)}"
        results = compare(
            scenario,
            [peers.fitwheel(cold), *_base_cases(peers, cold), peers.uv(cold), peers.pip(cold)],
            repeat=repeat,
        )
        table.add(scenario, results, 1.5 if cold else 2.0)


def bench_local(work: Path, wheels: Path, table: Table, *, repeat: int) -> None:
    """The tree with a find-links folder and a ``file://`` extra index beside the index, as a
    machine's pip configuration adds them (each holds a wheel the tree does not pick)."""
    mirror = mirror_module()
    from tests.kit import make_wheel

    site = mirror.build_index(wheels, work / "local-site")
    links = work / "local-links"
    make_wheel(links, "site-tool", "1.0")
    local_wheels = work / "local-index-wheels"
    make_wheel(local_wheels, "site-lib", "1.0")
    local_index = mirror.build_index(local_wheels, work / "local-index") / "simple"
    flags = ["--find-links", str(links), "--extra-index-url", local_index.as_uri()]
    with serve_index(site, work / "local-server") as url:
        peers = Peers(work / "local", url, list(mirror.TOP_LEVEL), flags)
        title = "the tree with a find-links folder and a file:// extra index"
        _cold_and_warm(peers, title, table, repeat=repeat)


def _available(parts: tuple[str, ...]) -> tuple[str, ...]:
    """In a smoke run, only what is already here: the verified mirror cache and downloaded
    requirements, never the torch download."""
    if not smoke():
        return parts
    parts = tuple(p for p in parts if p != "torch")
    if not _tree_cached():
        parts = tuple(p for p in parts if p not in ("tree", "resolve", "local"))
    if not requirements_downloaded(requirements_dir()):
        parts = tuple(p for p in parts if p != "requirements")
    for part in sorted(set(PARTS) - set(parts)):
        print(f"\n== {part}: skipped (smoke run: only inputs already on this machine)")
    return parts


def main(parts: tuple[str, ...] = PARTS, *, repeat: int | None = None) -> None:
    # Fetched with this machine's pip configuration (it may name a local wheel store); the
    # peers then run without it.
    parts = _available(parts)
    repeat = rounds() if repeat is None else repeat
    needs_tree = bool({"tree", "resolve", "local"} & set(parts))
    tree_wheels = mirror_module().ensure_wheels() if needs_tree else None
    torch = torch_wheel(_torch_dir()) if "torch" in parts else None
    reqs = download_requirements(requirements_dir()) if "requirements" in parts else None
    table = Table()
    with isolated_environ(), scratch("fitwheel-bench-peers-") as work:
        if tree_wheels is not None and "tree" in parts:
            bench_tree(work, tree_wheels, table, resolve_only=False, repeat=repeat)
        if tree_wheels is not None and "resolve" in parts:
            bench_tree(work, tree_wheels, table, resolve_only=True, repeat=repeat)
        if reqs is not None:
            bench_requirements(work, reqs, table, repeat=repeat)
        if tree_wheels is not None and "local" in parts:
            bench_local(work, tree_wheels, table, repeat=repeat)
        if torch is not None:
            bench_torch(work, torch, table, repeat=repeat)
    table.print()


def _cli(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.bench_install_peers")
    parser.add_argument("parts", nargs="*", choices=PARTS, default=[])
    parser.add_argument(
        "--rounds", type=int, default=None, help=f"interleaved rounds (default {ROUNDS})"
    )
    args = parser.parse_args(argv)
    main(tuple(args.parts) or PARTS, repeat=args.rounds)


if __name__ == "__main__":
    _cli()
