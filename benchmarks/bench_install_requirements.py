"""``install -r requirements.txt`` of a real-looking 42-line file (a service's ``pip freeze``:
FastAPI, SQLAlchemy, Celery with Redis, httpx, uvicorn's extras; ``service_freeze.txt`` of the
requirements corpus) by fitwheel, ``uv pip install`` and ``pip install``, in one run, cold (every
peer's cache emptied before each run) and warm (cache kept, fresh venv); medians of alternating
runs.

The wheels come from ``pip download`` (with this machine's pip configuration, once, into
``$FITWHEEL_BENCH_REQUIREMENTS_DIR``, default ``~/.cache/fitwheel-bench/requirements-<digest of
the file>``), are indexed by ``fitwheel index build`` and served on 127.0.0.1 by nginx where it
is installed (Python's static server otherwise), as :mod:`benchmarks.bench_install_peers` does.
The peers then read only that index. fitwheel runs as ``pip install .`` installs it.

    python -m benchmarks install_requirements
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.harness import compare, smoke
from benchmarks.peers import Peers, isolated_environ, mirror_module, scratch, serve_index

ROOT = Path(__file__).resolve().parents[1]
FILE = ROOT / "tests" / "data" / "requirements" / "service_freeze.txt"


def _wheels_dir() -> Path:
    configured = os.environ.get("FITWHEEL_BENCH_REQUIREMENTS_DIR")
    if configured:
        return Path(configured)
    digest = hashlib.sha256(FILE.read_bytes()).hexdigest()[:12]
    return Path.home() / ".cache" / "fitwheel-bench" / f"requirements-{digest}"


def _lines() -> int:
    text = FILE.read_text(encoding="utf-8")
    return sum(1 for line in text.splitlines() if line.strip() and not line.startswith("#"))


def _complete(folder: Path) -> bool:
    return (folder / "complete").is_file()


def download(folder: Path) -> Path:
    """Every wheel the file pins, for this interpreter and platform (the file is a whole
    ``pip freeze``, so no dependency is left out); kept, and marked complete, once all came."""
    wheels = folder / "wheels"
    if _complete(folder):
        return wheels
    wheels.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(wheels),
            "-r",
            str(FILE),
        ],
        check=True,
    )
    (folder / "complete").write_text("")
    return wheels


def main() -> None:
    folder = _wheels_dir()
    if smoke() and not _complete(folder):
        print("\n== install_requirements: skipped (smoke run: the wheels are not downloaded here)")
        return
    wheels = download(folder)
    requirements = ["-r", str(FILE)]
    with isolated_environ(), scratch("fitwheel-bench-requirements-") as work:
        site = mirror_module().build_index(wheels, work / "site")
        with serve_index(site, work / "server") as url:
            peers = Peers(work / "peers", url, requirements)
            for cold in (True, False):
                label = "cold" if cold else "warm"
                compare(
                    f"install -r {FILE.name} ({_lines()} pinned requirements), {label}",
                    [peers.fitwheel(cold), peers.uv(cold), peers.pip(cold)],
                    repeat=5,
                )


if __name__ == "__main__":
    main()
