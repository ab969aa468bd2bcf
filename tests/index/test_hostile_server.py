"""The HTTP session against a server that misbehaves on purpose: a body trickled a byte at a
time, a request never answered, a long Retry-After, encodings nobody asked for, answers larger
than anything fitwheel reads. Each ends in one error naming the URL, after exactly the
configured attempts, with the time limits of docs/security.md."""

from __future__ import annotations

import errno
import gzip
import io
from pathlib import Path

import pytest

from fitwheel.index.http import (
    BadResponseError,
    HttpError,
    LocalWriteError,
    Session,
    TimedOutError,
    UnreachableError,
)
from fitwheel.index.metadata import fetch_member
from fitwheel.index.simple import Link
from fitwheel.wheel.archive import WheelError
from tests.kit import gzip_bomb, make_wheel, serve


def session(**kw: object) -> Session:
    options: dict[str, object] = {"retries": 1, "backoff": 0.0, "timeout": 0.5, "env": {}}
    options.update(kw)
    return Session(**options)  # type: ignore[arg-type]


def asked(state: object, path: str) -> int:
    return sum(1 for r in state.requests if r[1] == path)  # type: ignore[attr-defined]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    (site / "page").mkdir(parents=True)
    (site / "page" / "index.html").write_text('<a href="x-1.0-py3-none-any.whl">x</a>\n' * 50)
    make_wheel(site, "x", "1.0")
    return site


def test_a_retry_after_longer_than_the_cap_fails_at_once_naming_the_wait(root: Path) -> None:
    with serve(root, retry_after={"/page/": "3600"}) as (url, state):
        with pytest.raises(HttpError) as info:
            session(retries=3).get(f"{url}/page/")
        assert asked(state, "/page/") == 1
    message = str(info.value)
    assert f"{url}/page/" in message and "3600 s" in message and "60 s" in message


def test_a_short_retry_after_is_waited_for_and_retried(root: Path) -> None:
    with serve(root, retry_after={"/page/": "0"}) as (url, state):
        with pytest.raises(HttpError) as info:
            session(retries=2).get(f"{url}/page/")
        assert asked(state, "/page/") == 3
    assert info.value.status == 503


def test_a_server_that_never_answers_times_out_after_the_configured_attempts(root: Path) -> None:
    with serve(root, stall={"/page/"}) as (url, state):
        s = session(retries=2)
        with pytest.raises(TimedOutError) as info:
            s.get(f"{url}/page/")
        assert asked(state, "/page/") == 3
        # asked again (the resolver does), the page fails the same way without a request
        with pytest.raises(TimedOutError) as again:
            s.get(f"{url}/page/")
        assert asked(state, "/page/") == 3
    message = str(info.value)
    assert message.startswith(f"{url}/page/ timed out: no answer within 0.5 s (tried 3 times)")
    assert "could not reach" not in message
    assert again.value is info.value


def test_a_trickled_page_times_out(root: Path) -> None:
    with serve(root, trickle={"/page/": 0.2}) as (url, state):
        with pytest.raises(TimedOutError, match="stalled") as info:
            session(retries=1).get(f"{url}/page/")
        assert asked(state, "/page/") == 2
    assert f"{url}/page/ timed out" in str(info.value)


def test_a_page_must_be_whole_within_four_timeouts(root: Path) -> None:
    # 32 KiB every 0.05 s keeps the body moving, but a page has a total limit too
    (root / "big").mkdir()
    (root / "big" / "index.html").write_bytes(b"x" * (4 << 20))
    limit = pytest.raises(TimedOutError, match="not complete within 2 s")
    with serve(root, trickle={"/big/": 0.05}, trickle_bytes=32 << 10) as (url, _state), limit:
        session(retries=0, timeout=0.5).get(f"{url}/big/")


def test_a_trickled_wheel_times_out(root: Path, tmp_path: Path) -> None:
    path = "/x-1.0-py3-none-any.whl"
    with serve(root, trickle={path: 1.0}) as (url, state):
        with pytest.raises(TimedOutError, match="stalled") as info:
            session(retries=1).download(f"{url}{path}", io.BytesIO())
        assert asked(state, path) == 2
    assert f"{url}{path}" in str(info.value)


def test_a_cut_off_download_is_resumed_by_the_next_attempt(root: Path) -> None:
    wheel = (root / "x-1.0-py3-none-any.whl").read_bytes()
    path = "/x-1.0-py3-none-any.whl"
    with serve(root, flaky={path: 1}) as (url, state):
        out = io.BytesIO()
        session(retries=1).download(f"{url}{path}", out)
        assert out.getvalue() == wheel and asked(state, path) == 2


def test_identity_is_asked_for_and_a_wheel_is_never_decoded(root: Path, tmp_path: Path) -> None:
    wheel = root / "x-1.0-py3-none-any.whl"
    sent = gzip.compress(wheel.read_bytes())
    wheel.write_bytes(sent)
    path = "/x-1.0-py3-none-any.whl"
    with serve(root, content_encoding={path: "gzip"}) as (url, state):
        out = io.BytesIO()
        session().download(f"{url}{path}", out)
        assert state.requests[-1][2]["accept-encoding"] == "identity"
    assert out.getvalue() == sent  # the bytes as sent: the hash check sees what came


def test_a_gzip_bomb_page_is_refused_in_bounded_memory(root: Path) -> None:
    (root / "page" / "index.html").write_bytes(gzip_bomb(1 << 30))
    refused = pytest.raises(BadResponseError)
    with serve(root, content_encoding={"/page/": "gzip"}) as (url, _state), refused as info:
        session().get(f"{url}/page/")
    message = str(info.value)
    assert f"{url}/page/" in message and "gzip" in message and str(64 << 20) in message


def test_a_small_gzip_page_is_read(root: Path) -> None:
    page = root / "page" / "index.html"
    text = page.read_bytes()
    page.write_bytes(gzip.compress(text))
    with serve(root, content_encoding={"/page/": "gzip"}) as (url, _state):
        found = session().get(f"{url}/page/")
    assert found is not None and found.body == text


def test_an_encoding_fitwheel_does_not_read_is_refused(root: Path) -> None:
    refused = pytest.raises(BadResponseError, match="Content-Encoding 'br'")
    with serve(root, content_encoding={"/page/": "br"}) as (url, _state), refused as info:
        session().get(f"{url}/page/")
    assert f"{url}/page/" in str(info.value)


def test_a_page_over_the_size_limit_is_refused(root: Path) -> None:
    refused = pytest.raises(BadResponseError, match="over the limit of 100 bytes")
    with serve(root) as (url, _state), refused:
        session(max_page_bytes=100).get(f"{url}/page/")


def test_a_download_over_the_size_limit_is_refused_before_reading(root: Path) -> None:
    path = "/x-1.0-py3-none-any.whl"
    with serve(root) as (url, _state):
        out = io.BytesIO()
        with pytest.raises(BadResponseError, match="over the limit of 10 bytes"):
            session(max_file_bytes=10).download(f"{url}{path}", out)
    assert out.getvalue() == b""


def test_the_whole_wheel_fallback_reads_the_bytes_as_sent(root: Path) -> None:
    """No ranges: metadata comes from the whole wheel, which is never decoded, so a gzip-encoded
    wheel is not a wheel (and a gzip bomb costs only its own size)."""
    wheel = root / "x-1.0-py3-none-any.whl"
    wheel.write_bytes(gzip.compress(wheel.read_bytes()))
    path = "/x-1.0-py3-none-any.whl"
    with serve(root, ranges=False, content_encoding={path: "gzip"}) as (url, _state):
        link = Link(filename=wheel.name, url=f"{url}{path}")
        with pytest.raises(WheelError):
            fetch_member(link, session(), "METADATA", required=True)


class _FullDisk(io.BytesIO):
    name = "/cache/wheels/tmp/0123.part"

    def write(self, data: object) -> int:
        raise OSError(errno.ENOSPC, "No space left on device")


def test_a_local_write_error_is_not_a_network_error(root: Path) -> None:
    path = "/x-1.0-py3-none-any.whl"
    with serve(root) as (url, _state), pytest.raises(LocalWriteError) as info:
        session().download(f"{url}{path}", _FullDisk())
    message = str(info.value)
    assert not isinstance(info.value, UnreachableError)
    assert "could not reach" not in message
    assert _FullDisk.name in message and "No space left on device" in message
    assert f"{url}{path}" in message
