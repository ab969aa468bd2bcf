"""Writes the GPU fixture machines (gpu-*, wsl2-*, container-*, nogpu-*) as directory trees.

Run ``python tests/platform/machines/build.py`` after changing a machine here; the trees are
kept in the repository so the tests read real files, links and link loops. Each machine is
described by one line in README.md beside this file.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent

NV_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {v}  Release Build  "
    "(dvs-builder@U16-I3-B03-4-3)  Tue Mar  5 19:33:26 UTC 2024\n"
    "GCC version:  gcc version 12.3.0 (Ubuntu 12.3.0-1ubuntu1~22.04)\n"
)
NV_LEGACY = (
    "NVRM version: NVIDIA UNIX x86_64 Kernel Module  {v}  Tue Oct 26 23:18:00 UTC 2021\n"
    "GCC version:  gcc version 9.3.0 (Ubuntu 9.3.0-17ubuntu1~20.04)\n"
)


class Machine:
    def __init__(self, name: str, base: Path) -> None:
        self.root = base / name
        if self.root.exists():
            shutil.rmtree(self.root)
        self.root.mkdir()

    def file(self, path: str, text: str | bytes = "") -> None:
        target = self.root / path.lstrip("/")
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(text, bytes):
            target.write_bytes(text)
        else:
            target.write_text(text)

    def link(self, path: str, target: str) -> None:
        where = self.root / path.lstrip("/")
        where.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(target, where)

    def pci(
        self,
        address: str,
        vendor: int,
        device: int,
        cls: int,
        driver: str | None = None,
        **extra: str,
    ) -> None:
        """A PCI function as sysfs shows it: the device directory under /sys/devices, the
        /sys/bus/pci/devices link to it, its driver link and the subsystem link back to the
        bus (a link loop, as in real sysfs)."""
        devdir = f"/sys/devices/pci{address[:4]}:00/{address}"
        self.file(f"{devdir}/vendor", f"0x{vendor:04x}\n")
        self.file(f"{devdir}/device", f"0x{device:04x}\n")
        self.file(f"{devdir}/class", f"0x{cls:06x}\n")
        self.file(f"{devdir}/revision", "0xa1\n")
        for key, value in extra.items():
            self.file(f"{devdir}/{key}", value)
        self.link(f"{devdir}/subsystem", "../../../bus/pci")
        self.link(
            f"/sys/bus/pci/devices/{address}", f"../../../devices/pci{address[:4]}:00/{address}"
        )
        if driver:
            self.link(f"{devdir}/driver", f"../../../bus/pci/drivers/{driver}")
            self.link(
                f"/sys/bus/pci/drivers/{driver}/{address}",
                f"../../../../devices/pci{address[:4]}:00/{address}",
            )

    def nvidia_driver(self, version: str, *, sys_file: bool = True, legacy: bool = False) -> None:
        if sys_file:
            self.file("/sys/module/nvidia/version", f"{version}\n")
        else:
            self.file("/sys/module/nvidia/refcnt", "4\n")
        self.file(
            "/proc/driver/nvidia/version", (NV_LEGACY if legacy else NV_OPEN).format(v=version)
        )

    def nvidia_gpu_info(self, address: str, model: str, uuid: str, minor: int) -> None:
        self.file(
            f"/proc/driver/nvidia/gpus/{address}/information",
            f"Model: \t\t {model}\nIRQ:   \t\t 150\nGPU UUID: \t {uuid}\n"
            f"Video BIOS: \t 96.00.74.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\n"
            f"Bus Location: \t {address}\nDevice Minor: \t {minor}\nGPU Excluded:\t No\n",
        )

    def kfd_node(
        self, node: int, props: dict[str, int], links: Sequence[tuple[int, int]] = ()
    ) -> None:
        base = f"/sys/class/kfd/kfd/topology/nodes/{node}"
        self.file(f"{base}/properties", "".join(f"{k} {v}\n" for k, v in props.items()))
        self.file(f"{base}/name", "" if props.get("gfx_target_version") else "\n")
        for i, (kind, to) in enumerate(links):
            self.file(
                f"{base}/io_links/{i}/properties",
                f"type {kind}\nversion_major 0\nversion_minor 0\nnode_from {node}\nnode_to {to}\n"
                f"weight {15 if kind == 11 else 20}\nmin_latency 0\nmax_latency 0\n"
                "min_bandwidth 312000\nmax_bandwidth 64000\n"
                "recommended_transfer_size 0\nflags 1\n",
            )

    def host_basics(self, osrelease: str = "6.8.0-45-generic") -> None:
        self.file("/proc/sys/kernel/osrelease", osrelease + "\n")
        self.file("/proc/1/cgroup", "0::/init.scope\n")
        self.file("/dev/null")


def kfd_cpu(cores: int) -> dict[str, int]:
    return {
        "cpu_cores_count": cores,
        "simd_count": 0,
        "gfx_target_version": 0,
        "vendor_id": 0,
        "device_id": 0,
        "location_id": 0,
        "domain": 0,
        "unique_id": 0,
    }


def kfd_gpu(
    gfx: int,
    cus: int,
    simd_per_cu: int,
    device_id: int,
    address: str,
    unique_id: int,
    hive: int = 0,
) -> dict[str, int]:
    domain, bus, rest = address.split(":")
    dev, fn = rest.split(".")
    location = (int(bus, 16) << 8) | (int(dev, 16) << 3) | int(fn)
    return {
        "cpu_cores_count": 0,
        "simd_count": cus * simd_per_cu,
        "simd_per_cu": simd_per_cu,
        "gfx_target_version": gfx,
        "vendor_id": 0x1002,
        "device_id": device_id,
        "location_id": location,
        "domain": int(domain, 16),
        "drm_render_minor": 128,
        "hive_id": hive,
        "unique_id": unique_id,
        "num_xcc": 1,
    }


def rocm(m: Machine, version_file: str, directory: str) -> None:
    m.file(f"/opt/{directory}/.info/version", version_file)
    m.link("/etc/alternatives/rocm", f"/opt/{directory}")
    m.link("/opt/rocm", "/etc/alternatives/rocm")


def build(base: Path = HERE) -> None:
    # 4x H100 SXM on an NVSwitch baseboard, open kernel module 550.
    m = Machine("gpu-h100-open", base)
    m.host_basics()
    m.nvidia_driver("550.54.15")
    for i, addr in enumerate(["0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0", "0000:5d:00.0"]):
        m.pci(addr, 0x10DE, 0x2330, 0x030200, "nvidia")
        m.nvidia_gpu_info(
            addr, "NVIDIA H100 80GB HBM3", f"GPU-6b3a1f0e-1c2d-4e5f-8a9b-00000000000{i}", i
        )
        m.file(f"/dev/nvidia{i}")
    for addr in ["0000:05:00.0", "0000:06:00.0"]:
        m.pci(addr, 0x10DE, 0x22A3, 0x068000, "nvidia")
    m.pci("0000:02:00.0", 0x1A03, 0x2000, 0x030000, "ast")
    m.file("/dev/nvidiactl")

    # 2x A100 PCIe, legacy 470 driver that only /proc shows.
    m = Machine("gpu-a100-legacy", base)
    m.host_basics("5.4.0-150-generic")
    m.nvidia_driver("470.82.01", sys_file=False, legacy=True)
    for i, addr in enumerate(["0000:3b:00.0", "0000:d8:00.0"]):
        m.pci(addr, 0x10DE, 0x20F1, 0x030200, "nvidia")
        m.file(f"/dev/nvidia{i}")

    # Workstation: RTX 4090 and GTX 1080 Ti (each with its HDMI audio function), driver 570.
    m = Machine("gpu-rtx4090-gtx1080ti", base)
    m.host_basics()
    m.nvidia_driver("570.133.07")
    m.pci("0000:01:00.0", 0x10DE, 0x2684, 0x030000, "nvidia")
    m.pci("0000:01:00.1", 0x10DE, 0x22BA, 0x040300, "snd_hda_intel")
    m.pci("0000:02:00.0", 0x10DE, 0x1B06, 0x030000, "nvidia")
    m.pci("0000:02:00.1", 0x10DE, 0x10EF, 0x040300, "snd_hda_intel")
    m.nvidia_gpu_info(
        "0000:01:00.0", "NVIDIA GeForce RTX 4090", "GPU-aaaaaaaa-1111-2222-3333-444444444444", 0
    )
    m.nvidia_gpu_info(
        "0000:02:00.0", "NVIDIA GeForce GTX 1080 Ti", "GPU-bbbbbbbb-1111-2222-3333-444444444444", 1
    )
    m.file("/dev/nvidia0")
    m.file("/dev/nvidia1")

    # Desktop: RTX 5090 (Blackwell consumer, driver 580) beside a Raptor Lake iGPU.
    m = Machine("gpu-rtx5090-igpu", base)
    m.host_basics()
    m.nvidia_driver("580.82.07")
    m.pci("0000:00:02.0", 0x8086, 0xA780, 0x030000, "i915")
    m.pci("0000:01:00.0", 0x10DE, 0x2B85, 0x030000, "nvidia")
    m.pci("0000:01:00.1", 0x10DE, 0x22E8, 0x040300, "snd_hda_intel")
    m.file("/dev/nvidia0")
    m.file("/dev/dri/renderD128")

    # 2x MI300X joined by XGMI, ROCm 6.4.1 reached through /opt/rocm -> /etc/alternatives.
    m = Machine("gpu-mi300x", base)
    m.host_basics()
    m.pci("0000:1b:00.0", 0x1002, 0x74A1, 0x120000, "amdgpu")
    m.pci("0000:3d:00.0", 0x1002, 0x74A1, 0x120000, "amdgpu")
    m.file("/sys/module/amdgpu/version", "6.10.5\n")
    m.kfd_node(0, kfd_cpu(96), [(2, 1), (2, 2)])
    m.kfd_node(
        1, kfd_gpu(90402, 304, 4, 0x74A1, "0000:1b:00.0", 0x1A2B3C4D5E6F7081, 77), [(2, 0), (11, 2)]
    )
    m.kfd_node(
        2, kfd_gpu(90402, 304, 4, 0x74A1, "0000:3d:00.0", 0x1A2B3C4D5E6F7082, 77), [(2, 0), (11, 1)]
    )
    rocm(m, "6.4.1-120\n", "rocm-6.4.1")
    m.file("/dev/kfd")
    m.file("/dev/dri/renderD128")
    m.file("/dev/dri/renderD136")

    # Radeon RX 7900 XTX beside the Ryzen 7000 iGPU (gfx1036), ROCm 6.3.
    m = Machine("gpu-radeon-igpu", base)
    m.host_basics()
    m.pci("0000:03:00.0", 0x1002, 0x744C, 0x030000, "amdgpu", product_name="Radeon RX 7900 XTX\n")
    m.pci("0000:03:00.1", 0x1002, 0xAB30, 0x040300, "snd_hda_intel")
    m.pci("0000:13:00.0", 0x1002, 0x164E, 0x030000, "amdgpu")
    m.kfd_node(0, kfd_cpu(16), [(2, 1), (2, 2)])
    m.kfd_node(1, kfd_gpu(110000, 96, 2, 0x744C, "0000:03:00.0", 0x9F1E2D3C4B5A6978), [(2, 0)])
    m.kfd_node(2, kfd_gpu(100306, 2, 2, 0x164E, "0000:13:00.0", 0), [(2, 0)])
    rocm(m, "6.3.0-39\n", "rocm-6.3.0")
    m.file("/dev/kfd")

    # MI355X (gfx950) with ROCm 7.0.2, no /opt/rocm link: found through ROCM_PATH.
    m = Machine("gpu-mi355x-rocm7", base)
    m.host_basics()
    m.pci("0000:05:00.0", 0x1002, 0x75A3, 0x120000, "amdgpu")
    m.kfd_node(0, kfd_cpu(128), [(2, 1)])
    m.kfd_node(1, kfd_gpu(90500, 256, 4, 0x75A3, "0000:05:00.0", 0x55AA55AA55AA0001), [(2, 0)])
    m.file("/opt/rocm-7.0.2/.info/version", "7.0.2\n")
    m.file("/dev/kfd")

    # 2x Data Center GPU Max 1550 (Ponte Vecchio) on i915, and the BMC's VGA.
    m = Machine("gpu-intel-max", base)
    m.host_basics()
    m.pci("0000:02:00.0", 0x1A03, 0x2000, 0x030000, "ast")
    m.pci("0000:29:00.0", 0x8086, 0x0BD5, 0x038000, "i915")
    m.pci("0000:9a:00.0", 0x8086, 0x0BD5, 0x038000, "i915")
    m.file("/dev/dri/renderD128")
    m.file("/dev/dri/renderD129")

    # Arc A770 on xe beside a Tiger Lake iGPU on i915.
    m = Machine("gpu-intel-arc-igpu", base)
    m.host_basics()
    m.pci("0000:00:02.0", 0x8086, 0x9A49, 0x030000, "i915")
    m.pci("0000:03:00.0", 0x8086, 0x56A0, 0x030000, "xe")
    m.pci("0000:04:00.0", 0x8086, 0x4F90, 0x040300, "snd_hda_intel")

    # An Intel GPU newer than the bundled table (needs Level Zero).
    m = Machine("gpu-intel-future", base)
    m.host_basics()
    m.pci("0000:03:00.0", 0x8086, 0xFD80, 0x030000, "xe")

    # WSL2 with an RTX 3080 passed through: no PCI bus, no driver files, only /dev/dxg.
    m = Machine("wsl2-rtx3080", base)
    m.file("/proc/sys/kernel/osrelease", "5.15.167.4-microsoft-standard-WSL2\n")
    m.file(
        "/proc/version", "Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f)\n"
    )
    m.file("/dev/dxg")
    m.file("/usr/lib/wsl/lib/libnvidia-ml.so.1")
    m.file("/usr/lib/wsl/lib/libcuda.so.1")
    m.file("/sys/class/drm/version", "drm 1.1.0 20060810\n")

    # Docker container started without --gpus on an L4 host: host /proc and /sys, no device nodes.
    m = Machine("container-nogpu", base)
    m.file("/.dockerenv")
    m.file("/proc/sys/kernel/osrelease", "6.8.0-45-generic\n")
    m.file("/proc/1/cgroup", "0::/\n")
    m.nvidia_driver("535.183.01")
    for addr in ["0000:82:00.0", "0000:c1:00.0"]:
        m.pci(addr, 0x10DE, 0x27B8, 0x030200, "nvidia")
    m.file("/dev/null")

    # Server without accelerators: BMC VGA, a NIC and a host bridge.
    m = Machine("nogpu-server", base)
    m.host_basics()
    m.pci("0000:00:00.0", 0x8086, 0x09A2, 0x060000)
    m.pci("0000:02:00.0", 0x1A03, 0x2000, 0x030000, "ast")
    m.pci("0000:18:00.0", 0x8086, 0x1521, 0x020000, "igb")

    # Broken files everywhere: garbage versions, unreadable attributes, link loops.
    m = Machine("gpu-garbage", base)
    m.host_basics()
    m.file("/sys/module/nvidia/version", b"\xff\xfe garbage\x00\n")
    m.file("/proc/driver/nvidia/version", "NVRM version: who knows\n")
    m.pci("0000:01:00.0", 0x10DE, 0x2684, 0x030000, "nvidia")
    m.pci("0000:02:00.0", 0x1002, 0x744C, 0x030000, "amdgpu")
    m.file("/sys/devices/pci0000:00/0000:03:00.0/class", "zzz\n")
    m.file("/sys/devices/pci0000:00/0000:03:00.0/vendor", "0x8086\n")
    m.file("/sys/devices/pci0000:00/0000:03:00.0/device", "0x56a0\n")
    m.link("/sys/bus/pci/devices/0000:03:00.0", "../../../devices/pci0000:00/0000:03:00.0")
    m.file("/sys/devices/pci0000:00/0000:04:00.0/vendor/oops", "a directory, not a file\n")
    m.link("/sys/bus/pci/devices/0000:04:00.0", "../../../devices/pci0000:00/0000:04:00.0")
    m.link("/sys/bus/pci/devices/0000:05:00.0", "0000:05:00.0")
    m.file("/sys/devices/pci0000:00/0000:06:00.0/vendor", "0x8086\n")
    m.file("/sys/devices/pci0000:00/0000:06:00.0/device", "0x56a0\n")
    m.file("/sys/devices/pci0000:00/0000:06:00.0/class", "0x030000\n")
    m.link("/sys/devices/pci0000:00/0000:06:00.0/driver", "driver")
    m.link("/sys/bus/pci/devices/0000:06:00.0", "../../../devices/pci0000:00/0000:06:00.0")
    m.file("/sys/class/kfd/kfd/topology/nodes/0/properties", b"\x00\x01\x02 binary noise\n")
    m.file(
        "/sys/class/kfd/kfd/topology/nodes/1/properties",
        "simd_count 192\nsimd_per_cu 2\ngfx_target_version 999999999\n",
    )
    m.file("/sys/class/kfd/kfd/topology/nodes/2/properties/oops", "a directory\n")
    m.link("/sys/class/kfd/kfd/topology/nodes/3", "3")
    m.file("/opt/rocm/.info/version", "not-a-version\n")
    m.file("/dev/nvidia0")
    m.file("/dev/kfd")


if __name__ == "__main__":
    build()
