"""Downloading and unpacking one wheel into the unpacked-wheel cache, as installing does: unpacked
once the download is complete (its files created meanwhile) against unpacked while it
downloads (``fitwheel.install.cache.streaming``), in one run, alternately.

The wheels, served by nginx on 127.0.0.1 (Python's static server where nginx is missing):

- ``$FITWHEEL_BENCH_STREAM_WHEEL`` when it names a wheel (say the torch 2.13.0 CPU wheel: 182 MiB,
  12,248 files, ``libtorch_cpu.so`` 414 MiB), else a synthetic one of the same shape (about 180
  MB, a 400 MB member among 12,000 small ones);
- a 20 MB and a 4 MB wheel (the streaming threshold: which wheels are worth streaming).

``FITWHEEL_BENCH_STREAM_RATE=50m`` has nginx send each wheel at 50 MB/s (its ``limit_rate``),
as a fast link would, rather than as fast as loopback.

Each case runs in this process: a fresh cache folder per run, the downloader and the unpacked
cache as :class:`~fitwheel.install.fetch.fetcher.Fetcher` wires them. Besides the wall-clock
medians it prints the CPU time per wall second (how much of the two cores was used).

    .venv/bin/python -m benchmarks stream
"""

from __future__ import annotations

import os
import random
import shutil
import statistics
import time
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.harness import Case, compare, smoke
from benchmarks.peers import mirror_module, scratch


def _synthetic(folder: Path, name: str, big: int, small: int, count: int) -> Path:
    """A wheel of ``count`` small members of ``small`` bytes and one of ``big`` bytes, each
    compressing about 3:1 as machine code does."""
    rng = random.Random(1)
    words = [rng.randbytes(rng.randrange(2, 12)) for _ in range(4096)]

    def content(size: int) -> bytes:
        block = b"".join(rng.choice(words) for _ in range(32 << 10))
        return (block * (size // len(block) + 1))[:size] if size > len(block) else block[:size]

    dist = f"{name}-1.0.dist-info"
    path = folder / f"{name}-1.0-py3-none-any.whl"
    folder.mkdir(parents=True, exist_ok=True)
    import base64
    import hashlib

    rows = []
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as out:

        def add(member: str, data: bytes) -> None:
            out.writestr(member, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            rows.append(f"{member},sha256={digest.decode()},{len(data)}")

        shared = content(1 << 20)
        for i in range(count):
            offset = rng.randrange(0, len(shared) - small)
            add(f"{name}/part{i // 200}/m{i}.py", shared[offset : offset + small])
        if big:
            add(f"{name}/lib/libbig.so", content(big))
        add(f"{dist}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n".encode())
        add(f"{dist}/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        rows.append(f"{dist}/RECORD,,")
        out.writestr(f"{dist}/RECORD", "\n".join(rows) + "\n")
    return path


@contextmanager
def _limited_nginx(binary: str, folder: Path, work: Path, rate: str) -> Iterator[str]:
    """nginx over ``folder``, each answer sent at ``rate`` (nginx's ``limit_rate``, say
    ``50m``: 50 MB/s, a fast link rather than loopback)."""
    import pwd
    import socket
    import subprocess

    from tests.kit import free_port

    port = free_port()
    work.mkdir(parents=True, exist_ok=True)
    user = f"user {pwd.getpwuid(os.geteuid()).pw_name};" if os.geteuid() == 0 else ""
    (work / "nginx.conf").write_text(
        f"{user} daemon off; worker_processes 1; pid {work}/nginx.pid; "
        f"error_log {work}/error.log; events {{ worker_connections 64; }} "
        f"http {{ access_log off; client_body_temp_path {work}/body; "
        f"server {{ listen 127.0.0.1:{port}; root {folder}; limit_rate {rate}; }} }}"
    )
    proc = subprocess.Popen([binary, "-c", str(work / "nginx.conf"), "-p", str(work)])
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


@contextmanager
def _served(folder: Path, work: Path) -> Iterator[str]:
    mirror_module()  # puts the test kit on the path
    from tests.kit import nginx_binary, serve_nginx, serve_static

    binary = nginx_binary()
    rate = os.environ.get("FITWHEEL_BENCH_STREAM_RATE")
    if binary is not None and rate:
        print(f"   (nginx sends each wheel with limit_rate {rate})")
        with _limited_nginx(binary, folder, work / "nginx", rate) as url:
            yield url
        return
    if binary is not None:
        with serve_nginx(folder, work / "nginx", negotiate=False) as url:
            yield url
        return
    print("   (nginx is not installed: serving with Python's http.server)")
    with serve_static(folder) as url:
        yield url


def _case(
    label: str, wheel: Path, url: str, work: Path, cpu: dict[str, list[float]], **stream: Any
) -> Case:
    """Download and unpack ``wheel``; ``stream`` empty: unpacked after the download, else
    streamed with those options of :class:`StreamUnpacker`."""
    from fitwheel.index.http import Session
    from fitwheel.install.cache.precreate import Precreator
    from fitwheel.install.cache.streaming import StreamUnpacker
    from fitwheel.install.cache.unpacked import UnpackedCache
    from fitwheel.install.fetch.download import Downloader, DownloadItem
    from fitwheel.integrity import file_sha256

    cache = work / label.replace(" ", "-").replace(",", "")
    item = DownloadItem(
        wheel.name, f"{url}/{wheel.name}", {"sha256": frozenset({file_sha256(wheel)})}
    )

    def setup() -> None:
        shutil.rmtree(cache, ignore_errors=True)

    def run() -> None:
        unpacked = UnpackedCache(cache / "unpacked")

        def prepare(_item: DownloadItem) -> Precreator:
            folder = unpacked.precreator().folder
            if not stream:
                return Precreator(folder)
            return StreamUnpacker(folder, **stream)

        downloader = Downloader(Session(retries=0, env={}), cache / "wheels", prepare=prepare)
        start = time.process_time()
        wall = time.perf_counter()
        done = downloader.fetch(item)
        downloaded = time.perf_counter()
        unpacked.get(done.path, done.sha256, done.prepared)
        cpu.setdefault(label, []).append(time.process_time() - start)
        cpu.setdefault(f"{label} wall", []).append(time.perf_counter() - wall)
        cpu.setdefault(f"{label} tail", []).append(time.perf_counter() - downloaded)
        unpacked.close()
        downloader.close()

    return Case.func(label, run, setup)


def _compare(title: str, wheel: Path, url: str, work: Path, repeat: int) -> None:
    cpu: dict[str, list[float]] = {}
    cases = [
        _case("after the download", wheel, url, work, cpu),
        _case("streamed", wheel, url, work, cpu, stream_after=0),
        _case("streamed, one thread a member", wheel, url, work, cpu, stream_after=0, split=False),
        _case("streamed, large members only", wheel, url, work, cpu, stream_after=0, small=False),
    ]
    compare(title, cases, repeat=repeat)
    for case in cases:
        seconds = cpu[case.name]
        shares = [c / w for c, w in zip(seconds, cpu[f"{case.name} wall"], strict=True)]
        tail = statistics.median(cpu[f"{case.name} tail"])
        print(
            f"   {case.name:<32} CPU {statistics.median(seconds):.3f} s, "
            f"{statistics.median(shares):.2f} per wall second; after the download {tail:.3f} s"
        )


def main() -> None:
    with scratch("fitwheel-bench-stream-") as work:
        served = work / "served"
        given = os.environ.get("FITWHEEL_BENCH_STREAM_WHEEL")
        if given:
            large = served / Path(given).name
            served.mkdir(parents=True)
            shutil.copy(given, large)
        elif smoke():
            large = _synthetic(served, "large", 12 << 20, 2000, 300)
        else:
            large = _synthetic(served, "large", 400 << 20, 20_000, 12_000)
        wheels = [(large, 9)]
        if not smoke():
            wheels.append((_synthetic(served, "middle", 0, 30_000, 2000), 15))
            wheels.append((_synthetic(served, "small", 0, 8_000, 1500), 15))
        with _served(served, work) as url:
            for wheel, repeat in wheels:
                size = wheel.stat().st_size / (1 << 20)
                with zipfile.ZipFile(wheel) as archive:
                    members = len(archive.infolist())
                title = f"download and unpack {wheel.name} ({size:.0f} MiB, {members} files)"
                _compare(title, wheel, url, work, repeat)
