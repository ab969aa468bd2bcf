"""Entry point of the ``fitwheel`` command.

Only the command table lives here; each command module is imported when it runs, so that
``fitwheel --help`` and ``fitwheel detect`` start without loading the resolver, HTTP or rich.
A command module provides ``HELP`` (one line), ``configure(parser)`` and ``run(args) -> int``.
"""

from __future__ import annotations

import argparse
import importlib
import importlib.util
import sys
from collections.abc import Sequence
from typing import NoReturn

from fitwheel import __version__

#: command name -> (module, one-line help); order is the order of ``--help``.
COMMANDS: dict[str, tuple[str, str]] = {
    "detect": ("fitwheel.cli.detect_cmd", "Show what this machine (or a sysroot) supports."),
    "select": ("fitwheel.cli.select_cmd", "Order the variants of a variants.json for a target."),
    "install": ("fitwheel.cli.install_cmd", "Install packages, choosing the variant that fits."),
    "variant": ("fitwheel.cli.variant_cmd", "Make, show or strip variant wheels."),
    "index": ("fitwheel.cli.index_cmd", "Build a static variant-aware package index."),
}


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {message}\n")


def _available() -> dict[str, tuple[str, str]]:
    return {
        name: entry
        for name, entry in COMMANDS.items()
        if importlib.util.find_spec(entry[0]) is not None
    }


def _top_parser(commands: dict[str, tuple[str, str]]) -> _Parser:
    lines = "\n".join(f"  {name:<10} {help_}" for name, (_, help_) in commands.items())
    parser = _Parser(
        prog="fitwheel",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Install the right hardware-specific build of Python packages.",
        epilog=f"commands:\n{lines}\n\nRun 'fitwheel COMMAND --help' for a command's options.",
        usage="fitwheel [--version] [--debug] COMMAND [ARGS...]",
    )
    parser.add_argument("--version", action="version", version=f"fitwheel {__version__}")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of failures")
    parser.add_argument("command", nargs="?", metavar="COMMAND")
    parser.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    commands = _available()
    top = _top_parser(commands)
    ns = top.parse_args(argv)
    if ns.command is None:
        top.print_help()
        return 2
    if ns.command not in commands:
        top.error(f"unknown command {ns.command!r} (choose from {', '.join(commands)})")
    module = importlib.import_module(commands[ns.command][0])
    parser = _Parser(prog=f"fitwheel {ns.command}", description=commands[ns.command][1])
    parser.add_argument("--debug", action="store_true", help="show tracebacks of failures")
    module.configure(parser)
    args = parser.parse_args(ns.args)
    args.debug = args.debug or ns.debug
    return run_guarded(module.run, args)


def run_guarded(func: object, args: argparse.Namespace) -> int:
    """Run a command; user-facing failures become one paragraph on stderr and exit status 1."""
    from fitwheel.errors import FitwheelError
    from fitwheel.variants.errors import VariantError

    try:
        result = func(args)  # type: ignore[operator]
        return int(result or 0)
    except (FitwheelError, VariantError) as exc:
        if args.debug:
            raise
        print(f"fitwheel: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 1)
    except KeyboardInterrupt:
        print("fitwheel: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 1
