"""GPU code compiled into a shared library, read from its ELF sections without loading it.

- CUDA: the ``.nv_fatbin`` section holds fat binary containers (a 16-byte header, magic
  ``0xBA55ED50``, then entries of a 64-byte or longer header and their payload). Each entry header
  names its kind (1: PTX, 2: a cubin) and its SM architecture, which become the ``sm_arch``
  vocabulary of the ``nvidia`` namespace: ``90_real`` for a sm_90 cubin, ``90_virtual`` for
  compute_90 PTX.
- ROCm: the ``.hip_fatbin`` section holds clang offload bundles (``__CLANG_OFFLOAD_BUNDLE__``,
  an entry count, then per entry its offset, size and an id such as
  ``hipv4-amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-``), whose targets become ``gfx942``.
  A compressed bundle (``CCOB``) keeps its ids inside the compressed payload; it is reported
  as unreadable rather than decompressed.

Reading is bounded: only headers are read (payloads are skipped with a seek), at most
:data:`MAX_CONTAINERS` containers per library, and any malformed structure ends the walk with
what was found so far. A library is never loaded, so nothing here runs code of the target.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import BinaryIO

__all__ = ["MAX_CONTAINERS", "GpuCode", "read_gpu_code"]

#: containers (CUDA) or bundles (ROCm) read per library: a CUDA build's libraries hold one per
#: translation unit, all compiled for the same list, so the first few hundred name every arch
MAX_CONTAINERS = 256
_FATBIN_MAGIC = 0xBA55ED50
_FATBIN_RELOC_MAGIC = 0x466243B1
_BUNDLE_MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
_COMPRESSED_BUNDLE_MAGIC = b"CCOB"
_MAX_SECTIONS = 4096
_MAX_ID = 256


@dataclass(frozen=True, slots=True)
class GpuCode:
    """What a library carries: CUDA archs (``90_real``, ``90_virtual``), ROCm targets
    (``gfx942``), how many containers were read, and a note when something could not be read."""

    cuda: frozenset[str] = frozenset()
    rocm: frozenset[str] = frozenset()
    containers: int = 0
    note: str = ""

    @property
    def empty(self) -> bool:
        return not self.cuda and not self.rocm


def _sections(fh: BinaryIO) -> dict[str, tuple[int, int]] | None:
    """name -> (file offset, size) of the sections of a 64-bit little-endian ELF file."""
    ident = fh.read(64)
    if len(ident) < 64 or ident[:4] != b"\x7fELF" or ident[4] != 2 or ident[5] != 1:
        return None
    (shoff,) = struct.unpack_from("<Q", ident, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", ident, 0x3A)
    if shentsize < 64 or not 0 < shnum <= _MAX_SECTIONS or shstrndx >= shnum:
        return None
    fh.seek(shoff)
    table = fh.read(shentsize * shnum)
    if len(table) < shentsize * shnum:
        return None
    headers = []
    for i in range(shnum):
        name, _type, _flags, _addr, offset, size = struct.unpack_from(
            "<IIQQQQ", table, i * shentsize
        )
        headers.append((name, offset, size))
    _, str_off, str_size = headers[shstrndx]
    if str_size > 1 << 20:
        return None
    fh.seek(str_off)
    strings = fh.read(str_size)
    out: dict[str, tuple[int, int]] = {}
    for name, offset, size in headers:
        end = strings.find(b"\0", name)
        if 0 <= name < len(strings) and end != -1:
            out[strings[name:end].decode("latin-1")] = (offset, size)
    return out


def _cuda(fh: BinaryIO, start: int, size: int) -> tuple[set[str], int]:
    archs: set[str] = set()
    pos, end, containers = start, start + size, 0
    while pos + 16 <= end and containers < MAX_CONTAINERS:
        fh.seek(pos)
        head = fh.read(16)
        if len(head) < 16:
            break
        magic, _version, header_size, fat_size = struct.unpack("<IHHQ", head)
        if magic not in (_FATBIN_MAGIC, _FATBIN_RELOC_MAGIC):
            # containers are 8-byte aligned in the section; padding between them is zeros
            if head == b"\0" * 16:
                pos += 16
                continue
            break
        containers += 1
        entry = pos + header_size
        stop = min(entry + fat_size, end)
        while entry + 64 <= stop:
            fh.seek(entry)
            raw = fh.read(64)
            if len(raw) < 64:
                break
            kind, _unknown, entry_size, payload = struct.unpack_from("<HHIQ", raw, 0)
            (arch,) = struct.unpack_from("<I", raw, 28)
            if entry_size < 64:
                break
            if 10 <= arch <= 1000:
                if kind == 1:
                    archs.add(f"{arch}_virtual")
                elif kind in (2, 0x10):
                    archs.add(f"{arch}_real")
            entry += entry_size + payload
        pos = max(pos + 16, pos + header_size + fat_size)
        pos = (pos + 7) & ~7
    return archs, containers


def _rocm(fh: BinaryIO, start: int, size: int) -> tuple[set[str], int, str]:
    targets: set[str] = set()
    pos, end, bundles, note = start, start + size, 0, ""
    while pos + 32 <= end and bundles < MAX_CONTAINERS:
        fh.seek(pos)
        head = fh.read(32)
        if head[:4] == _COMPRESSED_BUNDLE_MAGIC:
            note = "compressed offload bundles (their targets are inside the compressed data)"
            break
        if head[:24] != _BUNDLE_MAGIC:
            if head == b"\0" * 32:
                pos += 32
                continue
            break
        bundles += 1
        (count,) = struct.unpack_from("<Q", head, 24)
        cursor, bundle_end = pos + 32, pos + 32
        for _ in range(min(count, 1024)):
            fh.seek(cursor)
            fixed = fh.read(24)
            if len(fixed) < 24:
                break
            offset, length, id_len = struct.unpack("<QQQ", fixed)
            if id_len > _MAX_ID:
                break
            ident = fh.read(id_len).decode("latin-1")
            cursor += 24 + id_len
            bundle_end = max(bundle_end, pos + offset + length)
            target = ident.rpartition("--")[2].split(":", 1)[0]
            if target.startswith("gfx"):
                targets.add(target)
        pos = max(cursor, bundle_end)
        pos = (pos + 7) & ~7
    return targets, bundles, note


def read_gpu_code(path: str) -> GpuCode | None:
    """The GPU code in the library at ``path``; None when it is no ELF file or has no GPU code
    section. Never raises for a damaged or unreadable file (the answer is what could be read)."""
    try:
        with open(path, "rb") as fh:
            sections = _sections(fh)
            if sections is None:
                return None
            found = False
            cuda: set[str] = set()
            rocm: set[str] = set()
            containers, note = 0, ""
            if ".nv_fatbin" in sections:
                found = True
                cuda, containers = _cuda(fh, *sections[".nv_fatbin"])
            if ".hip_fatbin" in sections:
                found = True
                rocm, bundles, note = _rocm(fh, *sections[".hip_fatbin"])
                containers += bundles
    except (OSError, struct.error, ValueError, OverflowError):
        return None
    if not found:
        return None
    return GpuCode(frozenset(cuda), frozenset(rocm), containers, note)
