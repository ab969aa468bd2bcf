"""Multi-GPU policies: from a profile to a selection target."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.platform.policy import PolicyError, restrict_profile, target_from_profile
from fitwheel.platform.profile import Device, Profile, parse_profile
from fitwheel.variants.ordering import DeviceConstraint, order_variants
from fitwheel.variants.reading import loads_variant_info

TORCH_29 = Path(__file__).parents[1] / "variants/data/published/torch-2.9.0-variants.json"

CUDA = ("12.8", "12.7", "12.6", "12.5", "12.4", "12.3", "12.2", "12.1", "12.0", "12")
SM_4090 = (*tuple(f"8{m}_real" for m in range(9, -1, -1)), "80_virtual")
SM_1080TI = ("61_real", "60_real", "60_virtual")


def two_gpus() -> Profile:
    return Profile(
        properties={
            "nvidia": {"cuda_version_lower_bound": CUDA, "sm_arch": SM_4090 + SM_1080TI},
            "x86_64": {"level": ("v3", "v2", "v1")},
        },
        devices=(
            Device(
                "nvidia",
                0,
                "NVIDIA GeForce RTX 4090",
                "10de:2684",
                {"nvidia": {"sm_arch": SM_4090}},
            ),
            Device(
                "nvidia",
                1,
                "NVIDIA GeForce GTX 1080 Ti",
                "10de:1b06",
                {"nvidia": {"sm_arch": SM_1080TI}},
            ),
        ),
        environment={"platform_system": "Linux", "platform_machine": "x86_64"},
    )


def test_all_constrains_every_device() -> None:
    target = target_from_profile(two_gpus(), "all")
    assert target.device_constraints == (
        DeviceConstraint(
            "nvidia",
            "nvidia GPU 0 (NVIDIA GeForce RTX 4090, sm_arch 89_real)",
            {"sm_arch": SM_4090},
        ),
        DeviceConstraint(
            "nvidia",
            "nvidia GPU 1 (NVIDIA GeForce GTX 1080 Ti, sm_arch 61_real)",
            {"sm_arch": SM_1080TI},
        ),
    )
    assert target.supported["nvidia"]["sm_arch"] == SM_4090 + SM_1080TI
    assert target.environment == {"platform_system": "Linux", "platform_machine": "x86_64"}


def test_all_is_the_default() -> None:
    assert target_from_profile(two_gpus()) == target_from_profile(two_gpus(), "all")


def test_any_is_the_union_without_constraints() -> None:
    target = target_from_profile(two_gpus(), "any")
    assert target.device_constraints == ()
    assert target.supported == two_gpus().properties


@pytest.mark.parametrize(("spec", "sm"), [("device=0", SM_4090), ("device=nvidia:1", SM_1080TI)])
def test_device_n_restricts_per_device_features(spec: str, sm: tuple[str, ...]) -> None:
    target = target_from_profile(two_gpus(), spec)
    assert target.device_constraints == ()
    assert target.supported["nvidia"]["sm_arch"] == sm
    # machine-wide features stay
    assert target.supported["nvidia"]["cuda_version_lower_bound"] == CUDA
    assert target.supported["x86_64"] == {"level": ("v3", "v2", "v1")}


def test_device_n_drops_other_vendors_per_device_features() -> None:
    profile = two_gpus()
    amd = Device("amd", 0, "MI300X", properties={"amd": {"gfx_arch": ("gfx942",)}})
    mixed = Profile(
        {**profile.properties, "amd": {"gfx_arch": ("gfx942",), "rocm_version": ("6.4",)}},
        (*profile.devices, amd),
    )
    target = target_from_profile(mixed, "device=1")
    assert target.supported["amd"] == {"gfx_arch": (), "rocm_version": ("6.4",)}
    assert target.supported["nvidia"]["sm_arch"] == SM_1080TI


def test_device_n_does_not_create_unsupported_namespaces() -> None:
    profile = two_gpus()
    listed_only = Device("amd", 0, "MI300X", properties={"amd": {"gfx_arch": ("gfx942",)}})
    mixed = Profile(profile.properties, (*profile.devices, listed_only))
    target = target_from_profile(mixed, "device=amd:0")
    assert "amd" not in target.supported
    assert target.supported["nvidia"]["sm_arch"] == ()


def test_restrict_profile_keeps_one_device() -> None:
    restricted = restrict_profile(two_gpus(), "device=1")
    assert [d.name for d in restricted.devices] == ["NVIDIA GeForce GTX 1080 Ti"]
    assert restricted.properties["nvidia"]["sm_arch"] == SM_1080TI
    assert restrict_profile(two_gpus(), "all") == two_gpus()


@pytest.mark.parametrize("spec", ["device=2", "device=amd:0", "device=x", "some", "device="])
def test_bad_policies(spec: str) -> None:
    with pytest.raises(PolicyError) as info:
        target_from_profile(two_gpus(), spec)
    assert info.value.exit_code == 2


def test_properties_only_profile() -> None:
    profile = parse_profile({"properties": {"x86_64": {"level": ["v2", "v1"]}}}, "p.json")
    for policy in ("all", "any"):
        target = target_from_profile(profile, policy)
        assert target.device_constraints == ()
        assert target.supported == {"x86_64": {"level": ("v2", "v1")}}
        assert target.environment is None


def test_enabled_optional_is_passed_through() -> None:
    target = target_from_profile(two_gpus(), "any", enabled_optional=frozenset({"blas"}))
    assert target.enabled_optional == frozenset({"blas"})


def _torch_ordering(policy: str, profile: Profile | None = None) -> list[str]:
    info = loads_variant_info(TORCH_29.read_bytes(), str(TORCH_29), "index")
    result = order_variants(info, target_from_profile(profile or two_gpus(), policy))
    return [label for label in result.labels if label != "null"]


def test_torch_29_on_4090_and_1080ti_all() -> None:
    # cuda12.6 (60_real + 86_real) is the only GPU build that runs on both cards
    assert _torch_ordering("all") == ["cuda12.6"]


def test_torch_29_on_4090_and_1080ti_any_and_device() -> None:
    assert set(_torch_ordering("any")) == {"cuda12.6", "cuda12.8"}
    assert set(_torch_ordering("device=0")) == {"cuda12.6", "cuda12.8"}
    assert _torch_ordering("device=1") == ["cuda12.6"]


def radeon_with_igpu() -> Profile:
    return Profile(
        properties={"amd": {"gfx_arch": ("gfx1100", "gfx1036"), "rocm_version": ("6.4",)}},
        devices=(
            Device(
                "amd", 0, "Radeon RX 7900 XTX", "1002:744c", {"amd": {"gfx_arch": ("gfx1100",)}}
            ),
            Device(
                "amd",
                1,
                "",
                "1002:164e",
                {"amd": {"gfx_arch": ("gfx1036",)}},
                {"integrated": True},
            ),
        ),
    )


def test_all_ignores_an_integrated_gpu_beside_a_discrete_one() -> None:
    target = target_from_profile(radeon_with_igpu(), "all")
    assert [c.device for c in target.device_constraints] == [
        "amd GPU 0 (Radeon RX 7900 XTX, gfx_arch gfx1100)"
    ]
    assert _torch_ordering("all", radeon_with_igpu()) == ["rocm6.4"]
    # chosen explicitly, the iGPU is held to its own arch, which no ROCm build of torch 2.9 has
    assert _torch_ordering("device=1", radeon_with_igpu()) == []


def test_all_counts_an_integrated_gpu_that_is_alone() -> None:
    only_igpu = Profile(
        properties={"amd": {"gfx_arch": ("gfx1036",), "rocm_version": ("6.4",)}},
        devices=(radeon_with_igpu().devices[1],),
    )
    assert len(target_from_profile(only_igpu, "all").device_constraints) == 1
    assert _torch_ordering("all", only_igpu) == []
