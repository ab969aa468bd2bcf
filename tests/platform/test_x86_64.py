"""x86-64 level and features from raw /proc/cpuinfo flags, on recorded machines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitwheel.platform import x86_64
from fitwheel.platform.probe import Probe

MACHINES = Path(__file__).parent / "machines"


def run(name: str):
    return x86_64.detect(Probe.for_sysroot(MACHINES / name))


@pytest.mark.parametrize(
    ("machine", "levels", "present", "missing"),
    [
        # Core 2: SSSE3 but no SSE4.1/SSE4.2/POPCNT -> the baseline only
        ("x86-v1-core2", ("v1",), {"ssse3", "sse3", "cx16"}, {"sse4_1", "popcnt", "avx"}),
        ("x86-v2-westmere", ("v2", "v1"), {"sse4_2", "popcnt", "aes"}, {"avx", "avx2", "f16c"}),
        (
            "x86-v3-haswell-centos7",
            ("v3", "v2", "v1"),
            {"avx2", "fma", "f16c", "bmi2", "movbe", "abm"},
            {"avx512f", "avx512_vnni"},
        ),
        (
            "x86-v4-sapphire-rapids",
            ("v4", "v3", "v2", "v1"),
            {"amx_tile", "amx_bf16", "amx_int8", "avx512_fp16", "avx512_bf16", "avx_vnni"},
            {"clzero", "sse4a"},
        ),
        # The KVM guest hides pku and flush_l1d, which must not cost any AVX-512 feature.
        (
            "x86-v4-kvm-epyc-guest",
            ("v4", "v3", "v2", "v1"),
            {"avx512_bf16", "avx512_vnni", "avx512vbmi", "vaes", "gfni", "sha_ni", "clzero"},
            {"flush_l1d", "amx_tile"},
        ),
        # qemu64 on an AVX-512 host: the guest gets what its flags say, not the host's level.
        ("x86-kvm-qemu64-guest", ("v1",), {"sse3", "cx16", "lahf_lm"}, {"ssse3", "avx"}),
    ],
)
def test_recorded_machines(
    machine: str, levels: tuple[str, ...], present: set[str], missing: set[str]
) -> None:
    result = run(machine)
    assert result.status == "ok"
    assert result.properties["level"] == levels
    assert next(iter(result.properties)) == "level"
    features = set(result.properties) - {"level"}
    assert present <= features
    assert not (missing & features)
    assert all(result.properties[f] == ("on",) for f in features)
    assert result.capabilities["level"] == f"x86-64-{levels[0]}"


def test_flags_of_the_second_cpu_are_ignored() -> None:
    # every fixture's second block says only "fpu"; reading it would give nothing
    assert "avx2" in run("x86-v3-haswell-centos7").properties


def test_guest_is_marked_virtualized() -> None:
    assert run("x86-kvm-qemu64-guest").capabilities["virtualized"] is True
    assert "virtualized" not in run("x86-v2-westmere").capabilities


@pytest.mark.parametrize(
    "machine", ["arm-grace-neoverse-v2", "arm-ampere-altra-alpine", "arm-qemu-user-on-x86"]
)
def test_absent_on_other_architectures(machine: str) -> None:
    result = run(machine)
    assert result.status == "absent"
    assert result.properties == {}
    assert "aarch64" in result.reason


def test_unreadable_cpuinfo_is_unknown() -> None:
    result = run("cpu-unreadable")
    assert result.status == "unknown"
    assert "/proc/cpuinfo" in result.reason


def test_cpuinfo_without_flags_is_unknown(tmp_path: Path) -> None:
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/arch").write_text("x86_64\n")
    (tmp_path / "proc/cpuinfo").write_bytes(b"\x00\xff garbage\nno colon here\n")
    result = x86_64.detect(Probe.for_sysroot(tmp_path))
    assert result.status == "unknown"
    assert "flags" in result.reason


def test_pni_is_reported_as_sse3() -> None:
    flags = x86_64.parse_flags("flags\t\t: fpu sse sse2 pni\n")
    assert flags is not None
    assert "sse3" in flags and "pni" not in flags


ALL_FLAGS = sorted(x86_64._V4 | {"pni", "avx512_bf16", "fpu"})


@settings(max_examples=int(os.environ.get("FITWHEEL_FUZZ_EXAMPLES", "60")), deadline=None)
@given(st.sets(st.sampled_from(ALL_FLAGS)), st.sets(st.sampled_from(ALL_FLAGS)))
def test_more_flags_never_lower_the_level(base: set[str], extra: set[str]) -> None:
    low = x86_64.level_values(frozenset(base))
    high = x86_64.level_values(frozenset(base | extra))
    assert len(high) >= len(low)
    assert high[-1] == "v1" and low[-1] == "v1"
    assert list(high) == sorted(high, reverse=True)
