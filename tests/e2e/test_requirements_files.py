"""Index options in requirements files, end to end, as pip takes them: a file's
``--extra-index-url`` adds an index, its ``-i`` replaces every index named before it (the
command line's too), ``-f`` (relative to the file), ``--no-index``, ``--pre``,
``--require-hashes`` and ``--only-binary`` apply, and ``-r URL`` is read from the server.

Three real index servers on 127.0.0.1 (``main``, ``extra``, ``other``) each publish another
version of ``alpha``; pip (the test environment's, hermetic: no configuration) makes the same
choice from the same file. ``lock`` takes the same options; ``uninstall -r`` takes the names and
leaves the options aside."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit import build_simple_index, clean_env, make_venv, make_wheel, serve
from tests.kit.env import pip_choice as pip_report_choice
from tests.kit.sdists import make_sdist

FITWHEEL = [sys.executable, "-m", "fitwheel"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``main``: alpha 1.0, gamma 1.0 and 2.0rc1, sdist-only (a source distribution only);
    ``extra``: alpha 2.0 (a PyTorch-style extra index); ``other``: alpha 3.0; a local
    ``wheels`` folder with alpha 4.0."""
    root = tmp_path_factory.mktemp("reqfiles")
    make_wheel(root / "main", "alpha", "1.0")
    make_wheel(root / "main", "gamma", "1.0")
    make_wheel(root / "main", "gamma", "2.0rc1")
    for version in ("1.0", "1.1"):
        make_wheel(root / "main", "epsilon", version, extras={"x": ["zeta"]})
    make_wheel(root / "main", "zeta", "1.0")
    make_sdist(root / "main", "sdist-only", "1.0")
    make_wheel(root / "extra", "alpha", "2.0")
    make_wheel(root / "other", "alpha", "3.0")
    make_wheel(root / "project" / "wheels", "alpha", "4.0")
    for name in ("main", "extra", "other"):
        build_simple_index(root / name, root / f"{name}-site")
    env = clean_env(HOME=str(root), PIP_NO_INPUT="1", FITWHEEL_DETECT_TIMEOUT="1")
    with (
        serve(root / "main-site") as (main, _state),
        serve(root / "extra-site") as (extra, _),
        serve(root / "other-site") as (other, _),
    ):
        yield {
            "root": root,
            "env": env,
            "main": f"{main}/simple/",
            "extra": f"{extra}/simple/",
            "other": f"{other}/simple/",
            "main_root": root / "main-site",
            "main_url": main,
            "venv": make_venv(root / "venv"),
        }


def write(setup: dict[str, Any], name: str, text: str) -> Path:
    path = setup["root"] / "project" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def pip_choice(setup: dict[str, Any], *args: str) -> dict[str, str]:
    return pip_report_choice(setup["root"], setup["env"], *args)


def run(setup: dict[str, Any], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FITWHEEL, "install", "--dry-run", "--no-variants", "--python", str(setup["venv"]),
         "--cache-dir", str(setup["root"] / "cache"), *args],
        capture_output=True, text=True, env=setup["env"], timeout=300,
    )  # fmt: skip


def ours(setup: dict[str, Any], *args: str) -> tuple[dict[str, str], Any, str]:
    report = setup["root"] / "fitwheel-report.json"
    done = run(setup, "--report", str(report), *args)
    assert done.returncode == 0, done.stderr
    data = json.loads(report.read_text())
    return {e["name"]: e["version"] for e in data["install"]}, data, done.stderr


def test_an_extra_index_at_the_top_of_a_file_is_used(setup: dict[str, Any]) -> None:
    req = write(setup, "torch.txt", f"--extra-index-url {setup['extra']}\nalpha\n")
    args = ("-i", setup["main"], "-r", str(req))
    chosen, report, stderr = ours(setup, *args)
    assert chosen == pip_choice(setup, *args) == {"alpha": "2.0"}
    assert "warning" not in stderr
    # the report names the file and line each index came from
    assert report["index_origins"] == [
        {"url": setup["extra"], "origin": f"{req}:1"},
        {"url": setup["main"], "origin": "--index-url"},
    ]
    done = run(setup, "--explain", *args)
    assert done.returncode == 0, done.stderr
    assert f"1. {setup['extra']} ({req}:1)" in done.stdout


def test_a_files_index_url_replaces_the_command_lines_indexes(setup: dict[str, Any]) -> None:
    req = write(setup, "other.txt", f"# the other index\n-i {setup['other']}\nalpha\n")
    args = ("-i", setup["main"], "--extra-index-url", setup["extra"], "-r", str(req))
    chosen, report, _stderr = ours(setup, *args)
    assert chosen == pip_choice(setup, *args) == {"alpha": "3.0"}
    assert report["index_origins"] == [{"url": setup["other"], "origin": f"{req}:2"}]


def test_find_links_relative_to_the_file_and_no_index(setup: dict[str, Any]) -> None:
    req = write(setup, "offline.txt", "--no-index\n-f wheels\nalpha\n")
    args = ("-i", setup["main"], "-r", str(req))
    chosen, report, _stderr = ours(setup, *args)
    assert chosen == pip_choice(setup, *args) == {"alpha": "4.0"}
    assert report["indexes"] == []
    assert report["find_links"] == [str(req.parent / "wheels")]
    # a find-links place adds to the indexes
    req = write(setup, "links.txt", "-f wheels\nalpha\n")
    args = ("-i", setup["main"], "-r", str(req))
    assert ours(setup, *args)[0] == pip_choice(setup, *args) == {"alpha": "4.0"}


def test_pre_in_a_file(setup: dict[str, Any]) -> None:
    req = write(setup, "pre.txt", "--pre\ngamma\n")
    args = ("-i", setup["main"], "-r", str(req))
    assert ours(setup, *args)[0] == pip_choice(setup, *args) == {"gamma": "2.0rc1"}
    assert ours(setup, "-i", setup["main"], "gamma")[0] == {"gamma": "1.0"}


def test_require_hashes_in_a_file(setup: dict[str, Any]) -> None:
    req = write(setup, "hashes.txt", "--require-hashes\nalpha==1.0\n")
    done = run(setup, "-i", setup["main"], "-r", str(req))
    assert done.returncode != 0
    assert "--require-hashes is on, but alpha 1.0 has no --hash" in done.stderr


def test_one_hash_is_hash_checking_mode_and_an_extra_keeps_the_pin(setup: dict[str, Any]) -> None:
    """As in pip: one ``--hash`` makes every requirement (dependencies too) need one, and a
    pinned project with an extra keeps its ``==`` pin (not the newer release)."""
    import hashlib

    def digest(name: str, version: str) -> str:
        wheel = setup["root"] / "main" / f"{name}-{version}-py3-none-any.whl"
        return hashlib.sha256(wheel.read_bytes()).hexdigest()

    pinned = f"epsilon[x]==1.0 --hash=sha256:{digest('epsilon', '1.0')}\n"
    half = write(setup, "half-hashed.txt", pinned)
    args = ("-i", setup["main"], "-r", str(half))
    done = run(setup, *args)
    assert done.returncode == 1
    assert "--require-hashes is on, but zeta 1.0 has no --hash" in done.stderr
    pip = subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--dry-run", "--ignore-installed", *args],
        capture_output=True, text=True, env=setup["env"], timeout=300,
    )  # fmt: skip
    assert pip.returncode != 0 and "--require-hashes mode" in pip.stderr
    whole = write(
        setup, "hashed.txt", pinned + f"zeta==1.0 --hash=sha256:{digest('zeta', '1.0')}\n"
    )
    args = ("-i", setup["main"], "-r", str(whole))
    assert ours(setup, *args)[0] == pip_choice(setup, *args) == {"epsilon": "1.0", "zeta": "1.0"}


def test_only_binary_in_a_file_refuses_a_source_distribution(setup: dict[str, Any]) -> None:
    req = write(setup, "binary.txt", "--only-binary :all:\nsdist-only\n")
    done = run(setup, "-i", setup["main"], "-r", str(req))
    assert done.returncode != 0
    assert "builds refused by --only-binary" in done.stderr
    # a later --no-binary for the project undoes it, as pip reads them in order
    req = write(setup, "binary.txt", "--only-binary :all:\n--no-binary sdist-only\nsdist-only\n")
    done = run(setup, "-i", setup["main"], "-r", str(req))
    assert "builds refused by --only-binary" not in done.stderr


def test_a_requirements_file_from_a_url(setup: dict[str, Any]) -> None:
    (setup["main_root"] / "reqs.txt").write_text(
        f"--extra-index-url {setup['extra']}\n-r more.txt\n"
    )
    (setup["main_root"] / "more.txt").write_text("alpha\ngamma\n")
    url = f"{setup['main_url']}/reqs.txt"
    args = ("-i", setup["main"], "-r", url)
    chosen, report, _stderr = ours(setup, *args)
    assert chosen == pip_choice(setup, *args) == {"alpha": "2.0", "gamma": "1.0"}
    assert report["index_origins"][0] == {"url": setup["extra"], "origin": f"{url}:1"}
    done = run(setup, "-i", setup["main"], "-r", f"{setup['main_url']}/missing.txt")
    assert done.returncode != 0
    assert f"cannot read the requirements file {setup['main_url']}/missing.txt" in done.stderr


def test_pip_options_without_a_counterpart_are_warnings(setup: dict[str, Any]) -> None:
    req = write(setup, "prefer.txt", "--prefer-binary\nalpha\n")
    chosen, _report, stderr = ours(setup, "-i", setup["main"], "-r", str(req))
    assert chosen == {"alpha": "1.0"}
    assert f"warning: {req}:1: --prefer-binary: fitwheel has no such option" in stderr


def test_lock_takes_the_files_extra_index(setup: dict[str, Any]) -> None:
    import tomllib

    req = write(setup, "lock.txt", f"--extra-index-url {setup['extra']}\nalpha\n")
    box = write(setup, "box.json", '{"properties": {}}')
    out = setup["root"] / "project" / "pylock.toml"
    done = subprocess.run(
        [*FITWHEEL, "lock", "-r", str(req), "-i", setup["main"], "--profile", str(box),
         "-o", str(out), "--cache-dir", str(setup["root"] / "cache")],
        capture_output=True, text=True, env=setup["env"], timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    (package,) = tomllib.loads(out.read_text())["packages"]
    assert (package["name"], package["version"]) == ("alpha", "2.0")
    assert package["index"] == setup["extra"]


def test_uninstall_takes_the_names_and_leaves_the_index_lines(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    venv = make_venv(tmp_path / "venv")
    done = subprocess.run(
        [*FITWHEEL, "install", "--no-variants", "--python", str(venv), "-i", setup["main"],
         "alpha", "gamma", "--cache-dir", str(setup["root"] / "cache")],
        capture_output=True, text=True, env=setup["env"], timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    req = write(
        setup,
        "remove.txt",
        f"-i {setup['other']}\n--extra-index-url {setup['extra']}\n--pre\nalpha==1.0\n",
    )
    done = subprocess.run(
        [*FITWHEEL, "uninstall", "-y", "--python", str(venv), "-r", str(req)],
        capture_output=True, text=True, env=setup["env"], timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "Successfully uninstalled alpha-1.0" in done.stdout
    site = next((venv / "lib").glob("python*/site-packages"))
    assert not list(site.glob("alpha-*.dist-info")) and list(site.glob("gamma-*.dist-info"))


def test_a_requirements_url_with_credentials_shows_none(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    (tmp_path / "reqs.txt").write_text(f"--extra-index-url {setup['extra']}\nalpha\n")
    with serve(tmp_path, credentials=("reader", "s3cret")) as (base, state):
        host = base.removeprefix("http://")
        done = run(setup, "-i", setup["main"], "-r", f"http://reader:s3cret@{host}/reqs.txt",
                   "--report", "-")  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "s3cret" not in done.stdout + done.stderr
    report = json.loads(done.stdout[done.stdout.index("{") :])
    assert report["index_origins"][0] == {"url": setup["extra"], "origin": f"{base}/reqs.txt:1"}
    assert [e["version"] for e in report["install"]] == ["2.0"]
    assert any(path == "/reqs.txt" for _method, path, _headers in state.requests)
