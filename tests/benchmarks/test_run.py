"""Every benchmark runs once, at its smallest size, so that none of them rots. Nothing is timed
or compared here: a benchmark passes when it runs to its end."""

from __future__ import annotations

import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NAMES = sorted(
    m.name.removeprefix("bench_")
    for m in pkgutil.iter_modules([str(ROOT / "benchmarks")])
    if m.name.startswith("bench_")
)


def test_every_benchmark_is_covered() -> None:
    assert {"detect", "install", "publish", "select"} <= set(NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_benchmark_runs_once(name: str, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "FITWHEEL_BENCH_SMOKE": "1",
        "FITWHEEL_BENCH_JSON": str(tmp_path / "results.json"),
        "TMPDIR": str(tmp_path),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", name],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-4000:]
    assert "==" in proc.stdout  # it reported at least one comparison or a reasoned skip
