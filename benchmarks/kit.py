"""The test kit (real wheels, loopback servers, venvs, hermetic environments), for benchmarks;
and the real-looking requirements file the install benchmarks share, with its wheels."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests import kit  # noqa: E402

__all__ = [
    "REQUIREMENTS_FILE",
    "download_requirements",
    "kit",
    "requirement_count",
    "requirements_dir",
    "requirements_downloaded",
]

#: a service's ``pip freeze`` (FastAPI, SQLAlchemy, Celery with Redis, httpx, uvicorn's extras)
#: from the requirements corpus: what ``install -r`` is measured with
REQUIREMENTS_FILE = ROOT / "tests" / "data" / "requirements" / "service_freeze.txt"


def requirements_dir() -> Path:
    """Where the wheels of :data:`REQUIREMENTS_FILE` are kept: ``$FITWHEEL_BENCH_REQUIREMENTS_DIR``,
    else ``~/.cache/fitwheel-bench/requirements-<digest of the file>``."""
    configured = os.environ.get("FITWHEEL_BENCH_REQUIREMENTS_DIR")
    if configured:
        return Path(configured)
    digest = hashlib.sha256(REQUIREMENTS_FILE.read_bytes()).hexdigest()[:12]
    return Path.home() / ".cache" / "fitwheel-bench" / f"requirements-{digest}"


def requirement_count() -> int:
    """The requirement lines of :data:`REQUIREMENTS_FILE` (blank lines and comments left out)."""
    text = REQUIREMENTS_FILE.read_text(encoding="utf-8")
    return sum(1 for line in text.splitlines() if line.strip() and not line.startswith("#"))


def requirements_downloaded(folder: Path) -> bool:
    return (folder / "complete").is_file()


def download_requirements(folder: Path) -> Path:
    """Every wheel :data:`REQUIREMENTS_FILE` pins, for this interpreter and platform, fetched by
    ``pip download`` with this machine's pip configuration (the file is a whole ``pip freeze``,
    so no dependency is left out); kept in ``folder / "wheels"``, and marked complete, once all
    came."""
    wheels = folder / "wheels"
    if requirements_downloaded(folder):
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
            str(REQUIREMENTS_FILE),
        ],
        check=True,
    )
    (folder / "complete").write_text("")
    return wheels
