"""File URLs percent-encoded as PyTorch's index writes them (``torch-2.10.0%2Bcpu-...whl``):
``lock`` keeps each URL as the index gave it and reads its own lock back (byte-identical on
re-lock, ``--check`` clean), ``sync`` fetches that very URL and checks the locked hash,
``export``'s requirements file installs with pip and uv, a bundle syncs offline; a find-links
folder served over HTTP works the same, a literal ``+`` still works, and a URL naming another
file is still refused."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fitwheel.lock.document import LockFileError, loads_lock
from tests.kit import (
    UV,
    ServerState,
    TorchMirror,
    build_simple_index,
    build_torch_mirror,
    make_venv,
    make_wheel,
    offline_env,
    serve,
    serve_static,
    sha256_of,
)
from tests.lock.conftest import MACHINES, _driver_copy, builds, fitwheel, profile_of

#: target -> (its machine, the torch build auto gives it)
TARGETS = {"h100": ("h100-cuda13", "cu130"), "cpu-x86": ("nogpu-server", "cpu")}
TORCH = "2.10.0"


@dataclass
class Mirror:
    mirror: TorchMirror
    url: str
    state: ServerState
    root: Path
    machines: dict[str, Path]
    profiles: dict[str, Path]
    lock: Path

    def args(self, output: Path, *extra: str) -> list[str]:
        args = ["lock", "torch", "-o", str(output), *extra]
        args += ["--index-url", self.mirror.default_index(self.url)]
        args += ["--torch-backend", "auto", "--torch-index-url", self.mirror.torch_index(self.url)]
        args += ["--cache-dir", str(self.root / "cache")]
        for name in TARGETS:
            args += ["--profile", str(self.profiles[name])]
        return args

    def served(self, url: str) -> str:
        """The sha256 of the file the mirror serves at ``url`` (read as a web server reads it)."""
        assert url.startswith(self.url + "/")
        return sha256_of(self.mirror.root / urllib.parse.unquote(url[len(self.url) + 1 :]))


@pytest.fixture(scope="module")
def encoded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Mirror]:
    root = tmp_path_factory.mktemp("encoded")
    mirror = build_torch_mirror(root / "mirror", versions=(TORCH,), variant_versions=())
    machines = {
        "h100": _driver_copy("gpu-h100-open", root / "h100-cuda13", "580.82.07"),
        "cpu-x86": MACHINES / "nogpu-server",
    }
    profiles = {name: profile_of(machines[name], root / f"{name}.json") for name in TARGETS}
    with serve(mirror.root) as (url, state):
        it = Mirror(mirror, url, state, root, machines, profiles, root / "pylock.toml")
        done = fitwheel(*it.args(it.lock))
        assert done.returncode == 0, done.stderr
        yield it


def _torch_wheels(lock: Path) -> dict[str, dict[str, Any]]:
    """target -> the torch wheel entry it installs."""
    data = tomllib.loads(lock.read_text())
    out = {}
    for p in data["packages"]:
        if p["name"] != "torch":
            continue
        for target, filename in p["tool"]["fitwheel"]["targets"].items():
            out[target] = next(w for w in p["wheels"] if w["name"] == filename)
    return out


def test_the_lock_keeps_the_indexs_urls_and_reads_itself_back(
    encoded: Mirror, tmp_path: Path
) -> None:
    wheels = _torch_wheels(encoded.lock)
    assert set(wheels) == set(TARGETS)
    for target, (_machine, backend) in TARGETS.items():
        wheel = wheels[target]
        assert wheel["name"].startswith(f"torch-{TORCH}+{backend}-")
        # the URL exactly as the index wrote it: the + percent-encoded, never rewritten
        assert wheel["url"].endswith("/files/" + wheel["name"].replace("+", "%2B"))
        assert wheel["hashes"]["sha256"] == encoded.served(wheel["url"])
    first = encoded.lock.read_text()
    again = tmp_path / "again.toml"
    done = fitwheel(*encoded.args(again))
    assert done.returncode == 0, done.stderr
    assert again.read_text() == first
    check = fitwheel(*encoded.args(encoded.lock, "--check"))
    assert check.returncode == 0, check.stderr + check.stdout
    assert encoded.lock.read_text() == first


@pytest.mark.parametrize("target", list(TARGETS))
def test_sync_fetches_the_locked_url_and_checks_its_hash(
    encoded: Mirror, target: str, tmp_path: Path
) -> None:
    _machine, backend = TARGETS[target]
    venv = make_venv(tmp_path / "venv")
    report = tmp_path / "report.json"
    seen = len(encoded.state.requests)
    done = fitwheel(
        "sync", str(encoded.lock), "--python", str(venv),
        "--sysroot", str(encoded.machines[target]),
        "--cache-dir", str(tmp_path / "cache"), "--report", str(report),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert builds(venv)["torch"] == backend
    data = json.loads(report.read_text())
    assert data["target"] == target
    torch = next(item for item in data["install"] if item["name"] == "torch")
    assert torch["filename"].startswith(f"torch-{TORCH}+{backend}-")
    assert "%2B" in torch["url"] and torch["sha256"] == encoded.served(torch["url"])
    asked = [path for method, path, _h in encoded.state.requests[seen:] if method == "GET"]
    assert urllib.parse.urlsplit(torch["url"]).path in asked


def test_export_installs_with_pip_and_uv(encoded: Mirror, tmp_path: Path) -> None:
    requirements = tmp_path / "requirements.txt"
    done = fitwheel(
        "export", str(encoded.lock), "--profile", str(encoded.profiles["cpu-x86"]),
        "-o", str(requirements),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    text = requirements.read_text()
    assert f"torch @ {encoded.url}/whl/cpu/files/torch-{TORCH}%2Bcpu-" in text
    via_pip = make_venv(tmp_path / "pip")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(via_pip / "bin" / "python"), "install",
         "-q", "--require-hashes", "--no-deps", "-r", str(requirements)],
        check=True, capture_output=True, env=offline_env(PIP_CONFIG_FILE="/dev/null"),
    )  # fmt: skip
    via_uv = make_venv(tmp_path / "uv")
    subprocess.run(
        [str(UV), "pip", "sync", "--python", str(via_uv / "bin" / "python"),
         "--require-hashes", str(requirements)],
        check=True, capture_output=True, env=offline_env(),
    )  # fmt: skip
    assert builds(via_pip)["torch"] == builds(via_uv)["torch"] == "cpu"


def test_a_bundle_syncs_offline(encoded: Mirror, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    done = fitwheel(
        "bundle", str(encoded.lock), "-o", str(out), "--cache-dir", str(tmp_path / "cache"),
        "--profile", str(encoded.profiles["h100"]), "--profile", str(encoded.profiles["cpu-x86"]),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    bundled = _torch_wheels(out / "pylock.toml")
    for target, (_machine, backend) in TARGETS.items():
        assert (out / bundled[target]["path"]).is_file()
        assert f"%2B{backend}-" in bundled[target]["url"]  # the URLs stay as locked
    for target, (_machine, backend) in TARGETS.items():
        venv = make_venv(tmp_path / f"venv-{target}")
        synced = fitwheel(
            "sync", str(out), "--python", str(venv), "--offline",
            "--sysroot", str(encoded.machines[target]),
            "--cache-dir", str(tmp_path / f"cache-{target}"),
        )  # fmt: skip
        assert synced.returncode == 0, synced.stderr
        assert builds(venv)["torch"] == backend


def _lock_and_sync(folder: Path, tmp_path: Path, *source: str) -> tuple[dict[str, Any], Path]:
    lock = tmp_path / "pylock.toml"
    profile = tmp_path / "box.json"
    profile.write_text('{"properties": {}}')
    done = fitwheel(
        "lock", "localpkg", "-o", str(lock), "--profile", str(profile),
        "--cache-dir", str(tmp_path / "cache"), *source,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    check = fitwheel(
        "lock", "localpkg", "-o", str(lock), "--profile", str(profile), "--check",
        "--cache-dir", str(tmp_path / "cache"), *source,
    )  # fmt: skip
    assert check.returncode == 0, check.stderr + check.stdout
    (wheel,) = tomllib.loads(lock.read_text())["packages"][0]["wheels"]
    venv = make_venv(tmp_path / "venv")
    synced = fitwheel(
        "sync", str(lock), "--python", str(venv), "--profile", str(profile),
        "--cache-dir", str(tmp_path / "cache2"),
    )  # fmt: skip
    assert synced.returncode == 0, synced.stderr
    assert builds(venv)["localpkg"] == "cpu"
    assert wheel["hashes"]["sha256"] == sha256_of(folder / wheel["name"])
    return wheel, lock


def _localpkg(folder: Path) -> Path:
    make_wheel(folder, "localpkg", "1.0+cpu", files={"localpkg/__init__.py": "BUILD = 'cpu'\n"})
    return folder


def test_a_find_links_folder_served_over_http(tmp_path: Path) -> None:
    folder = _localpkg(tmp_path / "wheels")
    # a web server's folder listing percent-encodes the names it links
    with serve_static(folder) as url:
        wheel, _lock = _lock_and_sync(folder, tmp_path, "--no-index", "--find-links", f"{url}/")
    assert wheel["name"] == "localpkg-1.0+cpu-py3-none-any.whl"
    assert wheel["url"] == f"{url}/localpkg-1.0%2Bcpu-py3-none-any.whl"


def test_a_literal_plus_in_a_url_still_works(tmp_path: Path) -> None:
    wheels = _localpkg(tmp_path / "wheels")
    index = tmp_path / "index"
    build_simple_index(wheels, index, literal_plus=True)
    with serve(index) as (url, _state):
        wheel, _lock = _lock_and_sync(index / "files", tmp_path, "--index-url", f"{url}/simple/")
    assert wheel["url"] == f"{url}/files/localpkg-1.0+cpu-py3-none-any.whl"


_NAME = "torch-2.10.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"


def _lock_text(url: str, name: str | None = _NAME) -> str:
    named = f'name = "{name}", ' if name is not None else ""
    return (
        'lock-version = "1.0"\ncreated-by = "fitwheel"\n\n[[packages]]\nname = "torch"\n'
        f'version = "2.10.0+cpu"\nwheels = [{{ {named}url = "{url}", '
        f'hashes = {{ sha256 = "{"0" * 64}" }} }}]\n'
    )


@pytest.mark.parametrize(
    "last",
    [
        "torch-2.10.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch-2.10.0%2bcpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch-2.10.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl",
        "torch%2D2.10.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl?x=1#sha256=00",
    ],
)
def test_a_url_naming_the_file_however_encoded_is_accepted(last: str) -> None:
    url = f"http://127.0.0.1:9/whl/cpu/files/{last}"
    for text in (_lock_text(url), _lock_text(url, None)):
        lock = loads_lock(text, "pylock.toml")
        (wheel,) = lock.packages[0].wheels
        assert wheel.filename == _NAME and wheel.url == url
        assert lock.dumps().count(url) == 1  # written back as it was given


@pytest.mark.parametrize(
    "last",
    [
        "torch-2.10.0%2Bcu130-cp311-cp311-manylinux_2_28_x86_64.whl",  # another build
        "torch-2.10.0%20cpu-cp311-cp311-manylinux_2_28_x86_64.whl",  # + read as a space
        "torch-2.10.0%252Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl",  # decoded once only
        "evil%2Ftorch-2.10.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl",  # a path, not a name
        "",  # a folder
    ],
)
def test_a_url_naming_another_file_is_refused(last: str) -> None:
    url = f"http://127.0.0.1:9/whl/cpu/files/{last}"
    with pytest.raises(LockFileError, match=r"packages\[0\].*does not name this file"):
        loads_lock(_lock_text(url), "pylock.toml")


def test_a_url_naming_no_file_is_refused_where_the_entry_has_no_name() -> None:
    url = "http://127.0.0.1:9/whl/cpu/files/evil%2F" + _NAME.replace("+", "%2B")
    with pytest.raises(LockFileError, match="names no file: give the wheel's 'name'"):
        loads_lock(_lock_text(url, None), "pylock.toml")
