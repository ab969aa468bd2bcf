"""The one way a command makes its HTTP :class:`~fitwheel.index.http.Session`: from its
:class:`~fitwheel.options.SourceOptions` with pip's configuration under them.

pip's ``trusted-host``, ``timeout``, ``retries`` and ``cert`` (files and ``PIP_*`` variables,
see :mod:`fitwheel.index.config`) reach ``install``, ``lock``, ``sync`` and ``bundle`` alike; a
flag given wins (``--timeout``, ``--retries``, ``--cert``) or adds (``--trusted-host``).
Proxies and the other trust settings (``SSL_CERT_FILE``, ``PIP_CERT``) are read by the session
from ``env``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from fitwheel.errors import NetworkError
from fitwheel.index.auth import split_credentials
from fitwheel.index.config import PipSettings, load_pip_settings
from fitwheel.index.http import DEFAULT_RETRIES, DEFAULT_TIMEOUT, Session
from fitwheel.index.httpcache import HttpCache
from fitwheel.options import SourceOptions
from fitwheel.paths import CacheLayout


def open_session(
    sources: SourceOptions,
    env: Mapping[str, str],
    *,
    layout: CacheLayout | None = None,
    site_prefix: str | None = None,
    settings: PipSettings | None = None,
) -> Session:
    """The session for ``sources``: pages cached under ``layout`` (None: no page cache),
    pip's configuration ``settings`` (None: read now, for the environment at ``site_prefix``)
    under the flags, every cached page asked again with ``sources.refresh``."""
    if settings is None:
        settings = load_pip_settings(env=env, site_prefix=site_prefix)
    merged = sources.with_pip_settings(settings)
    session = Session(
        env=env,
        cache=HttpCache(layout.http) if layout is not None else None,
        retries=DEFAULT_RETRIES if merged.retries is None else merged.retries,
        timeout=DEFAULT_TIMEOUT if merged.timeout is None else merged.timeout,
        cafile=sources.cert or settings.cert,
        trusted_hosts=frozenset(merged.trusted_hosts),
    )
    session.revalidate = sources.refresh
    return session


class RemoteFiles:
    """The reader of requirements files (``-r URL``, ``-c URL``): ``http``/``https`` URLs
    through the session that ``make_session()`` makes (on the first URL read), anything else
    through ``local``. A file that cannot be fetched is an ``OSError`` naming the server's
    answer (the requirements reader adds the file and line that named it).

    :meth:`location` takes the credentials out of a URL named on the command line, so that the
    places (``URL:line``) shown in messages and reports carry none; they are used to read it."""

    __slots__ = ("_credentials", "_local", "_make_session", "_session")

    def __init__(self, make_session: Callable[[], Session], local: Callable[[str], bytes]) -> None:
        self._make_session = make_session
        self._local = local
        self._session: Session | None = None
        #: URLs with user info, as given: their credentials go to the session when it is made
        self._credentials: list[str] = []

    def location(self, name: str) -> str:
        """``name`` as the reader is to be given it: a URL without its credentials."""
        clean, creds = split_credentials(name) if _remote(name) else (name, None)
        if creds is not None:
            self._credentials.append(name)
        return clean

    def __call__(self, location: str) -> bytes:
        if not _remote(location):
            return self._local(location)
        if self._session is None:
            self._session = self._make_session()
            for url in self._credentials:
                self._session.add_credentials(url)
        url = self._session.add_credentials(location)
        try:
            found = self._session.get(
                url, what="requirements file", use_cache=False, allow_404=True
            )
        except NetworkError as exc:
            raise OSError(str(exc).rstrip(".")) from exc
        if found is None:
            raise OSError("HTTP 404: nothing at that address")
        return found.body


def _remote(location: str) -> bool:
    return location.lower().startswith(("http://", "https://"))
