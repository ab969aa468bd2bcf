"""Recovery trusts no journal path, and an interrupted install (SIGTERM, SIGINT) cleans up."""

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.install.env.recovery import state_dir
from fitwheel.install.place.core import install_wheels
from tests.kit import clean_env, make_wheel, snapshot
from tests.kit.interrupts import handling_signals

FITWHEEL = [sys.executable, "-m", "fitwheel", "install", "--no-index"]


def _view(venv: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


def _journal(venv: Path, name: str, data: dict[str, object], committed: bool = False) -> Path:
    folder = state_dir(venv) / name
    folder.mkdir(parents=True)
    (folder / "journal.json").write_text(json.dumps(data))
    if committed:
        (folder / "committed").touch()
    return folder


@pytest.mark.parametrize("committed", [False, True])
def test_a_stale_journal_naming_paths_outside_deletes_nothing(
    venv: Path, tmp_path: Path, committed: bool
) -> None:
    outside = tmp_path / "outside"
    (outside / "folder" / "deep").mkdir(parents=True)
    (outside / "folder" / "deep" / "keep.txt").write_text("mine")
    (outside / "file.txt").write_text("mine too")
    (outside / "empty").mkdir()
    env = inspect_environment(str(venv), {})
    site = env.scheme["purelib"]
    before_outside = snapshot(outside)
    before = _view(venv)
    _journal(
        venv,
        "txn-000000000001",
        {
            "state": "prepared",
            "operations": [
                [str(outside / "file.txt"), None, str(outside / "gone")],
                [str(outside / "empty" / "x"), None, None],
            ],
            "linked": [[str(outside / "folder" / "deep" / "keep.txt"), None]],
            "created_dirs": [str(outside / "folder")],
            "entries": [[str(outside / "folder"), None, None]],
        },
        committed,
    )
    # paths inside the environment that no transaction may remove whole: its scheme folders
    _journal(
        venv, "txn-000000000002", {"state": "prepared", "operations": [], "created_dirs": [site]}
    )
    # and a climb out through '..'
    _journal(
        venv,
        "txn-000000000003",
        {
            "state": "prepared",
            "operations": [],
            "entries": [[f"{site}/../../../../outside", None, None]],
        },
    )
    result = install_wheels(env, [])
    assert snapshot(outside) == before_outside
    assert _view(venv) == before
    assert not list(state_dir(venv).glob("txn-*"))
    if not committed:
        assert any("ignored the journal" in note for note in result.notes)


def test_sigterm_at_random_points_of_an_install_cleans_up(venv: Path, tmp_path: Path) -> None:
    old = make_wheel(
        tmp_path / "w", "big", "1.0", files={f"big/m{i}.py": f"V = {i}\n" for i in range(300)}
    )
    new = make_wheel(
        tmp_path / "w", "big", "2.0", files={f"big/n{i}.py": f"V = {i}\n" for i in range(300)}
    )
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    args = ["--python", str(venv)]
    done = subprocess.run([*FITWHEEL, str(old), *args], capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    before = _view(venv)
    scratch = tmp_path / "scratch"
    subprocess.run(["cp", "-a", str(venv), str(scratch)], check=True)
    began = time.monotonic()
    done = subprocess.run(
        [*FITWHEEL, str(new), "--python", str(scratch), "--no-cache"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    whole = time.monotonic() - began
    rng = random.Random(int(os.environ.get("FITWHEEL_TEST_SEED", "15")))
    outcomes = set()
    for number in range(8):
        signum = signal.SIGTERM if number % 2 == 0 else signal.SIGINT
        proc = subprocess.Popen(
            [*FITWHEEL, str(new), *args, "--no-cache"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        # counted from when fitwheel's own handling is in place: a SIGINT while the interpreter
        # still imports ``site`` is CPython's to handle (docs/interrupts.md)
        while not handling_signals(proc.pid) and proc.poll() is None:
            time.sleep(0.002)
        time.sleep(rng.uniform(0.3, 1.0) * whole)
        proc.send_signal(signum)
        _out, err = proc.communicate(timeout=120)
        outcomes.add(proc.returncode)
        assert proc.returncode in (0, 130, -signum), err
        assert "Traceback" not in err
        left = list(state_dir(venv).glob("txn-*"))
        assert not left, (
            f"the process did not clean up after signal {signum} (exit {proc.returncode}): "
            f"{[sorted(os.listdir(t)) for t in left]}; stderr: {err[-1500:]}"
        )
        state = _view(venv)
        if proc.returncode == 0 or state != before:
            # it finished: put the old version back for the next round
            assert state.keys() == _view(scratch).keys()
            subprocess.run([*FITWHEEL, str(old), *args], capture_output=True, env=env, check=True)
        else:
            assert state == before
