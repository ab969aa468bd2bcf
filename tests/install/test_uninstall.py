"""Uninstalling is all-or-nothing: a failure or ``kill -9`` in the middle of removing files
leaves the environment as it was before or as it is after, never in between."""

import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from fitwheel.install.env.interpreter import TargetEnvironment, inspect_environment
from fitwheel.install.env.recovery import state_dir
from fitwheel.install.place.core import WheelToInstall, install_wheels
from fitwheel.install.place.transaction import Operation
from fitwheel.install.place.uninstall import UninstallError, uninstall
from tests.kit import make_venv, make_wheel, snapshot

CHILD = Path(__file__).with_name("child_uninstall.py")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv with alpha (a package, a console script, data files) and beta installed."""
    root = tmp_path_factory.mktemp("uninstall")
    venv = make_venv(root / "venv")
    alpha = make_wheel(
        root / "wheels",
        "alpha",
        "1.0",
        files={f"alpha/m{i}.py": f"X = {i}\n" for i in range(6)},
        entry_points={"alpha-cli": "alpha.m0:main"},
        data_files={"data/share/alpha/info.txt": "hello"},
    )
    beta = make_wheel(root / "wheels", "beta", "1.0", files={"beta.py": "B = 1\n"})
    env = inspect_environment(str(venv), {})
    install_wheels(env, [WheelToInstall.from_path(alpha), WheelToInstall.from_path(beta)])
    return venv


@pytest.fixture
def venv(installed: Path, tmp_path: Path) -> Path:
    target = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(installed), str(target)], check=True)
    return target


def env_of(venv: Path) -> TargetEnvironment:
    return inspect_environment(str(venv), {})


def user_view(venv: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


def _child(venv: Path, kill_at: int, *names: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(CHILD), str(venv), str(kill_at), *names],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_uninstall_removes_every_file_and_empty_folder(venv: Path) -> None:
    env = env_of(venv)
    site = Path(env.scheme["purelib"])
    result = uninstall(env, ["ALPHA", "beta", "absent"])
    assert [r.dist.name for r in result.removed] == ["alpha", "beta"]
    assert result.not_installed == ["absent"]
    for gone in ("alpha", "alpha-1.0.dist-info", "beta.py", "beta-1.0.dist-info"):
        assert not (site / gone).exists(), gone
    assert not (venv / "bin" / "alpha-cli").exists()
    assert not (venv / "share" / "alpha").exists()
    assert not list(state_dir(venv).glob("txn-*"))


def test_a_failure_during_the_commit_puts_everything_back(venv: Path) -> None:
    before = user_view(venv)
    seen = 0

    def hook(op: Operation | None) -> None:
        nonlocal seen
        seen += 1
        if seen == 5:
            raise OSError("disk trouble")

    with pytest.raises(OSError, match="disk trouble"):
        uninstall(env_of(venv), ["alpha", "beta"], commit_hook=hook)
    assert user_view(venv) == before
    assert not list(state_dir(venv).glob("txn-*"))


def test_a_missing_record_refuses_before_anything_changes(venv: Path) -> None:
    site = Path(env_of(venv).scheme["purelib"])
    (site / "beta-1.0.dist-info" / "RECORD").unlink()
    before = user_view(venv)
    with pytest.raises(UninstallError, match="without a RECORD file"):
        uninstall(env_of(venv), ["alpha", "beta"])
    assert user_view(venv) == before


def test_declining_changes_nothing(venv: Path) -> None:
    before = user_view(venv)
    asked = []

    def confirm(removals: list[object]) -> bool:
        asked.append(len(removals))
        return False

    result = uninstall(env_of(venv), ["alpha", "beta"], confirm=confirm)
    assert result.cancelled and asked == [2]
    assert user_view(venv) == before


def test_kill_9_at_random_points_leaves_before_or_after(venv: Path) -> None:
    env = env_of(venv)
    before = user_view(venv)
    scratch = venv.parent / "scratch"
    subprocess.run(["cp", "-a", str(venv), str(scratch)], check=True)
    done = _child(scratch, -1, "alpha", "beta")
    assert done.returncode == 0, done.stderr
    after = user_view(scratch)
    steps = int(done.stdout.split()[-2]) - 1  # the last call comes after 'committed'
    seed = int(os.environ.get("FITWHEEL_TEST_SEED", "825"))
    points = [*sorted(random.Random(seed).sample(range(steps), 4)), 0, steps - 1]
    for kill_at in points:
        killed = _child(venv, kill_at, "alpha", "beta")
        assert killed.returncode == -9, killed.stderr
        assert list(state_dir(venv).glob("txn-*")), "a killed commit leaves its journal behind"
        # the next fitwheel run on the environment recovers before doing anything else
        result = uninstall(env, [])
        assert result.notes and "rolled back" in result.notes[0]
        assert user_view(venv) == before, f"killed at step {kill_at} of {steps}"
    killed = _child(venv, steps, "alpha", "beta")  # past the commit mark: it stands
    assert killed.returncode == -9
    assert "finished" in uninstall(env, []).notes[0]
    assert user_view(venv) == after
