"""``fitwheel uninstall``: remove installed distributions, all of them or none, under the same
lock and journal as ``install``; asks before removing unless ``-y``, as pip does."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fitwheel.errors import FitwheelError, UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.place.uninstall import Removal
    from fitwheel.reporter import Reporter

HELP = "Uninstall packages (all of them or none)."


def configure(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._targets import add_python_argument

    parser.add_argument("names", nargs="*", metavar="NAME", help="an installed package")
    parser.add_argument(
        "-r",
        "--requirement",
        action="append",
        default=[],
        metavar="FILE",
        dest="requirement_files",
        help="uninstall the packages a requirements file names",
    )
    parser.add_argument(
        "-y", "--yes", action="store_true", help="do not ask before removing the files"
    )
    add_python_argument(parser, verb="uninstall from")


def _shown(removal: Removal, env: TargetEnvironment) -> list[str]:
    """The paths to remove, a package folder as ``folder/*`` (as pip prints them)."""
    sites = [Path(d) for d in env.site_dirs]
    out: set[str] = set()
    for path in removal.files:
        for site in sites:
            if path.is_relative_to(site):
                top = path.relative_to(site).parts[0]
                out.add(str(site / top) + ("/*" if (site / top).is_dir() else ""))
                break
        else:
            out.add(str(path))
    return sorted(out)


def _ask(removals: list[Removal], env: TargetEnvironment, quiet: bool) -> bool:
    if not quiet:
        for removal in removals:
            dist = removal.dist
            print(f"Found existing installation: {dist.name} {dist.version}")
            print(f"Uninstalling {dist.name}-{dist.version}:")
            print("  Would remove:")
            for line in _shown(removal, env):
                print(f"    {line}")
    sys.stdout.write("Proceed (Y/n)? ")
    sys.stdout.flush()
    answer = sys.stdin.readline()
    if not sys.stdin.isatty():
        print()  # the answer was not echoed
    if not answer:
        raise FitwheelError(
            "uninstall asks before removing anything, and there was no answer (the input is "
            "closed): pass -y to remove without asking. Nothing was removed."
        )
    return answer.strip().lower() in ("", "y", "yes")


def _names_in(files: list[str], reporter: Reporter) -> list[str]:
    """The projects the requirements ``files`` name, as pip's uninstall takes them: index and
    other options are read and left aside, a line that names no project (a folder, an archive
    URL without ``#egg=``) is skipped with a warning."""
    from fitwheel.resolve.reqforms import Named
    from fitwheel.resolve.requirements import collect

    user = collect([], files, allow_pending=True)
    names: list[str] = []
    for item in user.requirements:
        if item.source_path is not None and item.source_path.is_dir():
            reporter.warning(
                f"skipping {item.origin}: {item.source_path} is a project folder, which names "
                "no installed package; name the package instead"
            )
        else:
            names.append(item.requirement.name)
    for line in user.pending:
        form = line.form
        name = form.requirement.name if isinstance(form, Named) else form.name
        if name is None:
            reporter.warning(
                f"skipping {line.origin}: {line.text} names no project; name the package instead"
            )
        else:
            names.append(name)
    return names


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._reporting import reporter_for
    from fitwheel.cli._targets import target_environment
    from fitwheel.install.place.uninstall import uninstall

    reporter = reporter_for(args)
    names = list(args.names)
    if args.requirement_files:
        names += _names_in(args.requirement_files, reporter)
    if not names:
        raise UsageError("name at least one package to uninstall, or pass -r FILE.")
    env = target_environment(args)
    if env.externally_managed:
        raise FitwheelError(
            f"{env.python} belongs to the operating system's Python, whose packages the "
            "system package manager owns (PEP 668): remove them with that package manager."
        )

    def confirm(removals: list[Removal]) -> bool:
        return _ask(removals, env, args.quiet)

    result = uninstall(
        env,
        names,
        confirm=None if args.yes else confirm,
        reporter=reporter,
    )
    for note in result.notes:
        print(f"fitwheel: {note}", file=sys.stderr)
    for name in result.not_installed:
        reporter.warning(f"skipping {name}: it is not installed")
    if result.cancelled:
        print("Nothing was removed.")
        return 0
    if not args.quiet:
        for removal in result.removed:
            print(f"  Successfully uninstalled {removal.dist.name}-{removal.dist.version}")
    return 0
