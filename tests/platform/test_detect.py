"""detect(): all providers under one bound, failures contained, the profile it builds."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import pytest

from fitwheel.platform import detect as detect_mod
from fitwheel.platform.cache import cached_profile_json
from fitwheel.platform.detect import (
    PROVIDER_MODULES,
    available_namespaces,
    detect,
    registered_providers,
)
from fitwheel.platform.overrides import Overrides
from fitwheel.platform.probe import Probe
from fitwheel.platform.profile import Device, parse_profile
from fitwheel.platform.result import ProviderResult
from fitwheel.variants.model import check_feature, check_value

MACHINES = Path(__file__).parent / "machines"
CPU_ONLY = {ns: m for ns, m in PROVIDER_MODULES.items() if ns in ("x86_64", "aarch64", "libc")}


def on(machine: str, **kwargs):
    kwargs.setdefault("providers", registered_providers(CPU_ONLY))
    kwargs.setdefault("overrides", Overrides())
    return detect(Probe.for_sysroot(MACHINES / machine), **kwargs)


def test_profile_of_an_arm_host() -> None:
    profile = on("arm-grace-neoverse-v2").profile()
    assert list(profile.properties) == ["aarch64", "libc"]
    assert profile.properties["aarch64"]["version"][0] == "9.0a"
    assert profile.properties["libc"]["glibc"][0] == "2.35"
    assert profile.devices == ()
    assert profile.environment == {
        "os_name": "posix",
        "platform_system": "Linux",
        "sys_platform": "linux",
        "platform_machine": "aarch64",
        "platform_release": "6.8.0-1013-nvidia-64k",
        "platform_version": "#1 SMP PREEMPT_DYNAMIC",
    }
    assert profile.sources == {
        "aarch64": "/proc/self/auxv AT_HWCAP/AT_HWCAP2",
        "libc": "/lib/aarch64-linux-gnu/libc.so.6",
    }


def test_qemu_user_machine_is_the_userland_one() -> None:
    detection = on("arm-qemu-user-on-x86")
    assert detection.environment["platform_machine"] == "aarch64"
    assert detection.results["x86_64"].status == "absent"
    assert "sme2" in detection.profile().properties["aarch64"]


def test_machine_from_cpuinfo_when_nothing_else_tells() -> None:
    # no loader, no /proc/sys/kernel/arch: the lm flag in cpuinfo
    detection = on("x86-v2-westmere")
    assert detection.environment["platform_machine"] == "x86_64"
    assert detection.profile().properties["x86_64"]["level"] == ("v2", "v1")


def test_profile_round_trips_through_json() -> None:
    profile = on("x86-v4-sapphire-rapids").profile()
    again = parse_profile(json.loads(profile.dumps()), "profile.json")
    assert again == profile
    assert list(again.properties["x86_64"]) == list(profile.properties["x86_64"])


def test_unknown_namespaces_are_left_out_with_their_reason() -> None:
    detection = on("cpu-unreadable")
    profile = detection.profile()
    assert profile.properties == {}
    assert profile.sources["x86_64"].startswith("unknown: /proc/cpuinfo")


def test_capabilities() -> None:
    caps = on("x86-v4-kvm-epyc-guest").capabilities()
    assert caps["x86_64"]["vendor"] == "AuthenticAMD"
    assert caps["x86_64"]["virtualized"] is True


def ok(ns: str):
    def provider(probe: Probe) -> ProviderResult:
        return ProviderResult(ns, "ok", properties={"level": ("v1",)}, sources={"*": "test"})

    return provider


def test_a_raising_provider_is_contained() -> None:
    def broken(probe: Probe) -> ProviderResult:
        raise OSError(5, "Input/output error")

    detection = on("x86-v1-core2", providers={"nvidia": broken, "x86_64": ok("x86_64")})
    assert detection.results["nvidia"].status == "unknown"
    assert "OSError" in detection.results["nvidia"].reason
    assert detection.profile().properties == {"x86_64": {"level": ("v1",)}}


def test_a_hanging_provider_is_cut_off_at_the_bound() -> None:
    release = threading.Event()

    def hangs(probe: Probe) -> ProviderResult:
        release.wait(60)
        return ProviderResult("nvidia", "ok", properties={"sm_arch": ("90_real",)})

    try:
        detection = on(
            "x86-v1-core2", providers={"nvidia": hangs, "x86_64": ok("x86_64")}, timeout=0.2
        )
    finally:
        release.set()
    assert detection.results["nvidia"].status == "unknown"
    assert detection.results["nvidia"].reason == "no answer within 0.2 s"
    assert detection.results["x86_64"].status == "ok"


def test_timeout_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def hangs(probe: Probe) -> ProviderResult:
        release.wait(60)
        return ProviderResult("amd", "absent")

    monkeypatch.setenv("FITWHEEL_DETECT_TIMEOUT", "0.1")
    try:
        detection = on("x86-v1-core2", providers={"amd": hangs})
    finally:
        release.set()
    assert detection.results["amd"].reason == "no answer within 0.1 s"


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (None, "NoneType"),
        (ProviderResult("amd", "ok"), "namespace 'amd'"),
        (ProviderResult("nvidia", "ok", properties={"sm arch": ("1",)}), "malformed"),
        (ProviderResult("nvidia", "ok", properties={"sm_arch": ("90 real",)}), "malformed"),
        (ProviderResult("nvidia", "ok", properties={"sm_arch": ["90_real"]}), "malformed"),  # type: ignore[dict-item]
        (ProviderResult("nvidia", "maybe"), "status"),  # type: ignore[arg-type]
        (
            ProviderResult(
                "nvidia", "ok", devices=[Device("nvidia", 0, properties={"nvidia": {"x": ("A",)}})]
            ),
            "malformed",
        ),
    ],
)
def test_malformed_answers_become_unknown(answer: object, message: str) -> None:
    detection = on("x86-v1-core2", providers={"nvidia": lambda probe: answer})
    assert detection.results["nvidia"].status == "unknown"
    assert message in detection.results["nvidia"].reason
    assert detection.profile().properties == {}


def test_registry_skips_missing_modules_and_contains_broken_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "fw_broken_provider.py").write_text("raise RuntimeError('half-installed')\n")
    (tmp_path / "fw_needs_missing.py").write_text("import fw_no_such_dependency\n")
    (tmp_path / "fw_no_detect.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    funcs = registered_providers(
        {
            "nvidia": "fitwheel.platform.no_such_provider",
            "amd": "fw_broken_provider",
            "intel": "fw_needs_missing",
            "blas": "fw_no_detect",
            "x86_64": "fitwheel.platform.x86_64",
        }
    )
    assert sorted(funcs) == ["amd", "intel", "x86_64"]
    detection = on("x86-v1-core2", providers=funcs)
    assert "half-installed" in detection.results["amd"].reason
    assert "fw_no_such_dependency" in detection.results["intel"].reason
    assert detection.results["x86_64"].status == "ok"
    for name in ("fw_broken_provider", "fw_needs_missing", "fw_no_detect"):
        sys.modules.pop(name, None)


def test_properties_of_a_namespace_that_is_not_ok_are_ignored() -> None:
    def absent_with_device(probe: Probe) -> ProviderResult:
        sm = {"nvidia": {"sm_arch": ("90_real",)}}
        return ProviderResult(
            "nvidia",
            "absent",
            properties={"sm_arch": ("90_real",)},
            devices=[Device("nvidia", 0, properties=sm)],
            reason="no driver in this container",
        )

    profile = on("x86-v1-core2", providers={"nvidia": absent_with_device}).profile()
    assert profile.properties == {}
    assert [d.vendor for d in profile.devices] == ["nvidia"]


def test_namespace_order_follows_the_registry() -> None:
    detection = on("x86-v1-core2", providers={"b": ok("b"), "a": ok("a")})
    assert list(detection.profile().properties) == ["b", "a"]


MACHINE_NAMES = sorted(
    p.name for p in MACHINES.iterdir() if p.is_dir() and not p.name.startswith("_")
)


@pytest.mark.parametrize("machine", MACHINE_NAMES)
def test_every_registered_provider_answers_every_machine_validly(machine: str) -> None:
    # GPU providers included, whichever exist: no machine may crash detection, and whatever a
    # provider reports must be a valid variant property and serialisable
    funcs = registered_providers()
    detection = detect(Probe.for_sysroot(MACHINES / machine), overrides=Overrides())
    assert set(detection.results) == set(funcs), machine
    for ns, result in detection.results.items():
        assert not (result.status == "unknown" and "provider failed" in result.reason), (
            ns,
            result.reason,
        )
        assert result.status in ("ok", "absent", "unknown"), ns
        assert (result.status == "ok") == bool(result.properties), ns
        for feature, values in result.properties.items():
            check_feature(feature)
            assert values and len(set(values)) == len(values), (ns, feature)
            for value in values:
                check_value(value)
        json.dumps(result.capabilities)
        for device in result.devices:
            json.dumps(device.to_json())
    parse_profile(json.loads(detection.profile().dumps()), machine)


def test_host_detection_works() -> None:
    detection = detect(
        Probe(), providers=registered_providers(CPU_ONLY), overrides=Overrides(), use_cache=False
    )
    env = detection.environment
    assert env["python_version"] == f"{sys.version_info[0]}.{sys.version_info[1]}"
    if env["platform_machine"] in ("x86_64", "aarch64"):
        assert detection.results[env["platform_machine"]].status == "ok"


def test_detect_profile_helper() -> None:
    profile = detect_mod.detect_profile(
        Probe.for_sysroot(MACHINES / "x86-v1-core2"),
        providers=registered_providers(CPU_ONLY),
        overrides=Overrides(),
    )
    assert profile.properties["x86_64"]["level"] == ("v1",)


@pytest.fixture
def clean_host_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    import os

    if not Path("/proc/sys/kernel/random/boot_id").exists():
        pytest.skip("this machine has no boot id")
    for name in list(os.environ):
        if name.startswith("FITWHEEL_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("FITWHEEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    return tmp_path / "cache"


def test_profile_from_the_cache_is_the_detected_one(
    clean_host_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert cached_profile_json() is None  # nothing cached yet
    detected = detect(Probe()).profile().dumps()
    assert cached_profile_json() == detected
    monkeypatch.setenv("FITWHEEL_FORCE_LIBC", "off")
    assert cached_profile_json() is None  # an override may change the answer


def test_cached_devices_are_written_like_detected_ones(clean_host_env: Path) -> None:
    import os

    from fitwheel.platform.cache import DetectionCache, HostFiles, cache_key
    from fitwheel.platform.environment import host_environment

    names = available_namespaces()
    results = {ns: ProviderResult(ns, "absent") for ns in names}
    results[names[0]] = ProviderResult(
        names[0],
        "ok",
        properties={"sm_arch": ("90_real", "90_virtual"), "cuda_version_lower_bound": ("12.8",)},
        devices=[
            Device(
                "nvidia",
                0,
                name="NVIDIA H100",
                pci_id="10de:2330",
                properties={"nvidia": {"sm_arch": ("90_real",)}},
                extra={"compute_capability": "9.0", "memory_mib": 81559},
            ),
            Device("nvidia", 1, properties={"nvidia": {"sm_arch": ("80_real",)}}),
        ],
        sources={"*": "sysfs", "sm_arch": "nvml"},
    )
    results[names[-1]] = ProviderResult(names[-1], "unknown", reason="timed out")
    key = cache_key(HostFiles(os.environ), names)
    assert key is not None
    DetectionCache(clean_host_env / "detect").store(key, results)
    expected = detect_mod.Detection(results, host_environment()).profile().dumps()
    assert cached_profile_json() == expected
