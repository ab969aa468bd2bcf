"""Doctor on a real CPU build of torch 2.13.0, installed by fitwheel from this machine's local
wheel folder (and its dependencies from the local simple index)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.doctor.envs import FITWHEEL, by_name, doctor, failed
from tests.kit import clean_env, make_venv

WHEELS = Path("/opt/wheels")
DEPENDENCIES = Path("/opt/pypi/simple")


@pytest.fixture(scope="module")
def torch_venv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    found = sorted(WHEELS.glob("torch-2.13.0+cpu-*.whl")) if WHEELS.is_dir() else []
    if not found:
        pytest.skip(f"no torch 2.13.0 CPU wheel in {WHEELS} (this machine's local wheel folder)")
    if not DEPENDENCIES.is_dir():
        pytest.skip(f"no local simple index at {DEPENDENCIES} for torch's dependencies")
    root = tmp_path_factory.mktemp("torch-cpu")
    venv = make_venv(root / "venv")
    proc = subprocess.run(
        [
            *FITWHEEL,
            "install",
            "-q",
            "torch==2.13.0",
            "--find-links",
            str(WHEELS),
            "--index-url",
            DEPENDENCIES.as_uri(),
            "--python",
            str(venv),
            "--cache-dir",
            str(root / "cache"),
            "--sysroot",
            str(Path(__file__).parents[1] / "platform" / "machines" / "nogpu-server"),
            "--verify",
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        pytest.skip(f"torch 2.13.0 could not be installed here: {proc.stderr.strip()[-400:]}")
    yield venv


def test_correct_on_a_cpu_only_machine(torch_venv: Path) -> None:
    code, report, err = doctor(torch_venv, machine="nogpu-server")
    assert code == 0 and report["ok"] is True, err
    (build,) = by_name(report, "build", "torch")
    assert build["status"] == "pass" and "2.13.0+cpu is a CPU build" in build["detail"]
    assert "torch/version.py" in build["detail"]


def test_cpu_build_on_a_gpu_host(torch_venv: Path) -> None:
    code, report, _ = doctor(torch_venv, machine="gpu-h100-open")
    assert code == 1 and report["ok"] is False
    (build,) = failed(report)
    assert build["package"] == "torch" and build["detail"].startswith("CPU build on a GPU host")
    assert "4 NVIDIA GPUs" in build["detail"]
    assert (
        build["fix"] == "fitwheel install 'torch==2.13.0' --torch-backend cu128 --force-reinstall"
    )


def test_cpu_build_on_a_gpu_host_no_torch_gpu_build_runs_on(torch_venv: Path) -> None:
    """torch newer than the backend table is judged by the newest release it knows, whose
    ROCm builds are for ROCm 7: none runs on this ROCm 6.4 host, so there is no reinstall to
    offer, only the reason."""
    code, report, _ = doctor(torch_venv, machine="gpu-mi300x")
    assert code == 1 and report["ok"] is False
    (build,) = failed(report)
    assert build["detail"].startswith("CPU build on a GPU host") and "2 AMD GPUs" in build["detail"]
    assert "no torch 2.13 GPU build runs on it (judged by torch 2.10's builds" in build["detail"]
    assert "needs ROCm 7.1; ROCm 6.4 is installed" in build["detail"]
    assert build["fix"] is None


def test_human_checklist_names_the_fix(torch_venv: Path) -> None:
    proc = subprocess.run(
        [*FITWHEEL, "doctor", "--python", str(torch_venv), "--sysroot",
         str(Path(__file__).parents[1] / "platform" / "machines" / "gpu-h100-open")],
        capture_output=True, text=True, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 1 and proc.stderr == ""
    assert "[FAIL] build: torch: CPU build on a GPU host" in proc.stdout
    assert "fix: fitwheel install 'torch==2.13.0' --torch-backend cu128 --force-reinstall" in (
        proc.stdout
    )
    assert proc.stdout.rstrip().endswith("not applicable)")


def test_run_imports_multiplies_and_reports_gpu_tests_not_applicable(torch_venv: Path) -> None:
    code, report, err = doctor(
        torch_venv, "--run", "--skip", "torch.compile", "--timeout", "120", machine="nogpu-server"
    )
    assert code == 0 and report["ok"] is True, (err, failed(report))
    status = {c["name"]: c["status"] for c in report["checks"] if c["package"] == "torch"}
    assert status["import"] == "pass" and status["matmul"] == "pass"
    assert status["cpu kernels"] == "pass"
    for gpu_test in ("devices", "flexattention", "mx formats", "p2p"):
        assert status[gpu_test] == "n/a"
    (imported,) = by_name(report, "import", "torch")
    assert "torch 2.13.0+cpu imports" in imported["detail"]
    (cpu,) = by_name(report, "cpu kernels", "torch")
    assert "kernels in use:" in cpu["detail"]


@pytest.mark.slow
def test_run_compiles_on_the_cpu(torch_venv: Path) -> None:
    code, report, err = doctor(torch_venv, "--run", machine="nogpu-server", timeout=900)
    assert code == 0, (err, failed(report))
    assert by_name(report, "torch.compile", "torch")[0]["status"] == "pass"
