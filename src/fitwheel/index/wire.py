"""HTTP/1.1 over plain sockets, for the requests that go straight to a server (no proxy).

A keep-alive pool per host, redirects followed here, and a response read a block at a time
with its framing (``Content-Length``, chunked, or to the end of the connection) checked: a body
cut short is an error, never a short answer. Every line of the answer's head is bounded
(:data:`MAX_LINE` bytes, :data:`MAX_HEADERS` headers). It loads nothing but :mod:`socket` (and
:mod:`ssl` for the first HTTPS request): a cold run pays for no general-purpose HTTP stack.

Time limits are the session's (:mod:`fitwheel.index.http`): the socket time-out bounds
connecting and every read, and ``on_sent`` hands each request's socket to the watchdog that ends
an answer too slow. Failures are :class:`OSError`: :class:`ProtocolError` for an answer that
breaks HTTP, :class:`TimeoutError` and the connection errors as the socket raises them.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import io
    import socket
    import ssl

#: the longest status, header or chunk-size line read
MAX_LINE = 64 * 1024
#: the most header (or trailer) lines an answer may have
MAX_HEADERS = 100
#: the most redirects followed for one request
MAX_REDIRECTS = 10
#: idle connections kept per host
POOL_SIZE = 16
_REDIRECTS = frozenset({301, 302, 303, 307, 308})
_DEFAULT_PORTS = {"http": 80, "https": 443}
#: characters left as they are in a request target (everything else is percent-encoded)
_SAFE = "/%:@!$&'()*+,;=-._~?"


class ProtocolError(ConnectionError):
    """The server's answer breaks HTTP/1.1 (or ended too early)."""


class _Stale(ConnectionError):
    """A kept-alive connection the server had closed: no byte of an answer came back."""


class Connection:
    """One socket to one host, used by one request at a time."""

    __slots__ = ("key", "reader", "sock")

    def __init__(self, key: tuple[str, str, int], sock: socket.socket) -> None:
        self.key = key
        self.sock = sock
        self.reader: io.BufferedReader = sock.makefile("rb", buffering=64 * 1024)  # type: ignore[assignment]

    def close(self) -> None:
        try:
            self.reader.close()
        finally:
            self.sock.close()


class Response:
    """An answer whose body is read with :meth:`read1`; :meth:`release_conn` gives the
    connection back for the next request when the body was read to its end."""

    __slots__ = (
        "_chunk_left",
        "_chunked",
        "_conn",
        "_done",
        "_keep",
        "_pool",
        "_reader",
        "_remaining",
        "headers",
        "status",
        "url",
    )

    def __init__(
        self,
        pool: Pool,
        conn: Connection,
        url: str,
        status: int,
        headers: dict[str, str],
        method: str,
        keep: bool,
    ) -> None:
        self._pool = pool
        self._conn: Connection | None = conn
        self._reader = conn.reader
        self.url = url
        self.status = status
        #: the headers, names in lower case (repeated ones joined with ", ")
        self.headers: Mapping[str, str] = headers
        self._keep = keep
        self._chunked = False
        self._chunk_left = 0
        #: bytes of the body still to come (None: until the server closes the connection)
        self._remaining: int | None = 0
        self._done = method == "HEAD" or status in (204, 304) or 100 <= status < 200
        if self._done:
            return
        codings = headers.get("transfer-encoding", "").lower()
        if codings:
            if codings.rsplit(",", 1)[-1].strip() != "chunked":
                raise ProtocolError(f"unsupported Transfer-Encoding {codings!r}")
            self._chunked = True
            return
        length = headers.get("content-length")
        if length is None:
            self._remaining = None
            self._keep = False
            return
        values = {v.strip() for v in length.split(",")}
        if len(values) != 1 or not next(iter(values)).isdigit():
            raise ProtocolError(f"invalid Content-Length {length!r}")
        self._remaining = int(values.pop())
        self._done = self._remaining == 0

    def geturl(self) -> str:
        """The URL that answered (after any redirect)."""
        return self.url

    @property
    def closed(self) -> bool:
        """Whether the body was read to its end."""
        return self._done

    def read1(self, size: int, decode_content: bool = False) -> bytes:
        """At most ``size`` bytes of the body as sent (b"" at its end); a body cut short
        raises :class:`ProtocolError`."""
        if self._done:
            return b""
        if self._chunked:
            return self._read_chunk(size)
        remaining = self._remaining
        if remaining is None:
            data = self._reader.read1(size)
            if not data:
                self._done = True
            return data
        data = self._reader.read1(min(size, remaining))
        if not data:
            self._cut_short()
        self._remaining = remaining - len(data)
        if not self._remaining:
            self._done = True
        return data

    def _read_chunk(self, size: int) -> bytes:
        if not self._chunk_left:
            line = _line(self._reader, "chunk size")
            text = line.split(b";", 1)[0].strip()
            try:
                chunk = int(text, 16)
            except ValueError:
                raise ProtocolError(f"invalid chunk size {text[:40]!r}") from None
            if chunk < 0:
                raise ProtocolError(f"invalid chunk size {text[:40]!r}")
            if chunk == 0:
                for _ in range(MAX_HEADERS + 1):
                    if _line(self._reader, "trailer") in (b"\r\n", b"\n"):
                        self._done = True
                        return b""
                raise ProtocolError(f"more than {MAX_HEADERS} trailer lines")
            self._chunk_left = chunk
        data = self._reader.read1(min(size, self._chunk_left))
        if not data:
            self._cut_short()
        self._chunk_left -= len(data)
        if not self._chunk_left and _line(self._reader, "chunk end") not in (b"\r\n", b"\n"):
            raise ProtocolError("a chunk does not end where its size says")
        return data

    def _cut_short(self) -> None:
        self._keep = False
        raise ProtocolError("the connection closed before the answer was complete")

    def close(self) -> None:
        """Drop the connection (an unread body is never drained)."""
        self._keep = False
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def release_conn(self) -> None:
        conn, self._conn = self._conn, None
        if conn is None:
            return
        if self._done and self._keep:
            self._pool.put(conn)
        else:
            conn.close()


def _line(reader: io.BufferedReader, what: str) -> bytes:
    line = reader.readline(MAX_LINE + 1)
    if len(line) > MAX_LINE:
        raise ProtocolError(f"a {what} line longer than {MAX_LINE} bytes")
    if not line.endswith(b"\n"):
        raise ProtocolError("the connection closed before the answer was complete")
    return line


def _head(reader: io.BufferedReader) -> tuple[int, bool, dict[str, str]]:
    """The status, whether HTTP/1.1 keep-alive holds, and the headers of the next answer
    (informational 1xx answers skipped)."""
    for _ in range(MAX_HEADERS):
        first = reader.readline(MAX_LINE + 1)
        if not first:
            raise _Stale("the server closed the connection without answering")
        if len(first) > MAX_LINE or not first.endswith(b"\n"):
            raise ProtocolError("the status line is too long or cut short")
        version, _, rest = first.partition(b" ")
        code = rest[:3]
        if not version.startswith(b"HTTP/1.") or len(code) != 3 or not code.isdigit():
            raise ProtocolError(f"not an HTTP/1.x answer: {first[:60]!r}")
        status = int(code)
        headers: dict[str, str] = {}
        name = ""
        for _count in range(MAX_HEADERS + 1):
            line = _line(reader, "header")
            if line in (b"\r\n", b"\n"):
                break
            text = line.decode("latin-1")
            if text[0] in " \t" and name:  # an obsolete folded continuation
                headers[name] += " " + text.strip()
                continue
            key, sep, value = text.partition(":")
            if not sep:
                raise ProtocolError(f"a header line without a colon: {text[:60]!r}")
            name = key.strip().lower()
            value = value.strip()
            headers[name] = f"{headers[name]}, {value}" if name in headers else value
        else:
            raise ProtocolError(f"more than {MAX_HEADERS} headers")
        if status >= 200 or status == 101:
            connection = headers.get("connection", "").lower()
            if version == b"HTTP/1.0":
                keep = "keep-alive" in connection
            else:
                keep = "close" not in connection
            return status, keep, headers
    raise ProtocolError("too many informational answers")


class Pool:
    """Kept-alive connections by (scheme, host, port); HTTPS ones through ``tls()`` (or, for
    a host in ``trusted``, pip's ``trusted-host``, a context that checks nothing)."""

    __slots__ = ("_idle", "_lock", "_tls", "_unchecked", "trusted")

    def __init__(self, tls: Callable[[], ssl.SSLContext], trusted: frozenset[str]) -> None:
        self._tls = tls
        self.trusted = trusted
        self._idle: dict[tuple[str, str, int], list[Connection]] = {}
        self._lock = threading.Lock()
        self._unchecked: ssl.SSLContext | None = None

    def put(self, conn: Connection) -> None:
        with self._lock:
            idle = self._idle.setdefault(conn.key, [])
            if len(idle) < POOL_SIZE:
                idle.append(conn)
                return
        conn.close()

    def _take(self, key: tuple[str, str, int]) -> Connection | None:
        with self._lock:
            idle = self._idle.get(key)
            return idle.pop() if idle else None

    def _connect(self, key: tuple[str, str, int], timeout: float) -> Connection:
        import socket

        scheme, host, port = key
        sock = socket.create_connection((host, port), timeout)
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if scheme == "https":
                sock = self._context(host, port).wrap_socket(sock, server_hostname=host)
        except BaseException:
            sock.close()
            raise
        return Connection(key, sock)

    def _context(self, host: str, port: int) -> ssl.SSLContext:
        if host not in self.trusted and f"{host}:{port}" not in self.trusted:
            return self._tls()
        with self._lock:
            if self._unchecked is None:
                import ssl

                unchecked = ssl.create_default_context()
                unchecked.check_hostname = False
                unchecked.verify_mode = ssl.CERT_NONE
                self._unchecked = unchecked
            return self._unchecked

    def request(
        self,
        method: str,
        url: str,
        headers: Mapping[str, str],
        timeout: float,
        on_sent: Callable[[socket.socket], None],
    ) -> Response:
        """Send the request (following up to :data:`MAX_REDIRECTS` redirects) and read the
        head of the answer; ``on_sent`` hears of each request's socket once it is sent."""
        sent = dict(headers)
        for _hop in range(MAX_REDIRECTS + 1):
            parts = urllib.parse.urlsplit(url)
            scheme = parts.scheme.lower()
            if scheme not in _DEFAULT_PORTS or not parts.hostname:
                raise ProtocolError(f"cannot follow a redirect to {url!r}: not an HTTP(S) URL")
            port = parts.port or _DEFAULT_PORTS[scheme]
            key = (scheme, parts.hostname, port)
            resp = self._send(key, parts, method, sent, timeout, on_sent, url)
            location = resp.headers.get("location")
            if resp.status not in _REDIRECTS or not location:
                return resp
            resp.close()
            target = urllib.parse.urljoin(url, location.strip())
            if resp.status == 303 and method != "HEAD":
                method = "GET"
            if urllib.parse.urlsplit(target).netloc.lower() != parts.netloc.lower():
                # credentials never follow a redirect to another host
                sent = {k: v for k, v in sent.items() if k.lower() != "authorization"}
            url = target
        raise ProtocolError(f"more than {MAX_REDIRECTS} redirects")

    def _send(
        self,
        key: tuple[str, str, int],
        parts: urllib.parse.SplitResult,
        method: str,
        headers: Mapping[str, str],
        timeout: float,
        on_sent: Callable[[socket.socket], None],
        url: str,
    ) -> Response:
        host = parts.hostname or ""
        authority = f"[{host}]" if ":" in host else host
        if parts.port is not None and parts.port != _DEFAULT_PORTS[key[0]]:
            authority += f":{parts.port}"
        target = urllib.parse.quote(parts.path or "/", safe=_SAFE)
        if parts.query:
            target += "?" + urllib.parse.quote(parts.query, safe=_SAFE)
        lines = [f"{method} {target} HTTP/1.1", f"Host: {authority}"]
        lines += [f"{name}: {value}" for name, value in headers.items()]
        if any("\n" in line or "\r" in line for line in lines):
            raise ProtocolError("a request header holds a line break")
        data = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
        conn = self._take(key)
        while True:
            reused = conn is not None
            if conn is None:
                conn = self._connect(key, timeout)
            try:
                conn.sock.settimeout(timeout)
                conn.sock.sendall(data)
                on_sent(conn.sock)
                status, keep, found = _head(conn.reader)
                return Response(self, conn, url, status, found, method, keep)
            except (_Stale, BrokenPipeError, ConnectionResetError) as exc:
                conn.close()
                if not reused:
                    if isinstance(exc, _Stale):
                        raise ProtocolError(str(exc)) from None
                    raise
                conn = None  # a kept-alive connection the server dropped: once more, afresh
            except BaseException:
                conn.close()
                raise
