"""fitwheel.fs: atomic writes, link-or-copy and locks."""

import os
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from fitwheel import fs


def test_atomic_write_replaces_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "sub" / "file.json"
    fs.atomic_write(target, b"one")
    fs.atomic_write(target, b"two")
    assert target.read_bytes() == b"two"
    assert os.listdir(target.parent) == ["file.json"]


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_atomic_write_failing_keeps_the_old_content(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"old")
    tmp_path.chmod(0o555)
    try:
        with pytest.raises(PermissionError):
            fs.atomic_write(target, b"new")
    finally:
        tmp_path.chmod(0o755)
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["file"]


def test_atomic_write_of_data_that_cannot_be_written(tmp_path: Path) -> None:
    target = tmp_path / "file"
    target.write_bytes(b"old")
    with pytest.raises(TypeError):
        fs.atomic_write(target, "not bytes")  # type: ignore[arg-type]
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["file"]


def test_atomic_write_on_a_full_disk_keeps_the_old_content(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import errno

    target = tmp_path / "file"
    target.write_bytes(b"old")

    def full(fd: int, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "write", full)
    with pytest.raises(OSError, match="No space"):
        fs.atomic_write(target, b"new")
    monkeypatch.undo()
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["file"]


def test_atomic_output_commits_only_a_finished_block(tmp_path: Path) -> None:
    target = tmp_path / "out.whl"
    target.write_bytes(b"old")
    with pytest.raises(RuntimeError), fs.atomic_output(target) as handle:
        handle.write(b"partial")
        raise RuntimeError("interrupted")
    assert target.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["out.whl"]
    with fs.atomic_output(target) as handle:
        handle.write(b"new")
    assert target.read_bytes() == b"new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o644
    assert os.listdir(tmp_path) == ["out.whl"]


def test_link_or_copy_links_on_one_filesystem(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.write_bytes(b"data")
    assert fs.link_or_copy(src, tmp_path / "dst") is True
    assert os.path.samefile(src, tmp_path / "dst")
    assert fs.link_or_copy(src, tmp_path / "copy", link=False) is False
    assert not os.path.samefile(src, tmp_path / "copy")
    with pytest.raises(FileExistsError):
        fs.link_or_copy(src, tmp_path / "dst")
    with pytest.raises(FileExistsError):
        fs.link_or_copy(src, tmp_path / "dst", link=False)


def test_link_or_copy_copies_across_filesystems_keeping_the_mode(tmp_path: Path) -> None:
    shm = Path("/dev/shm")
    if not shm.is_dir() or os.stat(shm).st_dev == os.stat(tmp_path).st_dev:
        pytest.skip("no second filesystem (/dev/shm) here")
    src = tmp_path / "tool"
    src.write_bytes(b"#!/bin/sh\n")
    src.chmod(0o755)
    with tempfile.TemporaryDirectory(dir=shm) as other:
        dst = Path(other) / "tool"
        assert fs.link_or_copy(src, dst) is False
        assert dst.read_bytes() == b"#!/bin/sh\n"
        assert stat.S_IMODE(dst.stat().st_mode) == 0o755


HOLDER = """
import sys, time
from fitwheel import fs
with fs.locked(sys.argv[1]):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def test_locked_serialises_two_processes(tmp_path: Path) -> None:
    lock = tmp_path / "state" / "lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(lock), "0.6"], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with fs.locked(lock, wait=False) as held:
            assert held is False
        waited: list[float] = []
        start = time.monotonic()
        with fs.locked(lock, on_wait=lambda: waited.append(time.monotonic())) as held:
            assert held is True
            assert time.monotonic() - start > 0.3  # only once the other process let go
        assert waited and waited[0] - start < 0.5
    finally:
        holder.wait(timeout=30)
    assert holder.returncode == 0
    with fs.locked(lock, wait=False) as held:
        assert held is True
