"""glibc or musl, and the version, from files (sysroots) or confstr (this machine)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from fitwheel.platform import libc
from fitwheel.platform.probe import Probe
from tests.kit.env import process_gone

MACHINES = Path(__file__).parent / "machines"


def run(name: str | Path):
    return libc.detect(Probe.for_sysroot(MACHINES / name))


def glibc_values(minor: int) -> tuple[str, ...]:
    return tuple(f"2.{m}" for m in range(minor, -1, -1))


@pytest.mark.parametrize(
    ("machine", "minor", "source"),
    [
        ("arm-grace-neoverse-v2", 35, "/lib/aarch64-linux-gnu/libc.so.6"),
        # /lib64 is a link to usr/lib64 (merged /usr)
        ("arm-graviton3-neoverse-v1", 34, "/lib64/libc.so.6"),
        # libc.so.6 -> libc-2.17.so: the file name tells
        ("x86-v3-haswell-centos7", 17, "libc-2.17.so"),
        ("x86-v4-sapphire-rapids", 39, "/lib/x86_64-linux-gnu/libc.so.6"),
    ],
)
def test_glibc_sysroots(machine: str, minor: int, source: str) -> None:
    result = run(machine)
    assert result.status == "ok"
    assert result.properties == {"family": ("glibc",), "glibc": glibc_values(minor)}
    assert result.capabilities == {"family": "glibc", "version": f"2.{minor}"}
    assert source in result.sources["*"]


def test_musl_sysroot() -> None:
    result = run("arm-ampere-altra-alpine")
    assert result.properties == {"family": ("musl",), "musl": ("1.2", "1.1", "1.0")}
    assert result.capabilities["version"] == "1.2.5"


def test_musl_loader_without_version(tmp_path: Path) -> None:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib/ld-musl-x86_64.so.1").write_bytes(b"\x7fELF no version here")
    result = libc.detect(Probe.for_sysroot(tmp_path))
    assert result.status == "ok"
    assert result.properties == {"family": ("musl",)}
    assert "no readable musl version" in result.reason


def test_sysroot_without_libc_is_absent() -> None:
    assert run("x86-v1-core2").status == "absent"


def test_unreadable_libc_is_skipped(tmp_path: Path) -> None:
    root = tmp_path / "m"
    shutil.copytree(MACHINES / "x86-v4-sapphire-rapids", root, symlinks=True)
    target = root / "lib/x86_64-linux-gnu/libc.so.6"
    target.unlink()
    target.mkdir()  # cannot be read as a file
    assert libc.detect(Probe.for_sysroot(root)).status == "absent"


def test_host_uses_confstr(monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(os, "confstr"):
        pytest.skip("no confstr")
    monkeypatch.setattr(os, "confstr", lambda name: "glibc 2.28")
    result = libc.detect(Probe())
    assert result.properties["glibc"] == glibc_values(28)
    assert "confstr" in result.sources["*"]


@pytest.mark.parametrize("answer", ["NPTL 2.3", "glibc", "glibc two.x", None])
def test_unusable_confstr_answers(monkeypatch: pytest.MonkeyPatch, answer: str | None) -> None:
    monkeypatch.setattr(os, "confstr", lambda name: answer)
    assert libc._host_glibc() is None


def _loader(folder: Path, body: str) -> str:
    path = folder / "ld-musl-x86_64.so.1"
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_a_musl_loader_run_tells_its_version(tmp_path: Path) -> None:
    # run with no arguments, the musl loader prints its usage and version on stderr
    path = _loader(tmp_path, "echo 'musl libc (x86_64)' >&2\necho 'Version 1.2.4' >&2\nexit 1")
    result = libc._musl_from_loader(path)
    assert result is not None and result.capabilities["version"] == "1.2.4"


def test_a_musl_loader_that_hangs_is_stopped_with_its_children(tmp_path: Path) -> None:
    import time

    marker = tmp_path / "child.pid"
    path = _loader(tmp_path, f"sleep 60 &\necho $! > {marker}\nwait")
    started = time.monotonic()
    assert libc._musl_from_loader(path) is None
    assert time.monotonic() - started < 30  # the 2 s bound, with room for a loaded machine
    # the loader's own child went with its process group
    assert process_gone(int(marker.read_text()))
