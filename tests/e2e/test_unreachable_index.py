"""An index that cannot be reached (``--unreachable-index``): by default the run stops naming it
and the way on; with ``warn`` (flag, setting or environment) it is left out with one warning, as
pip does; a project routed to a torch backend index or a variant index stops the run either way.
The unreachable index is a real loopback port with nothing listening."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fitwheel.cli.main import main
from tests.kit import (
    build_simple_index,
    free_port,
    make_venv,
    make_wheel,
    self_signed_cert,
    serve,
)
from tests.torchbackend.machines import machine_profile

Fitwheel = Callable[..., tuple[int, str, str]]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("idx")
    make_wheel(root / "w", "app", "1.0", requires=["helper"], files={"app.py": "V = 1\n"})
    make_wheel(root / "w", "helper", "2.0", files={"helper.py": "V = 2\n"})
    make_wheel(root / "w", "torch", "2.9.0", files={"torch.py": "V = 'index'\n"})
    return build_simple_index(root / "w", root / "site")


@pytest.fixture(scope="module")
def good(site: Path) -> Iterator[str]:
    with serve(site.parent) as (url, _state):
        yield f"{url}/simple/"


@pytest.fixture
def dead() -> str:
    """An index URL on a loopback port where nothing listens (bound, then closed)."""
    return f"http://127.0.0.1:{free_port()}/simple/"


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("venv") / "venv")


@pytest.fixture
def venv(base: Path, tmp_path: Path) -> Path:
    target = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(base), str(target)], check=True)
    return target


@pytest.fixture
def fitwheel(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> Fitwheel:
    """``fitwheel ARGV`` in process, with nothing of the host's pip or fitwheel settings."""
    for key in list(os.environ):
        if key.startswith(("PIP_", "UV_", "FITWHEEL_", "VIRTUAL_ENV")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "site-config"))
    monkeypatch.setenv("FITWHEEL_CACHE_DIR", str(tmp_path / "cache"))

    def run(*argv: str, **env: str) -> tuple[int, str, str]:
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        capsys.readouterr()
        rc = main(list(argv))
        out, err = capsys.readouterr()
        return rc, out, err

    return run


def installed(venv: Path, module: str) -> str | None:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", f"import {module}; print({module}.V)"],
        capture_output=True,
        text=True,
    )
    return done.stdout.strip() if done.returncode == 0 else None


def test_an_unreachable_index_stops_the_run_by_default(
    fitwheel: Fitwheel, good: str, dead: str, venv: Path
) -> None:
    rc, _out, err = fitwheel(
        "install", "app", "-i", good, "--extra-index-url", dead, "--python", str(venv)
    )
    assert rc == 1
    assert f"the index {dead} (--extra-index-url) cannot be reached" in err
    assert "--unreachable-index warn" in err and "unreachable-index warn" in err
    assert "Traceback" not in err
    assert installed(venv, "app") is None


def test_warn_goes_on_without_it_with_one_warning(
    fitwheel: Fitwheel, good: str, dead: str, venv: Path, tmp_path: Path
) -> None:
    report = tmp_path / "report.json"
    rc, out, err = fitwheel(
        "install", "app", "-i", good, "--extra-index-url", dead, "--python", str(venv),
        "--unreachable-index", "warn", "--report", str(report), "--explain",
    )  # fmt: skip
    assert rc == 0, err
    assert installed(venv, "app") == "1" and installed(venv, "helper") == "2"
    warnings = [line for line in err.splitlines() if dead in line]
    # two projects were looked for: the index is left out once, said once
    assert len(warnings) == 1, err
    assert "cannot be reached" in warnings[0] and "--unreachable-index warn" in warnings[0]
    assert "refused" in warnings[0].lower()
    data = json.loads(report.read_text())
    assert [entry["url"] for entry in data["unreachable_indexes"]] == [dead]
    assert "refused" in data["unreachable_indexes"][0]["error"].lower()
    assert "left out, it could not be reached" in out


def test_an_http_error_is_an_answer_not_unreachable(
    fitwheel: Fitwheel, good: str, site: Path, venv: Path
) -> None:
    with serve(site.parent, credentials=("ci", "secret")) as (locked, _state):
        rc, _out, err = fitwheel(
            "install", "app", "-i", good, "--extra-index-url", f"{locked}/simple/",
            "--python", str(venv), "--unreachable-index", "warn",
        )  # fmt: skip
    assert rc == 1 and "401" in err
    assert installed(venv, "app") is None


def test_the_setting_and_the_environment(
    fitwheel: Fitwheel, good: str, dead: str, venv: Path
) -> None:
    args = ("install", "app", "-i", good, "--extra-index-url", dead, "--python", str(venv))
    rc, _out, err = fitwheel(*args, FITWHEEL_UNREACHABLE_INDEX="warn")
    assert rc == 0, err
    assert installed(venv, "app") == "1"
    # the flag wins over the environment
    rc, _out, err = fitwheel(*args, "--unreachable-index", "error", "--force-reinstall")
    assert rc == 1 and "cannot be reached" in err
    os.environ.pop("FITWHEEL_UNREACHABLE_INDEX")

    assert fitwheel("config", "set", "unreachable-index", "warn")[0] == 0
    rc, out, _err = fitwheel("config", "get", "unreachable-index")
    assert rc == 0 and out.strip() == "warn"
    rc, _out, err = fitwheel(*args, "--force-reinstall")
    assert rc == 0, err
    assert any(dead in line for line in err.splitlines())
    rc, _out, err = fitwheel("config", "set", "unreachable-index", "maybe")
    assert rc != 0 and "unreachable-index must be one of error, warn" in err


def test_a_routed_torch_index_stops_the_run_even_with_warn(
    fitwheel: Fitwheel, good: str, dead: str, venv: Path
) -> None:
    """torch is on the reachable index too: warn must not hand it over to that index."""
    root = dead.removesuffix("simple/")
    rc, _out, err = fitwheel(
        "install", "torch", "-i", good, "--python", str(venv), "--unreachable-index", "warn",
        "--torch-backend", "cpu", "--torch-index-url", root,
    )  # fmt: skip
    assert rc == 1
    assert "torch backend index" in err and "cannot be reached" in err
    assert installed(venv, "torch") is None


def test_a_variant_index_stops_the_run_even_with_warn(
    fitwheel: Fitwheel, good: str, dead: str, venv: Path
) -> None:
    rc, _out, err = fitwheel(
        "install", "app", "-i", good, "--python", str(venv), "--unreachable-index", "warn",
        "--variant-index-url", dead,
    )  # fmt: skip
    assert rc == 1
    assert f"the variant index {dead} cannot be reached" in err
    assert installed(venv, "app") is None


def test_download_and_lock_follow_the_option(
    fitwheel: Fitwheel, good: str, dead: str, tmp_path: Path
) -> None:
    dest = tmp_path / "wheels"
    args = ("download", "app", "-d", str(dest), "-i", good, "--extra-index-url", dead)
    rc, _out, err = fitwheel(*args)
    assert rc == 1 and f"the index {dead} (--extra-index-url) cannot be reached" in err
    report = tmp_path / "download.json"
    rc, _out, err = fitwheel(*args, "--unreachable-index", "warn", "--report", str(report))
    assert rc == 0, err
    skipped = json.loads(report.read_text())["unreachable_indexes"]
    assert [entry["url"] for entry in skipped] == [dead]
    assert sorted(p.name for p in dest.iterdir()) == [
        "app-1.0-py3-none-any.whl",
        "helper-2.0-py3-none-any.whl",
    ]
    assert sum(dead in line for line in err.splitlines()) == 1, err
    lock, profile = tmp_path / "pylock.toml", tmp_path / "server.json"
    profile.write_text(machine_profile("nogpu-server").dumps())
    args = ("lock", "app", "-i", good, "--extra-index-url", dead, "-o", str(lock))
    rc, _out, err = fitwheel(*args, "--profile", str(profile))
    assert rc == 1 and "--unreachable-index warn" in err
    report = tmp_path / "lock.json"
    rc, out, err = fitwheel(
        *args, "--profile", str(profile), "--unreachable-index", "warn",
        "--report", str(report), "--explain",
    )  # fmt: skip
    assert rc == 0, err
    assert "helper" in lock.read_text()
    assert sum(dead in line for line in err.splitlines()) == 1, err
    skipped = json.loads(report.read_text())["unreachable_indexes"]
    assert [entry["url"] for entry in skipped] == [dead]
    assert f"index left out, it could not be reached: {dead}" in out


def test_a_tls_failure_is_unreachable_too(
    fitwheel: Fitwheel, good: str, site: Path, venv: Path, tmp_path: Path
) -> None:
    """An index whose certificate is not trusted gives no answer fitwheel may read."""
    tls = self_signed_cert(tmp_path / "tls")
    with serve(site.parent, tls=tls) as (untrusted, _state):
        extra = f"{untrusted}/simple/"
        args = ("install", "app", "-i", good, "--extra-index-url", extra, "--python", str(venv))
        rc, _out, err = fitwheel(*args)
        assert rc == 1 and f"the index {extra} (--extra-index-url) cannot be reached" in err
        rc, _out, err = fitwheel(*args, "--unreachable-index", "warn")
    assert rc == 0, err
    assert installed(venv, "app") == "1"
    (line,) = [line for line in err.splitlines() if extra in line]
    assert "certificate" in line.lower()


def test_a_torch_backend_index_of_the_users_own_is_never_left_out(
    fitwheel: Fitwheel, good: str, venv: Path
) -> None:
    """A per-backend index named with --extra-index-url (no --torch-backend): leaving it out
    would hand torch to another index, in another build."""
    backend = f"http://127.0.0.1:{free_port()}/whl/cu128/"
    rc, _out, err = fitwheel(
        "install", "app", "-i", good, "--extra-index-url", backend, "--python", str(venv),
        "--unreachable-index", "warn",
    )  # fmt: skip
    assert rc == 1
    assert f"the index {backend} (--extra-index-url) cannot be reached" in err
    assert "torch backend index, which --unreachable-index warn never leaves out" in err
    assert installed(venv, "app") is None


def test_an_unreachable_find_links_page_follows_the_same_rule(
    fitwheel: Fitwheel, good: str, dead: str, venv: Path
) -> None:
    page = dead.replace("/simple/", "/wheels/releases.html")
    rc, _out, err = fitwheel("install", "app", "-i", good, "-f", page, "--python", str(venv))
    assert rc == 1
    assert f"the find-links page {page} (find-links) cannot be reached" in err
    assert "--unreachable-index warn" in err and "Traceback" not in err
    assert installed(venv, "app") is None
    # pip warns and goes on without the page; so does fitwheel with warn
    rc, _out, err = fitwheel(
        "install", "app", "-i", good, "-f", page, "--python", str(venv),
        "--unreachable-index", "warn",
    )  # fmt: skip
    assert rc == 0, err
    assert installed(venv, "app") == "1"
    warnings = [line for line in err.splitlines() if page in line]
    assert len(warnings) == 1 and "the find-links page" in warnings[0], err
