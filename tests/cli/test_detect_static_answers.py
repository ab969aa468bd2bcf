"""``fitwheel detect`` with static answers: ``--variant-property`` and the configuration table
join what detection or the profile says, each namespace with its source."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MACHINES = Path(__file__).parents[1] / "platform" / "machines"
NPU = "ascend :: npu_type :: 910b"


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FITWHEEL_")}
    clean["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    clean["XDG_CONFIG_DIRS"] = str(tmp_path / "site")
    clean["FITWHEEL_CACHE_DIR"] = str(tmp_path / "cache")
    return clean


def fitwheel(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fitwheel", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_json_and_output_file_show_the_added_properties_and_their_sources(
    tmp_path: Path, env: dict[str, str]
) -> None:
    profile = tmp_path / "in.json"
    profile.write_text(json.dumps({"properties": {"x86_64": {"level": ["v2", "v1"]}}}))
    out = tmp_path / "out.json"
    proc = fitwheel(
        "detect", "--profile", str(profile), "--json", "-o", str(out),
        "--variant-property", NPU, "--variant-property", "x86_64 :: level :: v1",
        "--variant-property", "x86_64 :: level :: v0",
        env=env,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert json.loads(out.read_text()) == data
    assert data["properties"]["ascend"] == {"npu_type": ["910b"]}
    assert data["properties"]["x86_64"]["level"] == ["v2", "v1", "v0"]
    assert data["sources"]["ascend"] == "variant-property"
    assert data["sources"]["x86_64"] == f"profile {profile} + variant-property"


def test_the_configuration_table_answers_for_this_machine_only(
    tmp_path: Path, env: dict[str, str]
) -> None:
    config = tmp_path / "config" / "fitwheel" / "config.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[variant-properties]\n"ascend :: npu_type" = ["910b"]\n')
    proc = fitwheel("detect", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["properties"]["ascend"] == {"npu_type": ["910b"]}
    assert data["sources"]["ascend"] == f"config:{config}"
    # a sysroot is another machine: the table does not describe it
    machine = sorted(p for p in MACHINES.iterdir() if p.is_dir())[0]
    proc = fitwheel("detect", "--json", "--sysroot", str(machine), env=env)
    assert proc.returncode == 0, proc.stderr
    assert "ascend" not in json.loads(proc.stdout)["properties"]


def test_the_human_report_names_the_source(tmp_path: Path, env: dict[str, str]) -> None:
    profile = tmp_path / "in.json"
    profile.write_text(json.dumps({"properties": {}}))
    proc = fitwheel("detect", "--profile", str(profile), "--variant-property", NPU, env=env)
    assert proc.returncode == 0, proc.stderr
    (row,) = [line for line in proc.stdout.splitlines() if line.strip().startswith("ascend")]
    assert row.split() == ["ascend", "npu_type", "variant-property", "910b"]


def test_a_malformed_property_names_the_argument(env: dict[str, str]) -> None:
    proc = fitwheel("detect", "--json", "--variant-property", "ascend :: 910b", env=env)
    assert proc.returncode == 2
    assert "--variant-property 'ascend :: 910b'" in proc.stderr
