"""Unpacking a wheel while it downloads (the reader's streaming mode): the entry is the one
unpacking the finished file makes, every refusal of the one reader happens on this path too,
and whatever a refused, cut or interrupted stream wrote is gone, with nothing in the cache.

Every test downloads from a loopback server through the downloader and unpacks into the
unpacked-wheel cache, as installing does, with the streaming thresholds lowered so that small
wheels stream."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import threading
import time
import zipfile
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from fitwheel.errors import InvalidWheelError
from fitwheel.index.http import Session
from fitwheel.install.cache.layout import MANIFEST, read_members
from fitwheel.install.cache.streaming import StreamUnpacker
from fitwheel.install.cache.unpacked import UnpackedCache, UnpackedWheel
from fitwheel.install.cache.unpacking import unpack
from fitwheel.install.fetch.download import Downloader, DownloadItem
from fitwheel.integrity import HashMismatchError
from fitwheel.threads import CANCEL, Cancelled, CancelToken
from tests.kit import make_wheel, serve, sha256_of
from tests.wheel.hostile_zip import (
    DIST_INFO,
    FILENAME,
    KINDS,
    Entry,
    hostile_wheel,
    record_hash,
    write_zip,
)

#: how members stream: each read whole and written by the stream thread; each inflated on the
#: inflate thread and written by the write thread (or by the inflate thread itself); members
#: over 1 MiB on the inflate thread, the others whole (as installing does a large wheel), or
#: extracted from the file once it is complete
MODES: dict[str, dict[str, Any]] = {
    "whole": {"big": 1 << 30},
    "threaded": {"big": 0},
    "threaded-one": {"big": 0, "split": False},
    "mixed": {"big": 1 << 20},
    "large-only": {"big": 1 << 20, "small": False},
}


@pytest.fixture(autouse=True)
def clear_token() -> Iterator[None]:
    CANCEL.clear()
    yield
    CANCEL.clear()


class Streamed:
    """A downloader whose wheels stream into an unpacked-wheel cache from the first byte."""

    def __init__(
        self,
        cache: Path,
        mode: str = "mixed",
        *,
        retries: int = 0,
        stop: CancelToken | None = None,
    ) -> None:
        self.stop = CancelToken(CANCEL) if stop is None else stop
        self.cache = cache
        self.unpacked = UnpackedCache(cache / "unpacked", stop=self.stop)
        self.streamers: list[StreamUnpacker] = []
        self.options = MODES[mode]
        self.downloader = Downloader(
            Session(retries=retries, env={}),
            cache / "wheels",
            prepare=self._prepare,
            stop=self.stop,
        )

    def _prepare(self, _item: DownloadItem) -> StreamUnpacker:
        streamer = StreamUnpacker(
            self.unpacked.precreator().folder, stop=self.stop, stream_after=1, **self.options
        )
        self.streamers.append(streamer)
        return streamer

    def install(self, wheel: Path, url: str) -> UnpackedWheel:
        item = DownloadItem(
            wheel.name, f"{url}/{wheel.name}", {"sha256": frozenset({sha256_of(wheel)})}
        )
        done = self.downloader.fetch(item)
        return self.unpacked.get(done.path, done.sha256, done.prepared)

    def assert_nothing_left(self) -> None:
        """No entry in the cache, no staging folder, and every worker has ended."""
        root = self.cache / "unpacked"
        assert not list(root.rglob(MANIFEST))
        assert not list((root / "tmp").iterdir()), "the staging folder was removed"
        for streamer in self.streamers:
            assert not any(thread.is_alive() for thread, _done in streamer._workers)


def _files(folder: Path) -> dict[str, bytes]:
    base = folder / "files"
    return {str(p.relative_to(base)): p.read_bytes() for p in base.rglob("*") if p.is_file()}


@pytest.fixture(scope="module")
def large_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(7)
    files: dict[str, str | bytes] = {"large/__init__.py": ""}
    for i in range(3):
        # half random, half repetitive: both inflate paths see work
        files[f"large/blob{i}.bin"] = rng.randbytes(1 << 20) + bytes(2 << 20)
    for i in range(300):
        files[f"large/small/mod{i}.py"] = f"X = {rng.random()!r}\n" * 20
    files["large/run.sh"] = "#!/bin/sh\n"
    return make_wheel(tmp_path_factory.mktemp("wheels"), "large", "1.0", files=files)


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_streamed_entry_is_the_one_unpacking_the_file_makes(
    large_wheel: Path, tmp_path: Path, mode: str
) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    unpack(large_wheel, plain)
    streamed = Streamed(tmp_path / "cache", mode=mode)
    with serve(large_wheel.parent) as (url, _state):
        entry = streamed.install(large_wheel, url)
    (streamer,) = streamed.streamers
    assert streamer.streaming and streamer.failure is None
    assert _files(entry.folder) == _files(plain)
    assert [m.sha256 for m in entry.members] == [m.sha256 for m in read_members(plain)]
    assert os.access(entry.folder / "files" / "large" / "run.sh", os.X_OK) == os.access(
        plain / "files" / "large" / "run.sh", os.X_OK
    )
    assert not list((tmp_path / "cache" / "unpacked" / "tmp").iterdir())


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_refusal_of_the_reader_happens_on_the_stream(
    tmp_path: Path, kind: str, mode: str
) -> None:
    wheel = hostile_wheel(tmp_path / "w", kind)
    streamed = Streamed(tmp_path / "cache", mode=mode)
    with serve(wheel.parent) as (url, _state), pytest.raises(InvalidWheelError) as caught:
        streamed.install(wheel, url)
    assert KINDS[kind] in str(caught.value) and FILENAME in str(caught.value)
    assert streamed.streamers[0].streaming
    streamed.assert_nothing_left()


def test_a_member_the_central_directory_does_not_list_is_never_kept(tmp_path: Path) -> None:
    """A local header in a gap between members: the stream sees it, the reader does not; the
    entry holds what the central directory lists, and nothing else."""
    files = {
        "hostile/__init__.py": b"X = 1\n",
        f"{DIST_INFO}/METADATA": b"Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n",
        f"{DIST_INFO}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files.items())
    record += f"{DIST_INFO}/RECORD,,\n"
    entries = [Entry(name, data) for name, data in files.items()]
    entries.insert(1, Entry("smuggled.pth", b"import os\n"))
    entries.append(Entry(f"{DIST_INFO}/RECORD", record.encode()))
    wheel = write_zip(tmp_path / "w" / FILENAME, entries, unlisted=frozenset({"smuggled.pth"}))
    streamed = Streamed(tmp_path / "cache")
    with serve(wheel.parent) as (url, _state):
        entry = streamed.install(wheel, url)
    assert set(_files(entry.folder)) == {*files, f"{DIST_INFO}/RECORD"}
    assert _files(entry.folder)["hostile/__init__.py"] == b"X = 1\n"


@pytest.mark.parametrize("mode", sorted(MODES))
def test_a_corrupt_member_leaves_nothing(large_wheel: Path, tmp_path: Path, mode: str) -> None:
    """The download's hash matches (the index publishes the damaged file's), a member's data
    does not inflate to its content: refused, the staging folder removed, nothing cached."""
    with zipfile.ZipFile(large_wheel) as archive:
        info = archive.getinfo("large/blob1.bin")
    data = bytearray(large_wheel.read_bytes())
    start = info.header_offset + 30 + len(info.filename) + len(info.extra)
    for offset in range(start + 1000, start + info.compress_size - 100, 4099):
        data[offset] ^= 0x55
    served = tmp_path / "served"
    served.mkdir()
    wheel = served / large_wheel.name
    wheel.write_bytes(bytes(data))
    streamed = Streamed(tmp_path / "cache", mode=mode)
    with serve(served) as (url, _state), pytest.raises(InvalidWheelError) as caught:
        streamed.install(wheel, url)
    assert "large/blob1.bin" in str(caught.value)
    streamed.assert_nothing_left()


class _Lying(BaseHTTPRequestHandler):
    """Serves one file; ``cut`` requests (the first ones) send ``Content-Length`` of the
    whole file but only half of it, then close; ``short``: every answer says and sends the
    file less its last kilobyte."""

    body: bytes = b""
    cut = 0
    short = False

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        data = self.body
        start = 0
        rng = self.headers.get("Range", "")
        if rng.startswith("bytes=") and not self.short:
            start = int(rng[6:].partition("-")[0])
            self.send_response(206)
            self.send_header("Content-Range", f"bytes {start}-{len(data) - 1}/{len(data)}")
        else:
            self.send_response(200)
        data = data[start:]
        if self.short:
            data = data[:-1024]
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Accept-Ranges", "bytes")
        self.end_headers()
        if type(self).cut > 0:
            type(self).cut -= 1
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            return
        self.wfile.write(data)


@contextlib.contextmanager
def _lying(wheel: Path, *, cut: int = 0, short: bool = False) -> Iterator[str]:
    handler = type("Handler", (_Lying,), {"body": wheel.read_bytes(), "cut": cut, "short": short})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_stream_cut_short_and_resumed_is_unpacked_from_the_file(
    large_wheel: Path, tmp_path: Path
) -> None:
    """The server closes halfway through (its length was the whole file's); the download
    resumes, and what was streamed before the cut is not used: the entry is the file's."""
    plain = tmp_path / "plain"
    plain.mkdir()
    unpack(large_wheel, plain)
    streamed = Streamed(tmp_path / "cache", retries=2)
    with _lying(large_wheel, cut=1) as url:
        entry = streamed.install(large_wheel, url)
    assert streamed.streamers[0].tainted
    assert _files(entry.folder) == _files(plain)
    assert not list((tmp_path / "cache" / "unpacked" / "tmp").iterdir())


def test_a_server_that_lies_about_the_length_leaves_nothing(
    large_wheel: Path, tmp_path: Path
) -> None:
    """Every answer is the file less its end, and says so: the download's hash fails."""
    streamed = Streamed(tmp_path / "cache")
    with _lying(large_wheel, short=True) as url, pytest.raises(HashMismatchError):
        streamed.install(large_wheel, url)
    assert streamed.streamers[0].streaming
    streamed.assert_nothing_left()
    assert not list((tmp_path / "cache" / "wheels").rglob("*.whl"))


def test_an_interrupted_stream_stops_and_leaves_nothing(large_wheel: Path, tmp_path: Path) -> None:
    """Cancelled while members are being written from the stream: the download raises
    :class:`Cancelled`, every worker has ended and the staging folder is gone."""
    stop = CancelToken(CANCEL)
    streamed = Streamed(tmp_path / "cache", stop=stop)
    staging = tmp_path / "cache" / "unpacked" / "tmp"
    path = f"/{large_wheel.name}"

    def cancel_once_writing() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if any(p.is_file() and p.stat().st_size for p in staging.rglob("*")):
                break
            time.sleep(0.002)
        stop.cancel()

    served = tmp_path / "served"
    served.mkdir()
    shutil.copy(large_wheel, served / large_wheel.name)
    with serve(served, trickle={path: 0.01}, trickle_bytes=64 << 10) as (url, _state):
        watcher = threading.Thread(target=cancel_once_writing, daemon=True)
        watcher.start()
        with pytest.raises(Cancelled):
            streamed.install(large_wheel, url)
        watcher.join(60)
    stop.clear()
    streamed.assert_nothing_left()
    assert not list((tmp_path / "cache" / "wheels").rglob("*.whl"))


@pytest.mark.parametrize("field", ["crc", "sizes"])
def test_a_local_header_the_central_directory_contradicts_is_read_from_the_file(
    large_wheel: Path, tmp_path: Path, field: str
) -> None:
    """The reader takes a member's CRC and sizes from the central directory; a local header
    that says otherwise (streamed as it says) does not stand for the member: nothing streamed
    is kept, and the entry is the one the file gives."""
    plain = tmp_path / "plain"
    plain.mkdir()
    unpack(large_wheel, plain)
    data = bytearray(large_wheel.read_bytes())
    with zipfile.ZipFile(large_wheel) as archive:
        info = archive.getinfo("large/blob0.bin")
    at = info.header_offset
    if field == "crc":
        data[at + 14 : at + 18] = (info.CRC ^ 0xFFFF).to_bytes(4, "little")
    else:  # one byte fewer declared than the content: streamed, the member is cut short
        data[at + 22 : at + 26] = (info.file_size - 1).to_bytes(4, "little")
    served = tmp_path / "served"
    served.mkdir()
    wheel = served / large_wheel.name
    wheel.write_bytes(bytes(data))
    streamed = Streamed(tmp_path / "cache")
    with serve(served) as (url, _state):
        entry = streamed.install(wheel, url)
    assert streamed.streamers[0].streaming
    assert _files(entry.folder) == _files(plain)
    assert not list((tmp_path / "cache" / "unpacked" / "tmp").iterdir())
