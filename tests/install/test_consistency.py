"""Killed at any point, an install leaves every package whole even before the next run.

Each new top-level entry of ``site-packages`` is built complete out of sight and moved in with
one rename (the ``.dist-info`` last); a replaced one is moved aside whole. Files in folders
shared by several distributions (``bin/``, a namespace package, ``share/``) are placed one by
one, each appearing whole. So a process killed at any step leaves, before any further run, the
environment exactly as it was, exactly as it would be, or (between two renames) a mix in which
every entry is whole, old or new; the next run finishes or undoes it from the journal.
"""

import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from fitwheel.install.cache.unpacked import UnpackedCache
from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.install.env.recovery import state_dir
from fitwheel.install.place.core import WheelToInstall, install_wheels
from tests.kit import make_wheel, snapshot

CHILD = Path(__file__).with_name("child_install.py")
KILLS = int(os.environ.get("FITWHEEL_TEST_KILLS", "0"))


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("wheels")
    old = {f"pkg/sub{i % 3}/m{i}.py": f"V = {i}\n" for i in range(12)}
    new = {f"pkg/sub{i % 4}/m{i}.py": f"V = {i * 10}\n" for i in range(3, 16)}
    return {
        "other": make_wheel(out, "other", "1.0", files={"ns/other/__init__.py": "O = 1\n"}),
        "v1": make_wheel(
            out,
            "pkg",
            "1.0",
            files={
                **old,
                "pkg/__init__.py": "V = 1\n",
                "pkg_top.py": "T = 1\n",
                "ns/pkg/a.py": "1",
            },
            entry_points={"pkg-cli": "pkg:main"},
            data_files={"scripts/pkg-sh": "#!python\nprint(1)\n", "data/share/pkg/a.txt": "1"},
        ),
        "v2": make_wheel(
            out,
            "pkg",
            "2.0",
            files={
                **new,
                "pkg/__init__.py": "V = 2\n",
                "pkg_top.py": "T = 2\n",
                "ns/pkg/b.py": "2",
            },
            entry_points={"pkg-cli2": "pkg:main"},
            data_files={"scripts/pkg-sh": "#!python\nprint(2)\n", "data/share/pkg/b.txt": "2"},
        ),
        "fresh": make_wheel(
            out,
            "fresh",
            "1.0",
            files={f"fresh/x{i}/y.py": str(i) for i in range(8)},
            entry_points={"fresh-cli": "fresh:main"},
        ),
    }


def _view(venv: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


def _unit(rel: str, site: str) -> str:
    """What must appear whole: a top-level entry of site-packages (a namespace package's
    folders are shared: there each file), else each file."""
    if rel.startswith(site):
        top, _, rest = rel[len(site) :].partition("/")
        if top == "ns" or not rest or top == "__pycache__":
            return rel.rstrip("/")
        return site + top
    return rel.rstrip("/")


def _check_whole(
    state: dict[str, str], before: dict[str, str], after: dict[str, str], site: str
) -> bool:
    """Every unit exactly old, exactly new, or absent (between its two renames); returns
    whether the whole environment is exactly old or new."""
    if state in (before, after):
        return True
    units: dict[str, tuple[dict[str, str], dict[str, str], dict[str, str]]] = {}
    for which, files in enumerate((state, before, after)):
        for rel, digest in files.items():
            units.setdefault(_unit(rel, site), ({}, {}, {}))[which][rel] = digest
    for unit, (now, old, new) in units.items():
        assert now in (old, new, {}), f"{unit} is partial: {sorted(set(now) ^ set(old or new))}"
    return False


def _child(
    venv: Path, kill_at: int, wheels: list[Path], unpacked: Path | None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("FITWHEEL_TEST_UNPACKED", None)
    if unpacked is not None:
        env["FITWHEEL_TEST_UNPACKED"] = str(unpacked)
    return subprocess.run(
        [sys.executable, str(CHILD), str(venv), str(kill_at), *map(str, wheels)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


def _items(paths: list[Path]) -> list[WheelToInstall]:
    return [
        WheelToInstall(p, *p.name.split("-")[:2], sha256=hashlib.sha256(p.read_bytes()).hexdigest())
        for p in paths
    ]


def _copy(start: Path, victim: Path) -> None:
    subprocess.run(["rm", "-rf", str(victim)], check=True)
    subprocess.run(["cp", "-a", str(start), str(victim)], check=True)


def _kill_many(base_venv: Path, tmp_path: Path, wheels: dict[str, Path], count: int) -> None:
    seed = int(os.environ.get("FITWHEEL_TEST_SEED", "14"))
    rng = random.Random(seed)
    scenarios = [
        # an upgrade (whole folders swapped, shared folders file by file) and a fresh install
        ("upgrade", [wheels["other"], wheels["v1"]], [wheels["v2"], wheels["fresh"]]),
        ("install", [wheels["other"]], [wheels["v1"]]),
    ]
    mixed = 0
    for name, first, second in scenarios:
        for cached in (True, False):
            start = tmp_path / f"{name}-{cached}"
            subprocess.run(["cp", "-a", str(base_venv), str(start)], check=True)
            unpacked = tmp_path / "unpacked" if cached else None
            env = inspect_environment(str(start), {})
            cache = UnpackedCache(unpacked) if unpacked else None
            install_wheels(
                env,
                _items(first) if cached else [WheelToInstall.from_path(p) for p in first],
                unpacked=cache,
                link_mode="hardlink",
            )
            site = os.path.relpath(env.scheme["purelib"], start) + "/"
            # every run at one path (scripts name their interpreter)
            victim = tmp_path / "victim"
            _copy(start, victim)
            before = _view(victim)
            done = _child(victim, -1, second, unpacked)
            assert done.returncode == 0, done.stderr
            after = _view(victim)
            steps = int(done.stdout.split()[-2])
            for _ in range(count // 4):
                kill_at = rng.randrange(steps)
                _copy(start, victim)
                killed = _child(victim, kill_at, second, unpacked)
                assert killed.returncode == -9, killed.stderr
                # before any further run: whole entries only
                state = _view(victim)
                if not _check_whole(state, before, after, site):
                    mixed += 1
                    assert list(state_dir(victim).glob("txn-*")), "a mix needs the journal"
                # the next run repairs the mix
                install_wheels(inspect_environment(str(victim), {}), [])
                assert _view(victim) in (before, after), f"{name} killed at {kill_at} of {steps}"
                assert not list(state_dir(victim).glob("txn-*"))
    assert mixed <= count, mixed


def test_killed_installs_leave_whole_packages_before_the_next_run(
    base_venv: Path, tmp_path: Path, wheels: dict[str, Path]
) -> None:
    _kill_many(base_venv, tmp_path, wheels, KILLS or 20)


@pytest.mark.slow
def test_two_hundred_kills_leave_whole_packages(
    base_venv: Path, tmp_path: Path, wheels: dict[str, Path]
) -> None:
    _kill_many(base_venv, tmp_path, wheels, KILLS or 200)
