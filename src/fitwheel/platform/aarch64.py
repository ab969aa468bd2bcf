"""AArch64: architecture version and ISA extensions, from the auxiliary vector's HWCAP bits.

Namespace ``aarch64``, as the published aarch64 provider answers it:

- ``version``: ``9.0a``, ``8.5a``, ``8.4a``, ``8.3a``, ``8.2a``, ``8.1a``, ``8a`` down from the
  highest version whose mandatory, HWCAP-visible features are all present (capped at ``9.0a``
  like the published provider), most preferred first.
- one feature per extension, value ``on``, named as the kernel prints it in ``/proc/cpuinfo``
  (``sve``, ``sve2``, ``sme``, ``sme2``, ``bf16``, ``i8mm``, ``asimddp``, ...).

The features come from ``AT_HWCAP`` (16) and ``AT_HWCAP2`` (26) in ``/proc/self/auxv``, an array
of native ``(type, value)`` words. ``/proc/cpuinfo`` ``Features`` is the kernel's rendering of the
same bits and is used as a cross-check, or alone when the auxiliary vector cannot be read. Under
QEMU user mode the auxiliary vector describes the emulated CPU while ``/proc/cpuinfo`` shows the
host, so the auxiliary vector wins and the disagreement is reported.
"""

from __future__ import annotations

from fitwheel.platform.environment import first_block, machine, read_cpuinfo
from fitwheel.platform.probe import Probe
from fitwheel.platform.result import ProviderResult

NAMESPACE = "aarch64"
AT_NULL = 0
AT_HWCAP = 16
AT_HWCAP2 = 26

#: Bit -> name (Linux ``arch/arm64/include/uapi/asm/hwcap.h``; names as in /proc/cpuinfo).
HWCAP_BITS: dict[int, str] = dict(
    enumerate(
        [
            "fp",
            "asimd",
            "evtstrm",
            "aes",
            "pmull",
            "sha1",
            "sha2",
            "crc32",
            "atomics",
            "fphp",
            "asimdhp",
            "cpuid",
            "asimdrdm",
            "jscvt",
            "fcma",
            "lrcpc",
            "dcpop",
            "sha3",
            "sm3",
            "sm4",
            "asimddp",
            "sha512",
            "sve",
            "asimdfhm",
            "dit",
            "uscat",
            "ilrcpc",
            "flagm",
            "ssbs",
            "sb",
            "paca",
            "pacg",
            "gcs",
        ]
    )
)
HWCAP2_BITS: dict[int, str] = dict(
    enumerate(
        [
            "dcpodp",
            "sve2",
            "sveaes",
            "svepmull",
            "svebitperm",
            "svesha3",
            "svesm4",
            "flagm2",
            "frint",
            "svei8mm",
            "svef32mm",
            "svef64mm",
            "svebf16",
            "i8mm",
            "bf16",
            "dgh",
            "rng",
            "bti",
            "mte",
            "ecv",
            "afp",
            "rpres",
            "mte3",
            "sme",
            "smei16i64",
            "smef64f64",
            "smei8i32",
            "smef16f32",
            "smeb16f32",
            "smef32f32",
            "smefa64",
            "wfxt",
            "ebf16",
            "sveebf16",
            "cssc",
            "rprfm",
            "sve2p1",
            "sme2",
            "sme2p1",
            "smei16i32",
            "smebi32i32",
            "smeb16b16",
            "smef16f16",
            "mops",
            "hbc",
            "sveb16b16",
            "lrcpc3",
            "lse128",
            "fpmr",
            "lut",
            "faminmax",
            "f8cvt",
            "f8fma",
            "f8dp4",
            "f8dp2",
            "f8e4m3",
            "f8e5m2",
            "smelutv2",
            "smef8f16",
            "smef8f32",
            "smesf8fma",
            "smesf8dp4",
            "smesf8dp2",
            "poe",
        ]
    )
)
KNOWN_FEATURES = frozenset(HWCAP_BITS.values()) | frozenset(HWCAP2_BITS.values())

#: (version, features that version makes mandatory and HWCAPs show), highest first; each
#: version also needs every feature of the versions below it. Pointer authentication is left
#: out on purpose: kernels and hypervisors hide it on cores that have it (NVIDIA Grace).
VERSIONS: tuple[tuple[str, frozenset[str]], ...] = (
    ("9.0a", frozenset({"sve2"})),
    ("8.5a", frozenset({"sb", "frint", "flagm2", "dcpodp"})),
    ("8.4a", frozenset({"dit", "uscat", "ilrcpc", "flagm"})),
    ("8.3a", frozenset({"jscvt", "fcma", "lrcpc"})),
    ("8.2a", frozenset({"dcpop"})),
    ("8.1a", frozenset({"atomics", "asimdrdm", "crc32"})),
)

#: Features in the order reported: the scalable-matrix and scalable-vector extensions first
#: (the ones builds are keyed on), then the published provider's order, then the rest.
_LEADING = [
    "sme2p1",
    "sme2",
    "sme",
    "smef64f64",
    "smei16i64",
    "smefa64",
    "sve2p1",
    "sve2",
    "svebf16",
    "svei8mm",
    "sve",
    "bf16",
    "i8mm",
    "asimddp",
    "asimdfhm",
    "sha3",
    "sha512",
    "sm3",
    "sm4",
    "flagm2",
    "frint",
    "sb",
    "btiecv",
    "paca",
    "pacg",
    "ssbs",
    "dcpodp",
    "dgh",
    "dit",
    "flagm",
    "ilrcpc",
    "jscvt",
    "rng",
    "uscat",
    "lrcpc",
    "asimdhp",
    "dcpop",
    "fcma",
    "fphp",
    "asimdrdm",
    "atomics",
    "aes",
    "asimd",
    "cpuid",
    "crc32",
    "evtstrm",
    "fp",
    "pmull",
    "sha1",
    "sha2",
]
FEATURE_ORDER: tuple[str, ...] = tuple(
    dict.fromkeys(
        [f for f in _LEADING if f in KNOWN_FEATURES]
        + [HWCAP_BITS[b] for b in sorted(HWCAP_BITS)]
        + [HWCAP2_BITS[b] for b in sorted(HWCAP2_BITS)]
    )
)


class TruncatedAuxv(ValueError):
    pass


def parse_auxv(data: bytes, *, word: int = 8, byteorder: str = "<") -> dict[int, int]:
    """Decode an auxiliary vector (``(type, value)`` words up to ``AT_NULL``).

    Raises :class:`TruncatedAuxv` when the data ends before ``AT_NULL``."""
    import struct  # only Arm machines get here; the module is imported on every detection

    fmt = byteorder + ("QQ" if word == 8 else "II")
    size = 2 * word
    out: dict[int, int] = {}
    for offset in range(0, len(data) - size + 1, size):
        key, value = struct.unpack_from(fmt, data, offset)
        if key == AT_NULL:
            return out
        out.setdefault(key, value)
    raise TruncatedAuxv(f"{len(data)} bytes, no AT_NULL entry")


def hwcap_features(hwcap: int, hwcap2: int) -> set[str]:
    names = {name for bit, name in HWCAP_BITS.items() if hwcap >> bit & 1}
    names |= {name for bit, name in HWCAP2_BITS.items() if hwcap2 >> bit & 1}
    return names


def version_values(features: set[str] | frozenset[str]) -> tuple[str, ...]:
    reached = "8a"
    for name, needed in reversed(VERSIONS):
        if not needed <= features:
            break
        reached = name
    names = [v for v, _ in VERSIONS] + ["8a"]
    return tuple(names[names.index(reached) :])


def _cpuinfo_features(text: str | None) -> set[str] | None:
    if text is None:
        return None
    raw = first_block(text).get("Features")
    return None if raw is None else set(raw.split())


def detect(probe: Probe) -> ProviderResult:
    arch = machine(probe)
    if arch not in ("aarch64", "aarch64_be"):
        return ProviderResult(
            NAMESPACE, "absent", reason=f"CPU architecture is {arch or 'unknown'}, not aarch64"
        )
    cpuinfo_text = read_cpuinfo(probe)
    from_cpuinfo = _cpuinfo_features(cpuinfo_text)
    notes: list[str] = []
    from_auxv: set[str] | None = None
    raw = probe.read_bytes("/proc/self/auxv", 1 << 16)
    if raw is None:
        notes.append("/proc/self/auxv is unreadable")
    else:
        try:
            vector = parse_auxv(raw, byteorder=">" if arch == "aarch64_be" else "<")
        except TruncatedAuxv as exc:
            notes.append(f"/proc/self/auxv is truncated ({exc})")
        else:
            if AT_HWCAP in vector:
                from_auxv = hwcap_features(vector[AT_HWCAP], vector.get(AT_HWCAP2, 0))
            else:
                notes.append("/proc/self/auxv has no AT_HWCAP entry")

    caps: dict[str, object] = {}
    if from_auxv is not None:
        features, source = from_auxv, "/proc/self/auxv AT_HWCAP/AT_HWCAP2"
        if from_cpuinfo is None:
            notes.append("/proc/cpuinfo has no Features line (emulated, or another architecture)")
        else:
            known_cpuinfo = from_cpuinfo & KNOWN_FEATURES
            if known_cpuinfo != from_auxv:
                only_aux = sorted(from_auxv - known_cpuinfo)
                only_cpu = sorted(known_cpuinfo - from_auxv)
                notes.append(
                    "/proc/cpuinfo Features disagree with the auxiliary vector "
                    f"(only in auxv: {' '.join(only_aux) or '-'}; "
                    f"only in cpuinfo: {' '.join(only_cpu) or '-'}); using the auxiliary vector"
                )
                caps["cpuinfo_mismatch"] = True
    elif from_cpuinfo is not None:
        features, source = from_cpuinfo & KNOWN_FEATURES, "/proc/cpuinfo Features"
        notes.append("features read from /proc/cpuinfo only")
    else:
        return ProviderResult(
            NAMESPACE,
            "unknown",
            reason="; ".join([*notes, "/proc/cpuinfo has no Features line"]),
        )

    versions = version_values(features)
    props: dict[str, tuple[str, ...]] = {"version": versions}
    for feature in FEATURE_ORDER:
        if feature in features:
            props[feature] = ("on",)
    fields = first_block(cpuinfo_text or "")
    caps["version"] = f"armv{versions[0].replace('a', '-a')}"
    for key, cap in (("CPU implementer", "implementer"), ("CPU part", "part")):
        if fields.get(key) and from_cpuinfo is not None:
            caps[cap] = fields[key]
    return ProviderResult(
        NAMESPACE,
        "ok",
        properties=props,
        capabilities=caps,
        sources={"*": source},
        reason="; ".join(notes),
    )
