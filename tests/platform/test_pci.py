"""The PCI scan over the fixture machines' sysfs trees."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

from fitwheel.platform import pci
from fitwheel.platform.probe import Probe

MACHINES = Path(__file__).parent / "machines"


def machine(name: str) -> Probe:
    return Probe.for_sysroot(MACHINES / name)


def ids(functions: list[pci.PciFunction]) -> list[tuple[str, str, str | None]]:
    return [(f.address, f.pci_id, f.driver) for f in functions]


def test_gpus_skip_nvswitch_audio_and_count_by_function() -> None:
    probe = machine("gpu-h100-open")
    every = pci.scan(probe)
    assert len(every) == 7
    assert ids(pci.gpus(probe, pci.VENDOR_NVIDIA)) == [
        ("0000:18:00.0", "10de:2330", "nvidia"),
        ("0000:2a:00.0", "10de:2330", "nvidia"),
        ("0000:3a:00.0", "10de:2330", "nvidia"),
        ("0000:5d:00.0", "10de:2330", "nvidia"),
    ]
    switches = [f for f in every if f.subclass == pci.CLASS_BRIDGE_OTHER]
    assert [f.pci_id for f in switches] == ["10de:22a3", "10de:22a3"]
    # the BMC's VGA function is a display device of another vendor
    assert ids(pci.gpus(probe)) == [
        ("0000:02:00.0", "1a03:2000", "ast"),
        *ids(pci.gpus(probe, pci.VENDOR_NVIDIA)),
    ]


def test_audio_functions_of_gpus_are_not_gpus() -> None:
    probe = machine("gpu-rtx4090-gtx1080ti")
    assert [f.address for f in pci.scan(probe)] == [
        "0000:01:00.0",
        "0000:01:00.1",
        "0000:02:00.0",
        "0000:02:00.1",
    ]
    assert [f.pci_id for f in pci.gpus(probe)] == ["10de:2684", "10de:1b06"]


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "gpu-mi300x",
            [("0000:1b:00.0", "1002:74a1", "amdgpu"), ("0000:3d:00.0", "1002:74a1", "amdgpu")],
        ),
        (
            "gpu-intel-max",
            [
                ("0000:02:00.0", "1a03:2000", "ast"),
                ("0000:29:00.0", "8086:0bd5", "i915"),
                ("0000:9a:00.0", "8086:0bd5", "i915"),
            ],
        ),
        (
            "gpu-intel-arc-igpu",
            [("0000:00:02.0", "8086:9a49", "i915"), ("0000:03:00.0", "8086:56a0", "xe")],
        ),
        ("nogpu-server", [("0000:02:00.0", "1a03:2000", "ast")]),
        ("wsl2-rtx3080", []),
    ],
)
def test_gpu_classes(name: str, expected: list[tuple[str, str, str]]) -> None:
    assert ids(pci.gpus(machine(name))) == expected


def test_processing_accelerator_class_is_a_gpu() -> None:
    (mi300,) = pci.gpus(machine("gpu-mi300x"), pci.VENDOR_AMD)[:1]
    assert mi300.class_code == 0x120000 and mi300.is_gpu
    nic = pci.PciFunction("0000:18:00.0", 0x8086, 0x1521, 0x020000, "igb")
    assert not nic.is_gpu


def test_garbage_entries_are_skipped_and_loops_end() -> None:
    probe = machine("gpu-garbage")
    found = pci.scan(probe)
    # 03: class is garbage; 04: vendor is a directory; 05: the entry is a link to itself
    assert [f.address for f in found] == ["0000:01:00.0", "0000:02:00.0", "0000:06:00.0"]
    # 06's driver link points at itself: no driver rather than a made-up name
    assert found[-1].driver is None


def test_dangling_driver_link_means_unbound(tmp_path: Path) -> None:
    dev = tmp_path / "sys/bus/pci/devices/0000:01:00.0"
    dev.mkdir(parents=True)
    (dev / "vendor").write_text("0x10de\n")
    (dev / "device").write_text("0x2684\n")
    (dev / "class").write_text("0x030000\n")
    (dev / "driver").symlink_to("../../../bus/pci/drivers/nvidia")
    (fn,) = pci.scan(Probe.for_sysroot(tmp_path))
    assert fn.driver is None and fn.revision is None


def _gpu(root: Path, address: str) -> None:
    dev = root / "sys/bus/pci/devices" / address
    dev.mkdir(parents=True)
    (dev / "vendor").write_text("0x10de\n")
    (dev / "device").write_text("0x2684\n")
    (dev / "class").write_text("0x030000\n")


def test_shared_scan_reads_the_bus_once_for_the_block_only(tmp_path: Path) -> None:
    _gpu(tmp_path, "0000:01:00.0")
    probe = Probe.for_sysroot(tmp_path)
    other = Probe.for_sysroot(tmp_path)
    with pci.shared_scan(probe):
        first = pci.scan(probe)
        _gpu(tmp_path, "0000:02:00.0")
        # Every caller in the block gets the first answer, as its own list.
        again = pci.scan(probe)
        assert [f.address for f in again] == ["0000:01:00.0"]
        assert again == first and again is not first
        again.clear()
        assert len(pci.gpus(probe)) == 1
        # Another probe is not part of the block.
        assert len(pci.scan(other)) == 2
    assert [f.address for f in pci.scan(probe)] == ["0000:01:00.0", "0000:02:00.0"]


@pytest.mark.parametrize(
    ("text", "bits", "value"),
    [
        ("0x10de\n", 16, 0x10DE),
        ("10de", 16, 0x10DE),
        ("0x030200", 24, 0x030200),
        ("0x1234567", 24, None),
        ("zzz", 16, None),
        ("", 16, None),
        (None, 16, None),
        ("-0x1", 16, None),
    ],
)
def test_parse_hex(text: str | None, bits: int, value: int | None) -> None:
    assert pci.parse_hex(text, bits) == value


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("00000000:18:00.0", "0000:18:00.0"),
        ("0000:2A:00.0", "0000:2a:00.0"),
        ("01:00.1", "0000:01:00.1"),
        ("0001:c1:1f.7", "0001:c1:1f.7"),
        ("0000:18:00", None),
        ("0000:18:20.0", None),
        ("0000:18:00.8", None),
        ("garbage", None),
    ],
)
def test_normalise_address(text: str, address: str | None) -> None:
    assert pci.normalise_address(text) == address


def _snapshot(root: Path) -> dict[str, str]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = str(path.relative_to(root))
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = path.read_bytes().hex()
    return out


def test_committed_trees_are_what_build_py_writes(tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("machines_build", MACHINES / "build.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.build(tmp_path)
    built = sorted(p.name for p in tmp_path.iterdir())
    assert len(built) == 14
    for name in built:
        assert _snapshot(tmp_path / name) == _snapshot(MACHINES / name), name
