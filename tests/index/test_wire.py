"""Direct HTTP/1.1 (fitwheel.index.wire) through the session, against a loopback server that
answers with exactly the bytes each test scripts: kept-alive connections, chunked bodies,
redirects, and answers that break the protocol."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import pytest

from fitwheel.index.http import Session, UnreachableError

#: (request path, the connection's request count) -> the raw answer, or None to hang up (an
#: answer saying ``Connection: close`` hangs up after it is sent)
Script = Callable[[str, int], bytes | None]


class _Raw:
    def __init__(self) -> None:
        self.connections = 0
        self.requests: list[str] = []


@contextmanager
def raw_server(script: Script) -> Iterator[tuple[str, _Raw]]:
    listener = socket.create_server(("127.0.0.1", 0))
    seen = _Raw()
    done = threading.Event()

    def handle(conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        count = 0
        with conn, reader:
            while not done.is_set():
                line = reader.readline()
                if not line:
                    return
                path = line.split()[1].decode()
                while reader.readline() not in (b"\r\n", b"\n", b""):
                    pass
                count += 1
                seen.requests.append(path)
                answer = script(path, count)
                if answer is None:
                    return
                conn.sendall(answer)
                if b"\r\nConnection: close\r\n" in answer.split(b"\r\n\r\n", 1)[0] + b"\r\n":
                    return

    listener.settimeout(0.1)  # a closed listener never wakes a blocked accept

    def accept() -> None:
        while not done.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            conn.settimeout(None)
            seen.connections += 1
            threading.Thread(target=handle, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}", seen
    finally:
        done.set()
        thread.join()
        listener.close()


def _ok(body: bytes, *headers: str) -> bytes:
    head = "".join(f"{h}\r\n" for h in headers)
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


def _session() -> Session:
    return Session(retries=1, backoff=0.0, timeout=5.0, env={})


def test_requests_to_one_host_share_a_kept_alive_connection() -> None:
    with raw_server(lambda path, _n: _ok(path.encode())) as (url, seen):
        s = _session()
        bodies = [s.get(f"{url}/p{i}/", use_cache=False) for i in range(5)]
    assert [b.body for b in bodies if b is not None] == [f"/p{i}/".encode() for i in range(5)]
    assert seen.connections == 1 and len(seen.requests) == 5


def test_a_connection_the_server_closed_is_replaced_without_an_error() -> None:
    # answers without "Connection: close", then hangs up before the next request
    def script(path: str, count: int) -> bytes | None:
        return _ok(b"page") if count == 1 else None

    with raw_server(script) as (url, seen):
        s = _session()
        for i in range(3):
            got = s.get(f"{url}/p{i}/", use_cache=False)
            assert got is not None and got.body == b"page"
    assert seen.connections >= 3


def test_a_chunked_answer_with_extensions_and_trailers_is_read_whole() -> None:
    answer = (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"5;name=value\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nExpires: never\r\n\r\n"
    )
    with raw_server(lambda _p, _n: answer) as (url, seen):
        s = _session()
        first = s.get(f"{url}/a/", use_cache=False)
        second = s.get(f"{url}/b/", use_cache=False)
    assert first is not None and first.body == b"hello world"
    assert second is not None and second.body == b"hello world"
    assert seen.connections == 1


def test_a_chunked_body_cut_short_is_asked_for_again() -> None:
    def script(_path: str, _count: int) -> bytes:
        whole = len(seen.requests) > 1
        body = b"5\r\nhello\r\n0\r\n\r\n" if whole else b"5\r\nhel"
        answer = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
        return answer + (b"\r\n" if whole else b"Connection: close\r\n\r\n") + body

    with raw_server(script) as (url, seen):
        s = _session()
        got = s.get(f"{url}/page/", use_cache=False)
    assert got is not None and got.body == b"hello"
    assert seen.requests == ["/page/", "/page/"]


def test_a_redirect_is_followed_and_the_page_is_the_final_location() -> None:
    def script(path: str, _count: int) -> bytes:
        if path == "/old/":
            return b"HTTP/1.1 301 Moved\r\nLocation: /new/\r\nContent-Length: 0\r\n\r\n"
        return _ok(b'<a href="x-1.0-py3-none-any.whl">x</a>')

    with raw_server(script) as (url, _seen):
        got = _session().get(f"{url}/old/", use_cache=False)
    assert got is not None and got.url == f"{url}/new/"


def test_endless_redirects_fail_naming_the_url() -> None:
    def script(path: str, count: int) -> bytes:
        return f"HTTP/1.1 302 Found\r\nLocation: {path}x\r\nContent-Length: 0\r\n\r\n".encode()

    with raw_server(script) as (url, _seen), pytest.raises(UnreachableError) as info:
        Session(retries=0, env={}, timeout=5.0).get(f"{url}/loop/", use_cache=False)
    assert f"{url}/loop/" in str(info.value) and "redirects" in str(info.value)


def test_a_redirect_to_another_scheme_is_refused() -> None:
    answer = b"HTTP/1.1 302 Found\r\nLocation: file:///etc/passwd\r\nContent-Length: 0\r\n\r\n"
    with raw_server(lambda _p, _n: answer) as (url, _seen), pytest.raises(UnreachableError) as info:
        Session(retries=0, env={}, timeout=5.0).get(f"{url}/page/", use_cache=False)
    assert "not an HTTP(S) URL" in str(info.value)


@pytest.mark.parametrize(
    ("answer", "problem"),
    [
        (b"HTTP/1.1 200 OK\r\n" + b"X-Filler: y\r\n" * 101 + b"\r\n", "more than 100 headers"),
        (b"HTTP/1.1 200 OK\r\nX-Long: " + b"y" * (70 << 10) + b"\r\n\r\n", "longer than"),
        (b"SSH-2.0-OpenSSH\r\n\r\n", "not an HTTP/1.x answer"),
        (b"HTTP/1.1 200 OK\r\nContent-Length: 3, 4\r\n\r\nabcd", "invalid Content-Length"),
        (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "invalid chunk size"),
    ],
)
def test_an_answer_that_breaks_http_is_refused_naming_the_problem(
    answer: bytes, problem: str
) -> None:
    with raw_server(lambda _p, _n: answer) as (url, _seen), pytest.raises(UnreachableError) as info:
        Session(retries=0, env={}, timeout=5.0).get(f"{url}/page/", use_cache=False)
    assert problem in str(info.value) and f"{url}/page/" in str(info.value)
