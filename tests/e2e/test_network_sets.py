"""Common requirement sets resolved with ``--dry-run`` from the index pip itself would use, against
pip's own ``--dry-run --report`` for the same sets into the same empty environment (run with
FITWHEEL_NETWORK_TESTS=1; no pip configuration, so both read pip's built-in default index).

Each set must give exactly pip's names and versions. The sets cover the shapes users install:
single libraries with long chains, extras, environment markers, source-only dependencies
(docopt, antlr4-python3-runtime under hydra-core), scientific stacks and the torch family.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name

from tests.kit import clean_env, make_venv

pytestmark = [
    pytest.mark.network,
    pytest.mark.skipif(
        os.environ.get("FITWHEEL_NETWORK_TESTS") != "1",
        reason="needs the default package index: set FITWHEEL_NETWORK_TESTS=1",
    ),
]

SETS = [
    ["requests"],
    ["pandas"],
    ["numpy", "scipy"],
    ["fastapi[standard]"],
    ["flask"],
    ["django"],
    ["jupyterlab"],
    ["transformers"],
    ["scikit-learn"],
    ["pandas", "scikit-learn", "matplotlib", "seaborn"],
    ["httpx[http2]"],
    ["sqlalchemy", "alembic"],
    ["celery[redis]"],
    ["boto3"],
    ["pytest", "pytest-cov", "hypothesis"],
    ["black", "ruff", "mypy"],
    ["rich", "typer"],
    ["uvicorn[standard]"],
    ["aiohttp"],
    ["sphinx"],
    ["docopt"],
    ["hydra-core"],
    ["requests[socks]>=2.31", "six", "attrs>=23", "tomli-w"],
    ["torch", "torchvision"],
]


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=900)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}"
    return proc


@pytest.fixture(scope="module")
def python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("target") / "venv", via="venv") / "bin" / "python"


@pytest.mark.parametrize("requirements", SETS, ids=lambda s: "+".join(s))
def test_the_same_choice_as_pip(requirements: list[str], python: Path, tmp_path: Path) -> None:
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "fw-cache"), PIP_NO_CACHE_DIR="1")
    pip = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--report",
            "-",
            *requirements,
        ],
        env,
    )
    pip_report: dict[str, Any] = json.loads(pip.stdout)
    expected = {
        str(canonicalize_name(item["metadata"]["name"])): item["metadata"]["version"]
        for item in pip_report["install"]
    }
    report_path = tmp_path / "report.json"
    _run(
        [
            sys.executable,
            "-m",
            "fitwheel",
            "install",
            "--dry-run",
            "--python",
            str(python.parent.parent),
            "--report",
            str(report_path),
            *requirements,
        ],
        env,
    )
    report = json.loads(report_path.read_text(encoding="utf-8"))
    chosen = {str(canonicalize_name(e["name"])): e["version"] for e in report["install"]}
    assert chosen == expected
