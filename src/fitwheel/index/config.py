"""Where packages come from: index URLs and find-links, found the way pip finds them.

Precedence, lowest first (as pip applies it): pip's configuration files (global, then user, then
site, then the file ``PIP_CONFIG_FILE`` names), the ``PIP_*`` environment variables, then the
command-line flags. Within a file the ``[install]`` section overrides ``[global]``. When nothing
sets an index URL, the default is pip's own, read from the installed pip at run time.
"""

from __future__ import annotations

import configparser
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fitwheel.errors import FitwheelError


class ConfigError(FitwheelError):
    pass


@dataclass(frozen=True, slots=True)
class IndexConfig:
    """``index_url`` None means no index (``--no-index``); find-links are folders or URLs."""

    index_url: str | None
    extra_index_urls: tuple[str, ...] = ()
    find_links: tuple[str, ...] = ()
    #: where each setting came from, for --explain ("--index-url", "PIP_INDEX_URL", a file)
    origins: Mapping[str, str] = field(default_factory=dict)
    #: a CA bundle to trust instead of the system store (pip's ``cert``)
    cert: str | None = None
    #: pip's ``timeout`` (seconds) and ``retries`` settings; None: not set (the session's
    #: defaults apply)
    timeout: float | None = None
    retries: int | None = None

    @property
    def index_urls(self) -> tuple[str, ...]:
        first = (self.index_url,) if self.index_url else ()
        return first + tuple(u for u in self.extra_index_urls if u != self.index_url)


def pip_config_files(env: Mapping[str, str], site_prefix: str | None = None) -> list[Path]:
    """pip's configuration files, lowest precedence first."""
    if env.get("PIP_CONFIG_FILE") == os.devnull:
        return []
    files: list[Path] = []
    xdg_dirs = env.get("XDG_CONFIG_DIRS") or "/etc/xdg"
    files += [Path(d) / "pip" / "pip.conf" for d in xdg_dirs.split(os.pathsep) if d]
    files.append(Path("/etc/pip.conf"))
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    files.append(home / ".pip" / "pip.conf")
    files.append(Path(env.get("XDG_CONFIG_HOME") or home / ".config") / "pip" / "pip.conf")
    files.append(Path(site_prefix or sys.prefix) / "pip.conf")
    if env.get("PIP_CONFIG_FILE"):
        files.append(Path(env["PIP_CONFIG_FILE"]))
    return files


def _split(value: str) -> list[str]:
    return [item for item in value.split() if item]


def _truthy(value: str) -> bool:
    return value.strip().lower() in ("1", "true", "yes", "on")


_ASK_PIP = "from pip._internal.models.index import PyPI; print(PyPI.simple_url)"


def default_index_url(interpreter: str | None = None) -> str:
    """pip's default index, read from an installed pip (never written here): the pip next to
    fitwheel, else the target interpreter's."""
    try:
        from pip._internal.models.index import PyPI  # type: ignore[import-not-found,unused-ignore]

        return str(PyPI.simple_url)
    except ImportError:
        pass
    if interpreter is not None:
        import subprocess

        try:
            out = subprocess.run(
                [interpreter, "-I", "-c", _ASK_PIP],
                capture_output=True,
                text=True,
                check=True,
                timeout=60,
            ).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            out = ""
        if out.startswith(("http://", "https://")):
            return out
    raise ConfigError(
        "no index URL is configured and no installed pip tells the default one: "
        "pass --index-url URL, set PIP_INDEX_URL, or use --no-index --find-links DIR."
    )


def load_index_config(
    *,
    index_url: str | None = None,
    extra_index_urls: Sequence[str] = (),
    find_links: Sequence[str] = (),
    no_index: bool = False,
    env: Mapping[str, str] | None = None,
    site_prefix: str | None = None,
    files: Sequence[Path] | None = None,
    interpreter: str | None = None,
    cert: str | None = None,
) -> IndexConfig:
    """Merge pip's config files, the environment and the flags (``None``/empty: not given)."""
    env = os.environ if env is None else env
    settings: dict[str, tuple[list[str], str]] = {}
    for path in pip_config_files(env, site_prefix) if files is None else files:
        parser = configparser.RawConfigParser()
        try:
            if not parser.read(path, encoding="utf-8"):
                continue
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise ConfigError(f"cannot read pip configuration {path}: {exc}") from exc
        for section in ("global", "install"):
            if not parser.has_section(section):
                continue
            for key in ("index-url", "extra-index-url", "find-links", "no-index", "cert"):
                if parser.has_option(section, key):
                    value = parser.get(section, key)
                    settings[key] = (_split(value), f"{path} [{section}]")
    for key in ("index-url", "extra-index-url", "find-links", "no-index", "cert"):
        name = "PIP_" + key.upper().replace("-", "_")
        if env.get(name):
            settings[key] = (_split(env[name]), name)
    if index_url is not None:
        settings["index-url"] = ([index_url], "--index-url")
    if extra_index_urls:
        settings["extra-index-url"] = (list(extra_index_urls), "--extra-index-url")
    if find_links:
        settings["find-links"] = (list(find_links), "--find-links")
    if no_index:
        settings["no-index"] = (["1"], "--no-index")
    if cert is not None:
        settings["cert"] = ([cert], "--cert")
    cert_value = " ".join(settings["cert"][0]) if "cert" in settings else None

    origins = {key: origin for key, (_, origin) in settings.items()}
    links = tuple(settings.get("find-links", ([], ""))[0])
    if _truthy(" ".join(settings.get("no-index", (["0"], ""))[0]) or "0"):
        return IndexConfig(None, (), links, origins, cert_value)
    primary = settings.get("index-url", ([], ""))[0]
    if primary:
        url = primary[-1]
    else:
        url = default_index_url(interpreter)
        origins["index-url"] = "pip's default"
    extras = tuple(settings.get("extra-index-url", ([], ""))[0])
    return IndexConfig(url, extras, links, origins, cert_value)
