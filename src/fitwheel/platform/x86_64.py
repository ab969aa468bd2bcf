"""x86-64: microarchitecture level and ISA extensions, from the raw ``/proc/cpuinfo`` flags.

Namespace ``x86_64``, as the published x86_64 provider answers it:

- ``level``: ``v4``, ``v3``, ``v2``, ``v1`` down from the highest level whose every flag is
  present (the psABI level sets), most preferred first.
- one feature per ISA extension, value ``on``, named as Linux prints the flag (``avx512_bf16``,
  ``amx_tile``, ``f16c``); ``pni`` is reported as ``sse3`` and ``abm`` stands for LZCNT, as the
  published provider spells them.

The level is computed from flags, never from a named microarchitecture, so a virtual machine that
hides some flags gets exactly the level (and the features) its flags support.
"""

from __future__ import annotations

from fitwheel.platform.environment import first_block, machine, read_cpuinfo
from fitwheel.platform.probe import Probe
from fitwheel.platform.result import ProviderResult

NAMESPACE = "x86_64"

_V2 = frozenset(
    ["cx16", "lahf_lm", "mmx", "popcnt", "sse", "sse2", "sse3", "sse4_1", "sse4_2", "ssse3"]
)
_V3 = _V2 | frozenset(["abm", "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "movbe", "xsave"])
_V4 = _V3 | frozenset(["avx512bw", "avx512cd", "avx512dq", "avx512f", "avx512vl"])
#: (level, flags it needs), highest first. v1 is the x86-64 baseline every 64-bit CPU has.
LEVELS: tuple[tuple[str, frozenset[str]], ...] = (("v4", _V4), ("v3", _V3), ("v2", _V2))

#: Features reported, most specific (newest) first. The published provider's list, extended by
#: the AMX/AVX-512 FP16 and AVX-VNNI-INT8 extensions that ML builds are keyed on.
FEATURES: tuple[str, ...] = (
    "amx_fp16",
    "amx_bf16",
    "amx_int8",
    "amx_tile",
    "avx512_fp16",
    "avx_vnni_int8",
    "avx_ifma",
    "avx_vnni",
    "cppc",
    "ibrs_enhanced",
    "tsc_adjust",
    "flush_l1d",
    "movdir64b",
    "movdiri",
    "avx512_bf16",
    "avx512_bitalg",
    "avx512_vbmi2",
    "avx512_vnni",
    "avx512_vp2intersect",
    "avx512_vpopcntdq",
    "avx512ifma",
    "avx512vbmi",
    "rdpid",
    "sha_ni",
    "vaes",
    "vpclmulqdq",
    "clwb",
    "clzero",
    "avx512bw",
    "avx512cd",
    "avx512dq",
    "avx512f",
    "avx512vl",
    "clflushopt",
    "gfni",
    "rdseed",
    "xsavec",
    "xsaveopt",
    "adx",
    "avx2",
    "avx",
    "bmi2",
    "bmi1",
    "abm",
    "f16c",
    "fma",
    "movbe",
    "xsave",
    "rdrand",
    "aes",
    "pclmulqdq",
    "sse4a",
    "fsgsbase",
    "sse4_2",
    "sse4_1",
    "ssse3",
    "sse3",
    "cx16",
    "lahf_lm",
    "popcnt",
    "sse2",
    "sse",
    "mmx",
)

#: Linux flag name -> the name the published provider uses.
_ALIASES = {"pni": "sse3", "lzcnt": "abm"}


def parse_flags(cpuinfo: str) -> frozenset[str] | None:
    """The ``flags`` of the first processor block (normalised names), or None without one."""
    raw = first_block(cpuinfo).get("flags")
    if raw is None:
        return None
    return frozenset(_ALIASES.get(f, f) for f in raw.split())


def level_values(flags: frozenset[str]) -> tuple[str, ...]:
    for i, (name, needed) in enumerate(LEVELS):
        if needed <= flags:
            return (name, *(lv for lv, _ in LEVELS[i + 1 :]), "v1")
    return ("v1",)


def detect(probe: Probe) -> ProviderResult:
    arch = machine(probe)
    if arch != "x86_64":
        return ProviderResult(
            NAMESPACE, "absent", reason=f"CPU architecture is {arch or 'unknown'}, not x86_64"
        )
    text = read_cpuinfo(probe)
    if text is None:
        return ProviderResult(NAMESPACE, "unknown", reason="/proc/cpuinfo is missing or unreadable")
    flags = parse_flags(text)
    if flags is None:
        return ProviderResult(
            NAMESPACE, "unknown", reason="/proc/cpuinfo has no 'flags' line for the first CPU"
        )
    levels = level_values(flags)
    props: dict[str, tuple[str, ...]] = {"level": levels}
    for feature in FEATURES:
        if feature in flags:
            props[feature] = ("on",)
    fields = first_block(text)
    caps: dict[str, object] = {"level": f"x86-64-{levels[0]}"}
    for key, cap in (("vendor_id", "vendor"), ("model name", "model_name")):
        if fields.get(key):
            caps[cap] = fields[key]
    if "hypervisor" in flags:
        caps["virtualized"] = True
    return ProviderResult(
        NAMESPACE,
        "ok",
        properties=props,
        capabilities=caps,
        sources={"*": "/proc/cpuinfo flags"},
    )
