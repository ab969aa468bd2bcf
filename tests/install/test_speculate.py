"""The speculator on its own: real wheels served on 127.0.0.1, fetched into a real cache by the
install's :class:`Fetcher`; what it may spend, and what the fetch stage finds afterwards."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fitwheel.index.http import Session
from fitwheel.index.simple import Link
from fitwheel.install.fetch.download import DownloadItem
from fitwheel.install.fetch.fetcher import Fetcher
from fitwheel.install.speculate import Limits, Speculator
from fitwheel.paths import CacheLayout
from fitwheel.reporter import SILENT
from fitwheel.resolve.candidates import Candidate
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.names import canonicalize_name
from tests.kit import make_wheel, serve, sha256_of
from tests.kit.server import ServerState


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    make_wheel(folder, "small", "1.0")
    # random bytes: the wheel stays about as large as its member
    make_wheel(folder, "large", "1.0", files={"large/blob.bin": os.urandom(64 << 10)})
    return folder


@pytest.fixture
def server(wheels: Path) -> Iterator[tuple[str, ServerState]]:
    with serve(wheels) as served:
        yield served


@pytest.fixture
def fetcher(tmp_path: Path) -> Iterator[Fetcher]:
    made = Fetcher(
        Session(retries=0), CacheLayout(tmp_path / "cache"), SILENT, jobs=2, verify=False
    )
    yield made
    made.close(wait=True)


def candidate(wheels: Path, url: str, name: str, *, sized: bool = True) -> Candidate:
    path = next(wheels.glob(f"{name}-*.whl"))
    parsed = WheelFilename.parse(path.name)
    link = Link(
        path.name,
        f"{url}/{path.name}",
        {"sha256": sha256_of(path)},
        size=path.stat().st_size if sized else None,
    )
    return Candidate(canonicalize_name(parsed.name), parsed.parsed_version, link, parsed)


def gets(state: ServerState) -> list[str]:
    return [path for method, path, _h in state.requests if method == "GET"]


def asked(state: ServerState, path: str) -> None:
    """Wait until the server was asked for ``path`` (a hang detector bounds the wait)."""
    deadline = time.monotonic() + 60
    while path not in gets(state):
        assert time.monotonic() < deadline, f"{path} was never asked for"
        time.sleep(0.01)


def test_a_right_guess_is_found_by_the_fetch_stage(
    wheels: Path, server: tuple[str, ServerState], fetcher: Fetcher
) -> None:
    url, state = server
    spec = Speculator(fetcher)
    small = candidate(wheels, url, "small")
    spec.offer(small)
    assert gets(state) == []  # nothing before the installed distributions are known
    spec.arm({}, force_reinstall=False)
    asked(state, f"/{small.link.filename}")
    assert spec.covers(small)  # the resolver pins it: the guess under way (or done) stands
    spec.settle([small], restart=lambda _c: pytest.fail("nothing to fetch again"))
    assert spec.result.as_json() == {"fetched": 1, "used": 1, "wasted_bytes": 0, "failed": 0}
    link = small.link
    item = DownloadItem(link.filename, link.url, {"sha256": frozenset({link.hashes["sha256"]})})
    (done,) = fetcher.fetch_all([item])
    assert done.from_cache and gets(state) == [f"/{link.filename}"]


def test_what_a_guess_may_cost_is_bounded(
    wheels: Path, server: tuple[str, ServerState], fetcher: Fetcher, tmp_path: Path
) -> None:
    url, state = server
    spec = Speculator(fetcher, Limits(file_bytes=16 << 10))
    spec.arm({}, force_reinstall=False)
    spec.offer(candidate(wheels, url, "large"))  # its size is published: never asked for
    assert gets(state) == []
    unsized = candidate(wheels, url, "large", sized=False)
    spec.offer(unsized)  # its size is not: stopped once it grows past the limit
    asked(state, f"/{unsized.link.filename}")
    covered = spec.covers(unsized)  # the resolver pins it
    restarted: list[Candidate] = []
    spec.settle([unsized], restart=restarted.append)
    assert spec.result.fetched == 0 and spec.result.failed == 1
    # left to the real fetch (at once when the guess had failed before the pin)
    assert restarted == ([unsized] if covered else [])
    assert not list((tmp_path / "cache").rglob("large-*.whl"))


def test_an_installed_project_is_not_guessed(
    wheels: Path, server: tuple[str, ServerState], fetcher: Fetcher
) -> None:
    url, state = server
    spec = Speculator(fetcher)
    small = candidate(wheels, url, "small")
    spec.offer(small)
    spec.arm({small.name: small.version}, force_reinstall=False)
    spec.settle([small], restart=lambda _c: None)
    assert gets(state) == []
    assert spec.result.as_json()["fetched"] == 0


def test_nothing_starts_after_the_resolution_ended(
    wheels: Path, server: tuple[str, ServerState], fetcher: Fetcher
) -> None:
    url, state = server
    spec = Speculator(fetcher)
    spec.arm({}, force_reinstall=False)
    spec.close()
    spec.offer(candidate(wheels, url, "small"))  # a prefetch thread's late guess
    assert gets(state) == []


def test_no_more_wheels_are_unpacked_at_once_than_there_are_processors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # unpacking is bound by the CPU: six downloads at once, but two unpacks at most on two cores
    import threading

    import fitwheel.install.fetch.fetcher as fetcher_module

    folder = tmp_path / "many"
    for i in range(6):
        make_wheel(folder, f"pkg{i}", "1.0")
    monkeypatch.setattr(fetcher_module, "cores", lambda: 2)
    fetcher = Fetcher(
        Session(retries=0), CacheLayout(tmp_path / "cache"), SILENT, jobs=6, verify=False
    )
    lock, now, most = threading.Lock(), [0], [0]
    real_get = fetcher.unpacked.get

    def counted(*args: object) -> object:
        with lock:
            now[0] += 1
            most[0] = max(most[0], now[0])
        try:
            time.sleep(0.05)
            return real_get(*args)  # type: ignore[arg-type]
        finally:
            with lock:
                now[0] -= 1

    monkeypatch.setattr(fetcher.unpacked, "get", counted)
    with serve(folder) as (url, _state):
        items = [
            DownloadItem(p.name, f"{url}/{p.name}", {"sha256": frozenset({sha256_of(p)})})
            for p in sorted(folder.glob("*.whl"))
        ]
        try:
            fetcher.fetch_all(items)
        finally:
            fetcher.close(wait=True)
    assert most[0] == 2  # six wheels, two at a time: never more, and the two slots were used
    entries = list((tmp_path / "cache").rglob("*.dist-info"))
    assert len({e.name for e in entries}) == 6
