"""Worker threads stop when their token is cancelled: unpacking a large wheel and downloading
stop at their next chunk, and once the call that ran them has raised (or ``close(wait=True)``
returned) nothing writes any more, so that what they wrote can be removed whole."""

from __future__ import annotations

import os
import random
import shutil
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fitwheel.index.http import Session
from fitwheel.install.cache.unpacking import unpack
from fitwheel.install.fetch.download import Downloader, DownloadItem
from fitwheel.threads import CANCEL, Cancelled, CancelToken
from tests.kit import make_wheel, serve, sha256_of


@pytest.fixture(autouse=True)
def clear_token() -> Iterator[None]:
    CANCEL.clear()
    yield
    CANCEL.clear()


@pytest.fixture(scope="module")
def large_wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = random.Random(5)
    files: dict[str, str | bytes] = {"large/__init__.py": ""}
    for i in range(3):
        files[f"large/blob{i}.bin"] = rng.randbytes(12 << 20)
    for i in range(400):
        files[f"large/small/mod{i}.py"] = f"X = {rng.random()!r}\n" * 20
    return make_wheel(tmp_path_factory.mktemp("wheels"), "large", "1.0", files=files)


def _state(folder: Path) -> dict[str, int]:
    return {str(p): p.stat().st_size for p in folder.rglob("*") if p.is_file()}


def _quiet(folder: Path) -> bool:
    """Whether nothing changes in ``folder`` for a while (no thread writes there any more)."""
    before = _state(folder)
    time.sleep(0.3)
    return _state(folder) == before


def test_unpacking_stops_at_its_next_chunk_and_every_thread_has_ended(
    large_wheel: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "entry"
    folder.mkdir()
    token = CancelToken(CANCEL)

    def cancel_once_writing() -> None:
        while not any(p.stat().st_size > 0 for p in folder.rglob("blob*.bin")):
            time.sleep(0.001)
        token.cancel()

    watcher = threading.Thread(target=cancel_once_writing, daemon=True)
    watcher.start()
    with pytest.raises(Cancelled):
        unpack(large_wheel, folder, stop=token)
    watcher.join(30)
    written = sum(_state(folder).values())
    assert written < 36 << 20, "stopped before the end"
    assert _quiet(folder)
    shutil.rmtree(folder)  # nothing racing it: no error
    assert not folder.exists()


def test_a_cancelled_token_begins_no_unpacking(large_wheel: Path, tmp_path: Path) -> None:
    token = CancelToken()
    token.cancel()
    with pytest.raises(Cancelled):
        unpack(large_wheel, tmp_path, stop=token)
    assert _state(tmp_path) == {}


def test_the_process_token_stops_unpacking_too(large_wheel: Path, tmp_path: Path) -> None:
    CANCEL.cancel()
    with pytest.raises(Cancelled):
        unpack(large_wheel, tmp_path)


def test_closing_and_waiting_stops_downloads_under_way(tmp_path: Path) -> None:
    served = tmp_path / "served"
    served.mkdir()
    data = os.urandom(2 << 20)
    (served / "slow-1.0-py3-none-any.whl").write_bytes(data)
    path = "/slow-1.0-py3-none-any.whl"
    hashes = {"sha256": frozenset({sha256_of(served / path.lstrip("/"))})}
    # a body that takes about 30 s to arrive, 16 kB at a time
    with serve(served, trickle={path: 0.25}, trickle_bytes=16 << 10) as (url, _state):
        item = DownloadItem(path.lstrip("/"), url + path, hashes)
        downloader = Downloader(Session(retries=0, env={}), tmp_path / "cache", jobs=2)
        downloader.start(item)
        parts = tmp_path / "cache" / "tmp"
        deadline = time.monotonic() + 30
        while not any(p.stat().st_size for p in parts.glob("*.part")):
            assert time.monotonic() < deadline, "the download never began"
            time.sleep(0.01)
        downloader.close(wait=True)
        assert _quiet(parts)
        with pytest.raises(Cancelled):
            downloader.fetch_all([item])
        assert not CANCEL.cancelled, "the downloader's own token, not the process's"
        assert not list((tmp_path / "cache").rglob("*.whl")), "no download was completed"


def test_closing_with_more_downloads_queued_than_threads_returns(tmp_path: Path) -> None:
    """Downloads the shutdown cancels before they begin are not waited for (they would never
    count as done): only the one under way is, and it stops at its next chunk."""
    served = tmp_path / "served"
    served.mkdir()
    names = [f"slow{n}-1.0-py3-none-any.whl" for n in range(4)]
    for name in names:
        (served / name).write_bytes(os.urandom(2 << 20))
    trickle = {f"/{name}": 0.25 for name in names}
    with serve(served, trickle=trickle, trickle_bytes=16 << 10) as (url, _state):
        moved = [
            DownloadItem(name, f"{url}/{name}", {"sha256": frozenset({sha256_of(served / name)})})
            for name in names
        ]
        downloader = Downloader(Session(retries=0, env={}), tmp_path / "cache", jobs=1)
        for item in moved:
            downloader.start(item)
        parts = tmp_path / "cache" / "tmp"
        deadline = time.monotonic() + 30
        while not any(p.stat().st_size for p in parts.glob("*.part")):
            assert time.monotonic() < deadline, "the download never began"
            time.sleep(0.01)
        closer = threading.Thread(target=downloader.close, kwargs={"wait": True}, daemon=True)
        closer.start()
        closer.join(30)
        assert not closer.is_alive(), "close(wait=True) waits for downloads never begun"
        assert _quiet(parts)


def test_a_signal_while_a_commit_copies_files_from_several_threads_rolls_back(
    venv: Path, tmp_path: Path
) -> None:
    """The placing threads of a commit see the signal at their next file (the token), and the
    commit rolls back: the environment is as it was, no transaction folder is left."""
    from fitwheel.install.cache.unpacked import UnpackedCache
    from fitwheel.install.env.interpreter import inspect_environment
    from fitwheel.install.env.recovery import state_dir
    from fitwheel.install.place.core import WheelToInstall, install_wheels
    from tests.kit import snapshot

    files = {f"many/sub{i % 20}/m{i}.py": f"X = {i}\n" * 50 for i in range(6000)}
    wheel = make_wheel(tmp_path / "wheels", "many", "1.0", files=files)
    env = inspect_environment(str(venv), {})
    before = snapshot(venv)
    state = state_dir(venv)

    returned = threading.Event()

    def interrupt_once_placing() -> None:
        while not any(state.glob("txn-*/build/**/m*.py")):
            if returned.is_set():
                return
            time.sleep(0.001)
        os.kill(os.getpid(), signal.SIGINT)

    watcher = threading.Thread(target=interrupt_once_placing, daemon=True)
    watcher.start()
    try:
        with pytest.raises(KeyboardInterrupt):
            install_wheels(
                env,
                [WheelToInstall(wheel, "many", "1.0", sha256=sha256_of(wheel))],
                unpacked=UnpackedCache(tmp_path / "unpacked"),
                link_mode="copy",
            )
    finally:
        returned.set()
        watcher.join(30)
    after = {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}
    assert after == {k: v for k, v in before.items() if not k.startswith(".fitwheel")}
    assert not list(state.glob("txn-*"))
