"""Run competing implementations of one job in the same run and report ratios.

A *case* is either a Python callable (timed in process) or a command line (timed as a whole
process, with its peak resident memory). Cases run alternately, round by round, so drift on the
machine (another process, thermal state) hits every peer alike; the report gives medians and each
peer's ratio to the first case, the baseline.

    from benchmarks.harness import Case, compare
    compare(
        "select torch-2.9 (in process)",
        [Case.call("fitwheel", lambda: ...), Case.call("variantlib", lambda: ...)],
        repeat=50,
    )

``setup`` (optional, per case) runs before every timed run and is not timed: use it to empty a
cache or create a fresh target directory. ``FITWHEEL_BENCH_REPEAT`` scales every repeat count (for
a quick run, e.g. 0.1); ``FITWHEEL_BENCH_SMOKE=1`` runs every case once, without warm-up, and
makes the benchmarks use only inputs already on this machine (the tests run them so).
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class Case:
    name: str
    call: Callable[[], object] | None = None
    argv: Sequence[str] | None = None
    setup: Callable[[], object] | None = None
    env: dict[str, str] | None = None
    cwd: str | None = None
    #: what a callable is timed by (wall-clock time unless given: ``time.process_time`` counts
    #: only this process's CPU time, what a shared machine disturbs least)
    clock: Callable[[], float] | None = None

    @classmethod
    def func(
        cls,
        name: str,
        call: Callable[[], object],
        setup: Callable[[], object] | None = None,
        *,
        clock: Callable[[], float] | None = None,
    ) -> Case:
        return cls(name=name, call=call, setup=setup, clock=clock)

    @classmethod
    def command(
        cls,
        name: str,
        argv: Sequence[str],
        *,
        setup: Callable[[], object] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
    ) -> Case:
        return cls(name=name, argv=list(argv), setup=setup, env=env, cwd=cwd)


@dataclass
class Result:
    name: str
    seconds: list[float] = field(default_factory=list)
    peak_rss_kib: list[int] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.seconds)

    @property
    def spread(self) -> tuple[float, float]:
        """The fastest and the slowest run."""
        return min(self.seconds), max(self.seconds)

    @property
    def quartiles(self) -> tuple[float, float]:
        """The first and third quartiles of the runs (the interquartile range)."""
        if len(self.seconds) < 2:
            return self.median, self.median
        q = statistics.quantiles(self.seconds, n=4, method="inclusive")
        return q[0], q[2]

    @property
    def peak_rss_mib(self) -> float | None:
        return max(self.peak_rss_kib) / 1024 if self.peak_rss_kib else None


def smoke() -> bool:
    """True for a smoke run: each case once, no downloads (inputs missing: that part skipped)."""
    return os.environ.get("FITWHEEL_BENCH_SMOKE") == "1"


def _scaled(repeat: int) -> int:
    if smoke():
        return 1
    factor = float(os.environ.get("FITWHEEL_BENCH_REPEAT", "1"))
    return max(1, round(repeat * factor))


# A child forked from this (large) process starts with this process's resident-set high-water
# mark, which the kernel carries across exec: measured directly, every peer would "peak" at the
# harness's own size. So memory is measured in one extra, untimed run through this small launcher,
# whose own footprint is below that of any Python program it starts.
_LAUNCHER = """
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[1], sys.argv[1:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
os.write(3, str(usage.ru_maxrss).encode())
sys.exit(os.waitstatus_to_exitcode(status))
"""


def _spawn(case: Case, argv: list[str], pass_fds: tuple[int, ...] = ()) -> tuple[float, int]:
    env = dict(os.environ)
    # Where it is set, Python peers would compile every module on every run instead of once.
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if case.env:
        env.update(case.env)
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
        cwd=case.cwd,
        pass_fds=pass_fds,
    )
    _, stderr = proc.communicate()
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(
            f"{case.name}: {' '.join(argv)} exited {proc.returncode}:\n"
            f"{stderr.decode(errors='replace')[-2000:]}"
        )
    return elapsed, proc.returncode


def _run_command(case: Case) -> float:
    assert case.argv is not None
    return _spawn(case, list(case.argv))[0]


def _peak_rss_kib(case: Case) -> int:
    assert case.argv is not None
    read_end, write_end = os.pipe()
    os.set_inheritable(write_end, True)
    argv = [sys.executable, "-S", "-I", "-c", _LAUNCHER, *case.argv]
    # The launcher reports on fd 3: make the pipe's write end that descriptor in the child.
    wrapped = ["/bin/sh", "-c", f'exec "$@" 3>&{write_end}', "sh", *argv]
    try:
        _spawn(case, wrapped, pass_fds=(write_end,))
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as fh:
        return int(fh.read() or 0)


def _run_call(case: Case) -> float:
    assert case.call is not None
    clock = case.clock or time.perf_counter
    start = clock()
    case.call()
    return clock() - start


def compare(
    title: str, cases: Sequence[Case], *, repeat: int = 10, warmup: int = 1
) -> list[Result]:
    """Run ``cases`` alternately ``repeat`` times (after ``warmup`` untimed rounds); print and
    return the results. Ratios are against the first case."""
    results = [Result(c.name) for c in cases]
    rounds = _scaled(repeat)
    if smoke():
        warmup = 0
    for round_no in range(warmup + rounds):
        for case, result in zip(cases, results, strict=True):
            if case.setup is not None:
                case.setup()
                # the setup's deferred disk writes (say, removing the last run's environment)
                # would otherwise be paid by whichever run comes next
                os.sync()
            if case.argv is not None:
                seconds = _run_command(case)
                if round_no >= warmup:
                    result.seconds.append(seconds)
            else:
                seconds = _run_call(case)
                if round_no >= warmup:
                    result.seconds.append(seconds)
    for case, result in zip(cases, results, strict=True):
        if case.argv is not None and not smoke():  # a smoke run measures nothing
            if case.setup is not None:
                case.setup()
            result.peak_rss_kib.append(_peak_rss_kib(case))
    report(title, results)
    return results


def _fmt_time(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:8.1f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:8.2f} ms"
    return f"{seconds:8.3f} s "


def fmt_spread(result: Result) -> str:
    """A result's median with its spread, in the median's unit: ``202 ms (IQR 199-205,
    195-230)``: the interquartile range, then the fastest and slowest runs."""
    median = result.median
    scale, unit = (1e3, "ms") if median < 1 else (1.0, "s")
    digits = 0 if scale == 1e3 and median >= 0.1 else (1 if scale == 1e3 else 2)

    def num(value: float) -> str:
        return f"{value * scale:.{digits}f}"

    low, high = result.spread
    q1, q3 = result.quartiles
    return f"{num(median)} {unit} (IQR {num(q1)}-{num(q3)}, {num(low)}-{num(high)})"


def report(title: str, results: Sequence[Result]) -> None:
    base = results[0]
    print(f"\n== {title}  ({len(base.seconds)} runs each, medians)")
    for r in results:
        ratio = r.median / base.median if base.median else float("nan")
        mem = f"  peak {r.peak_rss_mib:7.1f} MiB" if r.peak_rss_mib is not None else ""
        low, high = r.spread
        spread = f"  [{_fmt_time(low).strip()} - {_fmt_time(high).strip()}]"
        print(f"   {r.name:<28} {_fmt_time(r.median)}   x{ratio:7.2f} of {base.name}{mem}{spread}")
    if len(results) > 1:
        for r in results[1:]:
            if r.median:
                print(
                    f"   -> {base.name} is {r.median / base.median:.1f}x faster than {r.name}"
                    if r.median >= base.median
                    else f"   -> {base.name} is {base.median / r.median:.1f}x slower than {r.name}"
                )
    _record(title, results)


def _record(title: str, results: Sequence[Result]) -> None:
    """Append machine-readable results when FITWHEEL_BENCH_JSON names a file."""
    path = os.environ.get("FITWHEEL_BENCH_JSON")
    if not path:
        return
    entry = {
        "title": title,
        "python": sys.version.split()[0],
        "results": [
            {
                "name": r.name,
                "median_s": r.median,
                "min_s": r.spread[0],
                "max_s": r.spread[1],
                "q1_s": r.quartiles[0],
                "q3_s": r.quartiles[1],
                "runs": len(r.seconds),
                "peak_rss_mib": r.peak_rss_mib,
            }
            for r in results
        ],
    }
    with Path(path).open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(entry) + "\n")
