"""The amd provider on the fixture machines."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitwheel.platform import amd
from fitwheel.platform.probe import Probe
from fitwheel.platform.result import ProviderResult
from fitwheel.variants.model import check_value

HERE = Path(__file__).parent
MACHINES = HERE / "machines"
PUBLISHED = HERE.parent / "variants" / "data" / "published"


def detect(name: str, env: dict[str, str] | None = None) -> ProviderResult:
    return amd.detect(Probe.for_sysroot(MACHINES / name, env or {}))


def devices(result: ProviderResult) -> list[tuple[Any, ...]]:
    return [
        (
            d.index,
            d.pci_id,
            d.properties["amd"]["gfx_arch"],
            d.extra["compute_units"],
            d.extra["integrated"],
            d.extra.get("pci_address"),
        )
        for d in result.devices
    ]


def caps(result: ProviderResult) -> dict[str, Any]:
    return {k: v for k, v in result.capabilities.items() if k != "notes"}


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (90402, "gfx942"),
        (90010, "gfx90a"),
        (90012, "gfx90c"),
        (90500, "gfx950"),
        (90000, "gfx900"),
        (90006, "gfx906"),
        (100300, "gfx1030"),
        (100306, "gfx1036"),
        (110000, "gfx1100"),
        (110501, "gfx1151"),
        (120001, "gfx1201"),
        (0, None),
        (90016, None),
        (91600, None),
        (999999999, None),
    ],
)
def test_gfx_name(value: int, name: str | None) -> None:
    assert amd.gfx_name(value) == name


def test_parse_properties_ignores_noise() -> None:
    text = "simd_count 192\nbad line here\nname gfx1100\ngfx_target_version 110000\n\x00\x01\n"
    assert amd.parse_properties(text) == {"simd_count": 192, "gfx_target_version": 110000}


def test_mi300x_with_xgmi_and_rocm_through_alternatives_links() -> None:
    r = detect("gpu-mi300x")
    assert r.status == "ok" and r.reason == ""
    assert r.properties == {"gfx_arch": ("gfx942",), "rocm_version": ("6.4",)}
    assert devices(r) == [
        (0, "1002:74a1", ("gfx942",), 304, False, "0000:1b:00.0"),
        (1, "1002:74a1", ("gfx942",), 304, False, "0000:3d:00.0"),
    ]
    assert [d.extra["xgmi_peers"] for d in r.devices] == [[2], [1]]
    assert caps(r) == {
        "rocm_version": "6.4",
        "mx_fp8": False,
        "mx_fp4": False,
        "flex_attention": True,
        "peer_to_peer": True,
        "interconnect": "xgmi",
    }
    assert r.sources == {
        "gfx_arch": "/sys/class/kfd/kfd/topology/nodes",
        "rocm_version": "/opt/rocm/.info/version",
    }


def test_one_visible_mi300x_has_no_peer() -> None:
    r = detect("gpu-mi300x", {"ROCR_VISIBLE_DEVICES": "1"})
    assert [d.extra["pci_address"] for d in r.devices] == ["0000:3d:00.0"]
    assert caps(r)["peer_to_peer"] is False


def test_radeon_before_its_igpu() -> None:
    r = detect("gpu-radeon-igpu")
    assert r.status == "ok"
    assert r.properties == {"gfx_arch": ("gfx1100", "gfx1036"), "rocm_version": ("6.3",)}
    assert devices(r) == [
        (0, "1002:744c", ("gfx1100",), 96, False, "0000:03:00.0"),
        (1, "1002:164e", ("gfx1036",), 2, True, "0000:13:00.0"),
    ]
    assert r.devices[0].name == "Radeon RX 7900 XTX"
    assert caps(r)["flex_attention"] is True and caps(r)["peer_to_peer"] is False


@pytest.mark.parametrize(
    ("env", "archs"),
    [
        ({"HIP_VISIBLE_DEVICES": "1"}, ("gfx1036",)),
        ({"ROCR_VISIBLE_DEVICES": "0"}, ("gfx1100",)),
        ({"ROCR_VISIBLE_DEVICES": "1,0"}, ("gfx1100", "gfx1036")),
        # HIP indices count the devices ROCR left
        ({"ROCR_VISIBLE_DEVICES": "1", "HIP_VISIBLE_DEVICES": "0"}, ("gfx1036",)),
        ({"CUDA_VISIBLE_DEVICES": "1"}, ("gfx1036",)),
        ({"HIP_VISIBLE_DEVICES": "0", "CUDA_VISIBLE_DEVICES": "1"}, ("gfx1100",)),
        ({"ROCR_VISIBLE_DEVICES": "GPU-9f1e2d3c4b5a6978"}, ("gfx1100",)),
        ({"ROCR_VISIBLE_DEVICES": "0,9,1"}, ("gfx1100",)),
    ],
)
def test_visible_devices(env: dict[str, str], archs: tuple[str, ...]) -> None:
    r = detect("gpu-radeon-igpu", env)
    assert r.status == "ok" and r.properties["gfx_arch"] == archs


@pytest.mark.parametrize("value", ["", "-1", "5", "GPU-0000000000000000"])
def test_visible_devices_hiding_everything(value: str) -> None:
    r = detect("gpu-radeon-igpu", {"HIP_VISIBLE_DEVICES": value})
    assert r.status == "absent" and r.reason == f"HIP_VISIBLE_DEVICES={value!r} hides every GPU"


def test_gfx950_with_rocm_7_found_through_rocm_path() -> None:
    r = detect("gpu-mi355x-rocm7", {"ROCM_PATH": "/opt/rocm-7.0.2/"})
    assert r.properties == {"gfx_arch": ("gfx950",), "rocm_version": ("7.0",)}
    assert devices(r) == [(0, "1002:75a3", ("gfx950",), 256, False, "0000:05:00.0")]
    assert caps(r)["mx_fp8"] is True and caps(r)["mx_fp4"] is True
    assert r.sources["rocm_version"] == "/opt/rocm-7.0.2/.info/version"


def test_gfx950_without_rocm_reports_the_arch_alone() -> None:
    r = detect("gpu-mi355x-rocm7")
    assert r.status == "ok"
    assert r.properties == {"gfx_arch": ("gfx950",)}
    assert caps(r)["mx_fp8"] is False and caps(r)["rocm_version"] is None
    assert any("no ROCm installation" in n for n in r.capabilities["notes"])


def test_gfx950_with_rocm_6_has_no_mx_formats() -> None:
    r = detect("gpu-mi355x-rocm7", {"AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION": "6.4.1"})
    assert r.properties["rocm_version"] == ("6.4",)
    assert caps(r)["mx_fp8"] is False


def test_rocm_version_from_the_header(tmp_path: Path) -> None:
    header = tmp_path / "opt/rocm/include/rocm-core/rocm_version.h"
    header.parent.mkdir(parents=True)
    header.write_text("#define ROCM_VERSION_MAJOR 6\n#define ROCM_VERSION_MINOR 2\n")
    assert amd.read_rocm_version(Probe.for_sysroot(tmp_path)) == (
        "6.2",
        "/opt/rocm/include/rocm-core/rocm_version.h",
    )


@pytest.mark.parametrize("name", ["nogpu-server", "gpu-h100-open", "gpu-intel-max", "wsl2-rtx3080"])
def test_no_amd_gpu(name: str) -> None:
    r = detect(name)
    assert r.status == "absent" and r.reason == "no AMD GPU on the PCI bus"


def test_garbage_kfd_is_unknown() -> None:
    r = detect("gpu-garbage")
    assert r.status == "unknown"
    assert (
        r.reason == "KFD topology unreadable: KFD node 1: unreadable gfx_target_version 999999999"
    )


def _copy(name: str, tmp_path: Path) -> Path:
    root = tmp_path / name
    shutil.copytree(MACHINES / name, root, symlinks=True)
    return root


def test_amdgpu_without_kfd_is_unknown(tmp_path: Path) -> None:
    root = _copy("gpu-radeon-igpu", tmp_path)
    shutil.rmtree(root / "sys/class/kfd")
    r = amd.detect(Probe.for_sysroot(root))
    assert r.status == "unknown" and "no KFD topology" in r.reason
    assert [d.pci_id for d in r.devices] == ["1002:744c", "1002:164e"]


def test_container_without_dev_kfd(tmp_path: Path) -> None:
    root = _copy("gpu-mi300x", tmp_path)
    (root / "dev/kfd").unlink()
    (root / ".dockerenv").write_text("")
    r = amd.detect(Probe.for_sysroot(root))
    assert r.status == "absent" and r.reason.startswith("in a container without /dev/kfd")
    # the same tree outside a container: the device node may be created on first use
    (root / ".dockerenv").unlink()
    assert amd.detect(Probe.for_sysroot(root)).status == "ok"


@pytest.mark.parametrize(
    "name", ["AMD_VARIANT_PROVIDER_FORCE_GFX_ARCH", "AMD_VARIANT_PROVIDER_GFX_ARCH"]
)
def test_gfx_override(name: str) -> None:
    r = detect(
        "nogpu-server", {name: "gfx90a; gfx1100,gfx90a", "AMD_VARIANT_PROVIDER_ROCM_VERSION": "6.3"}
    )
    assert r.status == "ok"
    assert r.properties == {"gfx_arch": ("gfx90a", "gfx1100"), "rocm_version": ("6.3",)}
    assert r.sources == {
        "gfx_arch": f"override:{name}",
        "rocm_version": "override:AMD_VARIANT_PROVIDER_ROCM_VERSION",
    }


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("AMD_VARIANT_PROVIDER_FORCE_GFX_ARCH", "navi31"),
        ("AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION", "7"),
        ("AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION", "rocm6.4"),
    ],
)
def test_bad_overrides(name: str, value: str) -> None:
    r = detect("gpu-mi300x", {name: value})
    assert r.status == "unknown" and r.reason.startswith(f"{name}={value!r}")


def test_rocm_override_keeps_detected_archs() -> None:
    r = detect("gpu-mi300x", {"AMD_VARIANT_PROVIDER_FORCE_ROCM_VERSION": "7.1.0"})
    assert r.properties == {"gfx_arch": ("gfx942",), "rocm_version": ("7.1",)}


def _compatible(result: ProviderResult, version: str) -> set[str]:
    data = json.loads((PUBLISHED / f"torch-{version}-variants.json").read_text())
    return {
        label
        for label, props in data["variants"].items()
        if props.get("amd")
        and all(set(v) & set(result.properties.get(f, ())) for f, v in props["amd"].items())
    }


@pytest.mark.parametrize(
    ("machine", "env", "version", "labels"),
    [
        ("gpu-mi300x", {}, "2.9.0", {"rocm6.4"}),
        ("gpu-radeon-igpu", {}, "2.9.0", {"rocm6.3"}),
        ("gpu-mi355x-rocm7", {"ROCM_PATH": "/opt/rocm-7.0.2"}, "2.10.0", {"rocm7.0"}),
        ("gpu-mi355x-rocm7", {"ROCM_PATH": "/opt/rocm-7.0.2"}, "2.9.0", set()),
    ],
)
def test_torch_rocm_variants_that_match(
    machine: str, env: dict[str, str], version: str, labels: set[str]
) -> None:
    assert _compatible(detect(machine, env), version) == labels


# -- robustness ---------------------------------------------------------------------------------

FUZZ_EXAMPLES = int(os.environ.get("FITWHEEL_FUZZ_EXAMPLES", "25"))
_lines = st.lists(
    st.tuples(
        st.sampled_from(
            [
                "gfx_target_version",
                "simd_count",
                "simd_per_cu",
                "cpu_cores_count",
                "device_id",
                "location_id",
                "domain",
                "unique_id",
                "type",
                "node_to",
                "garbage",
            ]
        ),
        st.one_of(st.integers(min_value=0, max_value=2**70), st.text(max_size=6)),
    ),
    max_size=8,
).map(lambda pairs: "".join(f"{k} {v}\n" for k, v in pairs).encode())


@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(
    nodes=st.lists(st.one_of(_lines, st.binary(max_size=80)), min_size=1, max_size=3),
    link=st.one_of(_lines, st.binary(max_size=40)),
    version=st.binary(max_size=30),
    visible=st.one_of(st.none(), st.text(max_size=10)),
)
def test_garbage_never_crashes(
    nodes: list[bytes], link: bytes, version: bytes, visible: str | None
) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        base = root / "sys/class/kfd/kfd/topology/nodes"
        for i, data in enumerate(nodes):
            (base / str(i) / "io_links/0").mkdir(parents=True)
            (base / str(i) / "properties").write_bytes(data)
            (base / str(i) / "io_links/0/properties").write_bytes(link)
        (root / "opt/rocm/.info").mkdir(parents=True)
        (root / "opt/rocm/.info/version").write_bytes(version)
        env = {} if visible is None else {"HIP_VISIBLE_DEVICES": visible}
        r = amd.detect(Probe.for_sysroot(root, env))
    assert r.status in ("ok", "absent", "unknown")
    assert r.status == "ok" or r.reason
    assert not r.reason.startswith("unexpected")  # handled, not caught by the safety net
    for values in r.properties.values():
        for value in values:
            check_value(value)
