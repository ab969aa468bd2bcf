"""Small 64-bit ELF shared-library stand-ins carrying GPU code sections: ``.nv_fatbin`` with
fat binary containers (CUDA) and ``.hip_fatbin`` with clang offload bundles (ROCm), laid out
as the toolchains write them (headers only; the payloads are filler bytes)."""

from __future__ import annotations

import struct
from collections.abc import Sequence
from pathlib import Path


def fatbin(archs: Sequence[str], containers: int = 1) -> bytes:
    """``containers`` fat binary containers, each with one entry per arch (``90_real`` is a
    sm_90 cubin, ``90_virtual`` compute_90 PTX)."""
    out = b""
    for _ in range(containers):
        entries = b""
        for arch in archs:
            number, _, kind = arch.partition("_")
            payload = b"\x7fELF" + b"\0" * 12 if kind == "real" else b".version 8.0\n\0\0\0"
            header = struct.pack("<HHIQ", 2 if kind == "real" else 1, 0x0101, 64, len(payload))
            header += struct.pack("<IIHHI", len(payload), 0, 0, 8, int(number))
            header += b"\0" * (64 - len(header))
            entries += header + payload
        out += struct.pack("<IHHQ", 0xBA55ED50, 1, 16, len(entries)) + entries
        out += b"\0" * (-len(out) % 8)
    return out


def offload_bundle(targets: Sequence[str]) -> bytes:
    """One clang offload bundle with a host entry and one ``hipv4`` entry per gfx target."""
    ids = ["host-x86_64-unknown-linux-gnu-"] + [
        f"hipv4-amdgcn-amd-amdhsa--{t}:sramecc+:xnack-" for t in targets
    ]
    header = b"__CLANG_OFFLOAD_BUNDLE__" + struct.pack("<Q", len(ids))
    table_size = sum(24 + len(i) for i in ids)
    offset = 32 + table_size
    table = b""
    for ident in ids:
        table += struct.pack("<QQQ", offset, 8, len(ident)) + ident.encode()
        offset += 8
    return header + table + b"\0" * 8 * len(ids)


def elf_library(
    path: Path, *, cuda: Sequence[str] = (), rocm: Sequence[str] = (), containers: int = 1
) -> Path:
    """Write a minimal ELF64 shared object at ``path`` with the given GPU code sections."""
    sections: list[tuple[str, bytes]] = []
    if cuda:
        sections.append((".nv_fatbin", fatbin(cuda, containers)))
    if rocm:
        sections.append((".hip_fatbin", offload_bundle(rocm)))
    sections.append((".text", b"\xc3" * 16))
    names = b"\0" + b"".join(n.encode() + b"\0" for n, _ in sections) + b".shstrtab\0"
    body = b""
    placed = []
    offset = 64
    for name, data in sections:
        body += b"\0" * (-(offset + len(body)) % 8)
        placed.append((name, offset + len(body), len(data)))
        body += data
    str_off = offset + len(body)
    body += names
    body += b"\0" * (-(offset + len(body)) % 8)
    shoff = offset + len(body)
    shdrs = b"\0" * 64
    name_at = 1
    for name, off, size in placed:
        shdrs += struct.pack("<IIQQQQIIQQ", name_at, 1, 2, 0, off, size, 0, 0, 8, 0)
        name_at += len(name) + 1
    shdrs += struct.pack("<IIQQQQIIQQ", name_at, 3, 0, 0, str_off, len(names), 0, 0, 1, 0)
    count = len(placed) + 2
    ident = b"\x7fELF" + bytes([2, 1, 1, 0]) + b"\0" * 8
    header = ident + struct.pack(
        "<HHIQQQIHHHHHH", 3, 62, 1, 0, 0, shoff, 0, 64, 0, 0, 64, count, count - 1
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + body + shdrs)
    return path
