"""Wheels built byte by byte to attack zip readers: every header written with struct, so that a
test can make the central directory and the local headers disagree, members overlap, or sizes
lie, as no zip library would write them."""

from __future__ import annotations

import base64
import hashlib
import struct
import zlib
from pathlib import Path
from typing import NamedTuple

NAME = "hostile"
DIST_INFO = f"{NAME}-1.0.dist-info"
FILENAME = f"{NAME}-1.0-py3-none-any.whl"


class Entry(NamedTuple):
    """A member: its name in the local header, its content, and what the central directory
    says of it (name and inflated size, when they differ from the truth)."""

    name: str
    data: bytes
    cd_name: str | None = None
    declared_size: int | None = None


def record_hash(data: bytes, algorithm: str = "sha256") -> str:
    digest = hashlib.new(algorithm, data).digest()
    return f"{algorithm}=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def _central(name: bytes, crc: int, compressed: int, size: int, offset: int) -> bytes:
    return (
        struct.pack(
            "<4sHHHHHHIIIHHHHHII",
            b"PK\x01\x02",
            20,
            20,
            0,
            8,
            0,
            0x21,
            crc,
            compressed,
            size,
            len(name),
            0,
            0,
            0,
            0,
            0o100644 << 16,
            offset,
        )
        + name
    )


def write_zip(
    path: Path,
    entries: list[Entry],
    aliases: dict[str, str] | None = None,
    unlisted: frozenset[str] = frozenset(),
) -> Path:
    """A deflated zip of ``entries``; ``aliases`` adds central directory entries (new name ->
    existing member) that point at an existing member's local header; the members named in
    ``unlisted`` have their local header and data but no central directory entry (a gap that
    readers of the central directory skip, and a reader of the stream sees)."""
    out = bytearray()
    directory: list[bytes] = []
    for entry in entries:
        compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
        packed = compressor.compress(entry.data) + compressor.flush()
        crc = zlib.crc32(entry.data)
        size = len(entry.data) if entry.declared_size is None else entry.declared_size
        local_name = entry.name.encode()
        offset = len(out)
        out += struct.pack(
            "<4sHHHHHIIIHH",
            b"PK\x03\x04",
            20,
            0,
            8,
            0,
            0x21,
            crc,
            len(packed),
            size,
            len(local_name),
            0,
        )
        out += local_name + packed
        if entry.name in unlisted:
            continue
        cd_name = (entry.cd_name or entry.name).encode()
        directory.append(_central(cd_name, crc, len(packed), size, offset))
        for alias, target in (aliases or {}).items():
            if target == entry.name:
                directory.append(_central(alias.encode(), crc, len(packed), size, offset))
    start = len(out)
    blob = b"".join(directory)
    out += blob
    out += struct.pack(
        "<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(directory), len(directory), len(blob), start, 0
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(out))
    return path


#: the metadata folder of a wheel named ``hostile`` that holds another project's metadata: one
#: that pip refuses, and one it lets through (its name only starts with the wheel's)
FOREIGN_DIST_INFO = {
    "foreign-dist-info": "other-1.0.dist-info",
    "prefixed-dist-info": "hostile_other-1.0.dist-info",
}


def hostile_wheel(folder: Path, kind: str) -> Path:
    """A wheel that is hostile in the way ``kind`` names (see :data:`KINDS`)."""
    #: a wheel named for one project that carries another's metadata folder
    dist_info = FOREIGN_DIST_INFO.get(kind, DIST_INFO)
    files = {
        f"{NAME}/__init__.py": b"X = 1\n",
        f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n",
        f"{dist_info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    declared: dict[str, int] = {}
    cd_names: dict[str, str] = {}
    aliases: dict[str, str] = {}
    algorithm = "sha256"
    extra_record = ""
    if kind == "zip-bomb":
        # 200 MB of zeros deflate to about 200 KB; the central directory and RECORD say 1,000
        files[f"{NAME}/big.bin"] = bytes(200 << 20)
        declared[f"{NAME}/big.bin"] = 1000
    elif kind == "md5-record":
        algorithm = "md5"
    elif kind == "overlapping-members":
        # a second central directory entry reads the module's bytes as a .pth file
        aliases["evil.pth"] = f"{NAME}/__init__.py"
        extra_record = f"evil.pth,{record_hash(b'X = 1' + bytes([10]))},6\n"
    elif kind == "forged-central-directory":
        cd_names[f"{NAME}/__init__.py"] = f"{NAME}/other.py"
    elif kind == "newline-in-name":
        files[f"{NAME}/files\n../../../p.pth"] = b"import os\n"
    elif kind == "carriage-return-in-name":
        files[f"{NAME}/a\rb.py"] = b"Y = 2\n"
    elif kind in FOREIGN_DIST_INFO:
        pass
    else:
        raise ValueError(kind)
    record = "".join(
        f"{cd_names.get(name, name)},{record_hash(data, algorithm)},"
        f"{declared.get(name, len(data))}\n"
        for name, data in files.items()
    )
    record += extra_record + f"{dist_info}/RECORD,,\n"
    entries = [
        Entry(name, data, cd_names.get(name), declared.get(name)) for name, data in files.items()
    ]
    entries.append(Entry(f"{dist_info}/RECORD", record.encode()))
    return write_zip(folder / FILENAME, entries, aliases)


#: each kind of hostile wheel, with words the refusal must contain
KINDS = {
    "zip-bomb": "declared 1000 bytes",
    "md5-record": "is not sha256, sha384 or sha512",
    "overlapping-members": "overlap",
    "forged-central-directory": "local header names it",
    "newline-in-name": "contains a control character",
    "carriage-return-in-name": "contains a control character",
    "foreign-dist-info": "'other-1.0.dist-info' is not for project 'hostile'",
    "prefixed-dist-info": "'hostile_other-1.0.dist-info' is not for project 'hostile'",
}
