"""Hermetic environments for the tests: real virtual environments, an environment without the
host's pip, uv and fitwheel settings, and before/after snapshots of a folder."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Literal

#: the uv of the test environment (a test dependency)
UV = Path(sys.executable).with_name("uv")


def make_venv(path: Path, *, via: Literal["uv", "venv"] = "uv") -> Path:
    """A real virtual environment without pip; returns its folder (the interpreter is
    ``bin/python``). ``via="uv"`` (fast) falls back to ``python -m venv`` when uv is missing;
    ``via="venv"`` makes it as ``python -m venv`` does."""
    if via == "uv" and UV.exists():
        subprocess.run(
            [str(UV), "venv", "-q", "--python", sys.executable, str(path)],
            check=True,
            env={**os.environ, "UV_NO_CONFIG": "1"},
        )
    else:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    return path


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without the host's pip, uv and fitwheel settings (variables and files), so
    that only the URLs a command is given count (a machine's pip configuration can add
    find-links and indexes; fitwheel's can set a torch backend)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PIP_", "UV_", "FITWHEEL_", "VIRTUAL_ENV", "PYTHONPATH"))
    }
    env["PIP_CONFIG_FILE"] = os.devnull
    env["FITWHEEL_CONFIG"] = os.devnull  # no fitwheel settings file (user or site)
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    env["UV_NO_CONFIG"] = "1"
    env.update(extra)
    return env


def offline_env(**extra: str) -> dict[str, str]:
    """os.environ for a peer installer run: no uv cache, no pip prompts or version check."""
    env = dict(os.environ)
    env.update(
        {
            "UV_NO_CACHE": "1",
            "UV_OFFLINE": "0",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_NO_INPUT": "1",
        }
    )
    env.update(extra)
    return env


def installed_build(python: Path, module: str) -> str:
    """The ``BUILD`` a module installed for ``python`` declares."""
    out = subprocess.run(
        [str(python), "-c", f"import {module}; print({module}.BUILD)"],
        check=True,
        capture_output=True,
        text=True,
    )
    return out.stdout.strip()


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` with its sha256 (symlinks by target) — for before/after checks."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root)
            if os.path.islink(full):
                out[rel] = "link:" + os.readlink(full)
            else:
                with open(full, "rb") as handle:
                    out[rel] = hashlib.sha256(handle.read()).hexdigest()
        for name in dirnames:
            full = os.path.join(dirpath, name)
            out.setdefault(os.path.relpath(full, root) + "/", "dir")
    return out


def process_gone(pid: int, within: float = 5.0) -> bool:
    """Whether process ``pid`` is gone (or a zombie waiting to be reaped) within ``within``
    seconds: for checking that a killed process group took its grandchildren with it."""
    import time

    end = time.monotonic() + within
    while True:
        try:
            os.kill(pid, 0)
            with open(f"/proc/{pid}/stat") as stat:
                if stat.read().rpartition(")")[2].split()[0] == "Z":
                    return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.05)


def pip_choice(root: Path, env: dict[str, str], *args: str) -> dict[str, str]:
    """What real pip would install for ``args`` (a dry run, ignoring what is installed): name ->
    version, from its ``--report`` (written under ``root``)."""
    import json

    report = root / "pip-report.json"
    done = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed",
         "--report", str(report), *args],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(report.read_text())
    return {e["metadata"]["name"]: e["metadata"]["version"] for e in data["install"]}
