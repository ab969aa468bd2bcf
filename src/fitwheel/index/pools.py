"""The connection pools of the HTTP session (:mod:`fitwheel.index.http`): the trust store,
hosts whose certificate is not checked (pip's ``trusted-host``), proxies from the environment,
and connections that report to the watchdog of :mod:`fitwheel.index.deadlines`."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from fitwheel import __version__
from fitwheel.errors import FitwheelError
from fitwheel.index.deadlines import watched

if TYPE_CHECKING:
    # both load with the HTTP stack, when a request is really made
    import ssl

    import urllib3

__all__ = ["USER_AGENT", "bypassed", "pool_manager", "proxies", "ssl_context"]

USER_AGENT = f"fitwheel/{__version__}"


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
    import ssl

    context = ssl.create_default_context(cafile=cafile, capath=capath)
    if not cafile and not capath:
        context.load_default_certs()
    return context


def pool_manager(
    tls: Callable[[], ssl.SSLContext],
    trusted: frozenset[str] = frozenset(),
    proxy: str | None = None,
) -> urllib3.PoolManager:
    """A pool manager (through ``proxy`` when given) whose every https pool, however it is
    reached (first request, after http ones, through a redirect), uses the session's TLS
    context, built on first need, and whose connections report to the watchdog; a host in
    ``trusted`` (pip's ``trusted-host``: ``host`` or ``host:port``) is not checked."""
    import urllib3

    if trusted:
        import warnings

        # the user asked for these hosts not to be checked: no warning on every request
        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)

    class _Watched:
        def _new_pool(
            self,
            scheme: str,
            host: str,
            port: int,
            request_context: dict[str, Any] | None = None,
        ) -> urllib3.HTTPConnectionPool:
            if scheme == "https":
                context = dict(request_context or self.connection_pool_kw)  # type: ignore[attr-defined]
                if host in trusted or f"{host}:{port}" in trusted:
                    import ssl

                    unchecked = ssl.create_default_context()
                    unchecked.check_hostname = False
                    unchecked.verify_mode = ssl.CERT_NONE
                    context["ssl_context"] = unchecked
                    context["cert_reqs"] = "CERT_NONE"
                    context["assert_hostname"] = False
                else:
                    context["ssl_context"] = tls()
                request_context = context
            pool: urllib3.HTTPConnectionPool = super()._new_pool(  # type: ignore[misc]
                scheme, host, port, request_context
            )
            pool.ConnectionCls = watched(pool.ConnectionCls)
            return pool

    if proxy is not None:

        class _ProxyPools(_Watched, urllib3.ProxyManager):
            pass

        return _ProxyPools(proxy, num_pools=8, maxsize=8, headers={"User-Agent": USER_AGENT})

    class _Pools(_Watched, urllib3.PoolManager):
        pass

    return _Pools(num_pools=16, maxsize=16, headers={"User-Agent": USER_AGENT})


def proxies(env: Mapping[str, str] | None) -> dict[str, str]:
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


def bypassed(host: str, proxies: Mapping[str, str]) -> bool:
    """Whether ``no_proxy`` (in ``proxies``, as :func:`proxies` reads it) exempts ``host``."""
    import urllib.request

    bypass: bool = urllib.request.proxy_bypass_environment(host, proxies)  # type: ignore[attr-defined]
    return bypass
