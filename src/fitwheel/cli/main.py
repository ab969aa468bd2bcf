"""Entry point of the ``fitwheel`` command.

Only the command table lives here; each command module is imported when it runs, so that
``fitwheel --help`` and ``fitwheel detect`` start without loading the resolver, HTTP or rich.
A command module provides ``HELP`` (one line), ``configure(parser)`` and ``run(args) -> int``.

Every command parser, and every sub-command parser a module adds under it, carries the common
options (``--debug``, ``-q/--quiet``): :class:`_CommandParser` adds them itself, and argparse makes
sub-parsers of their parent's class.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from fitwheel import __version__

# ``typing`` stays unimported at run time: every command starts here. Type checkers treat a name
# spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

#: command name -> (module, one-line help); order is the order of ``--help``.
COMMANDS: dict[str, tuple[str, str]] = {
    "detect": ("fitwheel.cli.detect_cmd", "Show what this machine (or a sysroot) supports."),
    "select": ("fitwheel.cli.select_cmd", "Order the variants of a variants.json for a target."),
    "install": ("fitwheel.cli.install_cmd", "Install packages, choosing the variant that fits."),
    "download": (
        "fitwheel.cli.download_cmd",
        "Download the files an install for a target would use.",
    ),
    "uninstall": ("fitwheel.cli.uninstall_cmd", "Uninstall packages (all of them or none)."),
    "list": ("fitwheel.cli.list_cmd", "List installed packages, with their variants."),
    "freeze": ("fitwheel.cli.freeze_cmd", "Print installed packages as requirements."),
    "show": ("fitwheel.cli.show_cmd", "Show installed packages, with their variants."),
    "check": ("fitwheel.cli.check_cmd", "Check installed packages' dependencies."),
    "variant": ("fitwheel.cli.variant_cmd", "Make, show or strip variant wheels."),
    "index": ("fitwheel.cli.index_cmd", "Build a static variant-aware package index."),
    "cache": ("fitwheel.cli.cache_cmd", "Show, verify, clean or prune fitwheel's cache."),
    "lock": ("fitwheel.cli.lock_cmd", "Resolve for several targets and write one pylock.toml."),
    "sync": ("fitwheel.cli.sync_cmd", "Install exactly the locked files that fit this host."),
    "export": ("fitwheel.cli.export_cmd", "Write one target's locked files as requirements."),
    "bundle": ("fitwheel.cli.bundle_cmd", "Bundle locked files, the lock and an index offline."),
    "doctor": ("fitwheel.cli.doctor_cmd", "Check that the installed builds run on this machine."),
    "torch": (
        "fitwheel.cli.torch_cmd",
        "Refresh the cached table of PyTorch's per-backend indexes.",
    ),
    "config": (
        "fitwheel.cli.config_cmd",
        "Show or change fitwheel's settings (torch-backend, ...).",
    ),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")

    def _get_formatter(self) -> argparse.HelpFormatter:
        # argparse makes a formatter for every add_argument call (to check nargs); left to size
        # itself, each would import shutil, and with it bz2, lzma and zlib, on every start.
        # Every formatter class of argparse takes ``width``; typeshed's protocol names only prog.
        return self.formatter_class(prog=self.prog, width=_terminal_columns() - 2)  # type: ignore[call-arg]


class _CommandParser(_Parser):
    """A command's parser; it and every sub-parser made from it get the common options."""

    def __init__(self, *args: object, common_defaults: bool = False, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        add_common_arguments(self, defaults=common_defaults)


def add_common_arguments(parser: argparse.ArgumentParser, *, defaults: bool = True) -> None:
    """``--debug`` and ``-q/--quiet``. Without ``defaults`` (a sub-command's parser) an option
    not given leaves the value its parent parsed (``fitwheel variant --debug make``) alone."""
    unset: object = False if defaults else argparse.SUPPRESS
    common = parser.add_argument_group("common options")
    common.add_argument(
        "--debug", action="store_true", help="show tracebacks of failures", default=unset
    )
    common.add_argument(
        "-q",
        "--quiet",
        action="count",
        help="print results, warnings and errors only: no progress bars or notices (-qq: no "
        "warnings either), as pip's levels",
        default=0 if defaults else argparse.SUPPRESS,
    )


def _terminal_columns() -> int:
    """The width shutil.get_terminal_size() reports: $COLUMNS, else the terminal's, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS") or 0)
    except ValueError:
        columns = 0
    stream = sys.__stdout__
    if columns <= 0 and stream is not None:
        try:
            columns = os.get_terminal_size(stream.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


def _top_parser(commands: dict[str, tuple[str, str]]) -> _Parser:
    lines = "\n".join(f"  {name:<10} {help_}" for name, (_, help_) in commands.items())
    parser = _Parser(
        prog="fitwheel",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Install the right hardware-specific build of Python packages.",
        epilog=f"commands:\n{lines}\n\nRun 'fitwheel COMMAND --help' for a command's options.",
        usage="fitwheel [--version] [--debug] [-q] COMMAND [ARGS...]",
    )
    parser.add_argument("--version", action="version", version=f"fitwheel {__version__}")
    add_common_arguments(parser)
    parser.add_argument("command", nargs="?", metavar="COMMAND", help=argparse.SUPPRESS)
    parser.add_argument("args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in COMMANDS:
        # The usual call starts with the command: the top-level parser would only hand the
        # rest over, so it is not built.
        command, rest, debug, quiet = argv[0], argv[1:], False, 0
    else:
        top = _top_parser(COMMANDS)
        ns = top.parse_args(argv)
        if ns.command is None:
            top.print_help()
            return 2
        if ns.command not in COMMANDS:
            top.error(f"unknown command {ns.command!r} (choose from {', '.join(COMMANDS)})")
        command, rest, debug, quiet = ns.command, ns.args, ns.debug, ns.quiet
    module_name, help_ = COMMANDS[command]
    module = importlib.import_module(module_name)
    parser = command_parser(command, module, help_)
    args = parser.parse_args(rest)
    args.debug = args.debug or debug
    args.quiet = max(args.quiet, quiet)
    return run_guarded(module.run, args)


def command_parser(command: str, module: object, help_: str) -> argparse.ArgumentParser:
    """The parser of ``fitwheel COMMAND``: the common options plus what ``module`` configures."""
    parser = _CommandParser(prog=f"fitwheel {command}", description=help_, common_defaults=True)
    module.configure(parser)  # type: ignore[attr-defined]
    return parser


def entry() -> None:
    """The ``fitwheel`` program: :func:`main`, then an exit that skips the interpreter's
    teardown (freeing every object one by one, joining idle prefetch threads), which can take
    longer than a quick command itself. Every command has closed its files by then; the
    standard streams are flushed here.

    The cyclic garbage collector runs rarely: nearly everything a command makes is freed by
    reference counting or lives until the exit (modules, classes, the resolver's answers), so
    its frequent passes over the young objects found next to nothing while costing several
    percent of the CPU of a cold install. It is not turned off: a command that does make
    cycles (a long lock, a big index build) still has its memory bounded, at one pass per
    50,000 new objects."""
    import gc

    gc.set_threshold(50_000, 20, 20)
    try:
        code = main()
    except KeyboardInterrupt:
        # Ctrl-C before the command's own handling began (while its modules load), or a
        # second one while it said so: said as an interrupt, never as a traceback
        code = _interrupted()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (BrokenPipeError, ValueError):
        code = code or 1
    except KeyboardInterrupt:  # Ctrl-C at the very end: the command's work is done
        code = 130
    os._exit(code)


def _interrupted() -> int:
    """Say that the command was interrupted; its exit status (130, as a shell gives for
    SIGINT). Another Ctrl-C while this is said changes nothing."""
    import contextlib  # loaded only when interrupted: every command starts here

    with contextlib.suppress(KeyboardInterrupt, OSError, ValueError):
        print("fitwheel: interrupted", file=sys.stderr)
    return 130


def _warnings_as_notices() -> None:
    """A library's warning (fitwheel's own layers warn through their reporter) reaches the
    user as the reporter's warning line, without Python's file and line."""
    import warnings  # already loaded by the interpreter at start-up

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: object = None,
        line: str | None = None,
    ) -> None:
        from fitwheel.cli._reporting import ConsoleReporter  # loaded when a library warns

        ConsoleReporter().warning(str(message))

    warnings.showwarning = show


def run_guarded(func: object, args: argparse.Namespace) -> int:
    """Run a command; user-facing failures become one paragraph on stderr and exit status 1."""
    from fitwheel.errors import FitwheelError
    from fitwheel.variants.errors import VariantError

    _warnings_as_notices()
    try:
        result = func(args)  # type: ignore[operator]
        return int(result or 0)
    except (FitwheelError, VariantError) as exc:
        if args.debug:
            raise
        print(f"fitwheel: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    except KeyboardInterrupt:
        # fitwheel.threads.Cancelled too: a worker thread that saw the interrupt first
        return _interrupted()
    except BrokenPipeError:
        return 1
    except OSError as exc:
        # A disk, permission or network failure that no layer turned into its own message.
        if args.debug:
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        print(f"fitwheel: error: {exc.strerror or exc}{where}", file=sys.stderr)
        return 1
    except Exception as exc:
        if args.debug:
            raise
        print(
            f"fitwheel: internal error: {type(exc).__name__}: {exc}. This is a bug in fitwheel; "
            "run the command again with --debug and report the traceback.",
            file=sys.stderr,
        )
        return 1
