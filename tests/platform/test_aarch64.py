"""AArch64 version and features from the auxiliary vector, cross-checked with /proc/cpuinfo."""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import pytest

from fitwheel.platform import aarch64
from fitwheel.platform.probe import Probe

MACHINES = Path(__file__).parent / "machines"


def run(name: str | Path):
    return aarch64.detect(Probe.for_sysroot(MACHINES / name))


def versions_from(top: str) -> tuple[str, ...]:
    order = ["9.0a", "8.5a", "8.4a", "8.3a", "8.2a", "8.1a", "8a"]
    return tuple(order[order.index(top) :])


@pytest.mark.parametrize(
    ("machine", "top", "present", "missing"),
    [
        # NVIDIA Grace (Neoverse V2): SVE2, no pointer authentication in HWCAP, no SME
        (
            "arm-grace-neoverse-v2",
            "9.0a",
            {"sve", "sve2", "svebf16", "svei8mm", "bf16", "i8mm", "asimddp", "bti"},
            {"sme", "sme2", "paca", "pacg"},
        ),
        # AWS Graviton3 (Neoverse V1): SVE but not SVE2, no SB/FRINT -> 8.4
        (
            "arm-graviton3-neoverse-v1",
            "8.4a",
            {"sve", "bf16", "i8mm", "paca", "pacg", "rng"},
            {"sve2", "sb", "frint"},
        ),
        # Ampere Altra (Neoverse N1): dot product, no SVE -> 8.2
        ("arm-ampere-altra-alpine", "8.2a", {"asimddp", "lrcpc", "atomics"}, {"sve", "jscvt"}),
        (
            "arm-sme2-armv9",
            "9.0a",
            {"sme", "sme2", "sme2p1", "smef64f64", "sve2p1", "mte"},
            set(),
        ),
    ],
)
def test_recorded_machines(machine: str, top: str, present: set[str], missing: set[str]) -> None:
    result = run(machine)
    assert result.status == "ok"
    assert result.reason == ""
    assert result.properties["version"] == versions_from(top)
    assert next(iter(result.properties)) == "version"
    features = set(result.properties) - {"version"}
    assert present <= features
    assert not (missing & features)
    assert all(result.properties[f] == ("on",) for f in features)
    assert result.sources["*"].startswith("/proc/self/auxv")


def test_grace_reports_its_core() -> None:
    caps = run("arm-grace-neoverse-v2").capabilities
    assert caps["implementer"] == "0x41" and caps["part"] == "0xd4f"
    assert caps["version"] == "armv9.0-a"


def test_qemu_user_trusts_the_auxiliary_vector() -> None:
    # cpuinfo shows the x86 host; the emulated CPU has SME2
    result = run("arm-qemu-user-on-x86")
    assert result.status == "ok"
    assert {"sme", "sme2", "sve2"} <= set(result.properties)
    assert "no Features line" in result.reason
    assert "implementer" not in result.capabilities


def test_disagreeing_cpuinfo_is_reported(tmp_path: Path) -> None:
    root = tmp_path / "m"
    shutil.copytree(MACHINES / "arm-grace-neoverse-v2", root, symlinks=True)
    # the auxiliary vector of an N1 core under a Grace cpuinfo (an emulator's own rendering)
    (root / "proc/self/auxv").write_bytes(
        (MACHINES / "arm-ampere-altra-alpine/proc/self/auxv").read_bytes()
    )
    result = aarch64.detect(Probe.for_sysroot(root))
    assert result.properties["version"] == versions_from("8.2a")
    assert "sve" not in result.properties
    assert "disagree" in result.reason and "sve2" in result.reason
    assert result.capabilities["cpuinfo_mismatch"] is True


def test_truncated_auxv_falls_back_to_cpuinfo() -> None:
    result = run("arm-truncated-auxv")
    graviton = run("arm-graviton3-neoverse-v1")
    assert result.status == "ok"
    assert "truncated" in result.reason and "cpuinfo only" in result.reason
    assert result.sources["*"] == "/proc/cpuinfo Features"
    assert result.properties == graviton.properties


def test_garbage_everywhere_is_unknown() -> None:
    result = run("cpu-garbage")
    assert result.status == "unknown"
    assert result.properties == {}
    assert "truncated" in result.reason and "Features" in result.reason


@pytest.mark.parametrize("machine", ["x86-v4-sapphire-rapids", "x86-v2-westmere"])
def test_absent_on_x86(machine: str) -> None:
    assert run(machine).status == "absent"


def test_auxv_without_hwcap(tmp_path: Path) -> None:
    root = tmp_path / "m"
    shutil.copytree(MACHINES / "arm-ampere-altra-alpine", root, symlinks=True)
    (root / "proc/self/auxv").write_bytes(struct.pack("<QQQQ", 6, 4096, 0, 0))
    result = aarch64.detect(Probe.for_sysroot(root))
    assert "no AT_HWCAP" in result.reason
    assert result.properties["version"] == versions_from("8.2a")


def test_parse_auxv_word_sizes_and_byte_order() -> None:
    little = struct.pack("<QQQQQQ", 16, 0b101, 26, 1 << 37, 0, 0)
    big = struct.pack(">QQQQQQ", 16, 0b101, 26, 1 << 37, 0, 0)
    narrow = struct.pack("<IIII", 16, 3, 0, 0)
    assert aarch64.parse_auxv(little) == {16: 5, 26: 1 << 37}
    assert aarch64.parse_auxv(big, byteorder=">") == {16: 5, 26: 1 << 37}
    assert aarch64.parse_auxv(narrow, word=4) == {16: 3}
    with pytest.raises(aarch64.TruncatedAuxv):
        aarch64.parse_auxv(little[:40])


def test_hwcap_bits_match_the_kernel_names() -> None:
    # a few bits from the UAPI header, spelled out
    assert aarch64.hwcap_features(1 << 22, 0) == {"sve"}
    assert aarch64.hwcap_features(1 << 20, 0) == {"asimddp"}
    assert aarch64.hwcap_features(0, 1 << 1) == {"sve2"}
    assert aarch64.hwcap_features(0, 1 << 23 | 1 << 37) == {"sme", "sme2"}
    assert aarch64.hwcap_features(0, 1 << 13 | 1 << 14) == {"i8mm", "bf16"}


def test_version_needs_every_lower_version() -> None:
    # SVE2 alone (without the 8.1..8.5 features) does not make an Armv9 core
    assert aarch64.version_values({"sve2"}) == ("8a",)
