"""Creating a wheel's files while it downloads: the names come from the local headers of the
stream, whatever the chunk sizes; anything unusual ends the early work without harm."""

import io
import os
import zipfile
from pathlib import Path

import pytest

from fitwheel.install.cache.precreate import Precreator
from fitwheel.install.cache.unpacked import UnpackedCache
from tests.kit import make_wheel, sha256_of
from tests.wheel.hostile_zip import DIST_INFO, FILENAME, Entry, record_hash, write_zip


def created(folder: Path) -> set[str]:
    base = folder / "files"
    return {
        str(Path(root, name).relative_to(base))
        for root, _d, names in os.walk(base)
        for name in names
    }


def feed(pre: Precreator, data: bytes, size: int) -> None:
    for start in range(0, len(data), size):
        pre.feed(data[start : start + size])
    pre.wait()


@pytest.mark.parametrize("chunk", [1, 7, 30, 4096, 1 << 20])
def test_every_member_is_created_empty_whatever_the_chunks(tmp_path: Path, chunk: int) -> None:
    files = {f"pkg/m{i}.py": f"X = {i}\n" * (i + 1) for i in range(20)}
    wheel = make_wheel(tmp_path / "w", "pkg", "1.0", files=files)
    with zipfile.ZipFile(wheel) as archive:
        names = {n for n in archive.namelist() if not n.endswith("/")}
    pre = Precreator(tmp_path / "pre", start_after=1)
    feed(pre, wheel.read_bytes(), chunk)
    assert created(tmp_path / "pre") == names
    assert all((tmp_path / "pre" / "files" / n).stat().st_size == 0 for n in names)


def test_sizes_after_the_data_end_the_early_work(tmp_path: Path) -> None:
    stream = io.BytesIO()

    class Unseekable(io.RawIOBase):
        def writable(self) -> bool:
            return True

        def write(self, data: bytes) -> int:  # type: ignore[override]
            return stream.write(data)

    # a zip written to a stream that cannot seek puts each member's sizes after its data
    with zipfile.ZipFile(Unseekable(), "w", zipfile.ZIP_DEFLATED) as archive:
        for i in range(3):
            with archive.open(f"pkg/m{i}.py", "w") as member:
                member.write(b"X = 1\n")
    pre = Precreator(tmp_path / "pre", start_after=1)
    feed(pre, stream.getvalue(), 100)
    assert created(tmp_path / "pre") == set()


@pytest.mark.parametrize("unsafe", ["../escape.py", "/abs.py"])
def test_an_unsafe_name_ends_the_early_work(tmp_path: Path, unsafe: str) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("ok/fine.py", b"x")
        archive.writestr(unsafe, b"x")
        archive.writestr("ok/later.py", b"x")
    pre = Precreator(tmp_path / "pre", start_after=1)
    feed(pre, buffer.getvalue(), 10)
    assert pre.stream.stopped
    assert created(tmp_path / "pre") == {"ok/fine.py"}
    assert not (tmp_path / "escape.py").exists()


def test_the_unpacker_fills_the_created_files(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path / "w", "pkg", "1.0", files={"pkg/a.py": "A = 1\n"})
    cache = UnpackedCache(tmp_path / "unpacked")
    pre = cache.precreator(start_after=1)
    for start in range(0, wheel.stat().st_size, 50):
        pre.feed(wheel.read_bytes()[start : start + 50])
    source = cache.get(wheel, sha256_of(wheel), pre)
    assert (source.folder / "files" / "pkg" / "a.py").read_text() == "A = 1\n"
    assert not pre.folder.exists()  # it became the cache entry
    assert not list((tmp_path / "unpacked" / "tmp").iterdir())


def test_a_restarted_download_does_not_use_what_was_created(tmp_path: Path) -> None:
    other = make_wheel(tmp_path / "o", "other", "1.0", files={"pkg/a.py/x.py": "X = 1\n"})
    wheel = make_wheel(tmp_path / "w", "pkg", "1.0", files={"pkg/a.py": "A = 1\n"})
    cache = UnpackedCache(tmp_path / "unpacked")
    pre = cache.precreator(start_after=1)
    pre.feed(other.read_bytes())  # a stale partial download of another file
    pre.reset()
    pre.feed(wheel.read_bytes())
    assert pre.tainted
    source = cache.get(wheel, sha256_of(wheel), pre)
    assert (source.folder / "files" / "pkg" / "a.py").read_text() == "A = 1\n"
    assert not pre.folder.exists()


def test_a_small_wheel_starts_no_thread(tmp_path: Path) -> None:
    import threading

    before = threading.active_count()
    pre = Precreator(tmp_path / "pre")  # the default: a thread only for many members
    wheel = make_wheel(tmp_path / "w", "small", "1.0", files={"small/__init__.py": "X = 1\n"})
    pre.feed(wheel.read_bytes())
    assert threading.active_count() == before
    pre.close()
    assert not (tmp_path / "pre" / "files").exists()


def _refused_by_the_stream(folder: Path, kind: str) -> tuple[Path, dict[str, bytes]]:
    """A wheel the reader accepts whose stream holds, after ``hostile/m0.py`` and before
    ``hostile/m2.py``, a local header the stream refuses: ``duplicate``, one that names
    ``hostile/m0.py`` again (in a gap the central directory does not list); ``oversized``,
    the one of ``hostile/m1.py`` declaring far more bytes than its data inflate to (the central
    directory gives the true size). Returns the wheel and its files' contents."""
    files = {f"hostile/m{i}.py": f"X = {i}\n".encode() for i in range(4)}
    files[f"{DIST_INFO}/METADATA"] = b"Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n"
    files[f"{DIST_INFO}/WHEEL"] = b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files.items())
    record += f"{DIST_INFO}/RECORD,,\n"
    entries = [Entry(name, data) for name, data in files.items()]
    entries.append(Entry(f"{DIST_INFO}/RECORD", record.encode()))
    if kind == "duplicate":
        entries.insert(1, Entry("hostile/mX.py", b"X = 0\n"))
        wheel = write_zip(folder / FILENAME, entries, unlisted=frozenset({"hostile/mX.py"}))
        data = wheel.read_bytes()
        assert data.count(b"hostile/mX.py") == 1
        wheel.write_bytes(data.replace(b"hostile/mX.py", b"hostile/m0.py"))
    else:
        wheel = write_zip(folder / FILENAME, entries)
        with zipfile.ZipFile(wheel) as archive:
            at = archive.getinfo("hostile/m1.py").header_offset
        data = bytearray(wheel.read_bytes())
        data[at + 22 : at + 26] = (1 << 31).to_bytes(4, "little")  # the inflated size
        wheel.write_bytes(bytes(data))
    return wheel, {**files, f"{DIST_INFO}/RECORD": record.encode()}


@pytest.mark.parametrize("kind", ["duplicate", "oversized"])
def test_a_header_the_stream_refuses_ends_the_early_work_and_the_file_is_unpacked(
    tmp_path: Path, kind: str
) -> None:
    """The stream checks what the reader checks of a member (no name twice, declared sizes
    within the limits); the reader takes the central directory's word, and the wheel installs:
    the early work simply ends at that header."""
    wheel, files = _refused_by_the_stream(tmp_path / "w", kind)
    cache = UnpackedCache(tmp_path / "unpacked")
    pre = cache.precreator(start_after=1)
    feed(pre, wheel.read_bytes(), 20)
    why = {"duplicate": "appears twice", "oversized": "ratio limit"}[kind]
    assert pre.stream.stopped and why in str(pre.stream.why)
    assert created(pre.folder) == {"hostile/m0.py"}
    source = cache.get(wheel, sha256_of(wheel), pre)
    base = source.folder / "files"
    assert {
        str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()
    } == files
    assert not pre.folder.exists()
    assert not list((tmp_path / "unpacked" / "tmp").iterdir())
