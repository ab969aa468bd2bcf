"""``sync --verify``: doctor's static checks on what the sync installed, failing the command when
a build does not fit the machine."""

from __future__ import annotations

from pathlib import Path

from tests.kit import make_venv
from tests.lock.conftest import EXPECTED, Fleet, builds, fitwheel


def test_sync_verify_passes_on_the_machine_the_builds_are_for(fleet: Fleet, tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    done = fitwheel(
        "sync", str(fleet.lock), "--python", str(venv), "--sysroot", str(fleet.machine("h100")),
        "--cache-dir", str(tmp_path / "cache"), "--verify",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert builds(venv) == EXPECTED["h100"]
    assert "Verified: " in done.stdout and "checks passed" in done.stdout


def test_sync_verify_fails_on_a_cpu_build_accepted_for_a_gpu_host(
    fleet: Fleet, tmp_path: Path
) -> None:
    """No locked GPU build runs on an RTX 5090 with a CUDA 12.8 driver: --allow-fallback takes the
    CPU build, which the sync installs and --verify then flags."""
    venv = make_venv(tmp_path / "venv")
    done = fitwheel(
        "sync", str(fleet.lock), "--python", str(venv), "--allow-fallback", "--verify",
        "--sysroot", str(fleet.machines["rtx5090-570"]), "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 1
    assert builds(venv) == EXPECTED["cpu-x86"]  # the sync itself finished
    err = done.stderr
    assert err.startswith("fitwheel: error: the sync finished, but --verify found")
    assert err.count("fitwheel: error:") == 1 and "Traceback" not in err
    assert "torch: CPU build on a GPU host" in err and "RTX 5090" in err
    assert f"fitwheel doctor --python {venv}" in err
    without = fitwheel(
        "sync", str(fleet.lock), "--python", str(venv), "--allow-fallback",
        "--sysroot", str(fleet.machines["rtx5090-570"]), "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert without.returncode == 0, without.stderr
