"""``fitwheel install`` of real wheels against ``uv pip install`` and ``pip install``, as whole
processes, each from the same static index (``fitwheel index build``) served on 127.0.0.1 and
into a fresh virtual environment before every timed run.

- the torch 2.13.0 CPU wheel (about 190 MB; ``--no-deps``), cold (every peer's cache emptied
  before each run) and warm (cache kept from the warm-up round); fitwheel both with its default
  (files hard-linked from its unpacked-wheel cache, as uv does by default on Linux) and with
  ``--link-mode copy``;
- the real 35-distribution tree of the e2e tests (flask, requests, rich, pydantic, httpx, ...),
  cold.

The wheels come from ``pip download`` (torch: ``$FITWHEEL_BENCH_TORCH_DIR``, default
``~/.cache/fitwheel-bench``; the tree: the e2e mirror cache). Targets: torch cold within 1.2x of
uv, warm within 2x, faster than pip, peak memory under 200 MB; the tree cold within 1.5x of uv
and at least 2x faster than pip.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from benchmarks.harness import Result, compare, smoke
from benchmarks.peers import TORCH, Peers, isolated_environ, mirror_module, torch_wheel


def _torch_dir() -> Path:
    configured = os.environ.get("FITWHEEL_BENCH_TORCH_DIR")
    return Path(configured) if configured else Path.home() / ".cache" / "fitwheel-bench"


def _tree_cached() -> bool:
    mirror = mirror_module()
    return bool(mirror._verify(mirror.cache_root() / mirror.mirror_key()))


def _verdict(results: list[Result], limit_vs_uv: float, min_vs_pip: float) -> None:
    by_name = {r.name: r for r in results}
    ours, uv, pip = by_name["fitwheel"], by_name["uv pip install"], by_name["pip install"]
    vs_uv = ours.median / uv.median
    vs_pip = pip.median / ours.median
    mem = ours.peak_rss_mib or 0.0
    print(
        f"   target: <= {limit_vs_uv:.1f}x uv ({vs_uv:.2f}x: "
        f"{'met' if vs_uv <= limit_vs_uv else 'MISSED'}), "
        f">= {min_vs_pip:.1f}x faster than pip ({vs_pip:.2f}x: "
        f"{'met' if vs_pip >= min_vs_pip else 'MISSED'}), "
        f"peak {mem:.0f} MiB ({'met' if mem < 200 else 'MISSED'} < 200)"
    )


def bench_torch(work: Path, wheel: Path, *, repeat: int = 5) -> None:
    mirror = mirror_module()
    wheels = work / "torch-wheels"
    wheels.mkdir()
    try:
        os.link(wheel, wheels / wheel.name)
    except OSError:
        shutil.copy2(wheel, wheels / wheel.name)
    site = mirror.build_index(wheels, work / "torch-site")
    with mirror.serve(site) as url:
        peers = Peers(work / "torch", url, [TORCH], ["--no-deps"])
        for cold in (True, False):
            label = "cold" if cold else "warm"
            results = compare(
                f"install torch 2.13.0 CPU wheel ({wheel.stat().st_size >> 20} MiB), {label}",
                [
                    peers.fitwheel(cold),
                    peers.fitwheel(cold, link_mode="copy"),
                    peers.uv(cold),
                    peers.pip(cold),
                ],
                repeat=repeat,
            )
            _verdict(results, 1.2 if cold else 2.0, 1.0)


def bench_tree(work: Path, wheels: Path, *, repeat: int = 5) -> None:
    mirror = mirror_module()
    site = mirror.build_index(wheels, work / "tree-site")
    with mirror.serve(site) as url:
        peers = Peers(work / "tree", url, list(mirror.TOP_LEVEL))
        results = compare(
            f"install a real tree of {len(mirror.CLOSURE)} distributions, cold",
            [peers.fitwheel(True), peers.uv(True), peers.pip(True)],
            repeat=repeat,
        )
        _verdict(results, 1.5, 2.0)


def main(parts: tuple[str, ...] = ("torch", "tree")) -> None:
    # Fetched with this machine's pip configuration (it may name a local wheel store); the
    # peers then run without it.
    if smoke():
        # only what is already here: the verified mirror cache, a downloaded torch wheel
        parts = tuple(p for p in parts if p != "torch")
        if "tree" in parts and not _tree_cached():
            parts = tuple(p for p in parts if p != "tree")
        for part in {"torch", "tree"} - set(parts):
            print(f"\n== {part}: skipped (smoke run: torch is too big; the tree only when cached)")
    tree_wheels = mirror_module().ensure_wheels() if "tree" in parts else None
    torch = torch_wheel(_torch_dir()) if "torch" in parts else None
    with isolated_environ(), tempfile.TemporaryDirectory(prefix="fitwheel-bench-peers-") as tmp:
        work = Path(tmp)
        if tree_wheels is not None:
            bench_tree(work, tree_wheels)
        if torch is not None:
            bench_torch(work, torch)


if __name__ == "__main__":
    import sys

    main(tuple(sys.argv[1:]) or ("torch", "tree"))
