"""The floor of a warm install, in system calls: ``strace -c -f`` of one warm install of the
torch 2.13.0 CPU wheel (``--no-deps``) into a fresh venv, by fitwheel (as users install it) and
by ``uv pip install``, each from its own warm cache, from the same static index on 127.0.0.1
(:mod:`benchmarks.bench_install_peers`' set-up). Prints, for each peer, the calls the kernel
counted, in all and by kind (the kinds that make up most of them), and the wall-clock time of
one run without ``strace``.

Needs ``strace`` (``apt-get install strace``) and the torch wheel (fetched once, as the peers
benchmark fetches it); a smoke run uses the real tree's wheels instead when they are cached,
and skips otherwise.

    python -m benchmarks warm_syscalls
"""

from __future__ import annotations

import os
import shutil
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
    torch_wheel,
)

#: the kinds of call shown for each peer
SHOWN = 12


def _environ(case: Case) -> dict[str, str]:
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(case.env or {})
    return env


def _run(case: Case, prefix: list[str] | None = None) -> float:
    assert case.argv is not None
    if case.setup is not None:
        case.setup()
    start = time.perf_counter()
    subprocess.run([*(prefix or []), *case.argv], check=True, env=_environ(case))
    return time.perf_counter() - start


def counted(case: Case) -> tuple[int, float, list[tuple[str, int, float]]]:
    """(calls, seconds the kernel spent in them, (kind, calls, seconds) by kind) of one run
    of ``case`` under ``strace -c -f``."""
    with tempfile.NamedTemporaryFile(suffix=".strace") as out:
        _run(case, ["strace", "-c", "-f", "-o", out.name])
        lines = Path(out.name).read_text().splitlines()
    kinds: list[tuple[str, int, float]] = []
    total = (0, 0.0)
    for line in lines:
        parts = line.split()
        if len(parts) < 5 or not parts[3].isdigit():
            continue
        seconds, calls, name = float(parts[1]), int(parts[3]), parts[-1]
        if name == "total":
            total = (calls, seconds)
        else:
            kinds.append((name, calls, seconds))
    kinds.sort(key=lambda k: -k[1])
    return total[0], total[1], kinds


def _show(name: str, wall: float, calls: int, seconds: float, kinds: list[tuple[str, int, float]]):
    print(
        f"   {name}: {calls:,} calls ({seconds * 1e3:.1f} ms in the kernel as strace counts"
        f" it), {wall * 1e3:.0f} ms wall-clock without strace"
    )
    shown = ", ".join(f"{kind} {n:,}" for kind, n, _ in kinds[:SHOWN])
    print(f"      {shown}")


def main() -> None:
    if shutil.which("strace") is None:
        print("\n== warm_syscalls: skipped (strace is not installed: apt-get install strace)")
        return
    mirror = mirror_module()
    if smoke():
        if not mirror._verify(mirror.cache_root() / mirror.mirror_key()):
            print("\n== warm_syscalls: skipped (smoke run: the tree's wheels are not cached)")
            return
        wheels, requirements, flags = mirror.ensure_wheels(), list(mirror.TOP_LEVEL), []
        what = f"the real tree of {len(mirror.CLOSURE)} distributions"
    else:
        from benchmarks.bench_install_peers import _torch_dir

        wheel = torch_wheel(_torch_dir())
        wheels, requirements, flags = None, [TORCH], ["--no-deps"]
        what = f"the torch 2.13.0 CPU wheel ({wheel.name})"
    with isolated_environ(), scratch("fitwheel-bench-syscalls-") as work:
        if wheels is None:
            wheels = work / "wheels"
            wheels.mkdir()
            shutil.copy2(wheel, wheels / wheel.name)
        site = mirror.build_index(wheels, work / "site")
        with serve_index(site, work / "server") as url:
            peers = Peers(work / "peers", url, requirements, flags)
            print(f"\n== warm install of {what}, fresh venv: system calls (strace -c -f)")
            for case in (peers.fitwheel(False), peers.uv(False)):
                _run(case)  # fills the cache
                _run(case)  # the record of a remembered resolution, for fitwheel
                wall = min(_run(case) for _ in range(3))
                _show(case.name, wall, *counted(case))


if __name__ == "__main__":
    main()
