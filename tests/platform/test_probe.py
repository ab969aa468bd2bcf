"""The Probe: reads inside a sysroot, links resolved within it, and its value semantics."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fitwheel.platform.probe import Probe


@pytest.fixture
def sysroot(tmp_path: Path) -> Path:
    root = tmp_path / "root"
    (root / "etc").mkdir(parents=True)
    (root / "etc" / "os-release").write_text("ID=test\n")
    (root / "sys" / "devices" / "gpu0").mkdir(parents=True)
    (root / "sys" / "devices" / "gpu0" / "vendor").write_text("0x10de\n")
    (root / "sys" / "class").mkdir()
    # absolute and relative link targets both stay inside the root
    (root / "sys" / "class" / "abs").symlink_to("/sys/devices/gpu0")
    (root / "sys" / "class" / "rel").symlink_to("../devices/gpu0")
    (root / "loop-a").symlink_to("/loop-b")
    (root / "loop-b").symlink_to("/loop-a")
    return root


def test_reads_inside_the_root_following_links(sysroot: Path) -> None:
    probe = Probe.for_sysroot(sysroot)
    assert probe.read_text("/etc/os-release") == "ID=test\n"
    assert probe.read_text("/sys/class/abs/vendor") == "0x10de\n"
    assert probe.read_text("/sys/class/rel/vendor") == "0x10de\n"
    assert probe.read_bytes("/sys/class/abs/vendor", 4) == b"0x10"
    assert probe.exists("/sys/class/abs/vendor")
    assert not probe.exists("/sys/class/abs/device")
    assert probe.listdir("/sys/class") == ["abs", "rel"]
    assert probe.listdir("/no/such/dir") == []
    assert probe.readlink("/sys/class/abs") == "/sys/devices/gpu0"
    assert probe.readlink("/etc/os-release") is None
    assert probe.read_text("/no/such/file") is None


def test_link_loops_end(sysroot: Path) -> None:
    probe = Probe.for_sysroot(sysroot)
    assert probe.resolve("/loop-a/x") is None
    assert probe.read_text("/loop-a") is None
    assert not probe.exists("/loop-a")


def test_the_root_may_be_a_string_or_a_path(sysroot: Path) -> None:
    as_path = Probe(sysroot, {}, allow_native=False)
    as_str = Probe(str(sysroot), {}, allow_native=False)
    assert as_path == as_str
    assert as_path.read_text("/sys/class/abs/vendor") == as_str.read_text("/sys/class/abs/vendor")


def test_for_sysroot_resolves_its_root_and_forbids_native_code(
    sysroot: Path, tmp_path: Path
) -> None:
    alias = tmp_path / "alias"
    alias.symlink_to(sysroot)
    probe = Probe.for_sysroot(alias, {"A": "1"})
    assert probe.root == os.path.realpath(sysroot)
    assert not probe.is_host
    assert probe.env == {"A": "1"}
    assert probe.allow_native is False
    assert probe.read_text("/etc/os-release") == "ID=test\n"


def test_host_probe_reads_this_machine(tmp_path: Path) -> None:
    probe = Probe()
    assert probe.is_host and probe.allow_native
    assert probe.env == dict(os.environ)
    target = tmp_path / "file"
    target.write_text("here")
    assert probe.read_text(str(target)) == "here"
    assert probe.resolve(str(target)) == str(target)


def test_probe_is_immutable_and_replaceable(sysroot: Path) -> None:
    probe = Probe.for_sysroot(sysroot)
    with pytest.raises(AttributeError):
        probe.allow_native = True
    native = probe.replace(allow_native=True)
    assert native.allow_native and native.root == probe.root and native != probe
