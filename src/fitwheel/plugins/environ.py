"""The environment a plugin runs with: ``PATH``, the locale, ``LD_LIBRARY_PATH`` and the
variables of its own namespaces (``ASCEND_...`` for namespace ``ascend``), never anything that
looks like a credential; ``HOME``, ``TMPDIR`` and the working folder are a temporary folder."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

_KEPT = frozenset({"PATH", "LANG", "LANGUAGE", "LD_LIBRARY_PATH"})
_CREDENTIAL_NAME = re.compile(
    r"(TOKEN|SECRET|PASSWORD|PASSWD|_KEY|CREDENTIAL|_AUTH)|^AWS_|^(HTTPS?|FTP|ALL|NO)_PROXY$",
    re.IGNORECASE,
)
#: a URL with a password in it (an index URL with credentials, a proxy)
_URL_PASSWORD = re.compile(r"://[^/@\s:]*:[^/@\s]*@")


def looks_secret(name: str, value: str) -> bool:
    """Whether ``name=value`` looks like a credential (by its name, or a URL carrying a
    password)."""
    return bool(_CREDENTIAL_NAME.search(name) or _URL_PASSWORD.search(value))


def prefixes(namespaces: Iterable[str], plugin: str) -> tuple[str, ...]:
    """The variable prefixes a plugin sees: each namespace's, and its package name's, in capitals
    with an underscore (``ASCEND_``, ``ASCEND_VARIANT_PROVIDER_``)."""
    names = [*namespaces, re.sub(r"[^A-Za-z0-9]+", "_", plugin)]
    return tuple(dict.fromkeys(f"{n.upper()}_" for n in names if n))


def plugin_environment(
    env: Mapping[str, str], namespaces: Iterable[str], plugin: str, home: str
) -> dict[str, str]:
    """The variables of ``env`` a plugin of ``namespaces`` may see, with ``HOME`` and
    ``TMPDIR`` set to ``home``."""
    wanted = prefixes(namespaces, plugin)
    out = {
        name: value
        for name, value in env.items()
        if (name in _KEPT or name.startswith("LC_") or name.startswith(wanted))
        and not looks_secret(name, value)
    }
    out["HOME"] = home
    out["TMPDIR"] = home
    return out
