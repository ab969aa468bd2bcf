"""Ctrl-C at random points of a large install: ``fitwheel install --no-cache-dir --compile`` of a
wheel of about 100 MB (and three smaller ones it depends on) from a loopback index into a real
venv, run as a child process that gets SIGINT (sent to its process group, as a terminal's Ctrl-C
is) after a seeded random delay spread over the whole run, byte-compiling after the commit point
included.

Every time: a shell sees exit status 130, the temporary folder (``TMPDIR``) is left empty, and
the environment is either exactly as before or completely installed (the signal came after the
commit), with the package importing and ``fitwheel check`` content.

The delays count from the moment fitwheel's own handling of signals is in place (the process
catches SIGTERM, read from ``/proc``): before that the interpreter is still starting, and a
signal then is Python's to handle. One that comes before Python installed its own handler ends
the process by the signal itself, which a shell reports as 130 too (``shell_status``; tested
apart, with a signal sent as the process starts); one that comes while the interpreter imports
its ``site`` module makes CPython stop with "Fatal Python error" and status 1, which no Python
program can change. Nothing is timed here: the delays are scaled to one uninterrupted run of the
same install, and the only bound is a hang detector (120 s per run)."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.kit import build_simple_index, make_venv, make_wheel, serve
from tests.kit.env import clean_env
from tests.kit.interrupts import (
    FITWHEEL,
    NAME,
    Interrupted,
    build_index,
    delays,
    handling_signals,
    install_argv,
    leftovers,
    run_install,
    tree_digest,
)


@dataclass
class LargeInstall:
    index: str
    base: Path
    #: the environment before and after an uninterrupted install
    before: dict[str, str]
    after: dict[str, str]
    #: how long the uninterrupted install took (the span the signals are spread over)
    seconds: float


@pytest.fixture(scope="module")
def large_install(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LargeInstall]:
    """The index (built once for the module), a base venv, and one uninterrupted install."""
    import time

    root = tmp_path_factory.mktemp("large")
    build_index(root / "served")
    base = make_venv(root / "base")
    with serve(root / "served" / "index") as (url, _state):
        index = f"{url}/simple/"
        tmp = root / "full-tmp"
        tmp.mkdir()
        times = []
        for _run in range(2):  # the first one warms the disk's cache up
            venv = _fresh(base, root / "full")
            start = time.monotonic()
            done = run_install(install_argv(venv, index), tmp, delay=None)
            times.append(time.monotonic() - start)
            assert done.status == 0, done.stderr
            assert leftovers(tmp) == []
        setup = LargeInstall(index, base, tree_digest(base), tree_digest(venv), min(times))
        shutil.rmtree(venv)
        yield setup
    shutil.rmtree(root)  # a few hundred megabytes, not kept with the test's folders


def _fresh(base: Path, target: Path) -> Path:
    shutil.rmtree(target, ignore_errors=True)
    subprocess.run(["cp", "-a", str(base), str(target)], check=True)
    return target


def _exists(path: Path) -> Callable[[int], bool]:
    return lambda _pid: path.exists()


def _interrupted_run(
    setup: LargeInstall, work: Path, delay: float, *, committed: bool, twice: bool
) -> tuple[Interrupted, Path]:
    """One install into a fresh venv, SIGINT ``delay`` seconds after fitwheel's handling of
    signals is in place. A run that ended before
    its signal (this one ran faster than the run the delays were scaled to) is run again with a
    shorter delay, so that every run counted was interrupted. ``committed``: the delay counts
    from the moment the last ``.dist-info`` folder appeared (the commit point is the next step),
    so that the signal comes after the commit point. ``twice``: a second SIGINT follows 50 ms
    after the first, while the command cleans up."""
    for _attempt in range(6):
        venv = _fresh(setup.base, work / "venv")
        tmp = work / "tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        last = next(venv.glob("lib/python*/site-packages")) / f"{NAME}-1.0.dist-info"
        argv = install_argv(venv, setup.index)
        after = _exists(last) if committed else handling_signals
        again = 0.05 if twice else None
        done = run_install(argv, tmp, delay=delay, after=after, again=again)
        # a signal that found the process exiting (os._exit under way) cannot change its status
        exiting = done.status == 0 and done.reaction is not None and done.reaction < 0.05
        if done.reaction is not None and not exiting:
            return done, venv
        assert done.status == 0, done.stderr
        delay *= 0.8
    raise AssertionError("every run ended before its signal")


def _check(setup: LargeInstall, work: Path, delay: float, *, committed: bool, twice: bool) -> str:
    done, venv = _interrupted_run(setup, work, delay, committed=committed, twice=twice)
    when = "after the commit point" if committed else "after fitwheel's handling began"
    said = f"SIGINT {delay:.2f} s {when}{' (twice)' if twice else ''}: {done.stderr[-2000:]}"
    assert done.status == 130, said
    assert "Traceback" not in done.stderr, said
    assert leftovers(work / "tmp") == [], said
    state = tree_digest(venv)
    if state == setup.before:
        return "unchanged"
    changed = sorted(set(state.items()) ^ set(setup.after.items()))[:10]
    assert state == setup.after, f"{said}\nneither before nor after; differs in {changed}"
    python = venv / "bin" / "python"
    imported = subprocess.run(
        [str(python), "-c", f"import {NAME}.ops.mod0, bigdep_one; print({NAME}.VERSION)"],
        capture_output=True,
        text=True,
    )
    assert imported.stdout.strip() == "1.0", imported.stderr
    check = subprocess.run(
        [str(FITWHEEL), "check", "--python", str(python)],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert check.returncode == 0, check.stdout + check.stderr
    return "installed"


def _runs(large_install: LargeInstall, tmp_path: Path, count: int, seed: int) -> list[str]:
    """``count`` interrupted installs: two in three with signals spread over the whole run
    (scaled to the uninterrupted one), the others up to 0.3 s after the commit point (the
    machine's speed varies too much for a delay alone to find the commit point); every other
    one gets a second SIGINT while it cleans up."""
    late = count // 3
    plan = [(d, False) for d in delays(seed, count - late, large_install.seconds)]
    plan += [(d, True) for d in delays(seed + 1, late, 0.3)]
    outcomes = [
        _check(large_install, tmp_path, d, committed=c, twice=i % 2 == 1)
        for i, (d, c) in enumerate(plan)
    ]
    shutil.rmtree(tmp_path / "venv")
    return outcomes


def test_ctrl_c_at_random_points_of_a_large_install(
    large_install: LargeInstall, tmp_path: Path
) -> None:
    outcomes = _runs(large_install, tmp_path, 5, seed=21)
    assert len(outcomes) == 5


@pytest.mark.slow
def test_ctrl_c_at_thirty_random_points_of_a_large_install(
    large_install: LargeInstall, tmp_path: Path
) -> None:
    outcomes = _runs(large_install, tmp_path, 30, seed=2107)
    # spread over the whole run: some signals came before the commit point, some after
    assert set(outcomes) == {"unchanged", "installed"}, outcomes


def test_ctrl_c_as_the_process_starts(large_install: LargeInstall, tmp_path: Path) -> None:
    """Before Python installed its own handler the signal ends the process by itself: a shell
    sees 130, and nothing was made."""
    for _run in range(3):
        venv = _fresh(large_install.base, tmp_path / "venv")
        tmp = tmp_path / "tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir()
        done = run_install(install_argv(venv, large_install.index), tmp, delay=0)
        assert done.status == 130, done.stderr
        assert leftovers(tmp) == []
        assert tree_digest(venv) == large_install.before


def test_a_failed_install_leaves_no_temporary_folder(base_venv: Path, tmp_path: Path) -> None:
    """An install that fails half way (a wheel whose RECORD does not match a member, found
    while unpacking) leaves its ``--no-cache-dir`` folder behind no more than one interrupted."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "broken", "1.0", corrupt=True)
    build_simple_index(wheels, tmp_path / "served")
    venv = _fresh(base_venv, tmp_path / "venv")
    before = tree_digest(venv)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with serve(tmp_path / "served") as (url, _state):
        argv = install_argv(venv, f"{url}/simple/", compile_bytecode=False)
        done = run_install([*argv[:-1], "broken"], tmp, delay=None)
    assert done.status == 1, done.stderr
    assert "broken" in done.stderr and "RECORD" in done.stderr, done.stderr
    assert leftovers(tmp) == []
    assert tree_digest(venv) == before
