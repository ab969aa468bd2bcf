"""pip's configuration, read the way pip reads it: where packages come from (index URLs,
find-links, ``cert``) and the install settings that apply to fitwheel (:class:`PipSettings`).

Precedence, lowest first (as pip applies it): pip's configuration files (global, then user, then
site, then the file ``PIP_CONFIG_FILE`` names), the ``PIP_*`` environment variables, then the
command-line flags. Within a file the ``[install]`` section overrides ``[global]``. A setting that
takes a list (``extra-index-url``, ``find-links``, ``constraint``, ``trusted-host``) is one value
in the configuration (the environment's replaces the files'), and the command line adds to it, as
pip's do. When nothing sets an index URL, the default is pip's own, read from the installed pip
at run time.

Indexes are searched in this order: those named on the command line (``--extra-index-url``
ones, then those requirements files add, then ``--index-url``), then the configured ones
(extra indexes, then the main one); a requirements file's ``-i`` replaces all of them but the
extra indexes written after it. Each keeps where it came from (``/etc/pip.conf [global]``,
``PIP_EXTRA_INDEX_URL``, ``--index-url``, ``requirements.txt:3``) for ``--explain``,
``--report`` and error messages.
"""

from __future__ import annotations

import configparser
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from fitwheel._values import Frozen
from fitwheel.errors import InputError
from fitwheel.index.configfiles import pip_config_files


class ConfigError(InputError):
    pass


class IndexConfig(Frozen):
    """``index_url`` None means no index (``--no-index``); find-links are folders or URLs."""

    __slots__ = ("cert", "extra_index_urls", "find_links", "index_url", "origins", "searched")
    index_url: str | None
    extra_index_urls: tuple[str, ...]
    find_links: tuple[str, ...]
    #: where each setting came from, for --explain ("--index-url", "PIP_INDEX_URL", a file)
    origins: Mapping[str, str]
    #: a CA bundle to trust instead of the system store (pip's ``cert``)
    cert: str | None
    #: every index with where it came from, in the order searched; empty: the extra indexes,
    #: then the main one (a config made in code)
    searched: tuple[tuple[str, str], ...]

    def __init__(
        self,
        index_url: str | None,
        extra_index_urls: tuple[str, ...] = (),
        find_links: tuple[str, ...] = (),
        origins: Mapping[str, str] | None = None,
        cert: str | None = None,
        searched: tuple[tuple[str, str], ...] = (),
    ) -> None:
        _set = object.__setattr__
        _set(self, "index_url", index_url)
        _set(self, "extra_index_urls", extra_index_urls)
        _set(self, "find_links", find_links)
        _set(self, "origins", {} if origins is None else origins)
        _set(self, "cert", cert)
        _set(self, "searched", searched)

    @property
    def index_urls(self) -> tuple[str, ...]:
        first = (self.index_url,) if self.index_url else ()
        return first + tuple(u for u in self.extra_index_urls if u != self.index_url)

    def search_order(self) -> tuple[str, ...]:
        """The indexes in the order they are searched."""
        if self.searched:
            return tuple(url for url, _ in self.searched)
        extras = tuple(u for u in self.extra_index_urls if u != self.index_url)
        return extras + ((self.index_url,) if self.index_url else ())

    def origin_of(self, url: str) -> str:
        """Where index ``url`` came from ("--index-url", "/etc/pip.conf [global]", ...)."""
        for known, origin in self.searched:
            if known == url:
                return origin
        if url == self.index_url:
            return self.origins.get("index-url", "--index-url")
        return self.origins.get("extra-index-url", "--extra-index-url")

    def describe_indexes(self) -> str:
        """``URL (origin), URL (origin)`` in the order searched, plus find-links; for messages."""
        parts = [f"{url} ({self.origin_of(url)})" for url in self.search_order()]
        parts += [f"{link} (find-links)" for link in self.find_links]
        return ", ".join(parts) if parts else "no index and no find-links"

    def with_urls(self, clean: Callable[[str], str]) -> IndexConfig:
        """This config with every index URL passed through ``clean`` (credentials removed)."""
        return IndexConfig(
            clean(self.index_url) if self.index_url else None,
            tuple(clean(u) for u in self.extra_index_urls),
            self.find_links,
            self.origins,
            self.cert,
            tuple((clean(u), origin) for u, origin in self.searched),
        )


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
        from fitwheel import proc

        try:
            done = proc.run([interpreter, "-I", "-c", _ASK_PIP], timeout=60)
        except OSError:
            out = ""
        else:
            out = done.text().strip() if done.ok else ""
        if out.startswith(("http://", "https://")):
            return out
    raise ConfigError(
        "no index URL is configured and no installed pip tells the default one: "
        "pass --index-url URL, set PIP_INDEX_URL, or use --no-index --find-links DIR."
    )


#: the keys of pip's configuration that fitwheel reads, by their name in the files (pip's
#: option names without the dashes; ``_`` reads as ``-``, as in pip); aliases map to the key
_KEYS = (
    "index-url",
    "extra-index-url",
    "find-links",
    "no-index",
    "cert",
    "constraint",
    "no-binary",
    "only-binary",
    "pre",
    "timeout",
    "retries",
    "trusted-host",
    "require-hashes",
    "no-deps",
    "user",
)
_ALIASES = {"default-timeout": "timeout"}

#: key -> (the value's words, where it came from)
_Settings = dict[str, tuple[list[str], str]]


def _configured(
    env: Mapping[str, str], site_prefix: str | None, files: Sequence[Path] | None
) -> _Settings:
    """What pip's files and ``PIP_*`` variables set, the later (higher precedence) winning."""
    settings: _Settings = {}
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
            for raw_key, value in parser.items(section):
                key = raw_key.strip().lower().replace("_", "-")
                key = _ALIASES.get(key, key)
                if key in _KEYS:
                    settings[key] = (_split(value), f"{path} [{section}]")
    for key in _KEYS:
        names = ["PIP_" + key.upper().replace("-", "_")]
        names += ["PIP_" + a.upper().replace("-", "_") for a, k in _ALIASES.items() if k == key]
        for name in names:
            if env.get(name):
                settings[key] = (_split(env[name]), name)
                break
    return settings


def _flag(settings: _Settings, key: str) -> bool:
    """A yes/no setting (pip's words: yes/no, true/false, on/off, 1/0)."""
    if key not in settings:
        return False
    words, origin = settings[key]
    value = " ".join(words).strip().lower()
    if value in ("1", "true", "yes", "on", "y", "t"):
        return True
    if value in ("0", "false", "no", "off", "n", "f", ""):
        return False
    raise ConfigError(
        f"pip's '{key}' setting ({origin}) is {value!r}, not a yes/no value: use yes/no, "
        "true/false or 1/0."
    )


def _number(settings: _Settings, key: str, kind: type[float] | type[int]) -> float | int | None:
    if key not in settings:
        return None
    words, origin = settings[key]
    value = " ".join(words)
    try:
        number = kind(value)
    except ValueError:
        number = -1
    if number < 0:
        raise ConfigError(
            f"pip's '{key}' setting ({origin}) is {value!r}, not a "
            f"{'whole ' if kind is int else ''}number of {'tries' if kind is int else 'seconds'}."
        )
    return number


def _names(words: Sequence[str]) -> tuple[str, ...]:
    """pip's ``no-binary``/``only-binary`` value: names (or ``:all:``/``:none:``), comma
    separated."""
    return tuple(n.strip() for word in words for n in word.split(",") if n.strip())


def _cert(settings: _Settings) -> str | None:
    """pip's ``cert``: the CA bundle a setting names (None: none does)."""
    return " ".join(settings["cert"][0]) if "cert" in settings else None


class PipSettings(Frozen):
    """The install settings of pip's configuration that apply to fitwheel (the command line's
    flags are added by the caller: a flag given turns a yes/no setting on, list flags add)."""

    __slots__ = (
        "cert",
        "constraint_files",
        "no_binary",
        "no_deps",
        "only_binary",
        "origins",
        "pre",
        "require_hashes",
        "retries",
        "timeout",
        "trusted_hosts",
    )
    #: constraints files (``constraint``, ``PIP_CONSTRAINT``), relative to the working folder
    constraint_files: tuple[str, ...]
    #: pip's ``no-binary`` from the configuration: names, ``:all:`` or ``:none:`` (the
    #: ``--no-binary`` flags come on top)
    no_binary: tuple[str, ...]
    #: pip's ``only-binary`` from the configuration, in the same form (``--only-binary`` adds)
    only_binary: tuple[str, ...]
    pre: bool
    #: seconds to wait for an index (``timeout``, ``default-timeout``); None: fitwheel's default
    timeout: float | None
    #: how often a failed request is retried; None: fitwheel's default
    retries: int | None
    #: hosts (``host`` or ``host:port``) whose HTTPS certificate is not checked
    trusted_hosts: tuple[str, ...]
    require_hashes: bool
    no_deps: bool
    #: a CA bundle to trust instead of the system store (``cert``, ``PIP_CERT``)
    cert: str | None
    #: key -> where it was set, for messages
    origins: Mapping[str, str]

    def __init__(
        self,
        constraint_files: tuple[str, ...] = (),
        no_binary: tuple[str, ...] = (),
        only_binary: tuple[str, ...] = (),
        pre: bool = False,
        timeout: float | None = None,
        retries: int | None = None,
        trusted_hosts: tuple[str, ...] = (),
        require_hashes: bool = False,
        no_deps: bool = False,
        origins: Mapping[str, str] | None = None,
        cert: str | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "constraint_files", constraint_files)
        _set(self, "no_binary", no_binary)
        _set(self, "only_binary", only_binary)
        _set(self, "pre", pre)
        _set(self, "timeout", timeout)
        _set(self, "retries", retries)
        _set(self, "trusted_hosts", trusted_hosts)
        _set(self, "require_hashes", require_hashes)
        _set(self, "no_deps", no_deps)
        _set(self, "cert", cert)
        _set(self, "origins", {} if origins is None else origins)


def load_pip_settings(
    *,
    env: Mapping[str, str] | None = None,
    site_prefix: str | None = None,
    files: Sequence[Path] | None = None,
) -> PipSettings:
    """pip's install settings from its files and ``PIP_*`` variables.

    pip's ``user`` setting is refused: fitwheel installs into an environment it is given."""
    env = os.environ if env is None else env
    settings = _configured(env, site_prefix, files)
    if _flag(settings, "user"):
        raise ConfigError(
            f"pip's 'user' setting ({settings['user'][1]}) asks to install into the user "
            "site-packages, which fitwheel does not do: it installs into the environment that "
            "--python names (or the active one). Remove the setting, or set PIP_USER=0 to "
            "override it."
        )
    timeout = _number(settings, "timeout", float)
    retries = _number(settings, "retries", int)
    return PipSettings(
        constraint_files=tuple(settings.get("constraint", ([], ""))[0]),
        no_binary=_names(settings.get("no-binary", ([], ""))[0]),
        only_binary=_names(settings.get("only-binary", ([], ""))[0]),
        pre=_flag(settings, "pre"),
        timeout=None if timeout is None else float(timeout),
        retries=None if retries is None else int(retries),
        trusted_hosts=tuple(settings.get("trusted-host", ([], ""))[0]),
        require_hashes=_flag(settings, "require-hashes"),
        no_deps=_flag(settings, "no-deps"),
        cert=_cert(settings),
        origins={key: origin for key, (_, origin) in settings.items()},
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
    index_url_origin: str | None = None,
    origins: Sequence[tuple[str, str]] = (),
) -> IndexConfig:
    """Merge pip's config files, the environment and the flags (``None``/empty: not given).

    What requirements files added comes in with the flags (see
    :meth:`fitwheel.options.SourceOptions.with_file_options`): ``origins`` names the
    ``file:line`` of each index, find-links place and ``--no-index`` a file gave, and
    ``index_url_origin`` says that ``index_url`` is a file's ``-i``, which replaces every index
    the configuration names (the flags' are already replaced)."""
    env = os.environ if env is None else env
    written = dict(origins)
    settings = _configured(env, site_prefix, files)
    kept = {key: origin for key, (_, origin) in settings.items() if key in _SOURCE_KEYS}
    if cert is not None:
        settings["cert"] = ([cert], "--cert")
        kept["cert"] = "--cert"
    cert_value = _cert(settings)
    links = tuple(dict.fromkeys([*settings.get("find-links", ([], ""))[0], *find_links]))
    if find_links:
        given = dict.fromkeys(written.get(link, "--find-links") for link in find_links)
        configured = kept.get("find-links")
        kept["find-links"] = ", ".join([configured, *given] if configured else given)
    if no_index or _truthy(" ".join(settings.get("no-index", (["0"], ""))[0]) or "0"):
        flag = written.get("--no-index", "--no-index")
        kept["no-index"] = flag if no_index else kept.get("no-index", "")
        return IndexConfig(None, (), links, kept, cert_value)
    searched, url = _searched(index_url, extra_index_urls, index_url_origin, written, settings)
    if url is None:
        url = default_index_url(interpreter)
        searched.append((url, "pip's default"))
        kept["index-url"] = "pip's default"
    elif index_url is not None:
        kept["index-url"] = index_url_origin or "--index-url"
    if extra_index_urls:
        kept["extra-index-url"] = written.get(extra_index_urls[0], "--extra-index-url")
    unique: dict[str, str] = {}
    for item_url, origin in searched:
        unique.setdefault(item_url, origin)
    extras = tuple(u for u in unique if u != url)
    return IndexConfig(url, extras, links, kept, cert_value, tuple(unique.items()))


#: the settings that say where packages come from (kept with their origins)
_SOURCE_KEYS = ("index-url", "extra-index-url", "find-links", "no-index", "cert")


def _searched(
    index_url: str | None,
    extra_index_urls: Sequence[str],
    index_url_origin: str | None,
    written: Mapping[str, str],
    settings: _Settings,
) -> tuple[list[tuple[str, str]], str | None]:
    """The indexes in the order searched, each with its origin, and the main one (None: none
    is named, pip's default is): what the flags (and the requirements files) name, then what
    the configuration names, each group's extra indexes first; a requirements file's ``-i``
    leaves the configuration's out."""
    searched = [(u, written.get(u, "--extra-index-url")) for u in extra_index_urls]
    if index_url is not None:
        searched.append((index_url, index_url_origin or "--index-url"))
        if index_url_origin is not None:
            return searched, index_url
    configured_extras, extras_origin = settings.get("extra-index-url", ([], ""))
    searched += [(u, extras_origin) for u in configured_extras]
    if index_url is not None:
        return searched, index_url
    words, origin = settings.get("index-url", ([], ""))
    if not words:
        return searched, None
    searched.append((words[-1], origin))
    return searched, words[-1]
