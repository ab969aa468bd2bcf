"""``fitwheel install`` against index servers that need credentials, yank files or use find-links
pages, in real virtual environments."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit import build_simple_index, clean_env, make_venv, make_wheel, serve

FITWHEEL = [sys.executable, "-m", "fitwheel", "install"]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("idx")
    make_wheel(root / "w", "yank", "1.0", files={"yank.py": "V = 1\n"})
    make_wheel(root / "w", "yank", "2.0", files={"yank.py": "V = 2\n"})
    build_simple_index(root / "w", root / "site", yanked={"yank-2.0-py3-none-any.whl": "broken"})
    return root / "site"


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    return make_venv(tmp_path / "venv")


def run(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    return subprocess.run(
        [*FITWHEEL, *args, "--no-variants"], capture_output=True, text=True, env=env, timeout=300
    )


def version_in(venv: Path) -> str:
    return subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import yank; print(yank.V)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_yanked_release_only_when_pinned_and_with_a_warning(
    tmp_path: Path, site: Path, venv: Path
) -> None:
    with serve(site) as (url, _):
        plain = run(tmp_path, "yank", "-i", f"{url}/simple/", "--python", str(venv))
        assert plain.returncode == 0, plain.stderr
        assert version_in(venv) == "1" and "yanked" not in plain.stderr
        pinned = run(tmp_path, "yank==2.0", "-i", f"{url}/simple/", "--python", str(venv))
        assert pinned.returncode == 0, pinned.stderr
        assert version_in(venv) == "2"
        assert "warning: yank 2.0" in pinned.stderr and "broken" in pinned.stderr


def test_credentials_in_the_index_url_never_leak(tmp_path: Path, site: Path, venv: Path) -> None:
    with serve(site, credentials=("ci", "t0ken")) as (url, _):
        secret_url = url.replace("http://", "http://ci:t0ken@") + "/simple/"
        report = tmp_path / "report.json"
        done = run(
            tmp_path, "yank", "-i", secret_url, "--python", str(venv), "--report", str(report)
        )
        assert done.returncode == 0, done.stderr
        assert "t0ken" not in report.read_text()
        assert json.loads(report.read_text())["indexes"] == [f"{url}/simple/"]
        denied = run(tmp_path, "yank", "-i", f"{url}/simple/", "--python", str(venv))
        assert denied.returncode == 1 and "401" in denied.stderr
        wrong = run(
            tmp_path,
            "yank",
            "-i",
            url.replace("http://", "http://ci:nope@") + "/simple/",
            "--python",
            str(venv),
        )
        assert wrong.returncode == 1 and "nope" not in wrong.stderr


def test_pip_configuration_is_honoured(tmp_path: Path, site: Path, venv: Path) -> None:
    with serve(site) as (url, state):
        conf = tmp_path / "pip.conf"
        conf.write_text(f"[global]\nindex-url = {url}/simple/\n")
        # this machine's own pip files must not take part: a home and config dirs of our own
        env = clean_env(
            FITWHEEL_CACHE_DIR=str(tmp_path / "cache"),
            PIP_CONFIG_FILE=str(conf),
            HOME=str(tmp_path),
            XDG_CONFIG_HOME=str(tmp_path / "config"),
            XDG_CONFIG_DIRS=str(tmp_path / "xdg"),
        )
        done = subprocess.run(
            [*FITWHEEL, "yank", "--python", str(venv), "--no-variants"],
            capture_output=True,
            text=True,
            env=env,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert any(path == "/simple/yank/" for _m, path, _h in state.requests)


def test_two_indexes_follow_the_index_strategy(tmp_path: Path, site: Path, venv: Path) -> None:
    other = tmp_path / "other"
    make_wheel(other / "w", "yank", "1.5", files={"yank.py": "V = 15\n"})
    build_simple_index(other / "w", other / "site")
    with serve(site) as (url, _), serve(other / "site") as (url2, _):
        both = ["-i", f"{url}/simple/", "--extra-index-url", f"{url2}/simple/"]
        # default first-index: the extra index (searched first) has yank, so only it counts
        done = run(tmp_path, "yank", *both, "--python", str(venv))
        assert done.returncode == 0, done.stderr
        assert version_in(venv) == "15" and "published on" not in done.stderr
        refused = run(tmp_path, "yank==1.0", *both, "--python", str(venv))
        assert refused.returncode == 1 and "Traceback" not in refused.stderr
        assert version_in(venv) == "15"
        older = run(
            tmp_path,
            "yank==1.0",
            *both,
            "--index-strategy",
            "unsafe-first-match",
            "--python",
            str(venv),
        )
        assert older.returncode == 0, older.stderr
        assert version_in(venv) == "1"
        assert "yank is published on 2 indexes" in older.stderr
        assert f"came from {url}/simple/" in older.stderr
        best = run(
            tmp_path,
            "yank",
            "-U",
            *both,
            "--index-strategy",
            "unsafe-best-match",
            "--python",
            str(venv),
        )
        assert best.returncode == 0, best.stderr
        assert version_in(venv) == "15"  # 1.5 on the extra index beats 1.0 (2.0 is yanked)
        bad = run(tmp_path, "yank", *both, "--index-strategy", "best", "--python", str(venv))
        assert bad.returncode == 2


def test_a_second_install_waits_for_the_first(tmp_path: Path, site: Path, venv: Path) -> None:
    from fitwheel.install.env.lock import environment_lock

    with serve(site) as (url, _):
        env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"))
        with environment_lock(venv):
            proc = subprocess.Popen(
                [*FITWHEEL, "yank", "-i", f"{url}/simple/", "--python", str(venv), "--no-variants"],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
                env=env,
            )
            assert proc.stderr is not None
            assert "waiting for another fitwheel process" in proc.stderr.readline()
            site_packages = next((venv / "lib").glob("python*/site-packages"))
            assert not list(site_packages.glob("yank*"))
        _out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        assert version_in(venv) == "1"
