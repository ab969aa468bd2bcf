"""``fitwheel index build`` from the command line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from fitwheel.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "publish"))
from tests.kit import UV_NVIDIA, make_wheel, variant_doc

CU12 = {"nvidia": {"cuda_version_lower_bound": ["12.0"]}}


def test_build_then_incremental(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    make_wheel(wheels, label="cu12", variant_json=variant_doc("cu12", CU12, {"nvidia": UV_NVIDIA}))
    out = tmp_path / "site"
    assert main(["index", "build", str(wheels), "-o", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["wheels"] == 2 and report["wheels_read"] == 2
    assert report["variants_files"] == ["files/demo-pkg/demo_pkg-1.0-variants.json"]
    assert (out / "simple" / "demo-pkg" / "index.html").is_file()

    assert main(["index", "build", str(wheels), "-o", str(out), "--copy"]) == 0
    text = capsys.readouterr().out
    assert "2 wheel(s) in 1 project(s); 0 read, 0 project page(s) written" in text


def test_conflict_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, label="gpu", variant_json=variant_doc("gpu", CU12, {"nvidia": UV_NVIDIA}))
    make_wheel(
        wheels,
        label="gpu",
        tag="py3-none-linux_x86_64",
        variant_json=variant_doc(
            "gpu", {"nvidia": {"sm_arch": ["90_real"]}}, {"nvidia": UV_NVIDIA}
        ),
    )
    assert main(["index", "build", str(wheels), "-o", str(tmp_path / "site")]) == 1
    err = capsys.readouterr().err
    assert "py3-none-any-gpu.whl" in err and "py3-none-linux_x86_64-gpu.whl" in err


def test_missing_wheel_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["index", "build", str(tmp_path / "nope"), "-o", str(tmp_path / "o")]) == 1
    assert "not a folder of wheels" in capsys.readouterr().err
