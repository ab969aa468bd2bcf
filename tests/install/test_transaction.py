import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from fitwheel.errors import FitwheelError
from fitwheel.install.cache.unpacked import UnpackedCache
from fitwheel.install.env.interpreter import TargetEnvironment, inspect_environment
from fitwheel.install.env.lock import environment_lock
from fitwheel.install.env.recovery import state_dir
from fitwheel.install.place.core import InstallError, WheelToInstall, install_wheels
from fitwheel.install.place.transaction import Operation
from tests.kit import make_wheel, snapshot

CHILD = Path(__file__).with_name("child_install.py")


@pytest.fixture
def wheels(tmp_path: Path) -> dict[str, Path]:
    out = tmp_path / "wheels"
    return {
        "alpha1": make_wheel(
            out,
            "alpha",
            "1.0",
            files={"alpha/__init__.py": "V = 1\n", "alpha/old_only.py": "X = 1\n"},
        ),
        "alpha2": make_wheel(
            out,
            "alpha",
            "2.0",
            files={"alpha/__init__.py": "V = 2\n"},
            entry_points={"alpha-cli": "alpha:main"},
        ),
        "beta": make_wheel(
            out,
            "beta",
            "1.0",
            files={"beta.py": "def main():\n    print('beta!')\n"},
            entry_points={"beta-run": "beta:main"},
            data_files={
                "scripts/beta-sh": "#!python\nprint('sh')\n",
                "data/share/beta/info.txt": "hello",
            },
        ),
        "broken": make_wheel(out, "gamma", "1.0", corrupt=True),
        "delta": make_wheel(out, "delta", "1.0"),
    }


def env_of(venv: Path) -> TargetEnvironment:
    return inspect_environment(str(venv), {})


def run_py(venv: Path, code: str) -> str:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()


def user_view(venv: Path) -> dict[str, str]:
    """The environment's files, leaving out fitwheel's own state folder (lock file)."""
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


def test_installs_files_metadata_and_scripts(venv: Path, wheels: dict[str, Path]) -> None:
    env = env_of(venv)
    result = install_wheels(
        env,
        [
            WheelToInstall.from_path(wheels["alpha1"]),
            WheelToInstall.from_path(wheels["beta"], requested=False, direct=True),
        ],
    )
    assert result.removed == []
    assert run_py(venv, "import alpha, beta; print(alpha.V)") == "1"
    site = Path(env.scheme["purelib"])
    alpha_info = site / "alpha-1.0.dist-info"
    assert (alpha_info / "INSTALLER").read_text() == "fitwheel\n"
    assert (alpha_info / "REQUESTED").exists()
    assert not (site / "beta-1.0.dist-info" / "REQUESTED").exists()
    direct = (site / "beta-1.0.dist-info" / "direct_url.json").read_text()
    assert wheels["beta"].resolve().as_uri() in direct
    script = venv / "bin" / "beta-run"
    assert os.access(script, os.X_OK)
    assert subprocess.run([str(script)], capture_output=True, text=True).stdout == "beta!\n"
    assert script.read_text().startswith(f"#!{env.python}")
    assert (venv / "bin" / "beta-sh").read_text().startswith(f"#!{env.python}")
    assert (venv / "share" / "beta" / "info.txt").read_text() == "hello"
    record = (site / "beta-1.0.dist-info" / "RECORD").read_text()
    assert "../../../bin/beta-run,sha256=" in record
    assert not list(state_dir(venv).glob("txn-*"))


def test_peer_tools_read_what_we_installed(venv: Path, wheels: dict[str, Path]) -> None:
    install_wheels(env_of(venv), [WheelToInstall.from_path(wheels["beta"])])
    uv = Path(sys.executable).with_name("uv")
    listed = subprocess.run(
        [str(uv), "pip", "list", "--python", str(venv)],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "UV_NO_CONFIG": "1"},
    ).stdout
    assert "beta" in listed
    subprocess.run(
        [str(uv), "pip", "uninstall", "-q", "--python", str(venv), "beta"],
        check=True,
        env={**os.environ, "UV_NO_CONFIG": "1"},
    )
    assert not (venv / "bin" / "beta-run").exists()
    assert not (venv / "share" / "beta" / "info.txt").exists()


def test_upgrade_removes_the_old_version(venv: Path, wheels: dict[str, Path]) -> None:
    env = env_of(venv)
    install_wheels(env, [WheelToInstall.from_path(wheels["alpha1"])])
    site = Path(env.scheme["purelib"])
    assert (site / "alpha" / "old_only.py").exists()
    result = install_wheels(env, [WheelToInstall.from_path(wheels["alpha2"])])
    assert result.removed == ["alpha 1.0"]
    assert not (site / "alpha" / "old_only.py").exists()
    assert not (site / "alpha-1.0.dist-info").exists()
    assert run_py(venv, "import alpha; print(alpha.V)") == "2"
    assert (venv / "bin" / "alpha-cli").exists()


def test_compile_writes_bytecode_with_final_paths(venv: Path, wheels: dict[str, Path]) -> None:
    env = env_of(venv)
    install_wheels(env, [WheelToInstall.from_path(wheels["alpha1"])], compile_bytecode=True)
    site = Path(env.scheme["purelib"])
    pycs = list((site / "alpha" / "__pycache__").glob("__init__.*.pyc"))
    assert len(pycs) == 1
    code = run_py(venv, "import alpha; print(alpha.__cached__)")
    assert Path(code) == pycs[0]
    assert "__pycache__/__init__" in (site / "alpha-1.0.dist-info" / "RECORD").read_text()
    # an upgrade removes the old byte-code too
    install_wheels(env, [WheelToInstall.from_path(wheels["alpha2"])])
    assert not (site / "alpha" / "__pycache__").exists()


def test_a_bad_wheel_in_the_middle_changes_nothing(venv: Path, wheels: dict[str, Path]) -> None:
    env = env_of(venv)
    install_wheels(env, [WheelToInstall.from_path(wheels["alpha1"])])
    before = user_view(venv)
    with pytest.raises(InstallError, match="Nothing was changed"):
        install_wheels(
            env,
            [
                WheelToInstall.from_path(wheels["alpha2"]),
                WheelToInstall.from_path(wheels["broken"]),
                WheelToInstall.from_path(wheels["beta"]),
            ],
        )
    assert user_view(venv) == before
    assert not list(state_dir(venv).glob("txn-*"))


def _items(paths: list[Path], cached: bool) -> list[WheelToInstall]:
    items = [WheelToInstall.from_path(p) for p in paths]
    if not cached:
        return items
    return [
        WheelToInstall(
            i.path, i.name, i.version, sha256=hashlib.sha256(i.path.read_bytes()).hexdigest()
        )
        for i in items
    ]


PATHS = pytest.mark.parametrize("path", ["general", "cached"])


@PATHS
@pytest.mark.parametrize("fail_at", [0, 3, 7, 11])
def test_failure_during_commit_rolls_back(
    venv: Path, wheels: dict[str, Path], fail_at: int, path: str, tmp_path: Path
) -> None:
    env = env_of(venv)
    install_wheels(env, [WheelToInstall.from_path(wheels["alpha1"])])
    before = user_view(venv)
    seen = []

    def hook(op: Operation) -> None:
        seen.append(op)
        if len(seen) > fail_at:
            raise OSError("disk full")

    cached = path == "cached"
    with pytest.raises(OSError, match="disk full"):
        install_wheels(
            env,
            _items([wheels["alpha2"], wheels["beta"]], cached),
            commit_hook=hook,
            unpacked=UnpackedCache(tmp_path / "unpacked") if cached else None,
            link_mode="hardlink",
        )
    assert user_view(venv) == before
    assert not list(state_dir(venv).glob("txn-*"))


def _child(
    venv: Path, kill_at: int, *wheels: Path, unpacked: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    if unpacked is not None:
        env["FITWHEEL_TEST_UNPACKED"] = str(unpacked)
    return subprocess.run(
        [sys.executable, str(CHILD), str(venv), str(kill_at), *map(str, wheels)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@PATHS
def test_kill_9_at_random_points_leaves_old_or_new_state(
    venv: Path, wheels: dict[str, Path], path: str, tmp_path: Path
) -> None:
    env = env_of(venv)
    install_wheels(env, [WheelToInstall.from_path(wheels["alpha1"])])
    before = user_view(venv)
    new = [wheels["alpha2"], wheels["beta"]]
    unpacked = tmp_path / "unpacked" if path == "cached" else None
    # the full run, to know the end state and how many steps a commit takes
    scratch = venv.parent / "scratch"
    subprocess.run(["cp", "-a", str(venv), str(scratch)], check=True)
    done = _child(scratch, -1, *new, unpacked=unpacked)
    assert done.returncode == 0, done.stderr
    steps = int(done.stdout.split()[-2]) - 1  # the last call comes after 'committed'
    seed = int(os.environ.get("FITWHEEL_TEST_SEED", "817"))
    points = [*sorted(random.Random(seed).sample(range(steps), 4)), 0, steps - 1]
    for kill_at in points:
        killed = _child(venv, kill_at, *new, unpacked=unpacked)
        assert killed.returncode == -9, killed.stderr
        assert list(state_dir(venv).glob("txn-*")), "a killed commit leaves its journal behind"
        # the next fitwheel run on the environment recovers before doing anything else
        install_wheels(env, [])
        assert user_view(venv) == before, f"killed at step {kill_at} of {steps}"
    killed = _child(venv, steps, *new, unpacked=unpacked)  # past the last step: committed
    assert killed.returncode == -9
    install_wheels(env, [])
    assert run_py(venv, "import alpha, beta; print(alpha.V)") == "2"
    assert not (Path(env.scheme["purelib"]) / "alpha-1.0.dist-info").exists()
    assert user_view(venv).keys() == user_view(scratch).keys()


def test_concurrent_installs_are_serialised(venv: Path, wheels: dict[str, Path]) -> None:
    with environment_lock(venv):
        child = subprocess.Popen(
            [sys.executable, str(CHILD), str(venv), "-1", str(wheels["beta"])],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        line = child.stdout.readline()
        assert "waiting for another fitwheel process" in line
        assert not (venv / "bin" / "beta-run").exists()
    _out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert (venv / "bin" / "beta-run").exists()
    # two at once, on different packages: both land, each fully
    procs = [
        subprocess.Popen(
            [sys.executable, str(CHILD), str(venv), "-1", str(w)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in (wheels["alpha2"], wheels["delta"])
    ]
    for proc in procs:
        proc.communicate(timeout=120)
        assert proc.returncode == 0
    assert run_py(venv, "import alpha, delta; print(alpha.V)") == "2"


def test_sigterm_during_commit_rolls_back_at_once(venv: Path, wheels: dict[str, Path]) -> None:
    env = env_of(venv)
    install_wheels(env, [WheelToInstall.from_path(wheels["alpha1"])])
    before = user_view(venv)
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from fitwheel.install.env.interpreter import inspect_environment\n"
        "from fitwheel.install.place.core import WheelToInstall, install_wheels\n"
        "steps = []\n"
        "def hook(op):\n"
        "    steps.append(op)\n"
        "    if len(steps) == 5:\n"
        "        os.kill(os.getpid(), signal.SIGTERM)\n"
        "env = inspect_environment(sys.argv[1], {})\n"
        "install_wheels(env, [WheelToInstall.from_path(Path(p)) for p in sys.argv[2:]], "
        "commit_hook=hook)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(venv), str(wheels["alpha2"]), str(wheels["beta"])],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0 and "KeyboardInterrupt" in done.stderr
    assert user_view(venv) == before
    assert not list(state_dir(venv).glob("txn-*")), "rolled back by the process itself"


def test_a_failure_while_linking_many_files_rolls_back(
    venv: Path, wheels: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno
    import shutil

    from fitwheel.install.place import transaction

    env = env_of(venv)
    install_wheels(env, [WheelToInstall.from_path(wheels["alpha1"])])
    before = user_view(venv)
    many = make_wheel(
        tmp_path / "many",
        "many",
        "1.0",
        files={f"many/sub{i % 7}/m{i}.py": f"X = {i}\n" for i in range(60)},
    )
    monkeypatch.setattr(transaction, "_THREADED_FILES", 2)
    calls = []
    real_link = os.link

    def link(src: str, dst: str) -> None:
        calls.append(dst)
        if len(calls) == 40:
            raise OSError(errno.ENOSPC, "No space left on device", dst)
        real_link(src, dst)

    def copyfile(src: str, dst: str, **_kw: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", dst)

    monkeypatch.setattr(os, "link", link)
    monkeypatch.setattr(shutil, "copyfile", copyfile)
    with pytest.raises(FitwheelError, match="no space left on device"):
        install_wheels(
            env,
            _items([wheels["alpha2"], many], True),
            unpacked=UnpackedCache(tmp_path / "unpacked"),
            link_mode="hardlink",
        )
    assert len(calls) >= 40
    assert user_view(venv) == before
    assert not list(state_dir(venv).glob("txn-*"))
