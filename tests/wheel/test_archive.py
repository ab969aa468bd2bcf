"""The one wheel reader's seams and rules: a ``reader`` (HTTP ranges) reads only what it must,
inflating never passes the declared size, and RECORD's one leniency is install's alone."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from fitwheel.wheel.archive import (
    NotAWheelError,
    UnsafeWheelError,
    WheelArchive,
)
from fitwheel.wheel.inflate import InflateSizeError, inflate_exact
from fitwheel.wheel.record import RecordError, check_coverage, parse_record
from tests.kit import clean_env, make_venv, make_wheel
from tests.wheel.hostile_zip import DIST_INFO, Entry, record_hash, write_zip

FITWHEEL = [sys.executable, "-m", "fitwheel", "install", "--no-index", "--compile"]


def _deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def test_a_reader_reads_the_directory_and_the_member_asked_for(tmp_path: Path) -> None:
    files: dict[str, str | bytes] = {f"pkg/m{i:03d}.py": b"x = 1\n" * 50 for i in range(300)}
    files["pkg/blob.bin"] = os.urandom(400_000)
    wheel = make_wheel(tmp_path, "pkg", "1.0", files=files)
    data = wheel.read_bytes()
    reads: list[tuple[int, int]] = []

    def pread(length: int, offset: int) -> bytes:
        reads.append((length, offset))
        return data[offset : offset + length]

    with WheelArchive(wheel, reader=pread, size=len(data)) as archive:
        opened = len(reads)
        metadata = archive.read_member(f"{archive.dist_info}/METADATA")
    assert metadata.startswith(b"Metadata-Version")
    assert opened <= 3  # the end record, the zip64 locator, the central directory
    assert len(reads) - opened <= 2  # the member's local header and its data
    assert sum(length for length, _ in reads) < len(data)


def test_through_a_reader_a_forged_local_header_is_refused_when_read(tmp_path: Path) -> None:
    body = b"X = 1\n"
    record = f"pkg/ok.py,{record_hash(body)},{len(body)}\n{DIST_INFO}/RECORD,,\n"
    meta = b"Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n"
    wheel = write_zip(
        tmp_path / "hostile-1.0-py3-none-any.whl",
        [
            Entry("pkg/ok.py", body, cd_name="evil.pth"),
            Entry(f"{DIST_INFO}/METADATA", meta),
            Entry(f"{DIST_INFO}/WHEEL", b"Wheel-Version: 1.0\n"),
            Entry(f"{DIST_INFO}/RECORD", record.encode()),
        ],
    )
    data = wheel.read_bytes()
    with WheelArchive(wheel, reader=lambda n, o: data[o : o + n], size=len(data)) as archive:
        assert archive.read_member(f"{DIST_INFO}/METADATA") == meta
        with pytest.raises(UnsafeWheelError, match=r"'evil\.pth': local header names it"):
            archive.read_member("evil.pth")
    with pytest.raises(UnsafeWheelError, match="local header names it"):
        WheelArchive(wheel)  # opened from the file, every header is checked at once


def test_inflate_exact_never_makes_more_than_one_byte_too_many() -> None:
    with pytest.raises(InflateSizeError):
        inflate_exact(_deflate(bytes(50 << 20)), 1000)
    with pytest.raises(InflateSizeError):
        inflate_exact(_deflate(b"abc"), 4)
    with pytest.raises(InflateSizeError):
        inflate_exact(_deflate(b"abcdef" * 1000)[:-8], 6000)
    assert inflate_exact(_deflate(b""), 0) == b""
    assert inflate_exact(_deflate(b"abc" * 99), 297) == b"abc" * 99


def test_a_record_row_for_a_missing_file_is_refused_by_publish_and_warned_by_install() -> None:
    record = parse_record(b"a.py,sha256=x,1\nghost.py,sha256=y,2\nd/RECORD,,\n")
    members = {"a.py": 1, "d/RECORD": 30}
    with pytest.raises(RecordError, match=r"'ghost\.py', which is not in the archive"):
        check_coverage(record, members, "d", strict=True)
    (warning,) = check_coverage(record, members, "d", strict=False)
    assert "ghost.py" in warning
    with pytest.raises(RecordError, match=r"'a\.py' is 1 bytes, the archive says 2"):
        check_coverage(record, {"a.py": 2}, "d", strict=False)


@pytest.mark.parametrize("algorithm", ["md5", "sha1", "sha224", "blake2b"])
def test_weak_or_unknown_record_hashes_are_refused(algorithm: str) -> None:
    with pytest.raises(RecordError, match="is not sha256, sha384 or sha512"):
        parse_record(f"a.py,{algorithm}=abc,1\n".encode())


def test_an_uncached_compiled_install_checks_the_wheel_with_the_one_reader(
    tmp_path: Path,
) -> None:
    """``--compile --no-cache-dir`` installs through the same reader as every install: a
    hostile wheel is refused there too."""
    from tests.wheel.hostile_zip import hostile_wheel

    wheel = hostile_wheel(tmp_path / "w", "overlapping-members")
    venv = make_venv(tmp_path / "venv")
    result = subprocess.run(
        [*FITWHEEL, "--python", str(venv), "--no-cache-dir", str(wheel)],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert result.returncode == 1
    assert "overlap" in result.stderr
    assert not list(venv.glob("lib/python*/site-packages/hostile*"))
    assert not list(venv.glob("lib/python*/site-packages/evil.pth"))


@pytest.mark.parametrize(
    ("filename", "dist_info"),
    [
        ("Foo.Bar-1.0-py3-none-any.whl", "foo_bar-1.0.dist-info"),
        ("foo_bar-1.0-py3-none-any.whl", "Foo.Bar-1.0.dist-info"),
        ("foo_bar-1.0-py3-none-any.whl", "foo_bar-1.0.post0.dist-info"),
    ],
)
def test_the_dist_info_folder_names_the_project_canonically(
    tmp_path: Path, filename: str, dist_info: str
) -> None:
    """Spellings of one project agree; the folder's version is not compared (as pip does not)."""
    files = {
        "foo_bar/__init__.py": b"",
        f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: foo-bar\nVersion: 1.0\n",
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files.items())
    entries = [Entry(name, data) for name, data in files.items()]
    record_entry = Entry(f"{dist_info}/RECORD", (record + f"{dist_info}/RECORD,,\n").encode())
    wheel = write_zip(tmp_path / filename, [*entries, record_entry])
    with WheelArchive(wheel) as archive:
        assert archive.dist_info == dist_info
    # read through a reader (HTTP ranges) the URL's last segment is the file name
    data = wheel.read_bytes()
    url = f"http://127.0.0.1:1/files/{filename}#sha256=0"
    with WheelArchive(url, reader=lambda n, o: data[o : o + n], size=len(data)) as archive:
        assert archive.dist_info == dist_info


def test_a_wheel_with_another_projects_dist_info_is_refused_through_a_reader(
    tmp_path: Path,
) -> None:
    from tests.wheel.hostile_zip import FILENAME, KINDS, hostile_wheel

    data = hostile_wheel(tmp_path, "foreign-dist-info").read_bytes()
    url = f"http://127.0.0.1:1/files/{FILENAME}"
    with pytest.raises(NotAWheelError) as caught:
        WheelArchive(url, reader=lambda n, o: data[o : o + n], size=len(data))
    assert KINDS["foreign-dist-info"] in str(caught.value)
    assert FILENAME in str(caught.value)
