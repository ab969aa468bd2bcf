"""Broken environments give a clean report within the time bounds, never a traceback."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tests.doctor.envs import by_name, doctor, environment, failed, torch_wheel

HANG = "import time\ntime.sleep(600)\n"
SEGFAULT = "import ctypes\nctypes.string_at(0)\n"


def test_broken_interpreter(tmp_path: Path) -> None:
    venv = environment(tmp_path, [torch_wheel(tmp_path / "w", "2.9.0+cpu", cuda=None)])
    python = venv / "bin" / "python"
    python.unlink()
    python.write_text("#!/bin/sh\necho 'error while loading shared libraries' >&2\nexit 127\n")
    python.chmod(0o755)
    # no cached answer of the interpreter may stand in for running it
    env_cache = tmp_path / "fresh-cache"
    from tests.kit import clean_env

    code, report, err = doctor(
        venv, "--run", machine="nogpu-server", env=clean_env(FITWHEEL_CACHE_DIR=str(env_cache))
    )
    assert code == 1 and "Traceback" not in err
    (interp,) = by_name(report, "interpreter")
    assert interp["status"] == "fail" and "does not run" in interp["detail"]
    assert interp["fix"].startswith("recreate the environment")
    # the packages are still checked from their files
    assert by_name(report, "build", "torch")[0]["status"] == "pass"
    assert by_name(report, "smoke tests")[0]["status"] == "n/a"


def test_corrupt_metadata(tmp_path: Path) -> None:
    venv = environment(tmp_path, [torch_wheel(tmp_path / "w", "2.9.0+cpu", cuda=None)])
    (meta,) = venv.glob("lib/python*/site-packages/torch-*.dist-info/METADATA")
    meta.write_bytes(b"\x00\xff garbage line without a colon\n")
    code, report, err = doctor(venv, machine="nogpu-server")
    assert code == 1 and "Traceback" not in err
    (problem,) = failed(report)
    assert problem["name"] == "metadata" and problem["package"] == "torch"
    assert problem["fix"] == "fitwheel install 'torch==2.9.0' --force-reinstall"


def test_missing_metadata_and_unreadable_variant_json(tmp_path: Path) -> None:
    venv = environment(
        tmp_path, [torch_wheel(tmp_path / "w", "2.9.0", label="cuda12.8", cuda="12.8")]
    )
    (dist_info,) = venv.glob("lib/python*/site-packages/torch-*.dist-info")
    (dist_info / "variant.json").write_text("{not json")
    code, report, err = doctor(venv, machine="gpu-h100-open")
    assert code == 1 and "Traceback" not in err
    (problem,) = [c for c in failed(report) if c["name"] == "variant"]
    assert "invalid JSON" in problem["detail"]
    os.remove(dist_info / "METADATA")
    code, report, err = doctor(venv, machine="gpu-h100-open")
    assert code == 1 and "Traceback" not in err
    assert failed(report)[0]["name"] == "metadata"


def test_an_import_that_hangs(tmp_path: Path) -> None:
    venv = environment(tmp_path, [torch_wheel(tmp_path / "w", "2.9.0+cpu", cuda=None, init=HANG)])
    code, report, err = doctor(venv, "--run", "--timeout", "3", machine="nogpu-server", timeout=60)
    assert code == 1 and "Traceback" not in err
    (imported,) = by_name(report, "import", "torch")
    assert imported["status"] == "fail" and "did not finish within 3 s" in imported["detail"]
    # what needs the import is not run at all
    assert by_name(report, "matmul", "torch")[0]["status"] == "n/a"


def test_a_smoke_test_that_segfaults(tmp_path: Path) -> None:
    venv = environment(
        tmp_path, [torch_wheel(tmp_path / "w", "2.9.0+cpu", cuda=None, init=SEGFAULT)]
    )
    code, report, err = doctor(venv, "--run", "--timeout", "30", machine="nogpu-server")
    assert code == 1 and "Traceback" not in err
    (imported,) = by_name(report, "import", "torch")
    assert imported["status"] == "fail" and "SIGSEGV" in imported["detail"]


def test_bad_usage_exits_2(tmp_path: Path) -> None:
    venv = environment(tmp_path, [])
    code, _, err = doctor(venv, "--timeout", "0")
    assert code == 2 and "--timeout" in err
    code, _, err = doctor(venv, "--skip", "nonsense")
    assert code == 2 and "no such smoke test" in err
    code, _, err = doctor(tmp_path / "nowhere")
    assert code == 1 and "does not exist" in err
    shutil.rmtree(venv)
