"""``fitwheel install``: install packages, choosing the variant that fits the target.

Option names follow pip's. Heavy modules (resolver, HTTP, rich) are imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import UsageError

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fitwheel.install.place.core import InstallResult
    from fitwheel.install.remembered import Recall
    from fitwheel.install.request import InstallRequest
    from fitwheel.install.workflow import InstallOutcome
    from fitwheel.options import PlacementOptions
    from fitwheel.platform.profile import Profile
    from fitwheel.reporter import Reporter
    from fitwheel.variants.ordering import Target

HELP = "Install packages, choosing the variant that fits."


def configure(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._sources import add_source_arguments
    from fitwheel.cli._targets import add_target_arguments
    from fitwheel.cli._torch import add_torch_arguments

    _add_inputs(parser)
    add_source_arguments(parser, caching=True)
    _add_target(parser)
    add_target_arguments(parser)
    add_torch_arguments(parser)
    _add_variants(parser)
    _add_choices(parser)
    _add_output(parser)


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._sources import add_requirement_arguments

    add_requirement_arguments(parser, "install", editables=True)


def _add_target(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._sources import add_placement_arguments

    target = parser.add_argument_group("target")
    target.add_argument(
        "--python", metavar="PATH",
        help="interpreter or virtual environment to install into (default: the "
        "active virtual environment)",
    )  # fmt: skip
    add_placement_arguments(parser, target, verb="install into")
    target.add_argument(
        "--allow-overwrite", action="store_true",
        help="let a wheel replace files that another installed distribution owns (refused "
        "by default; the environment's own files are always refused)",
    )  # fmt: skip
    places = target.add_mutually_exclusive_group()
    places.add_argument(
        "-t", "--target", metavar="DIR", dest="target_dir",
        help="install into DIR (made if missing) instead of the environment, as pip does: the "
        "packages at its top, scripts in DIR/bin; what the environment has is not looked at, "
        "and an entry DIR has already is kept, with a warning, unless --upgrade replaces it",
    )  # fmt: skip
    places.add_argument(
        "--prefix", metavar="DIR",
        help="install under DIR with the interpreter's install scheme (DIR/lib/pythonX.Y/"
        "site-packages, DIR/bin), as pip does; what is installed there counts as installed",
    )  # fmt: skip


def _add_variants(parser: argparse.ArgumentParser) -> None:
    variants = parser.add_argument_group("variants")
    variants.add_argument(
        "--no-variants", action="store_true",
        help="ignore variant wheels; install non-variant wheels only",
    )  # fmt: skip
    variants.add_argument(
        "--variant", action="append", default=[], metavar="NAME=LABEL",
        help="install this variant of NAME without checking the target",
    )  # fmt: skip


def _add_choices(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._sources import add_resolution_arguments

    choice = add_resolution_arguments(
        parser,
        upgrade_help="upgrade the named packages to the newest allowed versions",
        fallback_help="accept a build without GPU support when none fits the GPU here",
    )
    choice.add_argument("--no-deps", action="store_true", help="do not install dependencies")
    choice.add_argument(
        "--force-reinstall", action="store_true",
        help="reinstall even what is already installed as chosen, checking the cached copies "
        "of its files first (one edited through a hard link is unpacked afresh)",
    )  # fmt: skip
    choice.add_argument(
        "--require-hashes", action="store_true",
        help="require a pinned version and --hash for every distribution",
    )  # fmt: skip
    choice.add_argument(
        "--only-binary", action="append", default=[], metavar="NAMES",
        help="never build these packages from source (comma-separated names, :all: or :none:; "
        "as pip)",
    )  # fmt: skip
    choice.add_argument(
        "--no-binary", action="append", default=[], metavar="NAMES",
        help="build these packages from their source distributions instead of using wheels "
        "(comma-separated names, :all: or :none:; as pip)",
    )  # fmt: skip
    choice.add_argument(
        "--build-timeout", type=float, default=None, metavar="SECONDS",
        help="how long each step of a source build may run (default 900)",
    )  # fmt: skip


def _add_output(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._verify import add_verify_argument

    out = parser.add_argument_group("output")
    out.add_argument("--dry-run", action="store_true", help="resolve and report; change nothing")
    out.add_argument(
        "--explain", action="store_true",
        help="show every variant considered, why others were rejected, and where "
        "the target's values came from",
    )  # fmt: skip
    out.add_argument("--report", metavar="FILE", help="write a JSON report ('-' for stdout)")
    out.add_argument("--compile", action="store_true", help="byte-compile installed modules")
    add_verify_argument(out, "installing")


def _target(
    args: argparse.Namespace, need_hardware: bool = False, cache_dir: Path | None = None
) -> tuple[Target | None, Profile | None, str]:
    if args.no_variants and not need_hardware:
        return None, None, "variants disabled"
    from fitwheel.cli._targets import resolve_target

    resolved = resolve_target(args, cache_dir=cache_dir)
    # Markers are evaluated against the interpreter installed into (--python), which the
    # workflow inspects; the profile's environment (the running one's) must not stand in for it.
    return resolved.target.replace(environment=None), resolved.profile, resolved.description


def _summary(
    rows: list[tuple[str, str, str | None, str]], installed: InstallResult | None, dry_run: bool
) -> list[str]:
    """The closing lines: ``rows`` are (name, version, variant label, action) as planned."""
    lines = []
    verb = "Would install" if dry_run else "Installed"

    def show(row: tuple[str, str, str | None, str]) -> str:
        label = f" [{row[2]}]" if row[2] else ""
        return f"{row[0]} {row[1]}{label}"

    fresh = [show(r) for r in rows if r[3] != "keep"]
    kept = [show(r) for r in rows if r[3] == "keep"]
    if fresh:
        lines.append(f"{verb}: " + ", ".join(fresh))
    if kept:
        lines.append("Already installed: " + ", ".join(kept))
    if installed is not None:
        lines += installed.notes
        if installed.removed:
            lines.append("Replaced: " + ", ".join(installed.removed))
    return lines


def _planned_rows(outcome: InstallOutcome) -> list[tuple[str, str, str | None, str]]:
    return [
        (str(p.candidate.name), str(p.candidate.version), p.candidate.label, p.action)
        for p in outcome.planned
    ]


class _Options:
    """The records an install's flags fill (:mod:`fitwheel.options`)."""

    def __init__(self, args: argparse.Namespace) -> None:
        from fitwheel.cli._sources import placement_from, resolution_from, sources_from
        from fitwheel.cli._torch import torch_settings_of

        self.resolution = resolution_from(args)
        self.placement = placement_from(args)
        self.sources = sources_from(args)
        self.torch = torch_settings_of(args)


def _request(args: argparse.Namespace, options: _Options) -> InstallRequest:
    from fitwheel.install.request import InstallRequest

    return InstallRequest(
        requirements=args.requirements,
        requirement_files=args.requirement_files,
        constraint_files=args.constraint_files,
        editables=args.editables,
        python=args.python,
        dry_run=args.dry_run,
        sources=options.sources,
        resolution=options.resolution,
        placement=options.placement,
        torch=options.torch,
        target_dir=args.target_dir,
        prefix=args.prefix,
    )


def _recall(
    args: argparse.Namespace,
    request: InstallRequest,
    target: Target | None,
    profile: Profile | None,
) -> Recall | None:
    """The remembered resolutions as this install uses them, or None (see
    :mod:`fitwheel.install.replay`); the outputs that need the resolution rule them out (a
    ``--report`` is written from the record)."""
    if not _recall_possible(args, request):
        return None
    import os

    from fitwheel.install.replay import recall_for

    return recall_for(request, env=os.environ, target=(target, profile))


def _replayed(
    args: argparse.Namespace, recall: Recall, placement: PlacementOptions, reporter: Reporter
) -> bool:
    """Install what a valid record says, and print as a full install would; False: none."""
    replayed = recall.replay(
        dry_run=args.dry_run,
        link_mode=placement.link_mode,
        allow_overwrite=placement.allow_overwrite,
        break_system_packages=placement.break_system_packages,
        compile_bytecode=placement.compile_bytecode,
        reporter=reporter,
        report=bool(args.report),
    )
    if replayed is None:
        return False
    for warning in replayed.record.warnings:
        reporter.warning(warning)
    if args.report and replayed.record.report is not None:
        # what this run did, not what was decided: a replay fetches nothing early
        _write_report(args.report, {**replayed.record.report, "speculative": None})
    if not args.quiet and args.report != "-":
        rows = [(p.name, p.version, p.label, p.action) for p in replayed.record.plan]
        for line in _summary(rows, replayed.installed, args.dry_run):
            print(line)
    return True


def _recall_possible(args: argparse.Namespace, request: InstallRequest) -> bool:
    """Whether a remembered resolution may answer this install (its records still to be
    looked up)."""
    if args.explain or args.verify or args.target_dir or args.prefix:
        return False
    import os

    from fitwheel.install.replay import rememberable

    return rememberable(request, os.environ)


def run(args: argparse.Namespace) -> int:
    if not args.requirements and not args.requirement_files and not args.editables:
        raise UsageError("name at least one requirement, or pass -r FILE.")
    options = _Options(args)
    request = _request(args, options)
    target, profile, description = _target(
        args, options.torch.backend == "auto", options.sources.cache_dir
    )
    recall = _recall(args, request, target, profile)
    from fitwheel.cli._reporting import reporter_for

    reporter = reporter_for(args)
    try:
        if recall is not None and _replayed(args, recall, options.placement, reporter):
            return 0
        request.remember = recall is not None
        outcome = _install(request, recall, target, profile, reporter)
    finally:
        reporter.close()
    _show(args, outcome, profile, description)
    return 0


def _install(
    request: InstallRequest,
    recall: Recall | None,
    target: Target | None,
    profile: Profile | None,
    reporter: Reporter,
) -> InstallOutcome:
    """The full install: resolve, fetch, build and place (and keep it for a replay)."""
    from fitwheel.install.workflow import run_install

    outcome = run_install(request, target=target, profile=profile, reporter=reporter)
    if recall is not None:
        if outcome.installed is not None and recall.recovered:
            outcome.installed.notes[:0] = recall.recovered
        from fitwheel.install.report import report_json

        # kept with the record, so that an install asking for the report is replayed too
        recall.keep(outcome, report_json(outcome, profile))
    return outcome


def _show(
    args: argparse.Namespace, outcome: InstallOutcome, profile: Profile | None, description: str
) -> None:
    """``--explain``, ``--report``, the summary and ``--verify`` (the warnings were given
    while the install ran)."""
    if args.explain or args.report:  # the report module is loaded for these only
        _show_resolution(args, outcome, profile, description)
    if not args.quiet and args.report != "-":
        for line in _summary(_planned_rows(outcome), outcome.installed, args.dry_run):
            print(line)
    if args.verify and not args.dry_run:
        _verify(args, outcome, profile)


def _show_resolution(
    args: argparse.Namespace, outcome: InstallOutcome, profile: Profile | None, description: str
) -> None:
    from fitwheel.install.report import explain_lines, report_json

    if args.explain:
        if outcome.router is not None:
            print("\n".join(outcome.router.explain_lines()))
        for line in outcome.gpu_builds:
            print(f"gpu build without the gpu: {line}")
        print("\n".join(explain_lines(outcome, profile, description)))
        for line in outcome.resolution.decisions:
            print(f"  resolver: {line}")
    if args.report:
        _write_report(args.report, report_json(outcome, profile))


def _write_report(where: str, report: Mapping[str, object]) -> None:
    """The ``--report`` JSON, to the file ``where`` (``-``: standard output)."""
    text = json.dumps(report, indent=2) + "\n"
    if where == "-":
        sys.stdout.write(text)
    else:
        Path(where).write_text(text, encoding="utf-8")


def _verify(args: argparse.Namespace, outcome: InstallOutcome, profile: Profile | None) -> None:
    """``--verify``: doctor's static checks on the distributions this install chose."""
    from fitwheel.cli._verify import verify

    names = [str(p.candidate.name) for p in outcome.planned]
    verify(
        args,
        outcome.environment,
        profile,
        names,
        action="install",
        requirements=not args.no_deps,
        quiet=args.quiet,
        cache_dir=Path(args.cache_dir) if args.cache_dir else None,
    )
