"""The options several commands share, declared once and read into the typed records of
:mod:`fitwheel.options`: where packages come from (:func:`add_source_arguments`,
:func:`sources_from`), how versions are chosen (:func:`add_resolution_arguments`,
:func:`resolution_from`) and how files are placed (:func:`add_placement_arguments`,
:func:`placement_from`).

A command that leaves some of these flags out gets their defaults all the same, so that each
reader sees every field.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fitwheel.errors import UsageError
from fitwheel.options import (
    INDEX_STRATEGIES,
    UNREACHABLE_INDEX,
    PlacementOptions,
    ResolutionOptions,
    SourceOptions,
)

_STRATEGY_HELP = (
    "with several indexes (searched in this order: those named on the command line, then "
    "pip's configured ones; each group's extra indexes before its main one, as in uv): take a "
    "package from the first index that has it (default; safe against dependency confusion), "
    "prefer the first index's versions but look at all (unsafe-first-match), or take the best "
    "version of any index (unsafe-best-match, pip's way); also the setting index-strategy "
    "(fitwheel config) and FITWHEEL_INDEX_STRATEGY"
)
_UNREACHABLE_HELP = (
    "an index that cannot be reached (DNS failure, refused connection, TLS failure, time-out; "
    "not an HTTP error such as 401/403/404): stop with an error naming it (default), or warn "
    "and resolve without it, as pip does (warn); a project routed to a torch backend index or "
    "a variant index stops the run either way; also the setting unreachable-index (fitwheel "
    "config) and FITWHEEL_UNREACHABLE_INDEX"
)

#: every source flag's attribute and its value when a command does not take the flag
_SOURCE_DEFAULTS: dict[str, object] = {
    "index_url": None,
    "extra_index_url": [],
    "find_links": [],
    "no_index": False,
    "index_strategy": None,
    "unreachable_index": None,
    "cert": None,
    "trusted_host": [],
    "timeout": None,
    "retries": None,
    "cache_dir": None,
    "no_cache_dir": False,
    "refresh": False,
    "offline": False,
}


def add_requirement_arguments(
    parser: argparse.ArgumentParser, verb: str, *, editables: bool = False
) -> None:
    """What a resolving command resolves (``install``, ``lock``, ``download``): requirements,
    ``-r`` files, ``-c`` constraints files (``-e`` editables where ``editables``)."""
    what = "a requirement (name[extras] specifier; marker)" + (
        " or a wheel file" if editables else ""
    )
    parser.add_argument("requirements", nargs="*", metavar="REQUIREMENT", help=what)
    parser.add_argument(
        "-r", "--requirement", action="append", default=[], metavar="FILE",
        dest="requirement_files", help=f"{verb} the requirements of a file",
    )  # fmt: skip
    if editables:
        parser.add_argument(
            "-e", "--editable", action="append", default=[], metavar="PATH|VCS_URL",
            dest="editables",
            help="install a local project (PATH, PATH[extra,...]) or a checkout "
            "(git+URL#egg=NAME, into <env>/src/NAME) in editable mode (PEP 660)",
        )  # fmt: skip
    parser.add_argument(
        "-c", "--constraint", action="append", default=[], metavar="FILE",
        dest="constraint_files", help="limit versions with a constraints file",
    )  # fmt: skip


def add_source_arguments(parser: argparse.ArgumentParser, *, caching: bool = False) -> None:
    """The package sources of a resolving command (``install``, ``lock``): indexes,
    find-links, trust, time limits and the cache; ``caching`` adds ``--no-cache-dir`` and
    ``--refresh``."""
    group = parser.add_argument_group("package sources")
    group.add_argument("-i", "--index-url", metavar="URL", help="the main simple index")
    group.add_argument(
        "--extra-index-url", action="append", default=[], metavar="URL",
        help="another index to consult (repeatable)",
    )  # fmt: skip
    group.add_argument(
        "-f", "--find-links", action="append", default=[], metavar="DIR",
        help="a folder (or page) of wheels to consider (repeatable)",
    )  # fmt: skip
    group.add_argument("--no-index", action="store_true", help="use only --find-links")
    group.add_argument(
        "--index-strategy", choices=INDEX_STRATEGIES, default=None, help=_STRATEGY_HELP
    )
    group.add_argument(
        "--unreachable-index", choices=UNREACHABLE_INDEX, default=None, help=_UNREACHABLE_HELP
    )
    _add_network(group, cache_help="where downloads and pages are cached")
    if caching:
        group.add_argument(
            "--no-cache-dir", action="store_true",
            help="keep nothing: pages, downloads and unpacked wheels go to a temporary folder",
        )  # fmt: skip
        group.add_argument(
            "--refresh", action="store_true",
            help="ask the indexes again for every cached page, however fresh, and resolve "
            "afresh (by default a page is reused while its Cache-Control max-age lasts, and an "
            "install whose every input is unchanged reuses its earlier resolution)",
        )  # fmt: skip
    _fill_defaults(parser)


def add_fetch_arguments(
    parser: argparse.ArgumentParser, group: argparse._ArgumentGroup | None = None
) -> None:
    """The sources of a command that fetches locked files (``sync``, ``bundle``): trust, time
    limits and the cache (over pip's ``cert``, ``trusted-host``, ``timeout`` and ``retries``)."""
    where = group if group is not None else parser.add_argument_group("where files come from")
    _add_network(where, cache_help="where downloads are cached")
    _fill_defaults(parser)


def _add_network(group: argparse._ArgumentGroup, *, cache_help: str) -> None:
    group.add_argument("--cert", metavar="FILE", help="a CA bundle to trust for HTTPS")
    group.add_argument(
        "--trusted-host", action="append", default=[], metavar="HOST",
        help="do not check the HTTPS certificate of HOST (or HOST:PORT) (repeatable)",
    )  # fmt: skip
    group.add_argument(
        "--timeout", type=float, metavar="SEC",
        help="seconds to wait for a server's answer, and for each stretch of a download to "
        "make progress (default 30; pages must be whole within 4 times this)",
    )  # fmt: skip
    group.add_argument(
        "--retries", type=int, metavar="N",
        help="times to try a request again after a failure or time-out (default 3)",
    )  # fmt: skip
    group.add_argument("--cache-dir", metavar="DIR", help=cache_help)


def _fill_defaults(parser: argparse.ArgumentParser) -> None:
    taken = {action.dest for action in parser._actions}
    parser.set_defaults(**{k: v for k, v in _SOURCE_DEFAULTS.items() if k not in taken})


def _setting(key: str, default: str) -> str:
    """Setting ``key`` (``index-strategy``, ``unreachable-index``) from fitwheel's settings
    (environment over files), else ``default``."""
    import os

    from fitwheel.userconfig import settings_in_force

    found = settings_in_force(os.environ).get(key)
    return str(found.value) if found is not None else default


def sources_from(args: argparse.Namespace) -> SourceOptions:
    """The sources ``args`` name (checked: a time limit above 0, retries 0 or more)."""
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError("--timeout must be a number of seconds above 0.")
    if args.retries is not None and args.retries < 0:
        raise UsageError("--retries must be 0 or more.")
    return SourceOptions(
        index_url=args.index_url,
        extra_index_urls=tuple(args.extra_index_url),
        find_links=tuple(args.find_links),
        no_index=args.no_index,
        index_strategy=args.index_strategy or _setting("index-strategy", "first-index"),
        unreachable_index=args.unreachable_index or _setting("unreachable-index", "error"),
        cert=args.cert,
        trusted_hosts=tuple(args.trusted_host),
        timeout=args.timeout,
        retries=args.retries,
        cache_dir=Path(args.cache_dir) if args.cache_dir else None,
        no_cache=args.no_cache_dir,
        refresh=args.refresh,
        offline=args.offline,
    )


#: every resolution flag's attribute and its value when a command does not take the flag
_RESOLUTION_DEFAULTS: dict[str, object] = {
    "pre": False,
    "no_deps": False,
    "upgrade": False,
    "upgrade_package": [],
    "force_reinstall": False,
    "require_hashes": False,
    "only_binary": [],
    "no_binary": [],
    "build_timeout": None,
    "no_variants": False,
    "variant": [],
    "allow_fallback": False,
}


def add_resolution_arguments(
    parser: argparse.ArgumentParser, *, upgrade_help: str, fallback_help: str
) -> argparse._ArgumentGroup:
    """``--pre``, ``-U/--upgrade`` and ``--allow-fallback`` (``install``, ``lock``); the
    group, for a command's own choices."""
    choice = parser.add_argument_group("choosing versions")
    choice.add_argument("--pre", action="store_true", help="consider pre-releases")
    choice.add_argument("-U", "--upgrade", action="store_true", help=upgrade_help)
    choice.add_argument("--allow-fallback", action="store_true", help=fallback_help)
    taken = {action.dest for action in parser._actions}
    parser.set_defaults(**{k: v for k, v in _RESOLUTION_DEFAULTS.items() if k not in taken})
    return choice


def resolution_from(args: argparse.Namespace) -> ResolutionOptions:
    """How ``args`` choose versions, builds and variants (checked)."""
    if args.build_timeout is not None and not args.build_timeout > 0:
        raise UsageError("--build-timeout must be a positive number of seconds.")
    return ResolutionOptions(
        pre=args.pre,
        no_deps=args.no_deps,
        upgrade=args.upgrade,
        upgrade_packages=tuple(args.upgrade_package),
        force_reinstall=args.force_reinstall,
        require_hashes=args.require_hashes,
        no_binary=tuple(args.no_binary),
        only_binary=tuple(args.only_binary),
        build_timeout=args.build_timeout,
        no_variants=args.no_variants,
        forced_variants=forced_variants(args.variant),
        allow_fallback=args.allow_fallback,
    )


def forced_variants(values: list[str]) -> tuple[tuple[str, str], ...]:
    """``--variant NAME=LABEL`` values as (name, label) pairs, the last for a name winning."""
    out: dict[str, str] = {}
    for item in values:
        name, sep, label = item.partition("=")
        if not sep or not name.strip() or not label.strip():
            raise UsageError(f"--variant {item!r}: expected NAME=LABEL, e.g. torch=cuda12.8.")
        out[name.strip()] = label.strip()
    return tuple(out.items())


#: every placement flag's attribute and its value when a command does not take the flag
_PLACEMENT_DEFAULTS: dict[str, object] = {
    "link_mode": "hardlink",
    "compile": False,
    "allow_overwrite": False,
    "break_system_packages": False,
    "jobs": 4,
}


def add_placement_arguments(
    parser: argparse.ArgumentParser, group: argparse._ArgumentGroup, *, verb: str
) -> None:
    """``--break-system-packages``, ``--link-mode`` and ``-j/--jobs`` (``install``, ``sync``)
    in ``group``; ``verb`` says what the command does to an environment."""
    group.add_argument(
        "--break-system-packages", action="store_true",
        help=f"{verb} an interpreter that the operating system manages (PEP 668)",
    )  # fmt: skip
    group.add_argument(
        "--link-mode", choices=("copy", "hardlink"), default="hardlink",
        help="install files by hard-linking them from the unpacked-wheel cache (default; falls "
        "back to copying across filesystems; an installed file shares storage with the cache, "
        "as with uv) or by copying them",
    )  # fmt: skip
    group.add_argument(
        "-j", "--jobs", type=int, default=4, metavar="N",
        help="parallel downloads (default 4); unpacking, bound by the CPU, runs at most one wheel "
        "per processor whatever N is",
    )  # fmt: skip
    taken = {action.dest for action in parser._actions}
    parser.set_defaults(**{k: v for k, v in _PLACEMENT_DEFAULTS.items() if k not in taken})


def placement_from(args: argparse.Namespace) -> PlacementOptions:
    """How ``args`` place files (checked: at least one job)."""
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1.")
    return PlacementOptions(
        link_mode=args.link_mode,
        compile_bytecode=args.compile,
        allow_overwrite=args.allow_overwrite,
        break_system_packages=args.break_system_packages,
        jobs=args.jobs,
    )
