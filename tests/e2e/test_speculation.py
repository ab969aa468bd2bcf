"""Speculative fetching in ``fitwheel install``: each project's likely pick is downloaded before
the resolver pins it, from a loopback index whose requests are counted.

In every index here, ``app`` depends on ``slow``, whose metadata file trickles in over about a
second, so that the resolution is still running when the guesses of the other projects have
been fetched (nothing is timed: the trickle only orders the events)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from tests.kit import build_simple_index, clean_env, make_venv, make_wheel, serve
from tests.kit.interrupts import FITWHEEL as INSTALLER
from tests.kit.interrupts import leftovers, run_install
from tests.kit.server import ServerState

FITWHEEL = [sys.executable, "-m", "fitwheel", "install"]
SLOW_METADATA = "/files/slow-1.0-py3-none-any.whl.metadata"


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``app`` needs ``lib>=1``, ``helper`` and ``slow``; ``lib`` has 1.0 and 2.0; ``picky``
    (not asked for by app) needs ``lib<2``."""
    root = tmp_path_factory.mktemp("spec")
    wheels = root / "w"
    make_wheel(wheels, "app", "1.0", requires=["lib>=1", "helper", "slow"])
    make_wheel(wheels, "lib", "1.0", files={"lib.py": "V = 1\n"})
    make_wheel(wheels, "lib", "2.0", files={"lib.py": "V = 2\n" + "# padding\n" * 2000})
    make_wheel(wheels, "helper", "1.0")
    make_wheel(wheels, "picky", "1.0", requires=["lib<2"])
    make_wheel(wheels, "slow", "1.0")
    build_simple_index(wheels, root / "site")
    return root / "site"


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    return make_venv(tmp_path / "venv")


@pytest.fixture
def index(site: Path) -> Iterator[tuple[str, ServerState]]:
    with serve(site, trickle={SLOW_METADATA: 0.05}, trickle_bytes=16) as (url, state):
        yield f"{url}/simple/", state


def install(
    tmp_path: Path, venv: Path, url: str, *args: str, env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], dict[str, object]]:
    report = tmp_path / "report.json"
    done = subprocess.run(
        [
            *FITWHEEL,
            *args,
            "-i",
            url,
            "--python",
            str(venv),
            "--no-variants",
            "--report",
            str(report),
        ],
        capture_output=True,
        text=True,
        env=clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"), **(env or {})),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return done, json.loads(report.read_text())


def wheel_gets(state: ServerState) -> list[str]:
    return [
        path for method, path, _h in state.requests if method == "GET" and path.endswith(".whl")
    ]


def installed(venv: Path, names: Sequence[str]) -> dict[str, str]:
    code = "import importlib.metadata as m, sys; print(*[m.version(n) for n in sys.argv[1:]])"
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code, *names],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    return dict(zip(names, out, strict=True))


def test_a_right_guess_is_fetched_once_and_used(
    tmp_path: Path, venv: Path, index: tuple[str, ServerState]
) -> None:
    url, state = index
    _done, report = install(tmp_path, venv, url, "app")
    assert installed(venv, ["app", "lib", "helper", "slow"]) == {
        "app": "1.0",
        "lib": "2.0",
        "helper": "1.0",
        "slow": "1.0",
    }
    gets = wheel_gets(state)
    assert sorted(gets) == sorted(set(gets)), gets  # every wheel fetched once
    assert len(gets) == 4
    spec = report["speculative"]
    assert isinstance(spec, dict)
    # lib and helper were fetched while slow's metadata was still arriving
    assert spec["used"] >= 2 and spec["fetched"] == spec["used"]
    assert spec["wasted_bytes"] == 0 and spec["failed"] == 0


def test_a_wrong_guess_is_counted_and_never_installed(
    tmp_path: Path, venv: Path, index: tuple[str, ServerState]
) -> None:
    url, state = index
    _done, report = install(tmp_path, venv, url, "app", "picky")
    # lib 2.0 was the guess for app's lib>=1; picky's lib<2 leaves lib 1.0
    assert installed(venv, ["lib", "picky"]) == {"lib": "1.0", "picky": "1.0"}
    code = "import lib; print(lib.V)"
    out = subprocess.run([str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True)
    assert out.stdout.strip() == "1"
    spec = report["speculative"]
    assert isinstance(spec, dict)
    assert "/files/lib-2.0-py3-none-any.whl" in wheel_gets(state)
    assert spec["wasted_bytes"] > 0
    assert wheel_gets(state).count("/files/lib-1.0-py3-none-any.whl") == 1


def test_a_failed_guess_does_not_fail_the_install(tmp_path: Path, venv: Path, site: Path) -> None:
    lib = "/files/lib-2.0-py3-none-any.whl"
    with serve(site, trickle={SLOW_METADATA: 0.05}, trickle_bytes=16, flaky={lib: 1}) as (
        url,
        state,
    ):
        _done, report = install(tmp_path, venv, f"{url}/simple/", "app")
    assert installed(venv, ["lib"]) == {"lib": "2.0"}
    # the guess got the 503 and gave up at once; the real fetch asked again
    assert wheel_gets(state).count(lib) == 2
    spec = report["speculative"]
    assert isinstance(spec, dict)
    assert spec["failed"] == 1


def test_a_dry_run_downloads_no_wheel(
    tmp_path: Path, venv: Path, index: tuple[str, ServerState]
) -> None:
    url, state = index
    done, report = install(tmp_path, venv, url, "app", "--dry-run")
    assert "lib" in done.stdout + done.stderr
    assert wheel_gets(state) == []
    assert report["speculative"] is None


def test_speculation_can_be_turned_off(
    tmp_path: Path, venv: Path, index: tuple[str, ServerState]
) -> None:
    url, state = index
    _done, report = install(tmp_path, venv, url, "app", env={"FITWHEEL_NO_SPECULATION": "1"})
    assert report["speculative"] is None
    assert len(wheel_gets(state)) == 4


def test_without_a_cache_folder(tmp_path: Path, venv: Path, index: tuple[str, ServerState]) -> None:
    url, state = index
    _done, report = install(tmp_path, venv, url, "app", "--no-cache-dir")
    assert installed(venv, ["app", "lib"]) == {"app": "1.0", "lib": "2.0"}
    gets = wheel_gets(state)
    assert len(gets) == len(set(gets)) == 4
    assert not (tmp_path / "cache" / "wheels").exists()
    spec = report["speculative"]
    assert isinstance(spec, dict) and spec["failed"] == 0


def test_an_interrupt_stops_the_guesses_before_the_cleanup(
    tmp_path: Path, venv: Path, site: Path
) -> None:
    """Ctrl-C while a guessed wheel is still arriving (and the resolution still waits for
    slow's metadata): the command ends as interrupted, its temporary cache removed whole."""
    lib = "/files/lib-2.0-py3-none-any.whl"
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    with serve(site, trickle={SLOW_METADATA: 0.2, lib: 0.05}, trickle_bytes=64) as (url, state):
        argv = [
            str(INSTALLER),
            "install",
            "app",
            "-i",
            f"{url}/simple/",
            "--python",
            str(venv),
            "--no-variants",
            "--no-cache-dir",
        ]
        got = run_install(argv, tmp, delay=0.0, after=lambda _pid: lib in wheel_gets(state))
    assert got.status == 130, got.stderr
    assert "Traceback" not in got.stderr
    assert leftovers(tmp) == []
    probe = subprocess.run([str(venv / "bin" / "python"), "-c", "import lib"], capture_output=True)
    assert probe.returncode != 0  # nothing was installed


def test_hash_checking_mode_fetches_nothing_early(
    tmp_path: Path, venv: Path, site: Path, index: tuple[str, ServerState]
) -> None:
    """With --hash, wheels are fetched only once the pins' own hashes are known."""
    import hashlib

    lines = []
    for name, version in (("app", "1.0"), ("lib", "2.0"), ("helper", "1.0"), ("slow", "1.0")):
        data = (site / "files" / f"{name}-{version}-py3-none-any.whl").read_bytes()
        lines.append(f"{name}=={version} --hash=sha256:{hashlib.sha256(data).hexdigest()}")
    reqs = tmp_path / "requirements.txt"
    reqs.write_text("\n".join(lines) + "\n")
    url, state = index
    _done, report = install(tmp_path, venv, url, "-r", str(reqs))
    assert report["speculative"] is None
    assert installed(venv, ["lib"]) == {"lib": "2.0"}
    assert len(wheel_gets(state)) == 4
