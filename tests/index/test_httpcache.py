"""The page cache's writes end with the folder it lives in: a request that finishes after a
command's temporary cache was removed, or after the command was interrupted, writes nothing."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from fitwheel.index.httpcache import HttpCache
from fitwheel.threads import CANCEL

HEADERS = {"cache-control": "max-age=600", "content-type": "text/html"}


@pytest.fixture
def uncancelled() -> Iterator[None]:
    CANCEL.clear()
    yield
    CANCEL.clear()


def test_a_write_after_the_root_was_removed_does_not_bring_it_back(
    tmp_path: Path, uncancelled: None
) -> None:
    root = tmp_path / "tmpcache" / "http"
    cache = HttpCache(root)
    cache.store("http://127.0.0.1/simple/a/", HEADERS, b"<html>a</html>")
    assert cache.load("http://127.0.0.1/simple/a/") is not None
    shutil.rmtree(tmp_path / "tmpcache")
    for name in "bcdefghij":  # other folders of the cache, never made before
        cache.store(f"http://127.0.0.1/simple/{name}/", HEADERS, b"<html></html>")
    assert not (tmp_path / "tmpcache").exists()


def test_nothing_is_written_once_the_command_is_interrupted(
    tmp_path: Path, uncancelled: None
) -> None:
    cache = HttpCache(tmp_path / "http")
    CANCEL.cancel()
    cache.store("http://127.0.0.1/simple/a/", HEADERS, b"<html>a</html>")
    assert not (tmp_path / "http").exists()
    CANCEL.clear()
    cache.store("http://127.0.0.1/simple/a/", HEADERS, b"<html>a</html>")
    assert cache.load("http://127.0.0.1/simple/a/") is not None
