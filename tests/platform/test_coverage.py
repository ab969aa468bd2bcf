"""The unserved-GPU check: a GPU the package has builds for, none of which runs on it."""

from __future__ import annotations

from pathlib import Path

from fitwheel.platform.coverage import NO_WHEEL, unserved_gpus
from fitwheel.platform.policy import target_from_profile
from fitwheel.platform.profile import Device, Profile
from fitwheel.variants.ordering import order_variants
from fitwheel.variants.reading import loads_variant_info

TORCH_29 = Path(__file__).parents[1] / "variants/data/published/torch-2.9.0-variants.json"
K80_SM = ("37_real", "36_real", "35_real", "30_real", "30_virtual")


def profile(*devices: Device, nvidia: dict[str, tuple[str, ...]] | None = None) -> Profile:
    props = {"nvidia": nvidia} if nvidia else {}
    return Profile(properties=props, devices=devices)


def k80() -> Device:
    return Device(
        "nvidia",
        0,
        "Tesla K80",
        "10de:102d",
        {"nvidia": {"sm_arch": K80_SM}},
        {"compute_capability": "3.7"},
    )


def check(prof: Profile) -> tuple[list[str], object]:
    info = loads_variant_info(TORCH_29.read_bytes(), str(TORCH_29))
    ordering = order_variants(info, target_from_profile(prof))
    return ordering.labels, unserved_gpus(info, ordering.labels, ordering.rejected, prof.devices)


def test_a_gpu_no_build_runs_on_is_reported_with_what_is_offered() -> None:
    labels, unserved = check(
        profile(k80(), nvidia={"cuda_version_lower_bound": ("12.4", "12.0"), "sm_arch": K80_SM})
    )
    assert labels == ["null"]
    assert unserved is not None
    assert unserved.namespaces == ("nvidia",)
    assert [d.describe() for d in unserved.devices] == [
        "nvidia GPU 0 (Tesla K80, compute capability 3.7)"
    ]
    assert list(unserved.offered) == ["cuda12.6", "cuda12.8", "cuda13.0"]
    assert "built for nvidia :: sm_arch 50_real 60_real" in unserved.offered["cuda12.6"]
    message = unserved.describe("torch 2.9.0")
    assert "Tesla K80" in message and "cuda13.0:" in message


def test_a_gpu_with_a_fitting_build_is_served() -> None:
    sm = ("90_real", "90_virtual")
    h100 = Device("nvidia", 0, "H100", "10de:2330", {"nvidia": {"sm_arch": sm}})
    labels, unserved = check(
        profile(h100, nvidia={"cuda_version_lower_bound": ("13.0", "12.0"), "sm_arch": sm})
    )
    assert labels[0] == "cuda13.0"
    assert unserved is None


def test_no_gpu_or_a_gpu_the_package_ignores_is_not_reported() -> None:
    assert check(profile())[1] is None
    ascend = Device("ascend", 0, "Ascend 910B", "19e5:d802", {"ascend": {"npu_type": ("910b",)}})
    assert check(profile(ascend))[1] is None


def test_a_label_without_a_reason_is_said_to_have_no_wheel() -> None:
    info = loads_variant_info(TORCH_29.read_bytes(), str(TORCH_29))
    unserved = unserved_gpus(info, ["null"], {}, [k80()])
    assert unserved is not None
    assert unserved.offered["cuda12.6"].startswith(NO_WHEEL)
