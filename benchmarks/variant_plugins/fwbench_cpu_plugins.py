"""Two small variant provider plugins (variantlib's plugin protocol) that answer the way the
published x86_64 and aarch64 providers do, from raw /proc files: the peer that fitwheel's in-process
detection is compared with. variantlib imports this module in its plugin subprocess."""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass


@dataclass(frozen=True)
class FeatureConfig:
    name: str
    values: list[str]
    multi_value: bool = False


_V2 = {"cx16", "lahf_lm", "mmx", "popcnt", "sse", "sse2", "pni", "sse4_1", "sse4_2", "ssse3"}
_V3 = _V2 | {"abm", "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave"}
_V4 = _V3 | {"avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl"}
_X86_FEATURES = ["avx512_bf16", "avx512_vnni", "avx512f", "avx2", "avx", "f16c", "fma", "sse4_2"]
_ARM_HWCAP = {22: "sve", 20: "asimddp", 8: "atomics"}
_ARM_HWCAP2 = {1: "sve2", 13: "i8mm", 14: "bf16", 23: "sme", 37: "sme2"}


def _flags() -> set[str]:
    with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
        for line in fh:
            if line.startswith("flags"):
                return set(line.partition(":")[2].split())
    return set()


class X8664Plugin:
    @staticmethod
    def get_all_configs() -> list[FeatureConfig]:
        return [FeatureConfig("level", ["v4", "v3", "v2", "v1"])] + [
            FeatureConfig(f, ["on"]) for f in _X86_FEATURES
        ]

    @staticmethod
    def get_supported_configs() -> list[FeatureConfig]:
        if os.uname().machine != "x86_64":
            return []
        flags = _flags()
        top = 4 if flags >= _V4 else 3 if flags >= _V3 else 2 if flags >= _V2 else 1
        levels = [f"v{n}" for n in range(top, 0, -1)]
        return [FeatureConfig("level", levels)] + [
            FeatureConfig(f, ["on"]) for f in _X86_FEATURES if f in flags
        ]


class AArch64Plugin:
    @staticmethod
    def get_all_configs() -> list[FeatureConfig]:
        names = [*_ARM_HWCAP.values(), *_ARM_HWCAP2.values()]
        return [FeatureConfig("version", ["9.0a", "8.2a", "8a"])] + [
            FeatureConfig(f, ["on"]) for f in names
        ]

    @staticmethod
    def get_supported_configs() -> list[FeatureConfig]:
        if os.uname().machine != "aarch64":
            return []
        with open("/proc/self/auxv", "rb") as fh:
            data = fh.read()
        vector = dict(struct.iter_unpack("<QQ", data[: len(data) // 16 * 16]))
        hwcap, hwcap2 = vector.get(16, 0), vector.get(26, 0)
        names = [n for b, n in _ARM_HWCAP.items() if hwcap >> b & 1]
        names += [n for b, n in _ARM_HWCAP2.items() if hwcap2 >> b & 1]
        version = ["9.0a", "8.2a", "8a"] if "sve2" in names else ["8.2a", "8a"]
        return [FeatureConfig("version", version)] + [FeatureConfig(n, ["on"]) for n in names]
