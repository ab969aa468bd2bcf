"""Hostile wheels: every one is refused with an error naming the file and the problem, and nothing
(not even a temporary file) is left in the output folder."""

from __future__ import annotations

import struct
import zipfile
import zlib
from pathlib import Path

import pytest

from fitwheel.errors import FitwheelError
from fitwheel.publish.config import VariantConfig
from fitwheel.publish.make import make_variant, strip_variant
from fitwheel.publish.wheelfile import _moved_record
from fitwheel.variants.model import VariantProperty
from fitwheel.wheel.archive import (
    Limits,
    NotAWheelError,
    RecordMismatchError,
    UnsafeWheelError,
    WheelArchive,
    ZipBombError,
    check_member_name,
)
from tests.kit import make_wheel, record_hash

PROP = [VariantProperty.parse("blas :: provider :: mkl")]


def _patch(path: Path, old: bytes, new: bytes) -> None:
    """Rename members in place (same length), in both local and central headers."""
    assert len(old) == len(new)
    data = path.read_bytes()
    assert old in data
    path.write_bytes(data.replace(old, new))


def _set_declared_size(path: Path, member: str, size: int) -> None:
    """Make the archive claim ``size`` uncompressed bytes for ``member``."""
    data = bytearray(path.read_bytes())
    name = member.encode()
    pos = 0
    while (pos := data.find(b"PK\x03\x04", pos)) != -1:
        name_len = struct.unpack_from("<H", data, pos + 26)[0]
        if bytes(data[pos + 30 : pos + 30 + name_len]) == name:
            struct.pack_into("<I", data, pos + 22, size)
        pos += 4
    pos = 0
    while (pos := data.find(b"PK\x01\x02", pos)) != -1:
        name_len = struct.unpack_from("<H", data, pos + 28)[0]
        if bytes(data[pos + 46 : pos + 46 + name_len]) == name:
            struct.pack_into("<I", data, pos + 24, size)
        pos += 4
    path.write_bytes(bytes(data))


def _assert_refused(
    wheel: Path, config: VariantConfig, out: Path, error: type[Exception], words: str
) -> None:
    with pytest.raises(error) as info:
        make_variant(wheel, PROP, config, out_dir=out)
    message = str(info.value)
    assert str(wheel) in message
    assert words in message
    assert list(out.iterdir()) == []


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("../evil.py", "'..'"),
        ("pkg/../../evil.py", "'..'"),
        ("/etc/passwd", "absolute"),
        ("C:/evil.py", "absolute"),
        ("pkg\\evil.py", "backslash"),
        ("pkg//evil.py", "empty"),
        ("", "empty"),
    ],
)
def test_unsafe_member_names_are_named(name: str, problem: str) -> None:
    reason = check_member_name(name)
    assert reason is not None and problem in reason


@pytest.mark.parametrize("name", ["pkg/mod.py", "pkg/sub/", "a.dist-info/RECORD", "x..y/z"])
def test_ordinary_member_names_pass(name: str) -> None:
    assert check_member_name(name) is None


def test_dotdot_member_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path, files={"XX/evil.py": b"x = 1\n", "pkg/__init__.py": b""})
    _patch(wheel, b"XX/evil.py", b"../evil.py")
    _assert_refused(wheel, config, out, UnsafeWheelError, "'../evil.py'")
    assert not (tmp_path / "evil.py").exists()


def test_absolute_member_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path, files={"Xtmp/evil.py": b"x = 1\n"})
    _patch(wheel, b"Xtmp/evil.py", b"/tmp/evil.py")
    _assert_refused(wheel, config, out, UnsafeWheelError, "absolute path")


def test_duplicate_member_names_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path, files={"pkg/a.py": b"a\n", "pkg/b.py": b"b\n"})
    _patch(wheel, b"pkg/b.py", b"pkg/a.py")
    _assert_refused(wheel, config, out, UnsafeWheelError, "appears twice")


def test_duplicate_variant_json_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path)
    with (
        pytest.warns(UserWarning, match="Duplicate name"),
        zipfile.ZipFile(wheel, "a") as zf,
    ):
        zf.writestr("demo_pkg-1.0.dist-info/variant.json", b"{}")
        zf.writestr("demo_pkg-1.0.dist-info/variant.json", b"{}")
    _assert_refused(wheel, config, out, UnsafeWheelError, "variant.json")


def test_two_dist_info_folders_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path, files={"other-2.0.dist-info/variant.json": b"{}"})
    _assert_refused(wheel, config, out, NotAWheelError, "exactly one top-level .dist-info")


def test_not_a_zip_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = tmp_path / "demo_pkg-1.0-py3-none-any.whl"
    wheel.write_bytes(b"#!/bin/sh\necho this is not a wheel\n" * 20)
    _assert_refused(wheel, config, out, NotAWheelError, "not a valid zip archive")


def test_truncated_zip_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path)
    wheel.write_bytes(wheel.read_bytes()[:-30])
    _assert_refused(wheel, config, out, NotAWheelError, "not a valid zip archive")


def test_record_hash_mismatch_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(
        tmp_path,
        files={"pkg/mod.py": b"answer = 43\n"},
        record_content={"pkg/mod.py": b"answer = 42\n"},
    )
    _assert_refused(wheel, config, out, RecordMismatchError, "does not match its RECORD hash")


def test_record_missing_member_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path)
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("demo_pkg/extra.py", b"sneaky = True\n")
    _assert_refused(wheel, config, out, RecordMismatchError, "'demo_pkg/extra.py' has no hash")


def test_record_size_mismatch_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path, files={"pkg/mod.py": b"x = 1\n"})
    good = f"pkg/mod.py,{record_hash(b'x = 1' + bytes([10]))},6".encode()
    bad = f"pkg/mod.py,{record_hash(b'x = 1' + bytes([10]))},7".encode()
    with zipfile.ZipFile(wheel) as zf:
        items = [(i, zf.read(i)) for i in zf.infolist()]
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, content in items:
            zf.writestr(info, content.replace(good, bad))
    _assert_refused(wheel, config, out, RecordMismatchError, "RECORD says 'pkg/mod.py' is 7")


def test_record_lists_absent_file_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as zf:
        items = [(i, zf.read(i)) for i in zf.infolist()]
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, content in items:
            if info.filename.endswith("RECORD"):
                content += b"demo_pkg/ghost.py,sha256=AAAA,3\n"
            zf.writestr(info, content)
    _assert_refused(wheel, config, out, RecordMismatchError, "'demo_pkg/ghost.py'")


def test_declared_size_limit(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path, files={"pkg/big.bin": b"\0" * 5000})
    with pytest.raises(ZipBombError, match="declares 5000 bytes"):
        make_variant(wheel, PROP, config, out_dir=out, limits=Limits(max_member_size=4096))
    assert list(out.iterdir()) == []


def test_compression_ratio_limit(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path, files={"pkg/zeros.bin": b"\0" * (4 << 20)})
    limits = Limits(max_ratio=100, ratio_floor=1 << 20)
    with pytest.raises(ZipBombError, match="ratio limit 100"):
        make_variant(wheel, PROP, config, out_dir=out, limits=limits)
    assert list(out.iterdir()) == []


def test_member_inflating_beyond_declared_size(
    tmp_path: Path, config: VariantConfig, out: Path
) -> None:
    wheel = make_wheel(
        tmp_path,
        files={"pkg/zeros.bin": b"\0" * (256 << 10)},
        record_content={"pkg/zeros.bin": b"\0" * 1000},
    )
    _set_declared_size(wheel, "pkg/zeros.bin", 1000)
    _assert_refused(wheel, config, out, ZipBombError, "beyond its declared 1000 bytes")


def test_total_declared_size_limit(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path, files={f"pkg/{i}.bin": b"x" * 1000 for i in range(5)})
    with pytest.raises(ZipBombError, match="in all"):
        make_variant(wheel, PROP, config, out_dir=out, limits=Limits(max_total_size=3000))


def test_interrupted_make_leaves_nothing(
    tmp_path: Path, config: VariantConfig, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    wheel = make_wheel(tmp_path, files={f"pkg/m{i}.py": b"x = 1\n" * 100 for i in range(20)})
    from fitwheel.publish import output

    real = output.copy_range
    copied: list[int] = []

    def interrupted(*args: object, **kwargs: object) -> None:
        real(*args, **kwargs)  # type: ignore[arg-type]
        copied.append(1)
        raise KeyboardInterrupt  # as if Ctrl-C arrived after some bytes were written

    monkeypatch.setattr(output, "copy_range", interrupted)
    with pytest.raises(KeyboardInterrupt):
        make_variant(wheel, PROP, config, out_dir=out)
    assert copied == [1]
    assert list(out.iterdir()) == []


def test_strip_refuses_plain_wheel(tmp_path: Path, out: Path) -> None:
    wheel = make_wheel(tmp_path)
    with pytest.raises(FitwheelError, match="not a variant wheel"):
        strip_variant(wheel, out_dir=out)
    assert list(out.iterdir()) == []


def test_prepended_bytes_refused(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = make_wheel(tmp_path)
    wheel.write_bytes(b"#!/bin/sh\nexit 0\n" + wheel.read_bytes())
    _assert_refused(wheel, config, out, NotAWheelError, "not where the end record says")


def test_local_header_naming_another_file_refused(
    tmp_path: Path, config: VariantConfig, out: Path
) -> None:
    wheel = make_wheel(tmp_path, files={"pkg/aa.py": b"a\n"})
    data = bytearray(wheel.read_bytes())
    local = data.find(b"PK\x03\x04" + data[4:26])  # the first member's local header
    assert data[local + 30 : local + 39] == b"pkg/aa.py"
    data[local + 30 : local + 39] = b"pkg/zz.py"
    wheel.write_bytes(bytes(data))
    _assert_refused(wheel, config, out, UnsafeWheelError, "local header names it 'pkg/zz.py'")


def test_members_after_record_move_and_keep_zip64_sizes(
    tmp_path: Path, config: VariantConfig, out: Path
) -> None:
    """A member after RECORD moves when variant.json is inserted: its central directory entry
    must point at its new offset, zip64 extra fields included."""
    wheel = make_wheel(tmp_path)
    late = b"late = True\n" * 50
    with zipfile.ZipFile(wheel) as zf:
        items = [(i, zf.read(i)) for i in zf.infolist()]
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for info, content in items:
            if info.filename.endswith("RECORD"):
                content += f"demo_pkg/late.py,{record_hash(late)},{len(late)}\n".encode()
            zf.writestr(info, content)
        with zf.open(zipfile.ZipInfo("demo_pkg/late.py"), "w", force_zip64=True) as handle:
            handle.write(late)
    result = make_variant(wheel, PROP, config, out_dir=out)
    with zipfile.ZipFile(result.path) as zf:
        assert zf.testzip() is None
        assert zf.read("demo_pkg/late.py") == late
        names = zf.namelist()
    assert names[-3:] == [
        "demo_pkg-1.0.dist-info/variant.json",
        "demo_pkg-1.0.dist-info/RECORD",
        "demo_pkg/late.py",
    ]
    back = strip_variant(result.path, out_dir=tmp_path / "back")
    with zipfile.ZipFile(back) as stripped, zipfile.ZipFile(wheel) as original:
        assert stripped.namelist() == original.namelist()
        for name in original.namelist():
            assert stripped.read(name) == original.read(name)


def test_offset_beyond_four_gigabytes_goes_to_zip64(tmp_path: Path) -> None:
    """Central directory entries for members past 4 GiB carry the offset in a zip64 field."""
    wheel = make_wheel(tmp_path)
    with WheelArchive(wheel) as archive:
        member = archive.member("demo_pkg-1.0.dist-info/METADATA")
    moved = _moved_record(member, 5 << 30)
    signature, *_ = struct.unpack_from("<4s", moved)
    assert signature == b"PK\x01\x02"
    assert struct.unpack_from("<I", moved, 42)[0] == 0xFFFFFFFF
    name_len, extra_len = struct.unpack_from("<HH", moved, 28)
    extra = moved[46 + name_len : 46 + name_len + extra_len]
    kind, size, offset = struct.unpack_from("<HHQ", extra)
    assert (kind, size, offset) == (1, 8, 5 << 30)
    # moved again (now from a zip64 offset) to a small offset: still read back right
    member.record = moved
    again = _moved_record(member, 1234)
    name_len, extra_len = struct.unpack_from("<HH", again, 28)
    extra = again[46 + name_len : 46 + name_len + extra_len]
    assert struct.unpack_from("<HHQ", extra) == (1, 8, 1234)


@pytest.mark.parametrize("library", ["zlib", "default"])
def test_verification_with_each_inflater(
    tmp_path: Path,
    config: VariantConfig,
    out: Path,
    monkeypatch: pytest.MonkeyPatch,
    library: str,
) -> None:
    """The checks hold with plain zlib (when ISA-L is missing) and on the two-thread path that
    large members take."""
    from fitwheel.publish import wheelfile
    from fitwheel.wheel import inflate

    if library == "zlib":
        monkeypatch.setattr(inflate, "IMPL", zlib)
    monkeypatch.setattr(wheelfile, "_PIPELINE_MIN", 1000)
    big = bytes(range(256)) * 64
    good = make_wheel(tmp_path / "good", files={"pkg/big.bin": big, "pkg/small.py": b"x = 1\n"})
    result = make_variant(good, PROP, config, out_dir=out)
    with zipfile.ZipFile(result.path) as zf:
        assert zf.read("pkg/big.bin") == big
    result.path.unlink()
    bad = make_wheel(
        tmp_path / "bad",
        files={"pkg/big.bin": big},
        record_content={"pkg/big.bin": big[:-1] + b"!"},
    )
    _assert_refused(bad, config, out, RecordMismatchError, "does not match its RECORD hash")


RECORD_LINES = [
    "pkg/__init__.py,sha256=AbC-_x,12",
    "pkg/data/é ü.txt,sha384=q=r,0",
    "pkg/no-hash.py,,",
    "pkg/odd name=x.py,sha256=Zz,007",
    "pkg-1.0.dist-info/RECORD,,",
]


def test_record_lines_parse_the_same_however_the_file_is_written() -> None:
    from fitwheel.wheel.record import RecordEntry, parse_record

    plain = parse_record(("\n".join(RECORD_LINES) + "\n").encode())
    assert plain == parse_record(("\r\n".join(RECORD_LINES) + "\r\n").encode())
    assert plain == parse_record("\n".join(RECORD_LINES).encode())
    assert list(plain) == [line.rsplit(",", 2)[0] for line in RECORD_LINES]
    assert plain["pkg/data/é ü.txt"] == RecordEntry("pkg/data/é ü.txt", "sha384", "q=r", 0)
    assert plain["pkg/no-hash.py"] == RecordEntry("pkg/no-hash.py", None, None, None)
    assert plain["pkg/odd name=x.py"] == RecordEntry("pkg/odd name=x.py", "sha256", "Zz", 7)


@pytest.mark.parametrize(
    ("bad", "words"),
    [
        ("pkg/b.py,sha1=abc,3", "RECORD line 2: hash 'sha1=abc' is not sha256, sha384 or sha512"),
        ("pkg/a.py,sha256=abc,12x", "RECORD line 2: bad size '12x'"),
        ("pkg/a.py,sha256=abc", "RECORD line 2 has 2 fields, not 3"),
        ("pkg/a.py,sha256=abc,", "RECORD line 2: 'pkg/a.py' has a hash but no size"),
        ("pkg/a.py,md5=abc,3", "RECORD line 2: hash 'md5=abc' is not sha256, sha384 or sha512"),
        ("pkg/__init__.py,,", "RECORD lists 'pkg/__init__.py' twice"),
    ],
)
def test_bad_record_lines_are_named(bad: str, words: str) -> None:
    from fitwheel.wheel.record import RecordError, parse_record

    lines = [RECORD_LINES[0], bad, *RECORD_LINES[1:]]
    with pytest.raises(RecordError) as info:
        parse_record(("\n".join(lines) + "\n").encode())
    assert words in str(info.value)
