"""One HTTP session for every index request: pooled connections, retries, TLS, proxies, time
and size limits.

Everything that reaches the network goes through :class:`Session`, so that retry policy, time
limits, trust store, authentication (:mod:`fitwheel.index.auth`), caching
(:mod:`fitwheel.index.httpcache`) and hash checks (:mod:`fitwheel.integrity`) are decided once.
Failures become :class:`HttpError` (a status from the server), :class:`TimedOutError` (no answer
in time, or an answer not whole in time), :class:`TooSlowError` (an answer that came, but under
the minimum throughput), :class:`UnreachableError` (no answer at all) or
:class:`BadResponseError` (an answer too large or in an encoding never asked for), each naming
the URL; a local write error while downloading is a :class:`LocalWriteError` naming the file.

Every request asks for no content encoding (``Accept-Encoding: identity``) and reads the body
as sent: downloads are hashed as sent, pages are decoded (gzip or deflate only) when a server
compresses them anyway, and never past :data:`MAX_PAGE_BYTES`. The time limits are those of
:class:`fitwheel.index.deadlines.Deadline`, enforced by one watchdog thread that shuts down the
socket of an attempt past its deadline; docs/security.md states them.
"""

from __future__ import annotations

import base64
import errno
import functools
import os
import re
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, BinaryIO, TypeVar

from fitwheel._values import Frozen
from fitwheel.errors import InstallationError, NetworkError
from fitwheel.index.auth import netloc, netrc_credentials, redact, split_credentials
from fitwheel.index.deadlines import (
    ATTEMPT,
    MIN_RATE,
    PAGE_TIME_FACTOR,
    RATE_WINDOW,
    WATCHDOG,
    Deadline,
)
from fitwheel.index.httpcache import HttpCache
from fitwheel.index.pools import USER_AGENT, bypassed, pool_manager, proxies, ssl_context
from fitwheel.integrity import Hashes, HashMismatchError, verify

if TYPE_CHECKING:
    # both load with the HTTP stack, when a request is really made
    import ssl

    import urllib3

#: answers that another attempt may fix
_RETRY_STATUSES = (429, 500, 502, 503, 504)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_T = TypeVar("_T")

#: pip's ``--timeout`` (seconds) and ``--retries`` (attempts after the first), as fitwheel's
#: defaults
DEFAULT_TIMEOUT = 30.0
DEFAULT_RETRIES = 3
#: the longest ``Retry-After`` (seconds) fitwheel waits for; a longer one fails at once
MAX_RETRY_AFTER = 60.0
#: the largest page, metadata or variants file read (after decoding)
MAX_PAGE_BYTES = 64 << 20
#: the largest file downloaded (the largest real wheels are a few GB)
MAX_FILE_BYTES = 16 << 30
_CHUNK = 1 << 16


class HttpError(NetworkError):
    """The server answered with an error status."""

    def __init__(self, url: str, status: int, what: str = "", hint: str | None = None) -> None:
        self.url = url
        self.status = status
        if hint is None:
            hint = {
                401: "the index needs credentials: put them in the URL or in ~/.netrc",
                403: "the index refused access: check the credentials and the URL",
                404: "nothing at that address: check the index URL (fitwheel never falls back "
                "to another index)",
            }.get(status, "the server failed; try again later")
        subject = f" ({what})" if what else ""
        super().__init__(f"HTTP {status} from {redact(url)}{subject}: {hint}.")


class UnreachableError(NetworkError):
    """No answer: DNS failure, refused connection, TLS failure or time-out after the retries."""

    def __init__(self, url: str, reason: str, message: str | None = None) -> None:
        self.url = url
        #: why, in a few words (the message adds the advice)
        self.reason = reason
        super().__init__(
            message
            or f"could not reach {redact(url)}: {reason}. Check the URL, the network and the "
            "proxy settings, or use --no-index with --find-links for an offline install."
        )


class TimedOutError(UnreachableError):
    """The server did not answer, or sent its answer too slowly, within the time limits."""

    def __init__(self, url: str, detail: str, attempts: int) -> None:
        tries = "once" if attempts == 1 else f"{attempts} times"
        super().__init__(
            url,
            f"timed out: {detail} (tried {tries})",
            f"{redact(url)} timed out: {detail} (tried {tries}). Check the network and the "
            "proxy settings, or allow more time with --timeout SECONDS.",
        )


class TooSlowError(TimedOutError):
    """The answer came, but more slowly than the minimum throughput allows."""

    def __init__(self, url: str, detail: str, attempts: int) -> None:
        tries = "once" if attempts == 1 else f"{attempts} times"
        UnreachableError.__init__(
            self,
            url,
            f"{detail}; too slow (tried {tries})",
            f"{redact(url)}: {detail}; fitwheel stopped waiting for it (tried {tries}). The "
            "server or the network is too slow: check the network and the proxy settings, or "
            "use another index or mirror.",
        )


class BadResponseError(NetworkError):
    """An answer fitwheel refuses to read: too large, or in an encoding it did not ask for."""

    def __init__(self, url: str, problem: str) -> None:
        self.url = url
        super().__init__(f"{redact(url)}: {problem}.")


class LocalWriteError(InstallationError):
    """Writing a download to the local disk failed: not a network problem."""

    def __init__(self, path: str, url: str, exc: OSError) -> None:
        self.path = path
        self.url = url
        why = exc.strerror or str(exc)
        where = ""
        if path:
            from fitwheel.fs import mount_of

            point, kind = mount_of(path)
            where = f" (on the {kind} filesystem mounted at {point})"
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            from fitwheel.fs import CACHE_FULL_HINT

            hint = CACHE_FULL_HINT
        elif exc.errno == errno.EFBIG:
            hint = (
                "the file is larger than that filesystem or a limit (ulimit -f) allows: point "
                "--cache-dir at another filesystem, or raise the limit"
            )
        else:
            hint = "check that folder's permissions and filesystem"
        super().__init__(
            f"cannot write {path or 'the download'}{where} while downloading {redact(url)}: "
            f"{why} (errno {exc.errno}): {hint}."
        )


class Response(Frozen):
    __slots__ = ("body", "from_cache", "headers", "status", "url")
    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    from_cache: bool

    def __init__(
        self,
        url: str,
        status: int,
        headers: Mapping[str, str],
        body: bytes,
        from_cache: bool = False,
    ) -> None:
        _set = object.__setattr__
        _set(self, "url", url)
        _set(self, "status", status)
        _set(self, "headers", headers)
        _set(self, "body", body)
        _set(self, "from_cache", from_cache)

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class _Retry(Exception):
    """A failed attempt that another attempt may fix."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(detail)
        self.kind = kind
        self.detail = detail


class Session:
    """Pooled HTTP(S) with retries on 5xx and connection failures, exponential back-off,
    time limits, size limits, credentials (from URLs and netrc) and an optional page cache.

    ``retries`` is pip's ``--retries``: a request is made at most ``retries + 1`` times.
    ``timeout`` is pip's ``--timeout``, applied as :class:`Deadline` says, with the minimum
    throughput ``min_rate`` (bytes a second) over every ``rate_window`` seconds of waiting for a
    body. An answer too slow for that is not asked for again: it would cost another window."""

    __slots__ = (
        "_credentials",
        "_failed",
        "_lock",
        "_pool",
        "_proxies",
        "_proxy_pools",
        "_tls",
        "backoff",
        "cache",
        "cafile",
        "env",
        "max_file_bytes",
        "max_page_bytes",
        "max_retry_after",
        "min_rate",
        "rate_window",
        "reads",
        "retries",
        "revalidate",
        "timeout",
        "trusted_hosts",
    )

    def __init__(
        self,
        retries: int = DEFAULT_RETRIES,
        backoff: float = 0.25,
        timeout: float = DEFAULT_TIMEOUT,
        cache: HttpCache | None = None,
        env: Mapping[str, str] | None = None,
        cafile: str | None = None,
        trusted_hosts: frozenset[str] = frozenset(),
        *,
        max_retry_after: float = MAX_RETRY_AFTER,
        max_page_bytes: int = MAX_PAGE_BYTES,
        max_file_bytes: int = MAX_FILE_BYTES,
        min_rate: float = MIN_RATE,
        rate_window: float = RATE_WINDOW,
    ) -> None:
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.cache = cache
        #: the longest ``Retry-After`` waited for; a longer one fails at once, naming it
        self.max_retry_after = max_retry_after
        #: the most a page, metadata or variants file may be (decoded, when it is encoded)
        self.max_page_bytes = max_page_bytes
        #: the most a downloaded file may be
        self.max_file_bytes = max_file_bytes
        #: a body must bring ``min_rate`` bytes a second over every ``rate_window`` seconds
        #: spent waiting on the socket
        self.min_rate = min_rate
        self.rate_window = rate_window
        # a snapshot: later changes to os.environ do not reach a session already made
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        #: a CA bundle to trust (None: the system store, or PIP_CERT / SSL_CERT_FILE)
        self.cafile = cafile
        #: pip's ``trusted-host``: hosts (``host`` or ``host:port``) whose HTTPS certificate
        #: is not checked
        self.trusted_hosts = trusted_hosts
        self._credentials: dict[str, tuple[str, str]] = {}
        self._pool: Any = None
        self._proxy_pools: dict[str, Any] = {}
        self._proxies = proxies(env)
        self._tls: ssl.SSLContext | None = None
        # an RLock: building a proxy pool asks for the TLS context under the same lock
        self._lock = threading.RLock()
        #: URL -> the error a GET of it ended with: asked again, it fails the same way at once
        self._failed: dict[str, NetworkError] = {}
        #: when a list: every URL whose answer is not content-addressed, as it is asked for
        #: (None for a read no cache entry can stand for: a range, a HEAD, a GET past the
        #: cache), and the absolute path of every local file or folder read
        #: (:meth:`note_local`), for :mod:`fitwheel.install.remembered`
        self.reads: list[str | None] | None = None
        #: ask the server again for every cached page, however fresh (``--refresh``)
        self.revalidate = False

    def note_local(self, path: str | os.PathLike[str]) -> None:
        """A local file or folder a resolution read (a ``file://`` index's folder, a find-links
        folder or file), as its absolute path among :attr:`reads`: a remembered install checks
        its state (:func:`fitwheel.fs.location_state`) as it checks a page's freshness."""
        if self.reads is not None:
            self.reads.append(os.path.abspath(path))

    def quick(self, timeout: float = 10.0) -> Session:
        """A session like this one (credentials, trust, cache) that does not retry and waits
        at most ``timeout`` seconds: for requests whose failure only costs advice."""
        other = Session(
            retries=0,
            backoff=self.backoff,
            timeout=min(self.timeout, timeout),
            cache=self.cache,
            env=self.env,
            cafile=self.cafile,
            trusted_hosts=self.trusted_hosts,
            max_retry_after=self.max_retry_after,
            max_page_bytes=self.max_page_bytes,
            max_file_bytes=self.max_file_bytes,
            min_rate=self.min_rate,
            rate_window=self.rate_window,
        )
        other._credentials = self._credentials
        other.reads = self.reads
        other.revalidate = self.revalidate
        return other

    def add_credentials(self, url: str) -> str:
        """Remember the user info of ``url`` for its host; return the URL without it."""
        clean, creds = split_credentials(url)
        if creds is not None:
            self._credentials[netloc(clean)] = creds
        return clean

    def _tls_context(self) -> ssl.SSLContext:
        """The one TLS context of this session (built on first use: it costs milliseconds)."""
        with self._lock:
            if self._tls is None:
                self._tls = ssl_context(self.env, self.cafile)
            return self._tls

    def _pool_for(self, url: str) -> urllib3.PoolManager:
        parts = urllib.parse.urlsplit(url)
        proxy = self._proxies.get(parts.scheme)
        host = parts.hostname or ""
        # the loopback host never goes through a proxy, as before no_proxy is consulted
        if proxy and host not in _LOOPBACK and not bypassed(host, self._proxies):
            with self._lock:
                if proxy not in self._proxy_pools:
                    self._proxy_pools[proxy] = pool_manager(
                        self._tls_context, self.trusted_hosts, proxy
                    )
                return self._proxy_pools[proxy]  # type: ignore[no-any-return]
        with self._lock:
            if self._pool is None:
                self._pool = pool_manager(self._tls_context, self.trusted_hosts)
            return self._pool  # type: ignore[no-any-return]

    def _auth_header(self, url: str) -> dict[str, str]:
        creds = self._credentials.get(netloc(url))
        if creds is None:
            creds = netrc_credentials(urllib.parse.urlsplit(url).hostname or "", self.env)
        if creds is None:
            return {}
        token = base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
        return {"Authorization": f"Basic {token}"}

    def _exchange(
        self,
        method: str,
        url: str,
        headers: Callable[[], Mapping[str, str]],
        read: Callable[[urllib3.BaseHTTPResponse, Deadline], _T],
        *,
        what: str = "",
        page: bool = False,
    ) -> _T:
        """Make the request, at most ``retries + 1`` times, and hand the answer to ``read``.
        Connection failures, time-outs, 429/5xx answers and a body cut short (``read`` raising
        :class:`_Retry`) are tried again after a back-off; every other failure (a TLS failure,
        an answer under the minimum throughput) is final."""
        import urllib3
        from urllib3.exceptions import HTTPError as Urllib3Error
        from urllib3.exceptions import MaxRetryError

        # urllib3 only follows redirects: every retry is decided here, so that the count is
        # exact and every attempt has its own deadline
        retry = urllib3.Retry(
            total=None,
            connect=0,
            read=0,
            status=0,
            other=0,
            redirect=10,
            raise_on_status=False,
            respect_retry_after_header=False,
        )
        limits = urllib3.Timeout(connect=self.timeout, read=self.timeout)
        attempts = max(0, self.retries) + 1
        failure = _Retry("unreachable", "no answer")
        wait = 0.0
        attempt = 0
        for attempt in range(attempts):
            if attempt:
                time.sleep(wait)
            wait = min(self.backoff * (2 ** (attempt)), 10.0)
            deadline = Deadline(
                self.timeout,
                self.timeout * PAGE_TIME_FACTOR if page else None,
                min_rate=self.min_rate,
                window=self.rate_window,
            )
            ATTEMPT.deadline = deadline
            resp = None
            done = False
            try:
                all_headers = {
                    "User-Agent": USER_AGENT,
                    "Accept-Encoding": "identity",
                    **self._auth_header(url),
                    **headers(),
                }
                try:
                    resp = self._pool_for(url).request(
                        method,
                        url,
                        headers=all_headers,
                        retries=retry,
                        timeout=limits,
                        preload_content=False,
                        decode_content=False,
                        redirect=True,
                    )
                except MaxRetryError as exc:
                    raise _attempt_failure(exc.reason, deadline) from exc
                except (Urllib3Error, OSError) as exc:
                    raise _attempt_failure(exc, deadline) from exc
                if resp.status in _RETRY_STATUSES:
                    asked = _retry_after(resp.headers.get("retry-after"))
                    if asked is not None and asked > self.max_retry_after:
                        raise HttpError(
                            url,
                            resp.status,
                            what,
                            f"the server asks to be tried again in {asked:g} s, longer than "
                            f"fitwheel waits ({self.max_retry_after:g} s); try again later",
                        )
                    if asked is not None:
                        wait = max(wait, asked)
                    raise _Retry("status", str(resp.status))
                result = read(resp, deadline)
                done = True
                return result
            except _Retry as exc:
                failure = exc
                if exc.kind in ("tls", "slow"):
                    break
            finally:
                ATTEMPT.deadline = None
                WATCHDOG.forget(deadline)
                if resp is not None:
                    if not done or not resp.closed:
                        # an unread body (an error page, a whole file where a range was asked
                        # for, a cut-off answer) is not drained: the connection is closed
                        # instead of going back to the pool
                        resp.close()
                    resp.release_conn()
        if failure.kind == "status":
            raise HttpError(url, int(failure.detail), what)
        if failure.kind == "timeout":
            raise TimedOutError(url, failure.detail, attempt + 1)
        if failure.kind == "slow":
            raise TooSlowError(url, failure.detail, attempt + 1)
        raise UnreachableError(url, failure.detail)

    def _chunks(
        self, resp: urllib3.BaseHTTPResponse, deadline: Deadline, limit: int, url: str
    ) -> Iterator[bytes]:
        """The body of ``resp`` as it arrives, as sent (never decoded), at most ``limit`` bytes;
        a body cut short or too slow raises :class:`_Retry`. Each read is timed for the
        throughput rule; the time the caller takes with a chunk is not."""
        from urllib3.exceptions import HTTPError as Urllib3Error

        length = resp.headers.get("content-length", "")
        if length.isdigit() and int(length) > limit:
            raise BadResponseError(url, _too_large(int(length), limit))
        WATCHDOG.in_body(deadline)
        total = 0
        while True:
            if deadline.too_slow():
                raise _Retry("slow", deadline.detail("slow"))
            deadline.start_read()
            try:
                chunk = resp.read1(_CHUNK, decode_content=False)
            except (Urllib3Error, OSError) as exc:
                raise _attempt_failure(exc, deadline) from exc
            deadline.end_read(len(chunk))
            if not chunk:
                break
            total += len(chunk)
            if total > limit:
                raise BadResponseError(url, _too_large(total, limit))
            yield chunk
        if deadline.expired:
            # a body without a length ends where the connection does: the watchdog's doing
            raise _expired(deadline)

    def get(
        self,
        url: str,
        *,
        accept: str | None = None,
        what: str = "",
        use_cache: bool = True,
        allow_404: bool = False,
        hashes: Mapping[str, str] | None = None,
    ) -> Response | None:
        """GET a page or a small file (at most ``max_page_bytes``); errors raise. With
        ``allow_404`` a 404 returns None instead. A URL that failed once in this session fails
        again at once with the same error (the resolver may ask for a page twice).

        ``hashes`` (algorithm -> hex digest, as an index publishes them) make the answer
        content-addressed: a cached body with that hash is used without asking the server,
        however old, and a body from the server without it is refused."""
        failed = self._failed.get(url)
        if failed is not None:
            raise failed
        headers: dict[str, str] = {}
        if accept:
            headers["Accept"] = accept
        published = Hashes.of(hashes)
        # refused before any request when the index offers no hash fitwheel checks
        algorithm = published.choose(redact(url), what)
        if algorithm is None and self.reads is not None:
            self.reads.append(url if use_cache and self.cache is not None else None)
        cached = self.cache.load(url) if (self.cache and use_cache) else None
        if cached is not None and algorithm is not None:
            meta, body = cached
            if _cached_matches(published, algorithm, meta.get("sha256"), body):
                hdrs = {"content-type": meta.get("content_type", "")}
                return Response(url, 200, hdrs, body, from_cache=True)
            cached = None  # not the published content: fetch it afresh, unconditionally
        if cached is not None:
            meta, body = cached
            if not self.revalidate and float(meta.get("expires_at", 0)) > time.time():
                hdrs = {"content-type": meta.get("content_type", "")}
                return Response(url, 200, hdrs, body, from_cache=True)
            if meta.get("etag"):
                headers["If-None-Match"] = str(meta["etag"])
            if meta.get("last_modified"):
                headers["If-Modified-Since"] = str(meta["last_modified"])

        def read(resp: urllib3.BaseHTTPResponse, deadline: Deadline) -> Response | None:
            resp_headers = {k.lower(): v for k, v in resp.headers.items()}
            if resp.status == 304 and cached is not None:
                meta, body = cached
                hdrs = {"content-type": meta.get("content_type", ""), **resp_headers}
                if self.cache is not None:
                    self.cache.store(url, hdrs, body, previous=meta)
                return Response(url, 200, hdrs, body, from_cache=True)
            if resp.status == 404 and allow_404:
                return None
            if resp.status >= 400:
                raise HttpError(url, resp.status, what)
            raw = b"".join(self._chunks(resp, deadline, self.max_page_bytes, url))
            body = _decode(raw, resp_headers.get("content-encoding", ""), self.max_page_bytes, url)
            final = resp.geturl() or url
            # urllib3 reports the final location as a bare path unless a redirect went elsewhere
            return Response(urllib.parse.urljoin(url, final), resp.status, resp_headers, body)

        try:
            found = self._exchange("GET", url, lambda: headers, read, what=what, page=True)
        except NetworkError as exc:
            self._failed[url] = exc
            raise
        if found is None or found.from_cache:
            return found
        verify(found.body, published, redact(url), what)
        if self.cache is not None and use_cache:
            self.cache.store(url, found.headers, found.body)
        return found

    def get_range(self, url: str, start: int, end: int) -> bytes | None:
        """Bytes ``start..end`` (inclusive) of ``url``, or None if the server ignores ranges.
        Never more than the range is read, whatever the server sends (a server that ignores
        the range and sends a whole multi-gigabyte wheel is cut off)."""
        if self.reads is not None:
            self.reads.append(None)
        wanted = end - start + 1

        def read(resp: urllib3.BaseHTTPResponse, deadline: Deadline) -> bytes | None:
            encoding = resp.headers.get("content-encoding", "").strip().lower()
            if resp.status == 206 and encoding in ("", "identity"):
                data = bytearray()
                for chunk in self._chunks(resp, deadline, wanted, url):
                    data += chunk
                return bytes(data)
            if resp.status >= 400 and resp.status != 416:
                raise HttpError(url, resp.status)
            # a whole file (or an encoded range, which means nothing): the caller downloads
            # the file instead; this body stays unread
            return None

        try:
            return self._exchange("GET", url, lambda: {"Range": f"bytes={start}-{end}"}, read)
        except BadResponseError as exc:
            raise HttpError(url, 206, f"more than the {wanted} bytes asked for") from exc

    def head(self, url: str) -> Mapping[str, str]:
        if self.reads is not None:
            self.reads.append(None)

        def read(resp: urllib3.BaseHTTPResponse, _deadline: Deadline) -> Mapping[str, str]:
            if resp.status >= 400:
                raise HttpError(url, resp.status)
            return {k.lower(): v for k, v in resp.headers.items()}

        return self._exchange("HEAD", url, dict, read)

    def download(
        self,
        url: str,
        handle: BinaryIO,
        *,
        start: int = 0,
        what: str = "",
        progress: Callable[[int], None] | None = None,
    ) -> bool:
        """Write the body of ``url``, as sent (never decoded: the hash is of those bytes), into
        ``handle``; with ``start`` > 0, ask only for the rest (a resumed download). Returns
        whether the server resumed; if it sent the whole file instead, ``handle`` is rewritten
        from the beginning. An attempt cut short is resumed by the next one. A write error is
        a :class:`LocalWriteError` naming ``handle.name``."""
        offset = start
        resumed = False
        restart = False

        def read(resp: urllib3.BaseHTTPResponse, deadline: Deadline) -> bool:
            nonlocal offset, resumed, restart
            if resp.status == 416 and offset > 0:
                restart = True
                return False
            if resp.status >= 400:
                raise HttpError(url, resp.status, what)
            if offset > 0 and resp.status == 206:
                resumed = True
                _write(handle, url, lambda: handle.seek(offset))
            else:
                offset = 0
                _write(handle, url, lambda: (handle.seek(0), handle.truncate()))
            for chunk in self._chunks(resp, deadline, self.max_file_bytes - offset, url):
                _write(handle, url, functools.partial(handle.write, chunk))
                offset += len(chunk)
                if progress is not None:
                    progress(len(chunk))
            return resumed

        def headers() -> dict[str, str]:
            return {"Range": f"bytes={offset}-"} if offset > 0 else {}

        result = self._exchange("GET", url, headers, read, what=what)
        if restart:
            return self.download(url, handle, start=0, what=what, progress=progress)
        return result


def _write(handle: BinaryIO, url: str, action: Callable[[], object]) -> None:
    try:
        action()
    except OSError as exc:
        raise LocalWriteError(str(getattr(handle, "name", "")), url, exc) from exc


def _attempt_failure(exc: BaseException | None, deadline: Deadline) -> _Retry:
    """What one failed attempt was: a time-out, an answer too slow or a TLS failure (neither
    retried) or no answer."""
    from urllib3.exceptions import NewConnectionError, SSLError
    from urllib3.exceptions import TimeoutError as Urllib3Timeout

    if deadline.expired:
        return _expired(deadline)
    # a refused connection is a NewConnectionError, which urllib3 derives from its time-out
    if isinstance(exc, (Urllib3Timeout, TimeoutError)) and not isinstance(exc, NewConnectionError):
        return _Retry("timeout", deadline.detail())
    import ssl

    if isinstance(exc, (SSLError, ssl.SSLError)) and "EOF" not in str(exc):
        return _Retry("tls", _reason(exc))
    return _Retry("unreachable", _reason(exc))


def _expired(deadline: Deadline) -> _Retry:
    """The failure of an attempt the watchdog ended."""
    return _Retry("slow" if deadline.why == "slow" else "timeout", deadline.detail())


def _retry_after(value: str | None) -> float | None:
    """The seconds a ``Retry-After`` header asks for (a number or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    import email.utils

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _too_large(size: int, limit: int) -> str:
    return f"the answer is {size} bytes or more, over the limit of {limit} bytes; refusing it"


def _decode(body: bytes, encoding: str, limit: int, url: str) -> bytes:
    """A page's body as sent, decoded when the server compressed it anyway (gzip, deflate),
    never past ``limit`` bytes; any other encoding is refused."""
    name = encoding.strip().lower()
    if name in ("", "identity"):
        return body
    if name not in ("gzip", "x-gzip", "deflate"):
        raise BadResponseError(
            url,
            f"the server sent it with Content-Encoding {encoding!r}, which fitwheel did not ask "
            "for (it sends Accept-Encoding: identity) and does not read; fix the server",
        )
    import zlib

    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS if "gzip" in name else zlib.MAX_WBITS)
    try:
        out = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise BadResponseError(url, f"the {name}-encoded answer cannot be decoded: {exc}") from exc
    if len(out) > limit:
        raise BadResponseError(
            url,
            f"the {name}-encoded answer (sent although fitwheel asks for no encoding) inflates "
            f"past the limit of {limit} bytes; refusing it",
        )
    return out


def _cached_matches(published: Hashes, algorithm: str, sha256: object, body: bytes) -> bool:
    """Whether a cached ``body`` is the published file (the entry's sha256 saves hashing)."""
    if algorithm == "sha256" and isinstance(sha256, str):
        return sha256 in published.allowed["sha256"]
    try:
        verify(body, published, "")
    except HashMismatchError:
        return False
    return True


#: a urllib3 connection's repr at the start of its errors' text (``Watched(host='h', port=80): ``
#: or ``<urllib3.connection.HTTPConnection object at 0x7f...>: ``): never shown
_CONNECTION_REPR = re.compile(r"<?[\w.]+(?:\(host=[^)]*\)| object)(?: at 0x[0-9a-fA-F]+)?>?: ")


def _reason(exc: BaseException | None) -> str:
    """Why a connection failed, in words that name the host plainly."""
    if exc is None:
        return "no answer"
    text = str(exc)
    for marker in ("Failed to establish a new connection: ", "Caused by "):
        if marker in text:
            text = text.split(marker, 1)[1]
    text = _CONNECTION_REPR.sub("", text).strip("'\" ")
    # the wrappers' parentheses, without breaking a pair the reason itself holds
    while text[:1] == "(" and text.count("(") > text.count(")"):
        text = text[1:].strip("'\" ")
    while text[-1:] == ")" and text.count(")") > text.count("("):
        text = text[:-1].strip("'\" ")
    return text or type(exc).__name__
