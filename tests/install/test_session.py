"""An environment session: whatever way a writer ends, its temporary folders are gone, the
environment's lock is free and the signal handlers are back; crash recovery runs once while
the lock is held."""

import json
import signal
from pathlib import Path

import pytest

from fitwheel.fs import locked
from fitwheel.install.env.interpreter import TargetEnvironment, inspect_environment
from fitwheel.install.env.recovery import recover, state_dir
from fitwheel.install.env.session import EnvironmentSession
from fitwheel.install.place.core import WheelToInstall, install_wheels
from tests.kit import make_wheel


def _free(env: TargetEnvironment) -> bool:
    """Whether nobody holds the environment's lock (another open file's flock conflicts with
    this process's own)."""
    with locked(state_dir(env.prefix) / "lock", wait=False) as free:
        return free


def _crashed(env: TargetEnvironment, name: str) -> Path:
    """A transaction a killed process left: it had placed one new file, not yet committed."""
    placed = Path(env.scheme["purelib"]) / f"{name}.py"
    placed.write_text("left behind\n")
    folder = state_dir(env.prefix) / name
    folder.mkdir(parents=True)
    journal = {"state": "prepared", "operations": [[str(placed), None, str(folder / "gone")]]}
    (folder / "journal.json").write_text(json.dumps(journal))
    return placed


def test_a_writer_that_fails_midway_leaves_no_temp_folder_and_frees_the_lock(venv: Path) -> None:
    env = inspect_environment(str(venv), {})
    folders: list[Path] = []
    with pytest.raises(RuntimeError, match="midway"), EnvironmentSession() as session:
        session.hold(env)
        for prefix in ("fitwheel-one-", "fitwheel-two-"):
            folder = session.temp_dir(prefix)
            (folder / "sub").mkdir()
            (folder / "sub" / "file.txt").write_text("x")
            folders.append(folder)
        assert not _free(env)
        raise RuntimeError("midway")
    assert folders
    assert not any(folder.exists() for folder in folders)
    assert _free(env)


def test_a_signal_midway_interrupts_the_writer_and_cleans_up(venv: Path) -> None:
    env = inspect_environment(str(venv), {})
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), EnvironmentSession() as session:
        session.hold(env)
        folder = session.temp_dir("fitwheel-signal-")
        signal.raise_signal(signal.SIGTERM)
        pytest.fail("SIGTERM did not interrupt the session")  # pragma: no cover
    assert not folder.exists()
    assert _free(env)
    assert signal.getsignal(signal.SIGTERM) is before


def test_recovery_runs_once_while_the_lock_is_held(venv: Path, tmp_path: Path) -> None:
    env = inspect_environment(str(venv), {})
    first = _crashed(env, "txn-000000000001")
    wheel = make_wheel(tmp_path / "wheels", "alpha", "1.0", files={"alpha.py": "A = 1\n"})
    with EnvironmentSession() as session:
        notes = session.hold(env)
        assert notes == ["rolled back an interrupted install (txn-000000000001)"]
        assert session.recovered == notes
        assert not first.exists()
        # under the same hold, later recoveries (the install's own) have nothing to do: a
        # leftover that shows up now is not looked for again
        second = _crashed(env, "txn-000000000002")
        assert recover(env.prefix, env.scheme.values()) == []
        result = install_wheels(env, [WheelToInstall.from_path(wheel)], lock=False)
        assert result.notes == []
        assert second.exists()
    # the next command's session recovers again
    with EnvironmentSession() as session:
        assert session.hold(env) == ["rolled back an interrupted install (txn-000000000002)"]
    assert not second.exists()
    assert (Path(env.scheme["purelib"]) / "alpha.py").is_file()


def test_the_inventory_is_read_once(venv: Path, tmp_path: Path) -> None:
    env = inspect_environment(str(venv), {})
    wheel = make_wheel(tmp_path / "wheels", "beta", "1.0", files={"beta.py": "B = 1\n"})
    with EnvironmentSession() as session:
        session.look_at(env)
        assert "beta" not in session.installed()
        assert session.inventory().get("beta") is None
        install_wheels(env, [WheelToInstall.from_path(wheel)])
        assert session.installed() is session.installed()
        assert "beta" not in session.installed()
    with EnvironmentSession() as session:
        session.look_at(env)
        assert "beta" in session.installed()
        assert session.inventory().get("beta") is not None
