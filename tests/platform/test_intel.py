"""The intel provider on the fixture machines, with recorded Level Zero answers for table misses."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitwheel.data import load_table
from fitwheel.platform import intel
from fitwheel.platform.native.level_zero import decode_ip
from fitwheel.platform.native.replay import ReplayTransport
from fitwheel.platform.probe import Probe
from fitwheel.platform.result import ProviderResult
from fitwheel.variants.model import check_value

HERE = Path(__file__).parent
MACHINES = HERE / "machines"
REPLAYS = HERE / "replays" / "level_zero"
PUBLISHED = HERE.parent / "variants" / "data" / "published"


def files_only(name: str, env: dict[str, str] | None = None) -> ProviderResult:
    return intel.detect(Probe.for_sysroot(MACHINES / name, env or {}))


def with_ze(name: str, recording: str, env: dict[str, str] | None = None) -> ProviderResult:
    path = REPLAYS / f"{recording}.json"
    probe = Probe(MACHINES / name, env or {}, allow_native=True)
    return intel.detect(probe, ze_transport=lambda: ReplayTransport.load(path))


def devices(result: ProviderResult) -> list[tuple[Any, ...]]:
    return [
        (d.index, d.pci_id, d.extra.get("device_ip"), d.extra["integrated"], d.extra.get("driver"))
        for d in result.devices
    ]


def caps(result: ProviderResult) -> dict[str, Any]:
    return {k: v for k, v in result.capabilities.items() if k != "notes"}


def test_data_center_max() -> None:
    r = files_only("gpu-intel-max")
    assert r.status == "ok" and r.reason == ""
    assert r.properties == {"device_ip": ("12.60.7",)}
    assert devices(r) == [
        (0, "8086:0bd5", "12.60.7", False, "i915"),
        (1, "8086:0bd5", "12.60.7", False, "i915"),
    ]
    assert r.devices[0].name == "Intel Data Center GPU Max (Ponte Vecchio)"
    assert r.devices[0].properties == {"intel": {"device_ip": ("12.60.7",)}}
    assert caps(r) == {
        "mx_fp8": False,
        "mx_fp4": False,
        "flex_attention": True,
        "peer_to_peer": False,
        "interconnect": None,
    }
    assert r.sources == {"device_ip": "pci-table"}


def test_arc_before_the_igpu() -> None:
    r = files_only("gpu-intel-arc-igpu")
    assert r.properties == {"device_ip": ("12.55.8", "12.0.0")}
    assert devices(r) == [
        (1, "8086:56a0", "12.55.8", False, "xe"),
        (0, "8086:9a49", "12.0.0", True, "i915"),
    ]
    assert caps(r)["flex_attention"] is True


def test_igpu_alone_beside_an_nvidia_card() -> None:
    r = files_only("gpu-rtx5090-igpu")
    assert r.properties == {"device_ip": ("12.2.0",)}
    assert devices(r) == [(0, "8086:a780", "12.2.0", True, "i915")]
    assert caps(r)["flex_attention"] is False


@pytest.mark.parametrize(
    ("mask", "ips"), [("1", ("12.55.8",)), ("0.0", ("12.0.0",)), ("0,1.1", ("12.55.8", "12.0.0"))]
)
def test_ze_affinity_mask(mask: str, ips: tuple[str, ...]) -> None:
    r = files_only("gpu-intel-arc-igpu", {"ZE_AFFINITY_MASK": mask})
    assert r.properties["device_ip"] == ips


def test_ze_affinity_mask_hiding_everything() -> None:
    r = files_only("gpu-intel-arc-igpu", {"ZE_AFFINITY_MASK": "5"})
    assert r.status == "absent" and r.reason == "ZE_AFFINITY_MASK='5' hides every GPU"


def test_table_miss_without_level_zero_is_unknown() -> None:
    r = files_only("gpu-intel-future")
    assert r.status == "unknown"
    assert "Level Zero not loaded" in r.reason and "8086:fd80 at 0000:03:00.0" in r.reason
    assert devices(r) == [(0, "8086:fd80", None, False, "xe")]


def test_table_miss_answered_by_level_zero() -> None:
    r = with_ze("gpu-intel-future", "future-gpu")
    assert r.status == "ok"
    assert r.properties == {"device_ip": ("35.11.0",)}
    assert r.sources == {"device_ip": "level_zero"}
    assert r.devices[0].name == "Intel(R) Graphics [0xfd80]"


def test_level_zero_ip_missing_from_the_known_table_is_left_out() -> None:
    r = with_ze("gpu-intel-future", "future-gpu-unknown-ip")
    assert r.status == "unknown"
    assert "device IP 40.1.2 is not a known device IP" in r.reason
    assert devices(r) == [(0, "8086:fd80", "40.1.2", False, "xe")]
    assert r.devices[0].properties == {}


@pytest.mark.parametrize(
    ("recording", "why"),
    [
        ("uninitialized", "Level Zero: error: zeInit"),
        ("load-failure", "Level Zero: unavailable: libze_loader.so.1"),
    ],
)
def test_level_zero_failures(recording: str, why: str) -> None:
    r = with_ze("gpu-intel-future", recording)
    assert r.status == "unknown" and why in r.reason


def test_level_zero_timeout() -> None:
    transport = ReplayTransport.load(REPLAYS / "timeout.json")
    probe = Probe(MACHINES / "gpu-intel-future", {"FITWHEEL_NATIVE_TIMEOUT": "0.1"}, True)
    try:
        r = intel.detect(probe, ze_transport=transport)
    finally:
        transport.close()
    assert r.status == "unknown" and "did not answer within 0.1 s" in r.reason


def test_level_zero_is_not_asked_when_the_table_knows() -> None:
    transport = ReplayTransport.load(REPLAYS / "arc-a770.json")
    probe = Probe(MACHINES / "gpu-intel-arc-igpu", {}, allow_native=True)
    r = intel.detect(probe, ze_transport=transport)
    assert r.properties == {"device_ip": ("12.55.8", "12.0.0")}
    assert transport.log == []


def test_force_device_ip_adds_its_base_ip() -> None:
    r = files_only("nogpu-server", {intel.FORCE_IP: "12.56.5"})
    assert r.status == "ok" and r.properties == {"device_ip": ("12.56.5", "12.55.8")}
    assert r.sources == {"device_ip": f"override:{intel.FORCE_IP}"}
    assert caps(r)["flex_attention"] is True


def test_force_device_ip_unknown() -> None:
    r = files_only("gpu-intel-max", {intel.FORCE_IP: "99.1.0"})
    assert r.status == "unknown" and r.reason.startswith(f"{intel.FORCE_IP}='99.1.0'")


@pytest.mark.parametrize("name", ["nogpu-server", "gpu-h100-open", "gpu-mi300x", "wsl2-rtx3080"])
def test_no_intel_gpu(name: str) -> None:
    r = files_only(name)
    assert r.status == "absent" and r.reason == "no Intel GPU on the PCI bus"


def test_garbage_tree_unbound_gpu() -> None:
    r = files_only("gpu-garbage")
    assert r.status == "absent"
    assert r.reason == "Intel GPU found but not bound to i915 or xe (no driver)"


def test_device_table_is_consistent() -> None:
    table = load_table("intel_gpus.json")
    for device_id, (ip, kind, name) in table["devices"].items():
        assert len(device_id) == 4 and int(device_id, 16) >= 0
        assert ip in table["ips"] and kind in ("integrated", "discrete") and name
    for ip, info in table["ips"].items():
        arch, release, revision = (int(p) for p in ip.split("."))
        assert decode_ip((arch << 22) | (release << 14) | revision) == ip
        assert info.get("compat", ip) in table["ips"]


@pytest.mark.parametrize("version", ["2.9.0", "2.10.0"])
@pytest.mark.parametrize(
    ("machine", "matches"),
    [("gpu-intel-max", True), ("gpu-intel-arc-igpu", True), ("gpu-rtx5090-igpu", False)],
)
def test_torch_xpu_variant(machine: str, matches: bool, version: str) -> None:
    data = json.loads((PUBLISHED / f"torch-{version}-variants.json").read_text())
    wanted = set(data["variants"]["xpu"]["intel"]["device_ip"])
    assert bool(wanted & set(files_only(machine).properties.get("device_ip", ()))) is matches


# -- robustness ---------------------------------------------------------------------------------

FUZZ_EXAMPLES = int(os.environ.get("FITWHEEL_FUZZ_EXAMPLES", "25"))


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(
    device=st.one_of(st.binary(max_size=12), st.sampled_from([b"0x56a0", b"0x0bd5", b"0xfd80"])),
    cls=st.one_of(st.binary(max_size=12), st.just(b"0x030000")),
    driver=st.sampled_from(["i915", "xe", "vfio-pci", ""]),
    mask=st.one_of(st.none(), st.text(max_size=10)),
    forced_ip=st.one_of(st.none(), st.text(max_size=10)),
)
def test_garbage_never_crashes(
    device: bytes, cls: bytes, driver: str, mask: str | None, forced_ip: str | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        dev = root / "sys/bus/pci/devices/0000:03:00.0"
        dev.mkdir(parents=True)
        (dev / "vendor").write_bytes(b"0x8086\n")
        (dev / "device").write_bytes(device)
        (dev / "class").write_bytes(cls)
        if driver:
            (root / "sys/bus/pci/drivers" / driver).mkdir(parents=True)
            (dev / "driver").symlink_to(f"../../drivers/{driver}")
        env = {} if mask is None else {"ZE_AFFINITY_MASK": mask}
        if forced_ip is not None:
            env[intel.FORCE_IP] = forced_ip
        r = intel.detect(Probe.for_sysroot(root, env))
    assert r.status in ("ok", "absent", "unknown")
    assert r.status == "ok" or r.reason
    assert not r.reason.startswith("unexpected")  # handled, not caught by the safety net
    for values in r.properties.values():
        for value in values:
            check_value(value)
