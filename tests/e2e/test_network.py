"""``fitwheel install`` with no URL flags, from the package index pip itself would use, against
pip's own choices for the same requirements (run with FITWHEEL_NETWORK_TESTS=1)."""

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

FITWHEEL = [sys.executable, "-m", "fitwheel"]
PIP = [sys.executable, "-m", "pip"]
# Small, pure-Python, with a dependency chain, an extra and an environment marker.
REQUIREMENTS = ("requests[socks]>=2.31", "six", "attrs>=23", "tomli-w")


def _run(cmd: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False, timeout=600)
    assert proc.returncode == 0, f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr}"
    return proc


def _pip_default_index() -> str:
    from pip._internal.models.index import PyPI

    return str(PyPI.simple_url)


def _pip_choice(python: Path, env: dict[str, str]) -> dict[str, str]:
    """What pip would install into ``python``'s environment, from the same configuration."""
    proc = _run(
        [
            *PIP,
            "--python",
            str(python),
            "install",
            "--dry-run",
            "--quiet",
            "--only-binary=:all:",
            "--report",
            "-",
            *REQUIREMENTS,
        ],
        env,
    )
    report: dict[str, Any] = json.loads(proc.stdout)
    return {
        str(canonicalize_name(item["metadata"]["name"])): item["metadata"]["version"]
        for item in report["install"]
    }


def _installed(python: Path) -> dict[str, str]:
    code = (
        "import importlib.metadata as m, json, sys\n"
        "json.dump({d.metadata['Name']: d.version for d in m.distributions()}, sys.stdout)"
    )
    raw: dict[str, str] = json.loads(_run([str(python), "-I", "-c", code], {}).stdout)
    return {str(canonicalize_name(k)): v for k, v in raw.items()}


@pytest.mark.parametrize("configuration", ["pip-default", "host"])
def test_install_from_the_index_pip_uses(configuration: str, tmp_path: Path) -> None:
    """``pip-default``: no pip configuration at all, so the index is pip's built-in default.
    ``host``: this machine's pip configuration files and PIP_* variables, as pip reads them."""
    cache = {"FITWHEEL_CACHE_DIR": str(tmp_path / "fw-cache"), "PIP_NO_CACHE_DIR": "1"}
    if configuration == "pip-default":
        env = clean_env(**cache)
    else:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FITWHEEL_")}
        env.update(cache)
    python = make_venv(tmp_path / "venv", via="venv") / "bin" / "python"
    expected = _pip_choice(python, env)

    report_path = tmp_path / "report.json"
    _run(
        [
            *FITWHEEL,
            "install",
            "--python",
            str(python.parent.parent),
            "--report",
            str(report_path),
            *REQUIREMENTS,
        ],
        env,
    )
    report = json.loads(report_path.read_text(encoding="utf-8"))
    if configuration == "pip-default":
        assert report["indexes"] == [_pip_default_index()]
        assert all(e["url"].startswith("https://") for e in report["install"])
    assert _installed(python) == expected
    assert {e["name"] for e in report["install"] if e["requested"]} == {
        "requests",
        "six",
        "attrs",
        "tomli-w",
    }
    assert "pysocks" in expected
    proc = _run([*PIP, "--python", str(python), "check"], env)
    assert "No broken requirements" in proc.stdout
    _run([str(python), "-I", "-c", "import requests, socks, six, attrs, tomli_w"], {})
