"""``fitwheel install --verify``: the static checks on what was just installed."""

from __future__ import annotations

import subprocess
from pathlib import Path

from fitwheel.doctor.diagnose import verify_installed
from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.platform.profile import load_profile
from tests.doctor.envs import (
    CUDA_128,
    FITWHEEL,
    MACHINES,
    doctor,
    failed,
    plain_wheel,
    torch_wheel,
)
from tests.kit import clean_env, make_venv


def _install(
    venv: Path, wheels: list[Path], machine: str, *extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FITWHEEL, "install", "--no-index", "--python", str(venv), "--cache-dir",
         str(venv.parent / "cache"), "--sysroot", str(MACHINES / machine), "--verify",
         *extra, *map(str, wheels)],
        capture_output=True, text=True, env=clean_env(),
    )  # fmt: skip


def test_verify_fails_the_install_on_a_mismatch(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    wheel = torch_wheel(tmp_path / "w", "2.9.0+cpu", cuda=None)
    proc = _install(venv, [wheel], "gpu-h100-open")
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "--verify found 1 problem" in proc.stderr
    assert "CPU build on a GPU host" in proc.stderr
    assert "fitwheel install 'torch==2.9.0' --torch-backend cu128 --force-reinstall" in proc.stderr
    assert proc.stderr.count("fitwheel: error:") == 1


def test_verify_passes_what_fits(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    wheels = [
        torch_wheel(
            tmp_path / "w", archs=CUDA_128, requires=['triton==3.5.0; platform_system == "Linux"']
        ),
        plain_wheel(tmp_path / "w", "triton", "3.5.0"),
    ]
    proc = _install(venv, wheels, "gpu-rtx5090-igpu")
    assert proc.returncode == 0, proc.stderr
    assert "Verified:" in proc.stdout


def test_verify_skips_requirements_with_no_deps(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    wheel = torch_wheel(tmp_path / "w", "2.9.0+cpu", cuda=None, requires=["filelock"])
    assert _install(venv, [wheel], "nogpu-server", "--no-deps").returncode == 0
    # the whole checklist still names what --no-deps left out
    code, report, _ = doctor(venv, machine="nogpu-server")
    assert code == 1
    assert [c["detail"] for c in failed(report)] == [
        "torch 2.9.0+cpu requires filelock, which is not installed"
    ]


def test_verify_installed_for_other_commands(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    wheel = torch_wheel(tmp_path / "w", archs=CUDA_128)
    assert _install(venv, [wheel], "gpu-h100-open").returncode == 0
    env = inspect_environment(str(venv), {})
    profile = tmp_path / "gtx.json"
    detect = subprocess.run(
        [*FITWHEEL, "detect", "--json", "--sysroot", str(MACHINES / "gpu-rtx4090-gtx1080ti")],
        capture_output=True, text=True, env=clean_env(), check=True,
    )  # fmt: skip
    profile.write_text(detect.stdout)
    checks = verify_installed(env, load_profile(profile), ["torch"])
    assert [(c.name, c.status) for c in checks if c.status == "fail"] == [("gpu archs", "fail")]
    assert verify_installed(env, load_profile(profile), ["something-else"])[-1].status == "pass"
