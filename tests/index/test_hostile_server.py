"""The HTTP session against a server that misbehaves on purpose: a body trickled a byte at a
time, a request never answered, a long Retry-After, encodings nobody asked for, answers larger
than anything fitwheel reads. Each ends in one error naming the URL, after exactly the
configured attempts (an answer under the minimum throughput: one), with the time limits of
docs/security.md."""

from __future__ import annotations

import errno
import gzip
import io
import os
import time
from pathlib import Path

import pytest

from fitwheel.index.http import (
    BadResponseError,
    HttpError,
    LocalWriteError,
    Session,
    TimedOutError,
    TooSlowError,
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


#: the throughput rule made small: 200 B/s over every second of waiting
SLOW = {"min_rate": 200.0, "rate_window": 1.0}


def test_a_trickled_page_is_too_slow_and_not_asked_for_again(root: Path) -> None:
    # a byte every 0.2 s: every read is well within the per-read time-out
    with serve(root, trickle={"/page/": 0.2}) as (url, state):
        started = time.monotonic()
        with pytest.raises(TooSlowError) as info:
            session(retries=3, **SLOW).get(f"{url}/page/")
        assert time.monotonic() - started < 15  # one window and a little: a hang bound
        assert asked(state, "/page/") == 1
    message = str(info.value)
    assert message.startswith(f"{url}/page/: received ")
    assert "in 1 s of waiting: too slow (under 200 B/s)" in message and "tried once" in message


def test_a_page_must_be_whole_within_four_timeouts(root: Path) -> None:
    # 32 KiB every 0.05 s keeps the body moving, but a page has a total limit too
    (root / "big").mkdir()
    (root / "big" / "index.html").write_bytes(b"x" * (4 << 20))
    limit = pytest.raises(TimedOutError, match="not complete within 2 s")
    with serve(root, trickle={"/big/": 0.05}, trickle_bytes=32 << 10) as (url, _state), limit:
        session(retries=0, timeout=0.5).get(f"{url}/big/")


def test_a_trickled_wheel_is_too_slow(root: Path) -> None:
    path = "/x-1.0-py3-none-any.whl"
    with serve(root, trickle={path: 0.2}) as (url, state):
        started = time.monotonic()
        with pytest.raises(TooSlowError) as info:
            session(retries=3, **SLOW).download(f"{url}{path}", io.BytesIO())
        assert time.monotonic() - started < 15
        assert asked(state, path) == 1
    message = str(info.value)
    assert f"{url}{path}" in message and "too slow (under 200 B/s)" in message


@pytest.mark.parametrize("window", [5.0, 0.5], ids=["window-longer", "window-as-long"])
def test_a_wheel_whose_body_stops_ends_with_the_per_read_time_out(
    root: Path, window: float
) -> None:
    # a byte a second: each read waits past the 0.5 s per-read time-out (a read that passes it
    # and the throughput rule's window at once has stalled), and a time-out is retried
    path = "/x-1.0-py3-none-any.whl"
    with serve(root, trickle={path: 1.0}) as (url, state):
        with pytest.raises(TimedOutError) as info:
            session(retries=1, min_rate=200.0, rate_window=window).download(
                f"{url}{path}", io.BytesIO()
            )
        assert asked(state, path) == 2
    message = str(info.value)
    assert f"{url}{path} timed out: the answer stalled (nothing arrived for 0.5 s)" in message
    assert "too slow" not in message and not isinstance(info.value, TooSlowError)


def test_a_slow_but_steady_download_finishes(root: Path) -> None:
    # 128 bytes every 0.05 s (about 2.5 KiB/s) for a few seconds, over a rule of 1,000 B/s over
    # every half second of waiting: slower than the rule's window many times over, never under
    wheel = root / "x-1.0-py3-none-any.whl"
    wheel.write_bytes(os.urandom(6 << 10))
    path = f"/{wheel.name}"
    with serve(root, trickle={path: 0.05}, trickle_bytes=128) as (url, state):
        out = io.BytesIO()
        session(timeout=2.0, min_rate=1000.0, rate_window=0.5).download(f"{url}{path}", out)
        assert asked(state, path) == 1
    assert out.getvalue() == wheel.read_bytes()


def test_time_spent_on_the_chunks_is_not_waiting(root: Path) -> None:
    # 1 MiB under a rule of 1 MiB/s: the caller's 0.1 s with each chunk puts the rate by the
    # clock well under the rule, the time spent waiting on the socket keeps it far above
    wheel = root / "x-1.0-py3-none-any.whl"
    wheel.write_bytes(os.urandom(1 << 20))
    path = f"/{wheel.name}"
    with serve(root) as (url, state):
        out = io.BytesIO()
        rule = {"min_rate": float(1 << 20), "rate_window": 0.3}
        started = time.monotonic()
        session(timeout=2.0, **rule).download(
            f"{url}{path}", out, progress=lambda _n: time.sleep(0.1)
        )
        assert (1 << 20) / (time.monotonic() - started) < 1 << 20  # by the clock: under the rule
        assert asked(state, path) == 1
    assert out.getvalue() == wheel.read_bytes()


def test_a_failed_connection_names_the_host_plainly() -> None:
    for url in ("http://nohost.invalid/simple/", "http://127.0.0.1:1/simple/"):
        with pytest.raises(UnreachableError) as info:
            session(retries=0).get(url)
        message = str(info.value)
        assert url in message
        for internal in ("Watched", "host=", "object at", "0x", "Connection("):
            assert internal not in message, message
        assert message.count("(") == message.count(")"), message


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
