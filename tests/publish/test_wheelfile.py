"""Hostile wheels: every one is refused with an error naming the file and the problem, and nothing
(not even a temporary file) is left in the output folder."""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path

import pytest
from publish_kit import make_wheel, record_hash

from fitwheel.errors import FitwheelError
from fitwheel.publish.config import VariantConfig
from fitwheel.publish.make import make_variant, strip_variant
from fitwheel.publish.wheelfile import (
    Limits,
    NotAWheelError,
    RecordMismatchError,
    UnsafeWheelError,
    ZipBombError,
    check_member_name,
)
from fitwheel.variants.model import VariantProperty

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
    from fitwheel.publish import wheelfile

    real = wheelfile._copy_run
    copied: list[int] = []

    def interrupted(*args: object, **kwargs: object) -> None:
        real(*args, **kwargs)  # type: ignore[arg-type]
        copied.append(1)
        raise KeyboardInterrupt  # as if Ctrl-C arrived after some bytes were written

    monkeypatch.setattr(wheelfile, "_copy_run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        make_variant(wheel, PROP, config, out_dir=out)
    assert copied == [1]
    assert list(out.iterdir()) == []


def test_strip_refuses_plain_wheel(tmp_path: Path, out: Path) -> None:
    wheel = make_wheel(tmp_path)
    with pytest.raises(FitwheelError, match="not a variant wheel"):
        strip_variant(wheel, out_dir=out)
    assert list(out.iterdir()) == []
