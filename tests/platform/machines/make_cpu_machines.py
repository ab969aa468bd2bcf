"""Write the CPU fixture machines (``arm-*``, ``x86-*``, ``cpu-*``) as directory trees.

Run ``python tests/platform/machines/make_cpu_machines.py`` to regenerate them. Each machine is a
small sysroot: ``/proc/cpuinfo`` (the first processor block as the kernel prints it), on AArch64 a
``/proc/self/auxv`` blob of little-endian 64-bit ``(type, value)`` pairs, the boot id, the kernel
release and, where the scenario needs one, the dynamic loader and C library of the userland (tiny
stand-ins holding the strings a real one holds). The HWCAP bit numbers are written out here from
the kernel's ``arch/arm64/include/uapi/asm/hwcap.h``, independently of fitwheel's own table.
"""

from __future__ import annotations

import os
import shutil
import struct
from pathlib import Path

HERE = Path(__file__).parent

# Linux UAPI: AT_HWCAP words (bit numbers), arch/arm64/include/uapi/asm/hwcap.h
HWCAP = {
    "fp": 0, "asimd": 1, "evtstrm": 2, "aes": 3, "pmull": 4, "sha1": 5, "sha2": 6, "crc32": 7,
    "atomics": 8, "fphp": 9, "asimdhp": 10, "cpuid": 11, "asimdrdm": 12, "jscvt": 13,
    "fcma": 14, "lrcpc": 15, "dcpop": 16, "sha3": 17, "sm3": 18, "sm4": 19, "asimddp": 20,
    "sha512": 21, "sve": 22, "asimdfhm": 23, "dit": 24, "uscat": 25, "ilrcpc": 26, "flagm": 27,
    "ssbs": 28, "sb": 29, "paca": 30, "pacg": 31,
}  # fmt: skip
HWCAP2 = {
    "dcpodp": 0, "sve2": 1, "sveaes": 2, "svepmull": 3, "svebitperm": 4, "svesha3": 5,
    "svesm4": 6, "flagm2": 7, "frint": 8, "svei8mm": 9, "svef32mm": 10, "svef64mm": 11,
    "svebf16": 12, "i8mm": 13, "bf16": 14, "dgh": 15, "rng": 16, "bti": 17, "mte": 18,
    "ecv": 19, "afp": 20, "rpres": 21, "mte3": 22, "sme": 23, "smei16i64": 24,
    "smef64f64": 25, "smei8i32": 26, "smef16f32": 27, "smeb16f32": 28, "smef32f32": 29,
    "smefa64": 30, "wfxt": 31, "ebf16": 32, "sveebf16": 33, "cssc": 34, "rprfm": 35,
    "sve2p1": 36, "sme2": 37, "sme2p1": 38,
}  # fmt: skip

AT_NULL, AT_PHDR, AT_PAGESZ, AT_PLATFORM, AT_HWCAP, AT_CLKTCK, AT_RANDOM, AT_HWCAP2 = (
    0, 3, 6, 15, 16, 17, 25, 26,
)  # fmt: skip

N1 = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop "
    "asimddp ssbs"
)
V1 = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
    "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg "
    "dcpodp svei8mm svebf16 i8mm bf16 dgh rng"
)
GRACE = (
    "fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma "
    "lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs sb dcpodp "
    "sve2 sveaes svepmull svebitperm svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh "
    "bti"
)
SME2 = GRACE + (
    " paca pacg rng mte mte3 ecv afp rpres wfxt ebf16 sveebf16 cssc rprfm sve2p1 sme smei16i64 "
    "smef64f64 smei8i32 smef16f32 smeb16f32 smef32f32 smefa64 sme2 sme2p1"
)
QEMU_MAX = GRACE + " paca pacg rng mte sme smei16i64 smef64f64 smefa64 sme2"

X86_BASE = (
    "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr "
    "sse sse2"
)
CORE2 = X86_BASE + (
    " ss ht tm pbe syscall nx lm constant_tsc arch_perfmon pebs bts rep_good nopl aperfmperf pni "
    "dtes64 monitor ds_cpl vmx est tm2 ssse3 cx16 xtpr pdcm lahf_lm dtherm"
)
WESTMERE = X86_BASE + (
    " acpi ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good "
    "nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est "
    "tm2 ssse3 cx16 xtpr pdcm pcid dca sse4_1 sse4_2 popcnt aes lahf_lm epb pti tpr_shadow vnmi "
    "flexpriority ept vpid dtherm ida arat"
)
HASWELL = X86_BASE + (
    " acpi ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc arch_perfmon pebs bts rep_good "
    "nopl xtopology nonstop_tsc cpuid aperfmperf pni pclmulqdq dtes64 monitor ds_cpl vmx smx est "
    "tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic movbe popcnt "
    "tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm cpuid_fault epb invpcid_single pti "
    "intel_ppin ssbd ibrs ibpb stibp tpr_shadow vnmi flexpriority ept vpid ept_ad fsgsbase "
    "tsc_adjust bmi1 avx2 smep bmi2 erms invpcid cqm xsaveopt cqm_llc cqm_occup_llc dtherm ida "
    "arat pln pts md_clear flush_l1d"
)
SAPPHIRE_RAPIDS = X86_BASE + (
    " acpi ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc art arch_perfmon pebs bts "
    "rep_good nopl xtopology nonstop_tsc cpuid aperfmperf tsc_known_freq pni pclmulqdq dtes64 "
    "monitor ds_cpl vmx smx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid dca sse4_1 sse4_2 x2apic "
    "movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm 3dnowprefetch "
    "cpuid_fault epb cat_l3 cat_l2 cdp_l3 invpcid_single intel_ppin cdp_l2 ssbd mba ibrs ibpb "
    "stibp ibrs_enhanced tpr_shadow flexpriority ept vpid ept_ad fsgsbase tsc_adjust bmi1 avx2 "
    "smep bmi2 erms invpcid cqm rdt_a avx512f avx512dq rdseed adx smap avx512ifma clflushopt "
    "clwb intel_pt avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves cqm_llc "
    "cqm_occup_llc cqm_mbm_total cqm_mbm_local split_lock_detect avx_vnni avx512_bf16 wbnoinvd "
    "dtherm ida arat pln pts hfi vnmi avx512vbmi umip pku ospke waitpkg avx512_vbmi2 gfni vaes "
    "vpclmulqdq avx512_vnni avx512_bitalg tme avx512_vpopcntdq la57 rdpid bus_lock_detect "
    "cldemote movdiri movdir64b enqcmd fsrm md_clear serialize tsxldtrk pconfig arch_lbr "
    "ibt amx_bf16 avx512_fp16 amx_tile amx_int8 flush_l1d arch_capabilities"
)
# An AMD EPYC (Zen 4) KVM guest: the hypervisor hides pku and flush_l1d (so a named-target
# matcher rejects zen4), but every AVX-512 flag is there.
EPYC_GUEST = X86_BASE + (
    " syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm rep_good nopl cpuid extd_apicid "
    "tsc_known_freq pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes "
    "xsave avx f16c rdrand hypervisor lahf_lm cmp_legacy cr8_legacy abm sse4a misalignsse "
    "3dnowprefetch osvw topoext invpcid_single ssbd ibrs ibpb stibp vmmcall fsgsbase tsc_adjust "
    "bmi1 avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt "
    "clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xgetbv1 xsaves avx512_bf16 clzero "
    "xsaveerptr rdpru wbnoinvd arat avx512vbmi umip avx512_vbmi2 gfni vaes vpclmulqdq "
    "avx512_vnni avx512_bitalg avx512_vpopcntdq rdpid fsrm arch_capabilities"
)
# QEMU's default "qemu64" model on an AVX-512 host: the guest sees almost nothing.
QEMU64 = X86_BASE + (
    " syscall nx lm rep_good nopl cpuid extd_apicid tsc_known_freq pni cx16 x2apic hypervisor "
    "lahf_lm cmp_legacy 3dnowprefetch vmmcall"
)


def x86_cpuinfo(vendor: str, family: int, model: int, name: str, flags: str) -> str:
    return (
        f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
        f"model name\t: {name}\nstepping\t: 4\nmicrocode\t: 0x1\ncpu MHz\t\t: 2400.000\n"
        "cache size\t: 4096 KB\nphysical id\t: 0\nsiblings\t: 2\ncore id\t\t: 0\n"
        "cpu cores\t: 2\napicid\t\t: 0\ninitial apicid\t: 0\nfpu\t\t: yes\n"
        "fpu_exception\t: yes\ncpuid level\t: 13\nwp\t\t: yes\n"
        f"flags\t\t: {flags}\nbugs\t\t: spectre_v1 spectre_v2\nbogomips\t: 4800.00\n"
        "clflush size\t: 64\ncache_alignment\t: 64\n"
        "address sizes\t: 46 bits physical, 48 bits virtual\npower management:\n\n"
        # the second CPU, as the kernel prints it: detection must read only the first block
        f"processor\t: 1\nvendor_id\t: {vendor}\nflags\t\t: fpu\n\n"
    )


def arm_cpuinfo(features: str, implementer: str, part: str, variant: str = "0x0") -> str:
    block = (
        "BogoMIPS\t: 2000.00\n"
        f"Features\t: {features}\n"
        f"CPU implementer\t: {implementer}\nCPU architecture: 8\nCPU variant\t: {variant}\n"
        f"CPU part\t: {part}\nCPU revision\t: 1\n\n"
    )
    return f"processor\t: 0\n{block}processor\t: 1\n{block}"


def auxv(features: str, *, platform_ptr: int = 0xFFFF_F000, page: int = 4096) -> bytes:
    hwcap = hwcap2 = 0
    for name in features.split():
        if name in HWCAP:
            hwcap |= 1 << HWCAP[name]
        else:
            hwcap2 |= 1 << HWCAP2[name]
    pairs = [
        (33, 0xFFFF_A000),  # AT_SYSINFO_EHDR
        (51, 5120),  # AT_MINSIGSTKSZ
        (AT_HWCAP, hwcap),
        (AT_PAGESZ, page),
        (AT_CLKTCK, 100),
        (AT_PHDR, 0xAAAA_0040),
        (AT_RANDOM, platform_ptr + 64),
        (AT_HWCAP2, hwcap2),
        (31, platform_ptr + 128),  # AT_EXECFN
        (AT_PLATFORM, platform_ptr),
        (AT_NULL, 0),
    ]
    return b"".join(struct.pack("<QQ", k, v) for k, v in pairs)


def glibc_stub(version: str, distro: str) -> bytes:
    return (
        b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 56 + b"GLIBC_2.2.5\x00GLIBC_2.17\x00"
        b"GNU C Library (" + distro.encode() + b" GLIBC " + version.encode() + b"-1) stable "
        b"release version " + version.encode() + b".\nCopyright (C) 2024 Free Software\x00"
    )


def musl_stub(version: str) -> bytes:
    return b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 56 + b"musl libc\x00" + version.encode() + b"\x00"


class Machine:
    def __init__(self, name: str) -> None:
        self.root = HERE / name

    def write(self, path: str, data: str | bytes) -> Machine:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            target.write_text(data, encoding="utf-8")
        else:
            target.write_bytes(data)
        return self

    def link(self, path: str, to: str) -> Machine:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(to, target)
        return self

    def kernel(self, release: str, boot_id: str, arch: str | None = None) -> Machine:
        self.write("/proc/sys/kernel/osrelease", release + "\n")
        self.write("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC\n")
        self.write("/proc/sys/kernel/random/boot_id", boot_id + "\n")
        if arch:
            self.write("/proc/sys/kernel/arch", arch + "\n")
        return self


def build() -> list[str]:
    names = []

    def machine(name: str) -> Machine:
        path = HERE / name
        if path.exists():
            shutil.rmtree(path)
        names.append(name)
        return Machine(name)

    # --- AArch64 hosts
    (
        machine("arm-grace-neoverse-v2")
        .kernel("6.8.0-1013-nvidia-64k", "0b9a4c1e-7d1f-4a8e-9f4b-3c2d1e0f9a01", "aarch64")
        .write("/proc/cpuinfo", arm_cpuinfo(GRACE, "0x41", "0xd4f"))
        .write("/proc/self/auxv", auxv(GRACE, page=65536))
        .link("/lib/ld-linux-aarch64.so.1", "aarch64-linux-gnu/ld-linux-aarch64.so.1")
        .write("/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1", b"\x7fELF")
        .write("/lib/aarch64-linux-gnu/libc.so.6", glibc_stub("2.35", "Ubuntu"))
    )
    (
        machine("arm-graviton3-neoverse-v1")
        .kernel("6.1.102-111.182.amzn2023.aarch64", "5e3c2a10-0f4b-4c7d-8e21-77aa00bb11cc")
        .write("/proc/cpuinfo", arm_cpuinfo(V1, "0x41", "0xd40", "0x1"))
        .write("/proc/self/auxv", auxv(V1))
        .link("/lib", "usr/lib")
        .write("/usr/lib/ld-linux-aarch64.so.1", b"\x7fELF")
        .link("/lib64", "usr/lib64")
        .write("/usr/lib64/libc.so.6", glibc_stub("2.34", "GNU libc"))
    )
    (
        machine("arm-ampere-altra-alpine")
        .kernel("6.6.58-0-lts", "a1b2c3d4-0000-4111-8222-333344445555", "aarch64")
        .write("/proc/cpuinfo", arm_cpuinfo(N1, "0x41", "0xd0c", "0x3"))
        .write("/proc/self/auxv", auxv(N1))
        .write("/lib/ld-musl-aarch64.so.1", musl_stub("1.2.5"))
    )
    (
        machine("arm-sme2-armv9")
        .kernel("6.12.0", "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a", "aarch64")
        .write("/proc/cpuinfo", arm_cpuinfo(SME2, "0x41", "0xd8c"))
        .write("/proc/self/auxv", auxv(SME2))
    )
    # QEMU user mode (qemu-aarch64 -cpu max on an x86-64 host): the auxiliary vector describes
    # the emulated CPU, /proc/cpuinfo and /proc/sys/kernel/arch the host; the userland is AArch64.
    (
        machine("arm-qemu-user-on-x86")
        .kernel("6.8.0-45-generic", "c0ffee00-1111-4222-8333-444455556666", "x86_64")
        .write(
            "/proc/cpuinfo",
            x86_cpuinfo("GenuineIntel", 6, 143, "Intel(R) Xeon(R) Platinum 8480+", SAPPHIRE_RAPIDS),
        )
        .write("/proc/self/auxv", auxv(QEMU_MAX))
        .write("/lib/ld-linux-aarch64.so.1", b"\x7fELF")
    )
    # The auxiliary vector stops in the middle of an entry (a short read): cpuinfo alone.
    (
        machine("arm-truncated-auxv")
        .kernel("6.1.0", "deadbeef-aaaa-4bbb-8ccc-dddddddddddd", "aarch64")
        .write("/proc/cpuinfo", arm_cpuinfo(V1, "0x41", "0xd40", "0x1"))
        .write("/proc/self/auxv", auxv(V1)[:72])
    )

    # --- x86-64 hosts
    (
        machine("x86-v1-core2")
        .kernel("5.10.0-32-amd64", "11111111-2222-4333-8444-555555555555", "x86_64")
        .write(
            "/proc/cpuinfo",
            x86_cpuinfo("GenuineIntel", 6, 15, "Intel(R) Core(TM)2 CPU T7200 @ 2.00GHz", CORE2),
        )
    )
    (
        machine("x86-v2-westmere")
        .kernel("4.18.0-553.el8_10.x86_64", "22222222-3333-4444-8555-666666666666")
        .write(
            "/proc/cpuinfo",
            x86_cpuinfo("GenuineIntel", 6, 44, "Intel(R) Xeon(R) CPU X5670 @ 2.93GHz", WESTMERE),
        )
    )
    (
        machine("x86-v3-haswell-centos7")
        .kernel("3.10.0-1160.el7.x86_64", "33333333-4444-4555-8666-777777777777")
        .write(
            "/proc/cpuinfo",
            x86_cpuinfo(
                "GenuineIntel", 6, 63, "Intel(R) Xeon(R) CPU E5-2680 v3 @ 2.50GHz", HASWELL
            ),
        )
        .write("/lib64/ld-linux-x86-64.so.2", b"\x7fELF")
        .write("/usr/lib64/libc-2.17.so", b"\x7fELF")
        .link("/lib64/libc.so.6", "libc-2.17.so")
        .link("/usr/lib64/libc.so.6", "libc-2.17.so")
    )
    (
        machine("x86-v4-sapphire-rapids")
        .kernel("6.8.0-45-generic", "44444444-5555-4666-8777-888888888888", "x86_64")
        .write(
            "/proc/cpuinfo",
            x86_cpuinfo("GenuineIntel", 6, 143, "Intel(R) Xeon(R) Platinum 8480+", SAPPHIRE_RAPIDS),
        )
        .link("/lib64/ld-linux-x86-64.so.2", "/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2")
        .write("/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2", b"\x7fELF")
        .write("/lib/x86_64-linux-gnu/libc.so.6", glibc_stub("2.39", "Ubuntu"))
    )
    (
        machine("x86-v4-kvm-epyc-guest")
        .kernel("6.1.0-25-cloud-amd64", "55555555-6666-4777-8888-999999999999", "x86_64")
        .write(
            "/proc/cpuinfo",
            x86_cpuinfo("AuthenticAMD", 25, 17, "AMD EPYC 9R14 96-Core Processor", EPYC_GUEST),
        )
    )
    (
        machine("x86-kvm-qemu64-guest")
        .kernel("6.1.0-25-amd64", "66666666-7777-4888-8999-aaaaaaaaaaaa", "x86_64")
        .write(
            "/proc/cpuinfo",
            x86_cpuinfo("AuthenticAMD", 15, 107, "QEMU Virtual CPU version 2.5+", QEMU64),
        )
    )

    # --- broken input
    (
        machine("cpu-garbage")
        .kernel("6.1.0", "77777777-8888-4999-8aaa-bbbbbbbbbbbb", "aarch64")
        .write("/proc/cpuinfo", bytes(range(256)) * 8)
        .write("/proc/self/auxv", b"\xff" * 13)
    )
    # /proc/cpuinfo that cannot be read as a file (a directory in its place).
    (
        machine("cpu-unreadable")
        .kernel("6.1.0", "88888888-9999-4aaa-8bbb-cccccccccccc", "x86_64")
        .write("/proc/cpuinfo/.keep", "")
    )
    return names


if __name__ == "__main__":
    for built in build():
        print(built)
