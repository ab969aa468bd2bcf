"""fitwheel as users get it: ``pip install SOURCE`` (not editable, no extras) into a venv of its
own, so that what is measured is what ``pip install fitwheel`` installs (its byte-compiled
modules, its default dependencies, nothing from the test extra).

The venv is kept under ``~/.cache/fitwheel-bench`` (``$FITWHEEL_BENCH_USER_DIR`` moves it), keyed
by a hash of ``src/`` and ``pyproject.toml``, so a run after a change builds a new one and a
repeated run reuses it.
``FITWHEEL_BENCH_DEV=1`` uses the development venv instead (the smoke runs of ``make test`` do,
to stay fast and offline). :func:`revision_program` installs an earlier revision the same way,
for before/after rows in one run (``FITWHEEL_BENCH_BASE=<revision>``).
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEV = Path(sys.executable).parent / "fitwheel"


@functools.cache
def _tree_key(source: Path) -> str:
    digest = hashlib.sha256()
    for folder in ("src",):
        for path in sorted((source / folder).rglob("*")):
            skipped = "__pycache__" in path.parts or any(
                part.endswith(".egg-info") for part in path.parts
            )
            if path.is_file() and not skipped:
                digest.update(str(path.relative_to(source)).encode() + b"\0")
                digest.update(path.read_bytes())
    digest.update((source / "pyproject.toml").read_bytes())
    return digest.hexdigest()[:16]


def install(source: Path, venv: Path) -> Path:
    """A venv at ``venv`` holding fitwheel as ``pip install SOURCE`` installs it; its program."""
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", str(source)],
        check=True,
    )
    return venv / "bin" / "fitwheel"


def _bench_dir() -> Path:
    """Where the installed venvs are kept (``$FITWHEEL_BENCH_USER_DIR`` moves it)."""
    return Path(
        os.environ.get("FITWHEEL_BENCH_USER_DIR", Path.home() / ".cache" / "fitwheel-bench")
    )


def program() -> Path:
    """The ``fitwheel`` program to measure: this tree as users install it (built once per tree
    state), or the development one under ``FITWHEEL_BENCH_DEV=1`` or a smoke run."""
    if os.environ.get("FITWHEEL_BENCH_DEV") == "1" or os.environ.get("FITWHEEL_BENCH_SMOKE"):
        return DEV
    base = _bench_dir()
    venv = base / f"user-{_tree_key(ROOT)}"
    ready = venv / ".ready"
    if not ready.exists():
        print(f"   (installing this tree as users get it: pip install . into {venv})")
        install(ROOT, venv)
        ready.touch()
    return venv / "bin" / "fitwheel"


def export(revision: str, folder: Path) -> None:
    """The files of ``revision`` of this repository, in ``folder`` (made here)."""
    folder.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)


def revision_program(revision: str) -> Path:
    """The ``fitwheel`` program of an earlier ``revision``, as users install it (kept by the
    revision's commit under the same folder as :func:`program`'s)."""
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", f"{revision}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    base = _bench_dir()
    venv = base / f"rev-{commit[:16]}"
    ready = venv / ".ready"
    if not ready.exists():
        print(f"   (installing revision {revision} as users get it, into {venv})")
        source = base / f"rev-{commit[:16]}-src"
        shutil.rmtree(source, ignore_errors=True)
        export(commit, source)
        install(source, venv)
        ready.touch()
    return venv / "bin" / "fitwheel"
