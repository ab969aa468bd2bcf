"""Credentials for index requests: user info in URLs, ``~/.netrc``, and URLs made safe to print."""

from __future__ import annotations

import os
import urllib.parse
from collections.abc import Mapping


def redact(url: str) -> str:
    """``url`` as messages show it: a password as ``****``, and a user name given alone (a token
    often is) too, as pip shows them, but for git's well-known ``git@``."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is not None and parts.password is None and parts.username != "git":
        host = parts.netloc.rsplit("@", 1)[1]
        return urllib.parse.urlunsplit(parts._replace(netloc=f"****@{host}"))
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


def netloc(url: str) -> str:
    return urllib.parse.urlsplit(url).netloc.rsplit("@", 1)[-1].lower()


def netrc_credentials(host: str, env: Mapping[str, str]) -> tuple[str, str] | None:
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
