"""One HTTP session for every index request: pooled connections, retries, TLS, proxies, time-outs.

Everything that reaches the network goes through :class:`Session`, so that retry policy, trust
store, authentication (:mod:`fitwheel.index.auth`), caching (:mod:`fitwheel.index.httpcache`)
and hash checks (:mod:`fitwheel.integrity`) are decided once. Failures become
:class:`HttpError` (a status from the server) or :class:`UnreachableError` (no answer at all),
both naming the URL.
"""

from __future__ import annotations

import base64
import os
import ssl
import threading
import time
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO

from fitwheel import __version__
from fitwheel.errors import FitwheelError, NetworkError
from fitwheel.index.auth import netloc, netrc_credentials, redact, split_credentials
from fitwheel.index.httpcache import HttpCache
from fitwheel.integrity import Hashes, HashMismatchError, verify

if TYPE_CHECKING:
    import urllib3

USER_AGENT = f"fitwheel/{__version__}"
_RETRY_STATUSES = (500, 502, 503, 504)
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})


class HttpError(NetworkError):
    """The server answered with an error status."""

    def __init__(self, url: str, status: int, what: str = "") -> None:
        self.url = url
        self.status = status
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

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        super().__init__(
            f"could not reach {redact(url)}: {reason}. Check the URL, the network and the "
            "proxy settings, or use --no-index with --find-links for an offline install."
        )


def ssl_context(env: Mapping[str, str], cafile: str | None = None) -> ssl.SSLContext:
    """The system trust store, or the bundle that ``cafile`` (pip's ``cert`` setting),
    ``PIP_CERT`` or ``SSL_CERT_FILE`` names."""
    cafile = cafile or env.get("PIP_CERT") or env.get("SSL_CERT_FILE") or None
    capath = env.get("SSL_CERT_DIR") or None
    if cafile and not os.path.exists(cafile):
        raise FitwheelError(
            f"the certificate bundle {cafile} does not exist: fix --cert, pip's 'cert' setting, "
            "PIP_CERT or SSL_CERT_FILE."
        )
    context = ssl.create_default_context(cafile=cafile, capath=capath)
    if not cafile and not capath:
        context.load_default_certs()
    return context


@dataclass(frozen=True, slots=True)
class Response:
    url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    from_cache: bool = False

    @property
    def content_type(self) -> str:
        return self.headers.get("content-type", "").split(";", 1)[0].strip().lower()


class Session:
    """Pooled HTTP(S) with retries on 5xx and connection failures, exponential back-off,
    time-outs, credentials (from URLs and netrc) and an optional page cache."""

    __slots__ = (
        "_credentials",
        "_lock",
        "_pool",
        "_proxies",
        "_proxy_pools",
        "_tls",
        "backoff",
        "cache",
        "cafile",
        "env",
        "retries",
        "timeout",
        "trusted_hosts",
    )

    def __init__(
        self,
        retries: int = 3,
        backoff: float = 0.25,
        timeout: float = 30.0,
        cache: HttpCache | None = None,
        env: Mapping[str, str] | None = None,
        cafile: str | None = None,
        trusted_hosts: frozenset[str] = frozenset(),
    ) -> None:
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.cache = cache
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
        self._proxies = _proxies(env)
        self._tls: ssl.SSLContext | None = None
        # an RLock: building a proxy pool asks for the TLS context under the same lock
        self._lock = threading.RLock()

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
        )
        other._credentials = self._credentials
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
        import urllib3

        parts = urllib.parse.urlsplit(url)
        proxy = self._proxies.get(parts.scheme)
        host = parts.hostname or ""
        # the loopback host never goes through a proxy, as before no_proxy is consulted
        if proxy and host not in _LOOPBACK and not _bypassed(host, self._proxies):
            with self._lock:
                if proxy not in self._proxy_pools:
                    self._proxy_pools[proxy] = urllib3.ProxyManager(
                        proxy, ssl_context=self._tls_context(), num_pools=8, maxsize=8
                    )
                return self._proxy_pools[proxy]  # type: ignore[no-any-return]
        with self._lock:
            if self._pool is None:
                self._pool = _pool_manager(self._tls_context, self.trusted_hosts)
            return self._pool  # type: ignore[no-any-return]

    def _auth_header(self, url: str) -> dict[str, str]:
        creds = self._credentials.get(netloc(url))
        if creds is None:
            creds = netrc_credentials(urllib.parse.urlsplit(url).hostname or "", self.env)
        if creds is None:
            return {}
        token = base64.b64encode(f"{creds[0]}:{creds[1]}".encode()).decode()
        return {"Authorization": f"Basic {token}"}

    def _request(
        self, method: str, url: str, headers: Mapping[str, str], *, stream: bool = False
    ) -> urllib3.BaseHTTPResponse:
        import urllib3
        from urllib3.exceptions import HTTPError as Urllib3Error
        from urllib3.exceptions import MaxRetryError

        retry = urllib3.Retry(
            total=self.retries,
            connect=self.retries,
            read=self.retries,
            status=self.retries,
            backoff_factor=self.backoff,
            status_forcelist=_RETRY_STATUSES,
            allowed_methods=frozenset({"GET", "HEAD"}),
            raise_on_status=False,
            respect_retry_after_header=True,
        )
        all_headers = {"User-Agent": USER_AGENT, **self._auth_header(url), **headers}
        try:
            return self._pool_for(url).request(
                method,
                url,
                headers=all_headers,
                retries=retry,
                timeout=urllib3.Timeout(connect=self.timeout, read=self.timeout),
                preload_content=not stream,
                redirect=True,
            )
        except MaxRetryError as exc:
            raise UnreachableError(url, _reason(exc.reason)) from exc
        except (Urllib3Error, OSError) as exc:
            raise UnreachableError(url, _reason(exc)) from exc

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
        """GET ``url``; errors raise. With ``allow_404`` a 404 returns None instead.

        ``hashes`` (algorithm -> hex digest, as an index publishes them) make the answer
        content-addressed: a cached body with that hash is used without asking the server,
        however old, and a body from the server without it is refused."""
        headers: dict[str, str] = {}
        if accept:
            headers["Accept"] = accept
        published = Hashes.of(hashes)
        # refused before any request when the index offers no hash fitwheel checks
        algorithm = published.choose(redact(url), what)
        cached = self.cache.load(url) if (self.cache and use_cache) else None
        if cached is not None and algorithm is not None:
            meta, body = cached
            if _cached_matches(published, algorithm, meta.get("sha256"), body):
                hdrs = {"content-type": meta.get("content_type", "")}
                return Response(url, 200, hdrs, body, from_cache=True)
            cached = None  # not the published content: fetch it afresh, unconditionally
        if cached is not None:
            meta, body = cached
            if float(meta.get("expires_at", 0)) > time.time():
                hdrs = {"content-type": meta.get("content_type", "")}
                return Response(url, 200, hdrs, body, from_cache=True)
            if meta.get("etag"):
                headers["If-None-Match"] = str(meta["etag"])
            if meta.get("last_modified"):
                headers["If-Modified-Since"] = str(meta["last_modified"])
        resp = self._request("GET", url, headers)
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
        body = resp.data
        verify(body, published, redact(url), what)
        if self.cache is not None and use_cache:
            self.cache.store(url, resp_headers, body)
        final = resp.geturl() or url
        # urllib3 reports the final location as a bare path unless a redirect went elsewhere
        return Response(urllib.parse.urljoin(url, final), resp.status, resp_headers, body)

    def get_range(self, url: str, start: int, end: int) -> bytes | None:
        """Bytes ``start..end`` (inclusive) of ``url``, or None if the server ignores ranges.
        Never more than the range is read, whatever the server sends (a server that ignores
        the range and sends a whole multi-gigabyte wheel is cut off)."""
        resp = self._request("GET", url, {"Range": f"bytes={start}-{end}"}, stream=True)
        complete = False
        try:
            if resp.status == 206:
                wanted = end - start + 1
                data = resp.read(wanted + 1)
                if len(data) > wanted:
                    raise HttpError(url, 206, f"more than the {wanted} bytes asked for")
                complete = True
                return bytes(data)
            if resp.status >= 400 and resp.status != 416:
                raise HttpError(url, resp.status)
            return None
        finally:
            if not complete:
                # an unread body (a whole wheel, an error page) is not drained: the connection
                # is closed instead of going back to the pool
                resp.close()
            resp.release_conn()

    def head(self, url: str) -> Mapping[str, str]:
        resp = self._request("HEAD", url, {})
        if resp.status >= 400:
            raise HttpError(url, resp.status)
        return {k.lower(): v for k, v in resp.headers.items()}

    def download(
        self,
        url: str,
        handle: BinaryIO,
        *,
        start: int = 0,
        what: str = "",
        progress: Callable[[int], None] | None = None,
    ) -> bool:
        """Write the body of ``url`` into ``handle``; with ``start`` > 0, ask only for the rest
        (a resumed download). Returns whether the server resumed; if it sent the whole file
        instead, ``handle`` is rewritten from the beginning."""
        headers = {"Range": f"bytes={start}-"} if start > 0 else {}
        resp = self._request("GET", url, headers, stream=True)
        try:
            if resp.status == 416 and start > 0:
                return self.download(url, handle, start=0, what=what, progress=progress)
            if resp.status >= 400:
                raise HttpError(url, resp.status, what)
            resumed = start > 0 and resp.status == 206
            if resumed:
                handle.seek(start)
            else:
                handle.seek(0)
                handle.truncate()
            from urllib3.exceptions import HTTPError as Urllib3Error

            try:
                for chunk in resp.stream(1 << 16):
                    handle.write(chunk)
                    if progress is not None:
                        progress(len(chunk))
            except (Urllib3Error, OSError) as exc:
                raise UnreachableError(url, _reason(exc)) from exc
            return resumed
        finally:
            resp.release_conn()


def _pool_manager(
    tls: Callable[[], ssl.SSLContext], trusted: frozenset[str] = frozenset()
) -> urllib3.PoolManager:
    """A pool manager whose every https pool, however it is reached (first request, after
    http ones, through a redirect), uses the session's TLS context, built on first need; a
    host in ``trusted`` (pip's ``trusted-host``: ``host`` or ``host:port``) is not checked."""
    import urllib3

    if trusted:
        import warnings

        # the user asked for these hosts not to be checked: no warning on every request
        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)

    class _Pools(urllib3.PoolManager):
        def _new_pool(
            self,
            scheme: str,
            host: str,
            port: int,
            request_context: dict[str, Any] | None = None,
        ) -> urllib3.HTTPConnectionPool:
            if scheme == "https":
                context = dict(request_context or self.connection_pool_kw)
                if host in trusted or f"{host}:{port}" in trusted:
                    unchecked = ssl.create_default_context()
                    unchecked.check_hostname = False
                    unchecked.verify_mode = ssl.CERT_NONE
                    context["ssl_context"] = unchecked
                    context["cert_reqs"] = "CERT_NONE"
                    context["assert_hostname"] = False
                else:
                    context["ssl_context"] = tls()
                request_context = context
            return super()._new_pool(scheme, host, port, request_context)

    return _Pools(num_pools=16, maxsize=16, headers={"User-Agent": USER_AGENT})


def _cached_matches(published: Hashes, algorithm: str, sha256: object, body: bytes) -> bool:
    """Whether a cached ``body`` is the published file (the entry's sha256 saves hashing)."""
    if algorithm == "sha256" and isinstance(sha256, str):
        return sha256 in published.allowed["sha256"]
    try:
        verify(body, published, "")
    except HashMismatchError:
        return False
    return True


def _proxies(env: Mapping[str, str] | None) -> dict[str, str]:
    """The proxy settings of ``env`` (None: the process environment, through
    :func:`urllib.request.getproxies_environment`), read the way that function reads them
    (``{scheme}_proxy``, lower case winning; ``no`` for the bypass list), so that
    :func:`urllib.request.proxy_bypass_environment` can judge them."""
    if env is None:
        if not any(name.lower().endswith("_proxy") for name in os.environ):
            return {}  # the usual case, without importing urllib.request (and http.client)
        import urllib.request

        return urllib.request.getproxies_environment()
    out: dict[str, str] = {}
    for name in sorted(env, key=lambda n: n.islower()):  # lower case last: it wins
        value = env[name]
        if value and name.lower().endswith("_proxy"):
            out[name.lower()[: -len("_proxy")]] = value
    return out


def _bypassed(host: str, proxies: Mapping[str, str]) -> bool:
    """Whether ``no_proxy`` (in ``proxies``, as :func:`_proxies` reads it) exempts ``host``."""
    import urllib.request

    bypass: bool = urllib.request.proxy_bypass_environment(host, proxies)  # type: ignore[attr-defined]
    return bypass


def _reason(exc: BaseException | None) -> str:
    if exc is None:
        return "no answer"
    text = str(exc)
    for marker in ("Failed to establish a new connection: ", "Caused by "):
        if marker in text:
            text = text.split(marker, 1)[1]
    return text.strip("()'\" ") or type(exc).__name__
