"""Speculative fetching, A/B: the real 35-distribution tree of the e2e tests installed cold (every
cache emptied before each run) by fitwheel as users install it, with speculation on and off
(``FITWHEEL_NO_SPECULATION=1``), and by ``uv pip install`` for scale, alternately round by round,
from the same static index on 127.0.0.1 (nginx where installed); medians. Then one untimed
``--report`` run prints what speculation did (files fetched early, used, bytes wasted).

    python -m benchmarks speculation
    FITWHEEL_BENCH_REPEAT=2 python -m benchmarks speculation   # twice the rounds
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import subprocess
from pathlib import Path

from benchmarks.harness import Case, compare, smoke
from benchmarks.peers import Peers, isolated_environ, mirror_module, scratch, serve_index

OFF = {"FITWHEEL_NO_SPECULATION": "1"}


def speculation_line(case: Case, report: Path) -> str:
    """Run ``case`` (a fitwheel install) once more with ``--report``; what speculation did."""
    assert case.argv is not None
    if case.setup is not None:
        case.setup()
    argv = [*case.argv[:2], "--report", str(report), *case.argv[2:]]
    env = None
    if case.env:
        import os

        env = {**os.environ, **case.env}
    subprocess.run(argv, check=True, env=env, capture_output=True)
    spec = json.loads(report.read_text()).get("speculative")
    if not spec:
        return "   speculative: none (turned off, or nothing could be fetched early)"
    return (
        f"   speculative: {spec['fetched']} wheels fetched before they were pinned, "
        f"{spec['used']} of them used, {spec['wasted_bytes']} bytes wasted, "
        f"{spec.get('failed', 0)} failed"
    )


def main(repeat: int = 9) -> None:
    mirror = mirror_module()
    if smoke() and not mirror._verify(mirror.cache_root() / mirror.mirror_key()):
        print("\n== speculation: skipped (smoke run: the tree only when cached)")
        return
    wheels = mirror.ensure_wheels()
    with isolated_environ(), scratch("fitwheel-bench-speculation-") as work:
        site = mirror.build_index(wheels, work / "tree-site")
        with serve_index(site, work / "tree-server") as url:
            peers = Peers(work / "tree", url, list(mirror.TOP_LEVEL))
            on = peers.fitwheel(True, name="fitwheel")
            off = peers.fitwheel(True, name="fitwheel no-speculation")
            off = dataclasses.replace(off, env={**(off.env or {}), **OFF})
            results = compare(
                f"install a real tree of {len(mirror.CLOSURE)} distributions, cold: "
                "speculative fetch on and off",
                [on, off, peers.uv(True)],
                repeat=repeat,
            )
            for r in results:
                spread = f"{min(r.seconds) * 1e3:.0f}-{max(r.seconds) * 1e3:.0f} ms"
                sd = statistics.pstdev(r.seconds) * 1e3 if len(r.seconds) > 1 else 0.0
                print(f"   {r.name:<28} spread {spread}, sd {sd:.0f} ms")
            print(speculation_line(on, work / "report.json"))


if __name__ == "__main__":
    main()
