"""The nvidia provider on the fixture machines, from files alone and with recorded NVML answers."""

from __future__ import annotations

import ctypes
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitwheel.data import load_table
from fitwheel.platform import nvidia
from fitwheel.platform.native.replay import ReplayTransport
from fitwheel.platform.probe import Probe
from fitwheel.platform.result import ProviderResult
from fitwheel.variants.model import check_value

HERE = Path(__file__).parent
MACHINES = HERE / "machines"
REPLAYS = HERE / "replays" / "nvml"
PUBLISHED = HERE.parent / "variants" / "data" / "published"

SM89 = (*tuple(f"8{m}_real" for m in range(9, -1, -1)), "80_virtual")
SM61 = ("61_real", "60_real", "60_virtual")


def files_only(name: str, env: dict[str, str] | None = None) -> ProviderResult:
    return nvidia.detect(Probe.for_sysroot(MACHINES / name, env or {}))


def with_nvml(name: str, recording: str, env: dict[str, str] | None = None) -> ProviderResult:
    probe = Probe(MACHINES / name, env or {}, allow_native=True)
    path = REPLAYS / f"{recording}.json"
    return nvidia.detect(probe, nvml_transport=lambda: ReplayTransport.load(path))


def devices(result: ProviderResult) -> list[tuple[Any, ...]]:
    return [
        (d.index, d.pci_id, d.name, d.extra.get("compute_capability"), d.extra.get("pci_address"))
        for d in result.devices
    ]


def caps(result: ProviderResult) -> dict[str, Any]:
    return {k: v for k, v in result.capabilities.items() if k != "notes"}


# -- value lists --------------------------------------------------------------------------------


def test_lower_bound_values_run_down_to_cuda_11() -> None:
    values = nvidia.lower_bound_values((12, 8))
    assert values[:10] == (
        "12.8",
        "12.7",
        "12.6",
        "12.5",
        "12.4",
        "12.3",
        "12.2",
        "12.1",
        "12.0",
        "12",
    )
    assert values[10:13] == ("11.20", "11.19", "11.18")
    assert values[-2:] == ("11.0", "11")
    assert len(values) == 9 + 1 + 21 + 1


def test_upper_bound_values_are_everything_above() -> None:
    values = nvidia.upper_bound_values((12, 8))
    assert values[:3] == ("15.20", "15.19", "15.18")
    assert "15" in values and "13" in values and "12" not in values
    assert values[-2:] == ("12.10", "12.9")
    assert "12.8" not in values
    assert len(values) == 3 * 22 + 12
    assert nvidia.upper_bound_values((15, 20)) == ()


@pytest.mark.parametrize(
    ("cc", "values"),
    [
        ((9, 0), ("90_real", "90_virtual")),
        ((12, 0), ("120_real", "120_virtual")),
        ((10, 3), ("103_real", "102_real", "101_real", "100_real", "100_virtual")),
        ((8, 9), SM89),
    ],
)
def test_sm_arch_values(cc: tuple[int, int], values: tuple[str, ...]) -> None:
    assert nvidia.sm_arch_values(cc) == values


def test_sm_arch_union_most_capable_first_without_pre_maxwell() -> None:
    assert nvidia.union_sm_arch([(6, 1), (8, 9), (6, 1)]) == SM89 + SM61
    assert nvidia.union_sm_arch([(3, 7)]) == ()


# -- driver files and tables ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "version"),
    [
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build  "
            "(dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 19:33:26 UTC 2024\nGCC version:  gcc\n",
            "550.54.15",
        ),
        (
            "NVRM version: NVIDIA UNIX x86_64 Kernel Module  470.82.01  "
            "Tue Oct 26 23:18:00 UTC 2021\n",
            "470.82.01",
        ),
        (
            "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  580.82.07  Release Build\n",
            "580.82.07",
        ),
        ("NVRM version: NVIDIA UNIX ppc64le  535.104.05  Release Build\n", "535.104.05"),
        ("NVRM version: who knows\n", None),
        ("", None),
    ],
)
def test_parse_proc_version(text: str, version: str | None) -> None:
    assert nvidia.parse_proc_version(text) == version


@pytest.mark.parametrize(
    ("driver", "cuda"),
    [
        ("590.48.01", (13, 1)),
        ("580.82.07", (13, 0)),
        ("575.57.08", (12, 9)),
        ("570.133.07", (12, 8)),
        ("565.57.01", (12, 7)),
        ("550.54.15", (12, 4)),
        ("550.54.14", (12, 4)),
        ("535.183.01", (12, 2)),
        ("525.60.13", (12, 0)),
        ("525.60.12", (11, 8)),
        ("470.82.01", (11, 4)),
        ("400.1", None),
    ],
)
def test_cuda_for_driver(driver: str, cuda: tuple[int, int] | None) -> None:
    assert nvidia.cuda_for_driver(driver) == cuda


@pytest.mark.parametrize(
    ("device_id", "cc"),
    [
        (0x13C0, (5, 2)),
        (0x1B06, (6, 1)),
        (0x15F8, (6, 0)),
        (0x1DB4, (7, 0)),
        (0x1EB8, (7, 5)),
        (0x20B0, (8, 0)),
        (0x2204, (8, 6)),
        (0x2684, (8, 9)),
        (0x2330, (9, 0)),
        (0x2901, (10, 0)),
        (0x2B85, (12, 0)),
    ],
)
def test_pci_table_covers_maxwell_to_blackwell(device_id: int, cc: tuple[int, int]) -> None:
    entry = nvidia.pci_table_entry(device_id)
    assert entry is not None and entry[0] == cc


def test_data_tables_are_well_formed() -> None:
    devices = load_table("nvidia_pci_devices.json")["devices"]
    assert len(devices) > 100
    for key, (cc, name) in devices.items():
        assert len(key) == 4 and int(key, 16) >= 0
        major, minor = (int(x) for x in cc.split("."))
        assert (5, 0) <= (major, minor) <= (12, 9) and name
    drivers = load_table("nvidia_cuda_drivers.json")["drivers"]
    keys = [tuple(int(p) for p in d.split(".")) for d, _ in drivers]
    assert keys == sorted(keys, reverse=True)  # newest first: the lookup takes the first match


# -- fixture machines, files only ---------------------------------------------------------------


def test_h100_open_module_with_nvswitch() -> None:
    r = files_only("gpu-h100-open")
    assert r.status == "ok" and r.reason == ""
    assert r.properties["cuda_version_lower_bound"][:2] == ("12.4", "12.3")
    assert r.properties["cuda_version_upper_bound"][-1] == "12.5"
    assert r.properties["sm_arch"] == ("90_real", "90_virtual")
    assert devices(r) == [
        (i, "10de:2330", "NVIDIA H100 80GB HBM3", "9.0", addr)
        for i, addr in enumerate(["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0"])
    ]
    assert r.devices[2].extra["uuid"] == "GPU-6b3a1f0e-1c2d-4e5f-8a9b-000000000002"
    assert r.devices[0].properties == {"nvidia": {"sm_arch": ("90_real", "90_virtual")}}
    assert caps(r) == {
        "driver_version": "550.54.15",
        "cuda_version": "12.4",
        "mx_fp8": False,
        "mx_fp4": False,
        "flex_attention": True,
        "peer_to_peer": True,
        "interconnect": "nvlink",
    }
    assert r.sources == {
        "cuda_version_lower_bound": "driver-table:/sys/module/nvidia/version",
        "cuda_version_upper_bound": "driver-table:/sys/module/nvidia/version",
        "sm_arch": "pci-table",
    }


def test_a100_legacy_driver_read_from_proc() -> None:
    r = files_only("gpu-a100-legacy")
    assert r.status == "ok"
    assert r.properties["cuda_version_lower_bound"] == (
        "11.4",
        "11.3",
        "11.2",
        "11.1",
        "11.0",
        "11",
    )
    assert "11.5" in r.properties["cuda_version_upper_bound"]
    assert r.properties["sm_arch"] == ("80_real", "80_virtual")
    assert devices(r) == [
        (0, "10de:20f1", "NVIDIA A100-PCIE-40GB", "8.0", "0000:3b:00.0"),
        (1, "10de:20f1", "NVIDIA A100-PCIE-40GB", "8.0", "0000:d8:00.0"),
    ]
    assert r.sources["cuda_version_lower_bound"] == "driver-table:/proc/driver/nvidia/version"
    assert caps(r)["peer_to_peer"] is False and caps(r)["driver_version"] == "470.82.01"


def test_mixed_generations_report_the_union_and_per_device_lists() -> None:
    r = files_only("gpu-rtx4090-gtx1080ti")
    assert r.status == "ok"
    assert r.properties["cuda_version_lower_bound"][0] == "12.8"
    assert r.properties["sm_arch"] == SM89 + SM61
    assert devices(r) == [
        (0, "10de:2684", "NVIDIA GeForce RTX 4090", "8.9", "0000:01:00.0"),
        (1, "10de:1b06", "NVIDIA GeForce GTX 1080 Ti", "6.1", "0000:02:00.0"),
    ]
    assert [d.properties["nvidia"]["sm_arch"] for d in r.devices] == [SM89, SM61]
    assert caps(r)["flex_attention"] is True and caps(r)["mx_fp8"] is False


def test_blackwell_consumer_with_cuda_13() -> None:
    r = files_only("gpu-rtx5090-igpu")
    assert r.status == "ok"
    assert r.properties["cuda_version_lower_bound"][:3] == ("13.0", "13", "12.20")
    assert r.properties["sm_arch"] == ("120_real", "120_virtual")
    assert devices(r) == [(0, "10de:2b85", "NVIDIA GeForce RTX 5090", "12.0", "0000:01:00.0")]
    assert caps(r)["mx_fp8"] is True and caps(r)["mx_fp4"] is True


def test_blackwell_on_a_driver_before_cuda_12_8_has_no_mx_formats() -> None:
    r = files_only("gpu-rtx5090-igpu", {nvidia.FORCE_CUDA: "12.6"})
    assert r.properties["sm_arch"] == ("120_real", "120_virtual")
    assert caps(r)["mx_fp8"] is False


def test_container_without_device_nodes_has_no_usable_gpu() -> None:
    r = files_only("container-nogpu")
    assert r.status == "absent"
    assert "container without NVIDIA device nodes" in r.reason
    assert r.properties == {}
    assert [d.pci_id for d in r.devices] == ["10de:27b8", "10de:27b8"]


@pytest.mark.parametrize("value", ["void", "none", "VOID"])
def test_nvidia_visible_devices_void(value: str) -> None:
    r = files_only("gpu-h100-open", {"NVIDIA_VISIBLE_DEVICES": value})
    assert r.status == "absent"
    assert r.reason.startswith(f"NVIDIA_VISIBLE_DEVICES={value.lower()}")


def test_nvidia_visible_devices_all_changes_nothing() -> None:
    r = files_only("gpu-h100-open", {"NVIDIA_VISIBLE_DEVICES": "all"})
    assert r.status == "ok" and len(r.devices) == 4


@pytest.mark.parametrize("name", ["nogpu-server", "gpu-mi300x", "gpu-intel-max"])
def test_no_nvidia_gpu(name: str) -> None:
    r = files_only(name)
    assert r.status == "absent"
    assert r.reason == "no NVIDIA GPU on the PCI bus and no NVIDIA driver"


def test_garbage_driver_files_give_unknown() -> None:
    r = files_only("gpu-garbage")
    assert r.status == "unknown"
    assert "no readable NVIDIA driver version" in r.reason
    assert r.properties == {}


def test_wsl2_needs_nvml() -> None:
    r = files_only("wsl2-rtx3080")
    assert r.status == "unknown"
    assert r.reason.startswith("WSL2: the CUDA version and GPUs are known only through NVML")


def test_wsl_without_gpu_paravirtualisation(tmp_path: Path) -> None:
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/osrelease").write_text("5.15.167.4-microsoft-standard-WSL2\n")
    r = nvidia.detect(Probe.for_sysroot(tmp_path))
    assert r.status == "absent" and r.reason.startswith("WSL without GPU access")


def test_gpu_bound_to_another_driver(tmp_path: Path) -> None:
    dev = tmp_path / "sys/bus/pci/devices/0000:01:00.0"
    dev.mkdir(parents=True)
    for key, value in {"vendor": "0x10de", "device": "0x2684", "class": "0x030000"}.items():
        (dev / key).write_text(value + "\n")
    (tmp_path / "sys/bus/pci/drivers/nouveau").mkdir(parents=True)
    (dev / "driver").symlink_to("../../drivers/nouveau")
    r = nvidia.detect(Probe.for_sysroot(tmp_path))
    assert r.status == "absent"
    assert r.reason == "NVIDIA GPU found but not bound to the nvidia kernel driver (nouveau)"
    assert [d.extra.get("driver") for d in r.devices] == ["nouveau"]


def test_driver_older_than_cuda_11(tmp_path: Path) -> None:
    (tmp_path / "sys/module/nvidia").mkdir(parents=True)
    (tmp_path / "sys/module/nvidia/version").write_text("418.39\n")
    dev = tmp_path / "sys/bus/pci/devices/0000:01:00.0"
    dev.mkdir(parents=True)
    for key, value in {"vendor": "0x10de", "device": "0x1db4", "class": "0x030200"}.items():
        (dev / key).write_text(value + "\n")
    (tmp_path / "sys/bus/pci/drivers/nvidia").mkdir(parents=True)
    (dev / "driver").symlink_to("../../drivers/nvidia")
    r = nvidia.detect(Probe.for_sysroot(tmp_path))
    assert r.status == "absent" and "CUDA 10.1 is outside" in r.reason


# -- CUDA_VISIBLE_DEVICES -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "kept"),
    [
        ("1", ["10de:1b06"]),
        ("1,0", ["10de:1b06", "10de:2684"]),
        ("0,7,1", ["10de:2684"]),
        ("GPU-bbbbbbbb", ["10de:1b06"]),
        ("GPU-aaaaaaaa-1111-2222-3333-444444444444,1", ["10de:2684", "10de:1b06"]),
        ("0,0", ["10de:2684"]),
    ],
)
def test_cuda_visible_devices_narrows(value: str, kept: list[str]) -> None:
    r = files_only("gpu-rtx4090-gtx1080ti", {"CUDA_VISIBLE_DEVICES": value})
    assert r.status == "ok"
    assert [d.pci_id for d in r.devices] == kept
    assert r.properties["sm_arch"] == nvidia.union_sm_arch(
        [(8, 9) if k == "10de:2684" else (6, 1) for k in kept]
    )


@pytest.mark.parametrize("value", ["", "-1", "GPU-ffff", "nope"])
def test_cuda_visible_devices_hiding_everything(value: str) -> None:
    r = files_only("gpu-rtx4090-gtx1080ti", {"CUDA_VISIBLE_DEVICES": value})
    assert r.status == "absent" and "hides every GPU" in r.reason


def test_mig_uuids_leave_the_set_alone() -> None:
    r = files_only(
        "gpu-h100-open", {"CUDA_VISIBLE_DEVICES": "MIG-1b2c3d4e-aaaa-bbbb-cccc-000000000000"}
    )
    assert r.status == "ok" and len(r.devices) == 4
    assert any("cannot be matched" in n for n in r.capabilities["notes"])


# -- overrides ----------------------------------------------------------------------------------


def test_both_overrides_need_no_gpu() -> None:
    r = files_only("nogpu-server", {nvidia.FORCE_CUDA: "12.9", nvidia.FORCE_SM: "9.0"})
    assert r.status == "ok" and r.devices == []
    assert r.properties["cuda_version_lower_bound"][0] == "12.9"
    assert r.properties["sm_arch"] == ("90_real", "90_virtual")
    assert r.sources == {
        "cuda_version_lower_bound": f"override:{nvidia.FORCE_CUDA}",
        "cuda_version_upper_bound": f"override:{nvidia.FORCE_CUDA}",
        "sm_arch": f"override:{nvidia.FORCE_SM}",
    }


def test_cuda_override_alone_on_a_machine_without_gpu() -> None:
    r = files_only("nogpu-server", {nvidia.FORCE_CUDA: "13.0"})
    assert r.status == "ok"
    assert r.properties["cuda_version_lower_bound"][:2] == ("13.0", "13")
    assert "sm_arch" not in r.properties


def test_cuda_override_keeps_detected_architectures() -> None:
    r = files_only("gpu-rtx4090-gtx1080ti", {nvidia.FORCE_CUDA: "12.2"})
    assert r.properties["cuda_version_lower_bound"][0] == "12.2"
    assert r.properties["sm_arch"] == SM89 + SM61
    assert r.sources["sm_arch"] == "pci-table"


def test_sm_override_replaces_the_machine_list() -> None:
    r = files_only("gpu-rtx4090-gtx1080ti", {nvidia.FORCE_SM: "7.5"})
    assert r.properties["sm_arch"] == (
        "75_real",
        "74_real",
        "73_real",
        "72_real",
        "71_real",
        "70_real",
        "70_virtual",
    )
    assert r.properties["cuda_version_lower_bound"][0] == "12.8"
    assert caps(r)["flex_attention"] is False


@pytest.mark.parametrize(
    ("name", "value"),
    [(nvidia.FORCE_CUDA, "twelve"), (nvidia.FORCE_SM, "9"), (nvidia.FORCE_SM, "9.0.1")],
)
def test_bad_overrides_are_unknown(name: str, value: str) -> None:
    r = files_only("gpu-h100-open", {name: value})
    assert r.status == "unknown" and r.reason.startswith(f"{name}={value!r}")


def test_blank_override_counts_as_unset() -> None:
    r = files_only("gpu-h100-open", {nvidia.FORCE_CUDA: " ", nvidia.FORCE_SM: ""})
    assert r.properties["cuda_version_lower_bound"][0] == "12.4"


# -- with recorded NVML answers -----------------------------------------------------------------


def test_nvml_answers_win_over_tables() -> None:
    r = with_nvml("gpu-rtx4090-gtx1080ti", "rtx4090-gtx1080ti")
    assert r.status == "ok"
    assert r.properties["sm_arch"] == SM89 + SM61
    assert r.properties["cuda_version_lower_bound"][0] == "12.8"
    assert r.sources["sm_arch"] == "nvml" and r.sources["cuda_version_lower_bound"] == "nvml"
    assert devices(r) == [
        (0, "10de:2684", "NVIDIA GeForce RTX 4090", "8.9", "0000:01:00.0"),
        (1, "10de:1b06", "NVIDIA GeForce GTX 1080 Ti", "6.1", "0000:02:00.0"),
    ]
    assert [d.extra["driver"] for d in r.devices] == ["nvidia", "nvidia"]
    assert caps(r)["driver_version"] == "570.133.07"


def test_nvml_cuda_version_differs_from_the_table() -> None:
    """NVML reports what the installed user-mode driver supports; it wins over the table."""
    r = with_nvml("gpu-h100-open", "rtx4090-gtx1080ti")
    assert r.properties["cuda_version_lower_bound"][0] == "12.8"


def test_nvml_v1_fallback_end_to_end() -> None:
    r = with_nvml("gpu-rtx4090-gtx1080ti", "v2-missing")
    assert r.status == "ok" and r.properties["cuda_version_lower_bound"][0] == "12.8"


def test_nvml_capability_failure_falls_back_to_the_pci_table() -> None:
    r = with_nvml("gpu-rtx4090-gtx1080ti", "capability-failure")
    assert r.properties["sm_arch"] == SM89 + SM61
    assert r.sources["sm_arch"] == "nvml+pci-table"
    assert any("compute capability: not supported (3)" in n for n in r.capabilities["notes"])


def test_nvml_capability_failure_on_an_unknown_gpu_leaves_out_sm_arch() -> None:
    r = with_nvml("gpu-rtx4090-gtx1080ti", "capability-failure-unknown-id")
    assert r.status == "ok"
    assert "sm_arch" not in r.properties
    assert r.properties["cuda_version_lower_bound"][0] == "12.8"
    assert devices(r) == [(0, "10de:ffff", "NVIDIA Future GPU", None, "0000:01:00.0")]
    assert r.devices[0].properties == {}
    assert "GPU 0 (10de:ffff): compute capability unknown" in r.capabilities["notes"]


def test_nvml_driver_not_loaded_means_absent() -> None:
    r = with_nvml("gpu-rtx4090-gtx1080ti", "driver-not-loaded")
    assert r.status == "absent"
    assert r.reason == "the NVIDIA kernel driver is not loaded (NVML: driver not loaded)"


@pytest.mark.parametrize(
    ("recording", "why"),
    [
        ("library-not-found", "library not found (12)"),
        ("no-permission", "no permission (4)"),
        ("version-mismatch", "driver/library version mismatch (18)"),
        ("load-failure", "cannot open shared object file"),
        ("garbage-answers", "no answer"),
    ],
)
def test_nvml_failures_fall_back_to_files(recording: str, why: str) -> None:
    r = with_nvml("gpu-rtx4090-gtx1080ti", recording)
    assert r.status == "ok"
    assert r.properties["sm_arch"] == SM89 + SM61
    assert r.sources["sm_arch"] == "pci-table"
    (note,) = r.capabilities["notes"]
    assert note.startswith("NVML unusable (") and why in note


def test_nvml_sees_no_gpu() -> None:
    r = with_nvml("gpu-h100-open", "count-zero")
    assert r.status == "absent" and r.reason.startswith("NVML sees no GPU")


def test_nvml_timeout_is_unknown() -> None:
    transport = ReplayTransport.load(REPLAYS / "timeout.json")
    probe = Probe(MACHINES / "gpu-rtx4090-gtx1080ti", {"FITWHEEL_NATIVE_TIMEOUT": "0.1"}, True)
    try:
        r = nvidia.detect(probe, nvml_transport=transport)
    finally:
        transport.close()
    assert r.status == "unknown"
    assert r.reason.startswith("NVML: ") and "did not answer within 0.1 s" in r.reason
    assert r.properties == {}


def test_nvlink_from_nvml() -> None:
    r = with_nvml("gpu-h100-open", "h100-nvlink")
    assert caps(r)["peer_to_peer"] is True and caps(r)["interconnect"] == "nvlink"
    assert [d.extra["uuid"][-1] for d in r.devices] == ["0", "1", "2", "3"]


def test_no_nvlink_from_nvml_on_pcie_cards() -> None:
    r = with_nvml("gpu-rtx4090-gtx1080ti", "rtx4090-gtx1080ti")
    assert caps(r)["peer_to_peer"] is False and caps(r)["interconnect"] is None


def test_cuda_visible_devices_by_nvml_uuid() -> None:
    r = with_nvml(
        "gpu-rtx4090-gtx1080ti", "rtx4090-gtx1080ti", {"CUDA_VISIBLE_DEVICES": "GPU-bbbb"}
    )
    assert [d.pci_id for d in r.devices] == ["10de:1b06"]
    assert r.properties["sm_arch"] == SM61
    assert caps(r)["flex_attention"] is False


def test_wsl2_through_nvml() -> None:
    r = with_nvml("wsl2-rtx3080", "wsl2-rtx3080")
    assert r.status == "ok"
    assert r.properties["cuda_version_lower_bound"][0] == "12.6"
    assert r.properties["sm_arch"] == (*tuple(f"8{m}_real" for m in range(6, -1, -1)), "80_virtual")
    assert devices(r) == [(0, "10de:2206", "NVIDIA GeForce RTX 3080", "8.6", "0000:01:00.0")]
    assert caps(r)["driver_version"] is None


def test_wsl2_without_usable_nvml_is_unknown() -> None:
    r = with_nvml("wsl2-rtx3080", "load-failure")
    assert r.status == "unknown" and r.reason.startswith("WSL2: NVML unusable")


def test_nvml_replay_named_in_the_environment() -> None:
    env = {"FITWHEEL_NVML_REPLAY": str(REPLAYS / "wsl2-rtx3080.json")}
    r = nvidia.detect(Probe(MACHINES / "wsl2-rtx3080", env, allow_native=True))
    assert r.status == "ok" and r.sources["sm_arch"] == "nvml"


def test_real_nvml_absent_on_this_machine_falls_back_to_files() -> None:
    try:
        ctypes.CDLL("libnvidia-ml.so.1")
    except OSError:
        pass
    else:
        pytest.skip("this machine has NVML; the fixture would see the real GPUs")
    r = nvidia.detect(Probe(MACHINES / "gpu-h100-open", {}, allow_native=True))
    assert r.status == "ok" and r.sources["sm_arch"] == "pci-table"
    assert r.capabilities["notes"][0].startswith("NVML unusable (libnvidia-ml.so.1")


# -- the published torch variants match -------------------------------------------------------


def _compatible(result: ProviderResult, version: str) -> set[str]:
    data = json.loads((PUBLISHED / f"torch-{version}-variants.json").read_text())
    out = set()
    for label, props in data["variants"].items():
        wanted = props.get("nvidia")
        if not wanted:
            continue
        if all(set(vals) & set(result.properties.get(f, ())) for f, vals in wanted.items()):
            out.add(label)
    return out


@pytest.mark.parametrize("version", ["2.9.0", "2.10.0"])
@pytest.mark.parametrize(
    ("machine", "labels"),
    [
        ("gpu-h100-open", {"cuda12.6", "cuda12.8"}),
        ("gpu-a100-legacy", set()),
        ("gpu-rtx4090-gtx1080ti", {"cuda12.6", "cuda12.8"}),
        ("gpu-rtx5090-igpu", {"cuda12.8", "cuda13.0"}),
    ],
)
def test_torch_cuda_variants_that_match(machine: str, labels: set[str], version: str) -> None:
    assert _compatible(files_only(machine), version) == labels


# -- robustness ---------------------------------------------------------------------------------

FUZZ_EXAMPLES = int(os.environ.get("FITWHEEL_FUZZ_EXAMPLES", "25"))


_sysfs_text = st.one_of(
    st.binary(max_size=64),
    st.sampled_from([b"0x10de\n", b"0x030000\n", b"0x2684\n", b"0x030200", b"", b"0x"]),
)


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(
    version=st.binary(max_size=80),
    proc=st.one_of(
        st.binary(max_size=200),
        st.just(b"NVRM version: NVIDIA UNIX x86_64 Kernel Module  99999.1.2  x\n"),
    ),
    vendor=_sysfs_text,
    device=_sysfs_text,
    cls=_sysfs_text,
    info=st.binary(max_size=200),
    visible=st.one_of(st.none(), st.text(max_size=12)),
)
def test_garbage_never_crashes(
    version: bytes,
    proc: bytes,
    vendor: bytes,
    device: bytes,
    cls: bytes,
    info: bytes,
    visible: str | None,
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = {
            "sys/module/nvidia/version": version,
            "proc/driver/nvidia/version": proc,
            "sys/bus/pci/devices/0000:01:00.0/vendor": vendor,
            "sys/bus/pci/devices/0000:01:00.0/device": device,
            "sys/bus/pci/devices/0000:01:00.0/class": cls,
            "proc/driver/nvidia/gpus/0000:01:00.0/information": info,
            "dev/nvidia0": b"",
        }
        for path, data in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_bytes(data)
        (root / "sys/bus/pci/drivers/nvidia").mkdir(parents=True)
        (root / "sys/bus/pci/devices/0000:01:00.0/driver").symlink_to("../../drivers/nvidia")
        env = {} if visible is None else {"CUDA_VISIBLE_DEVICES": visible}
        r = nvidia.detect(Probe.for_sysroot(root, env))
    assert r.status in ("ok", "absent", "unknown")
    assert r.status == "ok" or r.reason
    assert not r.reason.startswith("unexpected")  # handled, not caught by the safety net
    for values in r.properties.values():
        for value in values:
            check_value(value)
