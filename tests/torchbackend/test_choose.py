"""The ``auto`` choice on every fixture machine, and the reasons it gives."""

from __future__ import annotations

import pytest
from packaging.specifiers import SpecifierSet

from fitwheel.platform.policy import target_from_profile
from fitwheel.platform.profile import Device, Profile
from fitwheel.torchbackend.choose import accepts_version, choose_backend, explicit_choice
from fitwheel.torchbackend.table import load_backend_table
from tests.torchbackend.machines import CPU_ONLY, EXPECTED, grace_hopper, machine_profile

TABLE = load_backend_table(cached=False)


def choose(profile: Profile, machine: str | None = None, **kwargs: object):  # type: ignore[no-untyped-def]
    target = target_from_profile(profile, str(kwargs.pop("policy", "all")))
    return choose_backend(
        TABLE,
        target,
        profile.devices,
        system="Linux",
        machine=machine or profile.environment.get("platform_machine") or "x86_64",
        python_version="3.11",
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_gpu_machines_get_what_a_careful_human_would_choose(name: str) -> None:
    choice = choose(machine_profile(name))
    expected = EXPECTED[name]
    if expected is None:
        assert choice.ordered == [] and choice.unserved
    else:
        backend, version = expected
        assert choice.backend == backend
        assert choice.series == version.rsplit(".", 1)[0]


@pytest.mark.parametrize("name", CPU_ONLY)
def test_cpu_only_machines_get_cpu(name: str) -> None:
    choice = choose(machine_profile(name))
    assert choice.ordered == ["cpu"] and not choice.unserved and not choice.fell_back


def test_grace_hopper_gets_an_arm_cuda_build() -> None:
    choice = choose(grace_hopper())
    # cu126 is not built for aarch64; cu130 needs a 580 driver
    assert choice.backend == "cu128"
    reasons = {v.backend: v.reason for v in choice.considered if v.series == "2.10"}
    assert reasons["cu126"] == (
        "published for Linux-x86_64, Windows-AMD64 only; the target is Linux-aarch64"
    )
    assert "rocm7.0" in reasons and "Linux-x86_64 only" in str(reasons["rocm7.0"])


def test_every_rejection_says_why() -> None:
    choice = choose(machine_profile("gpu-rtx4090-gtx1080ti"))
    reasons = {v.backend: v.reason for v in choice.considered if v.series == "2.10"}
    assert reasons["cu128"] == (
        "ships sm_70, sm_75, sm_80, sm_86, sm_90, sm_100, sm_120; nvidia GPU 1 (NVIDIA GeForce "
        "GTX 1080 Ti, compute capability 6.1) is sm_61"
    )
    assert reasons["cu130"] == (
        "needs an NVIDIA driver for CUDA 13.0 or newer (>= 580.65.06); the driver here "
        "supports CUDA 12.8"
    )
    assert reasons["cu126"] is None
    assert reasons["rocm7.0"] == "no AMD GPU here"


def test_the_gpu_policy_decides_which_gpus_count() -> None:
    profile = machine_profile("gpu-rtx4090-gtx1080ti")
    # only the RTX 4090: the driver (CUDA 12.8) still rules out cu130
    assert choose(profile, policy="device=0").backend == "cu128"
    assert choose(profile, policy="any").backend == "cu128"
    assert choose(profile, policy="device=1").backend == "cu126"


def test_rocm_needs_the_installed_rocm() -> None:
    choice = choose(machine_profile("gpu-mi300x"))
    reasons = {(v.series, v.backend): v.reason for v in choice.considered}
    assert reasons[("2.10", "rocm7.0")] == "needs ROCm 7.0; ROCm 6.4 is installed"
    assert reasons[("2.9", "rocm6.3")] == "needs ROCm 6.3; ROCm 6.4 is installed"
    assert choice.notes == [
        "no GPU build of torch 2.10 runs here; torch 2.9 is the newest release with one"
    ]


def test_the_requested_version_is_the_one_judged() -> None:
    profile = machine_profile("gpu-mi355x-rocm7")
    # gfx950 arrived with torch 2.10; torch 2.9 has no build for it
    assert choose(profile).backend == "rocm7.0"
    pinned = choose(profile, torch_spec=SpecifierSet("==2.9.0"))
    assert pinned.ordered == [] and pinned.series == "2.9"
    h100 = machine_profile("gpu-h100-open")
    assert choose(h100, torch_spec=SpecifierSet("<2.9")).ordered == ["cu129", "cu128", "cu126"]
    newer = choose(h100, torch_spec=SpecifierSet(">=2.11"))
    assert newer.backend == "cu128" and "newer than the backend table" in newer.notes[0]
    assert "newer than" in choose(h100, torch_spec=SpecifierSet("==3.0.*")).notes[0]
    older = choose(h100, torch_spec=SpecifierSet("==2.7.1"))
    assert older.series == "2.8" and "older than the backend table" in older.notes[0]


def test_an_unsupported_gpu_is_not_quietly_a_cpu_machine() -> None:
    profile = machine_profile("gpu-a100-legacy")
    choice = choose(profile)
    assert choice.ordered == [] and len(choice.unserved) == 2
    accepted = choose(profile, allow_fallback=True)
    assert accepted.ordered == ["cpu"] and accepted.fell_back


def test_an_integrated_gpu_alone_does_not_block_cpu() -> None:
    igpu = Device(
        "intel",
        0,
        "Intel UHD Graphics 770",
        "8086:a780",
        {"intel": {"device_ip": ("12.2.0",)}},
        {"integrated": True},
    )
    profile = Profile({"intel": {"device_ip": ("12.2.0",)}}, (igpu,))
    choice = choose(profile)
    assert choice.ordered == ["cpu"] and not choice.fell_back
    assert "integrated GPU" in choice.notes[0]


def test_macos_and_windows() -> None:
    cpu = Profile({})
    assert choose(cpu, machine="arm64").ordered == ["cpu"]  # Linux calls it aarch64
    mac = choose_backend(TABLE, target_from_profile(cpu), (), system="Darwin", machine="arm64")
    assert mac.ordered == ["cpu"]
    h100 = machine_profile("gpu-h100-open")
    win = choose_backend(
        TABLE, target_from_profile(h100), h100.devices, system="Windows", machine="AMD64"
    )
    assert win.backend == "cu128"
    intel = machine_profile("gpu-intel-max")
    mac_intel = choose_backend(
        TABLE, target_from_profile(intel), intel.devices, system="Darwin", machine="arm64"
    )
    assert mac_intel.ordered == []  # an Intel GPU on a Mac: no xpu build there


def test_explicit_backends_are_taken_as_named() -> None:
    assert explicit_choice("cu128", TABLE).ordered == ["cu128"]
    assert "not in fitwheel's backend table" in explicit_choice("cu999", TABLE).notes[0]


def test_versions_on_a_backend_index_that_do_not_run_are_dropped() -> None:
    from packaging.version import Version

    profile = machine_profile("gpu-rtx4090-gtx1080ti")
    target = target_from_profile(profile)

    def why(backend: str, version: str) -> str | None:
        return accepts_version(
            TABLE,
            backend,
            Version(version),
            target,
            profile.devices,
            system="Linux",
            machine="x86_64",
            python_version="3.11",
        )

    assert why("cu126", "2.9.0+cu126") is None
    assert "sm_61" in str(why("cu128", "2.9.0+cu128"))
    assert why("cu128", "2.5.1+cu128") is None  # older than the table: not judged
    assert "sm_61" in str(why("cu128", "2.12.0+cu128"))  # newer: judged by the newest
