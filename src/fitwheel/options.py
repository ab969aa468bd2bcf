"""The options that several commands share, as typed records: where packages come from
(:class:`SourceOptions`), how versions and builds are chosen (:class:`ResolutionOptions`) and
how files are put into an environment (:class:`PlacementOptions`).

The command line fills them (:mod:`fitwheel.cli._sources`); ``install``, ``lock``, ``sync``
and ``bundle`` read them, and :func:`fitwheel.index.session.open_session` makes the HTTP
session from a :class:`SourceOptions`. Each record's ``with_pip_settings`` puts pip's
configuration under the flags: a yes/no setting is on when the configuration or the flag says
so, lists are the configuration's and then the flags', a value given as a flag wins. Each
record's ``with_file_options`` then applies what requirements files say, as pip's finder
does: a file's ``-i`` replaces every index named before it, lists add after the flags',
yes/no options turn on, ``--no-binary``/``--only-binary`` apply in order after the flags'.

The records are :class:`fitwheel._values.Frozen` (no ``dataclasses``, no ``typing``):
an install answered from a remembered resolution builds them on its short path.
"""

from __future__ import annotations

from fitwheel._values import Frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Protocol

    class PipSettings(Protocol):
        """What the records read of :class:`fitwheel.index.config.PipSettings` (named here
        by its shape: the index package builds on this module)."""

        @property
        def trusted_hosts(self) -> tuple[str, ...]: ...
        @property
        def timeout(self) -> float | None: ...
        @property
        def retries(self) -> int | None: ...
        @property
        def no_binary(self) -> tuple[str, ...]: ...
        @property
        def only_binary(self) -> tuple[str, ...]: ...
        @property
        def pre(self) -> bool: ...
        @property
        def no_deps(self) -> bool: ...
        @property
        def require_hashes(self) -> bool: ...

    class Located(Protocol):
        """A value and the ``file:line`` that gave it
        (:class:`fitwheel.resolve.reqfile.Located`)."""

        @property
        def value(self) -> str: ...
        @property
        def origin(self) -> str: ...

    class FileOptions(Protocol):
        """What the records read of :class:`fitwheel.resolve.reqfile.FileOptions` (named here
        by its shape, as :class:`PipSettings` is)."""

        @property
        def index_url(self) -> Located | None: ...
        @property
        def extra_index_urls(self) -> Sequence[Located]: ...
        @property
        def no_index(self) -> Located | None: ...
        @property
        def find_links(self) -> Sequence[Located]: ...
        @property
        def trusted_hosts(self) -> Sequence[Located]: ...
        @property
        def pre(self) -> Located | None: ...
        @property
        def require_hashes(self) -> Located | None: ...
        @property
        def formats(self) -> Sequence[tuple[str, Located]]: ...


#: the index strategies (see :mod:`fitwheel.index.finder`)
INDEX_STRATEGIES = ("first-index", "unsafe-first-match", "unsafe-best-match")
#: what an index that cannot be reached does (see :mod:`fitwheel.index.finder`): stop the run,
#: or a warning and the resolution without it (pip's way)
UNREACHABLE_INDEX = ("error", "warn")


class SourceOptions(Frozen):
    """Where packages come from and how they are fetched (``None``/empty: not given)."""

    __slots__ = (
        "cache_dir",
        "cert",
        "extra_index_urls",
        "find_links",
        "index_strategy",
        "index_url",
        "index_url_origin",
        "no_cache",
        "no_index",
        "offline",
        "origins",
        "refresh",
        "retries",
        "timeout",
        "trusted_hosts",
        "unreachable_index",
    )
    #: the main simple index (``-i``); None: the configured one
    index_url: str | None
    extra_index_urls: tuple[str, ...]
    #: folders or pages of files (``-f``)
    find_links: tuple[str, ...]
    no_index: bool
    #: which indexes' files count for a project (see :mod:`fitwheel.index.finder`)
    index_strategy: str
    #: an index that cannot be reached: "error" (stop) or "warn" (go on without it)
    unreachable_index: str
    #: a CA bundle to trust for HTTPS (``--cert``; pip's ``cert`` setting is read apart)
    cert: str | None
    #: hosts (``host`` or ``host:port``) whose HTTPS certificate is not checked
    trusted_hosts: tuple[str, ...]
    #: seconds to wait for a server, and retries of a failed request (None: the default)
    timeout: float | None
    retries: int | None
    #: the cache's root (``--cache-dir``; None: ``FITWHEEL_CACHE_DIR`` or the user cache)
    cache_dir: Path | None
    #: use a temporary cache, removed at the end (``--no-cache-dir``)
    no_cache: bool
    #: ask the indexes again for every cached page, however fresh (``--refresh``)
    refresh: bool
    #: local files only: no network at all (``sync --offline``)
    offline: bool
    #: the ``file:line`` of a requirements file's ``-i`` that gave ``index_url``: it replaces
    #: every index named before it, the flags' and pip's configuration's (None: no file did)
    index_url_origin: str | None
    #: (URL or place, ``file:line``): the indexes, find-links and ``--no-index`` that
    #: requirements files added, with where each was written
    origins: tuple[tuple[str, str], ...]

    def __init__(
        self,
        *,
        index_url: str | None = None,
        extra_index_urls: Sequence[str] = (),
        find_links: Sequence[str] = (),
        no_index: bool = False,
        index_strategy: str = "first-index",
        unreachable_index: str = "error",
        cert: str | None = None,
        trusted_hosts: Sequence[str] = (),
        timeout: float | None = None,
        retries: int | None = None,
        cache_dir: Path | None = None,
        no_cache: bool = False,
        refresh: bool = False,
        offline: bool = False,
        index_url_origin: str | None = None,
        origins: Sequence[tuple[str, str]] = (),
    ) -> None:
        _set = object.__setattr__
        _set(self, "index_url", index_url)
        _set(self, "extra_index_urls", tuple(extra_index_urls))
        _set(self, "find_links", tuple(find_links))
        _set(self, "no_index", no_index)
        _set(self, "index_strategy", index_strategy)
        _set(self, "unreachable_index", unreachable_index)
        _set(self, "cert", cert)
        _set(self, "trusted_hosts", tuple(trusted_hosts))
        _set(self, "timeout", timeout)
        _set(self, "retries", retries)
        _set(self, "cache_dir", cache_dir)
        _set(self, "no_cache", no_cache)
        _set(self, "refresh", refresh)
        _set(self, "offline", offline)
        _set(self, "index_url_origin", index_url_origin)
        _set(self, "origins", tuple(origins))

    def with_pip_settings(self, settings: PipSettings) -> SourceOptions:
        """pip's ``trusted-host`` before the flags'; a ``--timeout`` or ``--retries`` given
        wins over pip's (index URLs, find-links and ``cert`` are merged by
        :func:`fitwheel.index.config.load_index_config`, which keeps where each came from)."""
        return self.replace(
            trusted_hosts=(*settings.trusted_hosts, *self.trusted_hosts),
            timeout=self.timeout if self.timeout is not None else settings.timeout,
            retries=self.retries if self.retries is not None else settings.retries,
        )

    def with_file_options(self, options: FileOptions) -> SourceOptions:
        """What requirements files say on top, as pip's finder takes it: a file's ``-i``
        replaces the index and every extra index named before it (the flags' too), extra
        indexes, find-links and trusted hosts add after the flags', ``--no-index`` drops every
        index. Each file-given place keeps its ``file:line`` in :attr:`origins`."""
        index_url, extras = self.index_url, self.extra_index_urls
        index_url_origin = self.index_url_origin
        origins = list(self.origins)
        if options.index_url is not None:
            index_url, extras = options.index_url.value, ()
            index_url_origin = options.index_url.origin
            origins.append((index_url, index_url_origin))
        extras += tuple(item.value for item in options.extra_index_urls)
        for item in (*options.extra_index_urls, *options.find_links):
            origins.append((item.value, item.origin))
        if options.no_index is not None:
            origins.append(("--no-index", options.no_index.origin))
        return self.replace(
            index_url=index_url,
            extra_index_urls=extras,
            index_url_origin=index_url_origin,
            find_links=(*self.find_links, *(item.value for item in options.find_links)),
            no_index=self.no_index or options.no_index is not None,
            trusted_hosts=(*self.trusted_hosts, *(item.value for item in options.trusted_hosts)),
            origins=origins,
        )


class ResolutionOptions(Frozen):
    """How versions, builds and variants are chosen."""

    __slots__ = (
        "allow_fallback",
        "build_timeout",
        "force_reinstall",
        "forced_variants",
        "formats",
        "no_binary",
        "no_deps",
        "no_variants",
        "only_binary",
        "pre",
        "require_hashes",
        "upgrade",
        "upgrade_packages",
    )
    pre: bool
    no_deps: bool
    #: the newest allowed versions of the named packages (``-U``)
    upgrade: bool
    #: ``lock -P NAME``: the newest allowed version of these only
    upgrade_packages: tuple[str, ...]
    #: reinstall even what is installed as chosen (its cached files checked first)
    force_reinstall: bool
    require_hashes: bool
    #: pip's form (names, ``:all:``, ``:none:``), pip's configuration first, then the flags
    no_binary: tuple[str, ...]
    only_binary: tuple[str, ...]
    #: (``--no-binary`` or ``--only-binary``, value) applied in order after the two lists
    #: (what requirements files say: pip applies them in order, each undoing the other)
    formats: tuple[tuple[str, str], ...]
    #: seconds each build backend hook may run (None: the default)
    build_timeout: float | None
    no_variants: bool
    #: ``--variant NAME=LABEL``: (name, label) pairs taken without checking the target
    forced_variants: tuple[tuple[str, str], ...]
    #: accept a build without GPU support when none fits the GPU
    allow_fallback: bool

    def __init__(
        self,
        *,
        pre: bool = False,
        no_deps: bool = False,
        upgrade: bool = False,
        upgrade_packages: Sequence[str] = (),
        force_reinstall: bool = False,
        require_hashes: bool = False,
        no_binary: Sequence[str] = (),
        only_binary: Sequence[str] = (),
        build_timeout: float | None = None,
        no_variants: bool = False,
        forced_variants: Sequence[tuple[str, str]] = (),
        allow_fallback: bool = False,
        formats: Sequence[tuple[str, str]] = (),
    ) -> None:
        _set = object.__setattr__
        _set(self, "pre", pre)
        _set(self, "no_deps", no_deps)
        _set(self, "upgrade", upgrade)
        _set(self, "upgrade_packages", tuple(upgrade_packages))
        _set(self, "force_reinstall", force_reinstall)
        _set(self, "require_hashes", require_hashes)
        _set(self, "no_binary", tuple(no_binary))
        _set(self, "only_binary", tuple(only_binary))
        _set(self, "build_timeout", build_timeout)
        _set(self, "no_variants", no_variants)
        _set(self, "forced_variants", tuple(forced_variants))
        _set(self, "allow_fallback", allow_fallback)
        _set(self, "formats", tuple(formats))

    def with_pip_settings(self, settings: PipSettings) -> ResolutionOptions:
        """pip's ``no-binary``/``only-binary`` before the flags'; ``pre``, ``no-deps`` and
        ``require-hashes`` on when pip's configuration or the flag says so."""
        return self.replace(
            no_binary=(*settings.no_binary, *self.no_binary),
            only_binary=(*settings.only_binary, *self.only_binary),
            pre=self.pre or settings.pre,
            no_deps=self.no_deps or settings.no_deps,
            require_hashes=self.require_hashes or settings.require_hashes,
        )

    def with_file_options(self, options: FileOptions) -> ResolutionOptions:
        """What requirements files say on top: ``--pre`` and ``--require-hashes`` turn on,
        ``--no-binary``/``--only-binary`` apply in order after the flags' (:attr:`formats`)."""
        return self.replace(
            pre=self.pre or options.pre is not None,
            require_hashes=self.require_hashes or options.require_hashes is not None,
            formats=(*self.formats, *((name, item.value) for name, item in options.formats)),
        )


class PlacementOptions(Frozen):
    """How chosen files are put into an environment."""

    __slots__ = (
        "allow_overwrite",
        "break_system_packages",
        "compile_bytecode",
        "jobs",
        "link_mode",
    )
    #: install from unpacked wheels in the cache by linking ("hardlink") or copying ("copy")
    link_mode: str
    compile_bytecode: bool
    #: let a wheel replace files that another installed distribution owns
    allow_overwrite: bool
    #: install into an interpreter that the operating system manages (PEP 668)
    break_system_packages: bool
    #: parallel downloads
    jobs: int

    def __init__(
        self,
        *,
        link_mode: str = "hardlink",
        compile_bytecode: bool = False,
        allow_overwrite: bool = False,
        break_system_packages: bool = False,
        jobs: int = 4,
    ) -> None:
        _set = object.__setattr__
        _set(self, "link_mode", link_mode)
        _set(self, "compile_bytecode", compile_bytecode)
        _set(self, "allow_overwrite", allow_overwrite)
        _set(self, "break_system_packages", break_system_packages)
        _set(self, "jobs", jobs)

    def with_pip_settings(self, settings: PipSettings) -> PlacementOptions:
        """Unchanged: none of pip's settings that fitwheel reads is about placement."""
        return self


def key_of(options: Frozen) -> dict[str, object]:
    """``options``' fields by name (JSON-able where the values are), for keys and reports."""
    return {name: getattr(options, name) for name in options._fields()}
