"""What the torch-backend tests against a loopback mirror share: the module's ``mirror`` (each
test module builds its own) served once per module, a venv per module, the machine profiles,
and ``fitwheel`` run in process with nothing of the host's settings."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import pytest

from fitwheel.cli.main import main
from tests.kit import make_venv, serve
from tests.kit.torch_mirror import TorchMirror
from tests.torchbackend.machines import machine_profile


@pytest.fixture(scope="module")
def url(mirror: TorchMirror) -> Iterator[str]:
    # PEP 691 pages (with sizes) where the client asks for them, HTML otherwise
    with serve(mirror.root) as (base, _state):
        yield base


@pytest.fixture(scope="module")
def venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_venv(tmp_path_factory.mktemp("venv") / "venv")


def write_profiles(folder: Path, names: Iterable[str]) -> dict[str, str]:
    """machine name -> the path of its profile, written under ``folder``."""
    out = {}
    for name in names:
        path = folder / f"{name}.json"
        path.write_text(machine_profile(name).dumps())
        out[name] = str(path)
    return out


class Run:
    """A finished command: exit code, stdout, stderr, and its ``--report -`` read back."""

    def __init__(self, rc: int, out: str, err: str) -> None:
        self.rc, self.out, self.err = rc, out, err

    def report(self) -> dict[str, Any]:
        data: dict[str, Any] = json.loads(self.out)
        return data

    def pins(self) -> dict[str, dict[str, Any]]:
        return {e["name"]: e for e in self.report()["install"]}

    def torch(self) -> dict[str, Any]:
        return self.pins()["torch"]


@pytest.fixture
def hermetic(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> Callable[[list[str]], Run]:
    """``fitwheel ARGV`` in process, hermetic: no pip or fitwheel settings of the host (pip's
    configuration file is /dev/null unless a test sets ``PIP_CONFIG_FILE`` after), a
    configuration folder and cache of the test's own."""
    for key in list(os.environ):
        if key.startswith(("PIP_", "UV_", "FITWHEEL_", "VIRTUAL_ENV")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "site-config"))
    monkeypatch.setenv("FITWHEEL_CACHE_DIR", str(tmp_path / "cache"))

    def run(argv: list[str]) -> Run:
        capsys.readouterr()
        rc = main(argv)
        captured = capsys.readouterr()
        return Run(rc, captured.out, captured.err)

    return run
