"""Fixtures every test folder shares (a file's own fixture of the same name wins)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.kit import make_venv


@pytest.fixture(scope="module")
def base_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real virtual environment, made once per test module."""
    return make_venv(tmp_path_factory.mktemp("base") / "venv")


@pytest.fixture
def venv(base_venv: Path, tmp_path: Path) -> Path:
    """A fresh copy of :func:`base_venv` (copying is faster than creating one per test): the
    scripts are links to the base interpreter, so the copy is a working, independent venv."""
    target = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(base_venv), str(target)], check=True)
    return target
