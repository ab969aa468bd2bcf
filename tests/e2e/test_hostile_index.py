"""``fitwheel install`` against hostile indexes and wheels: a server that never answers, trickles,
asks for an hour's wait, sends a gzip bomb or pages of the wrong shape; an index whose PEP 658
metadata or variants file is not the wheel's; wheels with METADATA nothing can read; a disk
that refuses the download. Every one ends with exit 1, one ``fitwheel: error:`` paragraph
naming the URL or file and the problem, the environment as it was, in bounded time and memory
(the time limits come from ``--timeout``/``--retries``, kept small here)."""

from __future__ import annotations

import hashlib
import json
import resource
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.kit import (
    build_simple_index,
    clean_env,
    gzip_bomb,
    make_wheel,
    rewrite_wheel,
    serve,
    sha256_of,
    snapshot,
    variant_info_json,
)

FITWHEEL = [sys.executable, "-m", "fitwheel"]
WHEEL = "/files/demo-1.0-py3-none-any.whl"


def site_of(tmp_path: Path, *wheels: Path) -> Path:
    folder = tmp_path / "wheels"
    if not wheels:
        make_wheel(folder, "demo", "1.0")
    build_simple_index(folder, tmp_path / "site")
    return tmp_path / "site"


def install(
    tmp_path: Path, venv: Path, *args: str, preexec: Any = None, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = clean_env(
        FITWHEEL_CACHE_DIR=str(tmp_path / "cache"), FITWHEEL_DETECT_TIMEOUT="1", **extra
    )
    return subprocess.run(
        [*FITWHEEL, "install", *args, "--python", str(venv)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=preexec,
    )


def user_files(venv: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


def refused(done: subprocess.CompletedProcess[str], *named: str) -> str:
    """The one error paragraph of a failed run, which names each of ``named``."""
    assert done.returncode == 1, done.stderr
    err = done.stderr
    assert err.count("fitwheel: error:") == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    for text in named:
        assert text in err, err
    return err


def asked(state: Any, path: str) -> int:
    return sum(1 for r in state.requests if r[1] == path)


@pytest.mark.parametrize("path", ["/simple/demo/", f"{WHEEL}.metadata"])
def test_an_index_that_never_answers_fails_after_exactly_the_attempts(
    tmp_path: Path, venv: Path, path: str
) -> None:
    """Asked for by the prefetching threads and by the resolver, a page that never comes is
    still requested only as many times as --retries allows, and reported once."""
    site = site_of(tmp_path)
    before = user_files(venv)
    with serve(site, stall={path}) as (url, state):
        done = install(
            tmp_path, venv, "demo", "--index-url", f"{url}/simple/", "--no-variants",
            "--timeout", "1", "--retries", "1",
        )  # fmt: skip
        assert asked(state, path) == 2
    refused(done, f"{url}{path}", "timed out", "no answer within 1 s", "tried 2 times")
    assert "could not reach" not in done.stderr
    assert user_files(venv) == before


def test_a_trickled_wheel_times_out_naming_its_url(tmp_path: Path, venv: Path) -> None:
    site = site_of(tmp_path)
    before = user_files(venv)
    with serve(site, trickle={WHEEL: 2.0}) as (url, state):
        # no speculative fetch: its one attempt (which never retries) would come on top
        done = install(
            tmp_path, venv, "demo", "--index-url", f"{url}/simple/", "--no-variants",
            "--timeout", "1", "--retries", "1", FITWHEEL_NO_SPECULATION="1",
        )  # fmt: skip
        assert asked(state, WHEEL) == 2
    refused(done, f"{url}{WHEEL}", "timed out", "stalled")
    assert user_files(venv) == before


def test_an_hour_of_retry_after_fails_at_once_naming_the_wait(tmp_path: Path, venv: Path) -> None:
    site = site_of(tmp_path)
    with serve(site, retry_after={"/simple/demo/": "3600"}) as (url, state):
        done = install(tmp_path, venv, "demo", "--index-url", f"{url}/simple/", "--no-variants")
        assert asked(state, "/simple/demo/") == 1
    refused(done, f"{url}/simple/demo/", "HTTP 503", "3600 s")


def test_a_gzip_bomb_page_is_refused_in_bounded_memory(tmp_path: Path, venv: Path) -> None:
    site = site_of(tmp_path)
    bomb = gzip_bomb(1 << 30)
    for page in (site / "simple" / "demo").iterdir():
        page.write_bytes(bomb)
    # the peak memory of the fitwheel process alone: a fresh parent that runs only it
    measure = (
        "import resource, subprocess, sys\n"
        "done = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
        "sys.stderr.write(done.stderr)\n"
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
        "sys.exit(done.returncode)\n"
    )
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    with serve(site, content_encoding={"/simple/demo/": "gzip"}) as (url, _state):
        done = subprocess.run(
            [sys.executable, "-c", measure, *FITWHEEL, "install", "demo", "--python", str(venv),
             "--index-url", f"{url}/simple/", "--no-variants"],
            capture_output=True, text=True, env=env, timeout=120,
        )  # fmt: skip
    peak_kib = int(done.stdout.split()[-1])
    assert peak_kib < 500 * 1024, f"fitwheel used {peak_kib // 1024} MiB"
    refused(done, f"{url}/simple/demo/", "gzip", "limit")


def test_a_gzip_encoded_wheel_is_hashed_as_sent(tmp_path: Path, venv: Path) -> None:
    site = site_of(tmp_path)
    (wheel,) = (site / "files").glob("*.whl")
    wheel.write_bytes(__import__("gzip").compress(wheel.read_bytes()))
    before = user_files(venv)
    with serve(site, content_encoding={WHEEL: "gzip"}) as (url, _state):
        done = install(tmp_path, venv, "demo", "--index-url", f"{url}/simple/", "--no-variants")
    refused(done, "demo-1.0-py3-none-any.whl", hashlib.sha256(wheel.read_bytes()).hexdigest())
    assert user_files(venv) == before


@pytest.mark.parametrize(
    ("page", "named"),
    [
        ({"hashes": ["sha256", "0" * 64]}, "'hashes' must be an object"),
        ({"yanked": {"why": 1}}, "'yanked' must be a boolean or a reason"),
        (None, "nested too deeply"),
    ],
)
def test_a_page_of_the_wrong_shape_is_an_error_naming_the_page(
    tmp_path: Path, venv: Path, page: dict[str, Any] | None, named: str
) -> None:
    site = site_of(tmp_path)
    path = site / "simple" / "demo" / "index.json"
    if page is None:
        path.write_text('{"files": ' + "[" * 200_000 + "]" * 200_000 + "}")
    else:
        data = json.loads(path.read_text())
        data["files"][0].update(page)
        path.write_text(json.dumps(data))
    with serve(site) as (url, _state):
        done = install(tmp_path, venv, "demo", "--index-url", f"{url}/simple/", "--no-variants")
    err = refused(done, f"{url}/simple/demo/", named)
    if page is not None:
        assert "'demo-1.0-py3-none-any.whl'" in err


def _lying_index(tmp_path: Path, **wheel_options: Any) -> Path:
    """An index built from an honest demo 1.0 whose wheel is then replaced by one that says
    something else (its hash republished): the .metadata file still describes the honest one."""
    honest = make_wheel(tmp_path / "wheels", "demo", "1.0")
    site = site_of(tmp_path, honest)
    served = site / "files" / honest.name
    old = sha256_of(served)
    lying = make_wheel(tmp_path / "lying", "demo", "1.0", **wheel_options)
    served.write_bytes(lying.read_bytes())
    for page in (site / "simple" / "demo").iterdir():
        page.write_text(page.read_text().replace(old, sha256_of(served)))
    return site


def test_pep658_metadata_that_is_not_the_wheels_is_refused(tmp_path: Path, venv: Path) -> None:
    site = _lying_index(tmp_path, requires=["bar-missing"])
    rewrite_wheel(
        site / "files" / "demo-1.0-py3-none-any.whl",
        {"METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 6.6.6\n"
         b"Requires-Dist: bar-missing\n\n"},
    )  # fmt: skip
    for page in (site / "simple" / "demo").iterdir():
        text = page.read_text()
        data = json.loads(text) if page.suffix == ".json" else None
        digest = sha256_of(site / "files" / "demo-1.0-py3-none-any.whl")
        if data is not None:
            data["files"][0]["hashes"]["sha256"] = digest
            page.write_text(json.dumps(data))
        else:
            start = text.index("#sha256=") + len("#sha256=")
            page.write_text(text[:start] + digest + text[start + 64 :])
    before = user_files(venv)
    with serve(site) as (url, _state):
        done = install(tmp_path, venv, "demo", "--index-url", f"{url}/simple/", "--no-variants")
    refused(
        done,
        "demo-1.0-py3-none-any.whl",
        f"{url}{WHEEL}.metadata",
        "Version '1.0' (resolver) but '6.6.6' (wheel)",
        "the wheel also requires bar-missing",
    )
    assert user_files(venv) == before


def test_pep658_metadata_without_a_dependency_is_refused(tmp_path: Path, venv: Path) -> None:
    site = _lying_index(tmp_path, requires=["bar-missing"])
    before = user_files(venv)
    with serve(site) as (url, _state):
        done = install(tmp_path, venv, "demo", "--index-url", f"{url}/simple/", "--no-variants")
    refused(done, f"{url}{WHEEL}.metadata", "Requires-Dist", "bar-missing")
    assert user_files(venv) == before


def test_a_wheel_whose_variant_json_is_not_the_indexs_is_refused(
    tmp_path: Path, venv: Path
) -> None:
    nvidia = {"nvidia": {"cuda_version_lower_bound": ["13.0"]}}
    amd = {"amd": {"gfx_arch": ["gfx942"]}}
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "demo", "1.0", label="cuda13.0", variant=amd)
    (wheels / "demo-1.0-variants.json").write_text(
        json.dumps(variant_info_json({"cuda13.0": nvidia}))
    )
    site = site_of(tmp_path, wheels)
    before = user_files(venv)
    with serve(site) as (url, _state):
        done = install(
            tmp_path, venv, "demo", "--index-url", f"{url}/simple/", "--variant", "demo=cuda13.0"
        )
    refused(
        done,
        "demo-1.0-py3-none-any-cuda13.0.whl",
        "amd :: gfx_arch :: gfx942",
        "nvidia :: cuda_version_lower_bound :: 13.0",
        "demo-1.0-variants.json",
    )
    assert user_files(venv) == before


@pytest.mark.parametrize(
    ("metadata", "named"),
    [
        (b"Metadata-Version: 2.1\nName: demo\nVersion: not a version!\n\n", "'not a version!'"),
        (b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nSummary: caf\xe9\n\n", "not UTF-8"),
    ],
)
def test_a_wheel_with_unreadable_metadata_is_refused(
    tmp_path: Path, venv: Path, metadata: bytes, named: str
) -> None:
    wheel = rewrite_wheel(make_wheel(tmp_path / "w", "demo", "1.0"), {"METADATA": metadata})
    before = user_files(venv)
    done = install(tmp_path, venv, str(wheel), "--no-index", "--no-variants")
    refused(done, "demo-1.0-py3-none-any.whl", named)
    assert user_files(venv) == before


def _small_files() -> None:
    # files over 256 KiB cannot be written (EFBIG), as on a nearly full disk
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, 256 << 10))


def test_a_write_error_while_downloading_names_the_file_not_the_network(
    tmp_path: Path, venv: Path
) -> None:
    import os

    wheels = tmp_path / "wheels"
    make_wheel(wheels, "demo", "1.0", files={"demo/blob.bin": os.urandom(1 << 20)})
    site = site_of(tmp_path, wheels)
    before = user_files(venv)
    with serve(site) as (url, _state):
        done = install(
            tmp_path, venv, "demo", "--index-url", f"{url}/simple/", "--no-variants",
            preexec=_small_files,
        )  # fmt: skip
    err = refused(done, "cannot write", str(tmp_path / "cache"), ".part", f"{url}{WHEEL}")
    assert "File too large" in err and "could not reach" not in err
    assert user_files(venv) == before
