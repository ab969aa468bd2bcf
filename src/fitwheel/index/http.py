"""One HTTP session for every index request: pooled connections, retries, TLS, credentials, cache.

Everything that reaches the network goes through :class:`Session`, so that retry policy, trust
store, authentication and caching are decided once. Failures become :class:`HttpError` (a status
from the server) or :class:`UnreachableError` (no answer at all), both naming the URL.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import ssl
import time
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from fitwheel import __version__
from fitwheel.errors import FitwheelError
from fitwheel.variants.frozen import Frozen

if TYPE_CHECKING:
    import urllib3

USER_AGENT = f"fitwheel/{__version__}"
_RETRY_STATUSES = (500, 502, 503, 504)


class HttpError(FitwheelError):
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


class HashMismatchError(FitwheelError):
    def __init__(self, url: str, what: str = "") -> None:
        super().__init__(
            f"{what + ' ' if what else ''}{redact(url)} does not have the hash its index "
            "publishes, so fitwheel refuses it: the index lists one file and serves another "
            "(tell its maintainer, or try again if it is being updated)."
        )
        self.url = url


class UnreachableError(FitwheelError):
    """No answer: DNS failure, refused connection, TLS failure or time-out after the retries."""

    def __init__(self, url: str, reason: str) -> None:
        self.url = url
        super().__init__(
            f"could not reach {redact(url)}: {reason}. Check the URL, the network and the "
            "proxy settings, or use --no-index with --find-links for an offline install."
        )


def redact(url: str) -> str:
    """``url`` without its password, for messages."""
    parts = urllib.parse.urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:****@{parts.hostname}"
    if parts.port:
        netloc += f":{parts.port}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``url`` without user info, and the ``(user, password)`` it carried (None if none)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url, None
    netloc = parts.hostname or ""
    if parts.port:
        netloc += f":{parts.port}"
    clean = urllib.parse.urlunsplit(parts._replace(netloc=netloc))
    return clean, (
        urllib.parse.unquote(parts.username),
        urllib.parse.unquote(parts.password or ""),
    )


def _netloc(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc.rsplit("@", 1)[-1].lower()


def _netrc_credentials(host: str, env: Mapping[str, str]) -> tuple[str, str] | None:
    path = env.get("NETRC") or os.path.join(os.path.expanduser("~"), ".netrc")
    if not os.path.isfile(path):
        return None
    import netrc

    try:
        entry = netrc.netrc(path).authenticators(host)
    except (OSError, netrc.NetrcParseError):
        return None
    if entry is None:
        return None
    login, _account, password = entry
    return login, password or ""


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


class HttpCache:
    """A small cache of index pages keyed by URL: the body plus ETag / Last-Modified / max-age.

    Entries are revalidated with conditional requests once stale; ``no-store`` answers are not
    kept. Wheels do not go here (the installer has its own content-addressed cache).

    One file per entry (a line of JSON, then the body), written in place: creating files is
    what costs on most filesystems, and the body's sha256 in the JSON line turns a torn or
    half-written entry into a miss."""

    __slots__ = ("_folders", "root")

    def __init__(self, root: Path) -> None:
        self.root = root
        self._folders: set[str] = set()

    def __repr__(self) -> str:
        return f"HttpCache(root={self.root!r})"

    def _path(self, url: str) -> tuple[str, str]:
        key = hashlib.sha256(url.encode()).hexdigest()
        folder = os.path.join(self.root, key[:2])
        return folder, os.path.join(folder, key)

    def load(self, url: str) -> tuple[dict[str, Any], bytes] | None:
        try:
            with open(self._path(url)[1], "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        head, sep, body = data.partition(b"\n")
        try:
            meta = json.loads(head) if sep else None
        except ValueError:
            return None
        if (
            not isinstance(meta, dict)
            or meta.get("url") != url
            or hashlib.sha256(body).hexdigest() != meta.get("sha256")
        ):
            return None
        return meta, body

    def store(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        previous: Mapping[str, Any] | None = None,
    ) -> None:
        """Keep ``body``; ``previous`` (the entry a 304 confirmed) is not written again when
        nothing in it would change."""
        control = _cache_control(headers.get("cache-control", ""))
        if "no-store" in control:
            return
        max_age = 0
        if not {"no-cache", "private"} & control.keys():
            try:
                max_age = int(control.get("max-age", "0"))
            except ValueError:
                max_age = 0
        meta = {
            "url": url,
            "etag": headers.get("etag"),
            "last_modified": headers.get("last-modified"),
            "content_type": headers.get("content-type", ""),
            "expires_at": time.time() + max_age,
            "sha256": hashlib.sha256(body).hexdigest(),
        }
        if previous is not None and max_age == 0:
            same = ("etag", "last_modified", "content_type", "sha256")
            if all(previous.get(k) == meta[k] for k in same):
                return
        folder, path = self._path(url)
        try:
            if folder not in self._folders:
                os.makedirs(folder, exist_ok=True)
                self._folders.add(folder)
            # a new file rather than truncating the old one: ext4 flushes a truncated file
            # to the disk on close
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, json.dumps(meta).encode() + b"\n" + body)
            finally:
                os.close(fd)
        except OSError:
            pass  # a cache that cannot be written only costs speed


def _matches(body: bytes, hashes: Mapping[str, str], known_sha256: object) -> bool:
    """Whether ``body`` has the first of ``hashes`` this Python can compute (no known
    algorithm: True, as nothing can be checked)."""
    for algo, digest in hashes.items():
        if algo == "sha256" and isinstance(known_sha256, str):
            return known_sha256 == digest.lower()
        if algo in hashlib.algorithms_guaranteed:
            return hashlib.new(algo, body).hexdigest() == digest.lower()
    return True


def _cache_control(value: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in value.split(","):
        key, _, val = item.strip().partition("=")
        if key:
            out[key.lower()] = val.strip('"')
    return out


def default_cache_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_cache_dir("fitwheel")) / "http"


class Session:
    """Pooled HTTP(S) with retries on 5xx and connection failures, exponential back-off,
    time-outs, credentials (from URLs and netrc) and an optional page cache."""

    __slots__ = (
        "_credentials",
        "_pool",
        "_proxies",
        "backoff",
        "cache",
        "cafile",
        "env",
        "retries",
        "timeout",
    )

    def __init__(
        self,
        retries: int = 3,
        backoff: float = 0.25,
        timeout: float = 30.0,
        cache: HttpCache | None = None,
        env: Mapping[str, str] | None = None,
        cafile: str | None = None,
    ) -> None:
        self.retries = retries
        self.backoff = backoff
        self.timeout = timeout
        self.cache = cache
        # a snapshot: later changes to os.environ do not reach a session already made
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        #: a CA bundle to trust (None: the system store, or PIP_CERT / SSL_CERT_FILE)
        self.cafile = cafile
        self._credentials: dict[str, tuple[str, str]] = {}
        self._pool: Any = None
        self._proxies: dict[str, Any] = {}

    def add_credentials(self, url: str) -> str:
        """Remember the user info of ``url`` for its host; return the URL without it."""
        clean, creds = split_credentials(url)
        if creds is not None:
            self._credentials[_netloc(clean)] = creds
        return clean

    def _pool_for(self, url: str) -> urllib3.PoolManager:
        import urllib3

        scheme = urllib.parse.urlsplit(url).scheme
        host = urllib.parse.urlsplit(url).hostname or ""
        proxies = _proxies(self.env)
        proxy = proxies.get(scheme)
        if proxy and not _bypass_proxy(host, proxies.get("no", "")):
            if proxy not in self._proxies:
                self._proxies[proxy] = urllib3.ProxyManager(
                    proxy, ssl_context=ssl_context(self.env, self.cafile), num_pools=8, maxsize=8
                )
            return self._proxies[proxy]  # type: ignore[no-any-return]
        if self._pool is None:
            self._pool = urllib3.PoolManager(
                num_pools=16,
                maxsize=16,
                ssl_context=ssl_context(self.env, self.cafile) if scheme == "https" else None,
                headers={"User-Agent": USER_AGENT},
            )
        return self._pool  # type: ignore[no-any-return]

    def _auth_header(self, url: str) -> dict[str, str]:
        host = _netloc(url)
        creds = self._credentials.get(host)
        if creds is None:
            creds = _netrc_credentials(urllib.parse.urlsplit(url).hostname or "", self.env)
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
        cached = self.cache.load(url) if (self.cache and use_cache) else None
        if cached is not None and hashes:
            meta, body = cached
            if _matches(body, hashes, meta.get("sha256")):
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
        if hashes and not _matches(body, hashes, None):
            raise HashMismatchError(url, what)
        if self.cache is not None and use_cache:
            self.cache.store(url, resp_headers, body)
        final = resp.geturl() or url
        # urllib3 reports the final location as a bare path unless a redirect went elsewhere
        return Response(urllib.parse.urljoin(url, final), resp.status, resp_headers, body)

    def get_range(self, url: str, start: int, end: int) -> bytes | None:
        """Bytes ``start..end`` (inclusive) of ``url``, or None if the server ignores ranges."""
        resp = self._request("GET", url, {"Range": f"bytes={start}-{end}"})
        if resp.status == 206:
            return bytes(resp.data)
        if resp.status >= 400 and resp.status != 416:
            raise HttpError(url, resp.status)
        return None

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


def _proxies(env: Mapping[str, str]) -> dict[str, str]:
    """``{scheme}_proxy`` / ``no_proxy`` settings (lower case wins, as curl and pip read them)."""
    out: dict[str, str] = {}
    for key in ("http", "https", "no"):
        value = env.get(f"{key}_proxy") or env.get(f"{key.upper()}_PROXY")
        if value:
            out[key] = value
    return out


def _bypass_proxy(host: str, no_proxy: str) -> bool:
    if host in ("127.0.0.1", "localhost", "::1"):
        return True
    for item in (part.strip().lower() for part in no_proxy.split(",")):
        if item == "*" or (
            item and (host == item.lstrip(".") or host.endswith("." + item.lstrip(".")))
        ):
            return True
    return False


def _reason(exc: BaseException | None) -> str:
    if exc is None:
        return "no answer"
    text = str(exc)
    for marker in ("Failed to establish a new connection: ", "Caused by "):
        if marker in text:
            text = text.split(marker, 1)[1]
    return text.strip("()'\" ") or type(exc).__name__
