import hashlib
from pathlib import Path

import pytest

from fitwheel.index.http import HttpError, Session
from fitwheel.install.fetch.download import Downloader, DownloadItem
from fitwheel.integrity import HashMismatchError
from fitwheel.reporter import Reporter
from tests.kit import make_wheel, serve, sha256_of


@pytest.fixture
def files(tmp_path: Path) -> Path:
    folder = tmp_path / "files"
    for i in range(6):
        make_wheel(folder, f"p{i}", "1.0")
    return folder


def items(folder: Path, url: str, *, with_hash: bool = True) -> list[DownloadItem]:
    out = []
    for wheel in sorted(folder.glob("*.whl")):
        hashes = {"sha256": frozenset({sha256_of(wheel)})} if with_hash else {}
        out.append(DownloadItem(wheel.name, f"{url}/{wheel.name}", hashes))
    return out


def test_parallel_downloads_land_in_the_cache_and_are_reused(tmp_path: Path, files: Path) -> None:
    with serve(files) as (url, state):
        downloader = Downloader(Session(retries=0, env={}), tmp_path / "cache", jobs=3)
        seen: dict[str, int] = {}

        class Counting(Reporter):
            def progress(self, what: str, advance: int, total: int | None = None) -> None:
                seen[what] = seen.get(what, 0) + advance

        done = downloader.fetch_all(items(files, url), Counting())
        assert [d.item.filename for d in done] == sorted(p.name for p in files.glob("*.whl"))
        for d in done:
            assert d.path.read_bytes() == (files / d.item.filename).read_bytes()
            assert d.path.is_relative_to(tmp_path / "cache") and not d.from_cache
            assert seen[d.item.filename] == d.path.stat().st_size
        first = len(state.requests)
        again = downloader.fetch_all(items(files, url))
        assert all(d.from_cache for d in again)
        assert len(state.requests) == first, "known hashes found in the cache are not fetched"
        assert not list((tmp_path / "cache" / "tmp").iterdir())


def test_hash_mismatch_fails_and_leaves_no_file(tmp_path: Path, files: Path) -> None:
    with serve(files) as (url, _):
        bad = items(files, url)[2]
        bad = DownloadItem(bad.filename, bad.url, {"sha256": frozenset({"0" * 64})})
        downloader = Downloader(Session(retries=0, env={}), tmp_path / "cache")
        with pytest.raises(HashMismatchError, match=bad.filename):
            downloader.fetch(bad)
        assert not [p for p in (tmp_path / "cache").rglob("*.whl")]
        assert not list((tmp_path / "cache" / "tmp").iterdir())


def test_any_of_several_pinned_hashes_is_accepted_and_the_strongest_algorithm_checked(
    tmp_path: Path, files: Path
) -> None:
    wheel = sorted(files.glob("*.whl"))[0]
    data = wheel.read_bytes()
    item = DownloadItem(
        wheel.name,
        wheel.as_uri(),
        {
            "sha256": frozenset({"f" * 64, hashlib.sha256(data).hexdigest()}),
            "sha512": frozenset({hashlib.sha512(data).hexdigest()}),
        },
    )
    done = Downloader(None, tmp_path / "cache").fetch(item)
    assert done.path == wheel  # a local file is used in place
    with pytest.raises(HashMismatchError):
        Downloader(None, tmp_path / "cache").fetch(
            DownloadItem(wheel.name, wheel.as_uri(), {"sha512": frozenset({"0" * 128})})
        )


def test_first_failure_is_raised(tmp_path: Path, files: Path) -> None:
    with serve(files, fail={"/p3-1.0-py3-none-any.whl": 404}) as (url, _):
        downloader = Downloader(Session(retries=0, env={}), tmp_path / "cache", jobs=4)
        with pytest.raises(HttpError, match=r"p3-1\.0"):
            downloader.fetch_all(items(files, url, with_hash=False))


def test_an_interrupted_download_resumes_with_a_range_request(tmp_path: Path) -> None:
    import os as _os

    folder = tmp_path / "big"
    wheel = make_wheel(folder, "large", "1.0", files={"large/blob.bin": _os.urandom(300_000)})
    data = wheel.read_bytes()
    with serve(folder) as (url, state):
        item = DownloadItem(
            wheel.name, f"{url}/{wheel.name}", {"sha256": frozenset({sha256_of(wheel)})}
        )
        cache = tmp_path / "cache"
        part = cache / "tmp" / (hashlib.sha256(item.url.encode()).hexdigest()[:32] + ".part")
        part.parent.mkdir(parents=True)
        part.write_bytes(data[:100_000])  # what an interrupted run left behind
        done = Downloader(Session(retries=0, env={}), cache).fetch(item)
        assert done.path.read_bytes() == data
        assert state.requests[-1][2].get("range") == "bytes=100000-"
        assert not part.exists()
        # a stale piece of some other file: the hash catches it, and the download starts over
        other = Downloader(Session(retries=0, env={}), tmp_path / "cache2")
        (tmp_path / "cache2" / "tmp").mkdir(parents=True)
        stale = tmp_path / "cache2" / "tmp" / part.name
        stale.write_bytes(b"x" * 100_000)
        again = other.fetch(item)
        assert again.path.read_bytes() == data
        assert "range" not in state.requests[-1][2]


def test_a_server_without_ranges_sends_the_whole_file_again(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    wheel = make_wheel(folder, "plainsrv", "1.0")
    with serve(folder, ranges=False) as (url, _):
        item = DownloadItem(
            wheel.name, f"{url}/{wheel.name}", {"sha256": frozenset({sha256_of(wheel)})}
        )
        cache = tmp_path / "cache"
        part = cache / "tmp" / (hashlib.sha256(item.url.encode()).hexdigest()[:32] + ".part")
        part.parent.mkdir(parents=True)
        part.write_bytes(wheel.read_bytes()[:50])
        done = Downloader(Session(retries=0, env={}), cache).fetch(item)
        assert done.path.read_bytes() == wheel.read_bytes()


def test_started_downloads_are_reused_and_only_asked_for_failures_count(
    tmp_path: Path, files: Path
) -> None:
    with serve(files) as (url, state):
        downloader = Downloader(Session(retries=0, env={}), tmp_path / "cache", jobs=2)
        wanted = items(files, url)[:3]
        unpacked: list[str] = []
        for item in wanted:
            downloader.start(item, then=lambda done: unpacked.append(done.item.filename))
        # started ahead but not needed in the end (the resolver moved on), and broken
        dropped = DownloadItem("gone-1.0-py3-none-any.whl", f"{url}/gone-1.0-py3-none-any.whl")
        downloader.start(dropped)
        done = downloader.fetch_all(wanted, then=lambda d: unpacked.append("again"))
        assert [d.item for d in done] == wanted
        names = [r[1].rsplit("/", 1)[-1] for r in state.requests if r[1].endswith(".whl")]
        for item in wanted:
            assert names.count(item.filename) == 1, "each started file fetched once, not twice"
        assert sorted(unpacked) == sorted(i.filename for i in wanted)
        # an item that differs from the one started (other hashes) is fetched on its own terms
        other = DownloadItem(wanted[0].filename, wanted[0].url, {"sha256": frozenset({"0" * 64})})
        with pytest.raises(HashMismatchError):
            downloader.fetch_all([other, wanted[1]])
        downloader.close()
