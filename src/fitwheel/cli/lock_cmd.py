"""``fitwheel lock``: one pylock.toml for several targets (see docs/locking.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fitwheel.errors import FitwheelError, UsageError

if TYPE_CHECKING:
    from collections.abc import Sequence

    from fitwheel.lock.document import Lock
    from fitwheel.lock.locking import LockOutcome
    from fitwheel.lock.targets import LockTarget
    from fitwheel.options import SourceOptions
    from fitwheel.torchbackend.settings import TorchSettings

HELP = "Resolve for several targets and write one pylock.toml."


def configure(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._sources import add_requirement_arguments

    add_requirement_arguments(parser, "lock")
    parser.add_argument(
        "-o", "--output", default="pylock.toml", metavar="FILE",
        help="the lock file to write (default: pylock.toml)",
    )  # fmt: skip
    targets = parser.add_argument_group("targets")
    targets.add_argument(
        "--profile", action="append", default=[], metavar="FILE", dest="profiles",
        help="a target's profile (from 'fitwheel detect --json'); repeat for each target "
        "(default with --check or --upgrade: the profiles the lock records)",
    )  # fmt: skip
    targets.add_argument(
        "--python-version", metavar="V", help="the targets' Python version (default: this one)"
    )
    targets.add_argument(
        "--platform", action="append", default=[], metavar="TAG",
        help="the targets' wheel platform tags, best first (default: from each profile)",
    )  # fmt: skip
    targets.add_argument("--gpu-policy", metavar="POLICY", help="all (default), any, device=N")
    targets.add_argument(
        "--enable-optional", action="append", default=[], metavar="NS",
        help="enable the optional provider of namespace NS",
    )  # fmt: skip
    targets.add_argument(
        "--enable-optional-all", action="store_true", help="enable every optional provider"
    )
    from fitwheel.cli._targets import add_variant_property_argument

    add_variant_property_argument(
        targets,
        help="say every target supports this property, after what its profile says for the "
        "same feature (repeatable; the lock records it as each target's answer for NS)",
    )
    from fitwheel.cli._sources import add_resolution_arguments, add_source_arguments

    add_source_arguments(parser)
    choice = add_resolution_arguments(
        parser,
        upgrade_help="take the newest allowed versions (default: keep the locked ones while "
        "they fit)",
        fallback_help="lock a build without GPU support for a target whose GPU no build fits",
    )
    choice.add_argument(
        "-P", "--upgrade-package", action="append", default=[], metavar="NAME",
        help="take the newest allowed version of NAME only",
    )  # fmt: skip
    choice.add_argument(
        "--check", action="store_true",
        help="write nothing; exit 1 with a summary when the lock is not what these inputs give",
    )  # fmt: skip
    from fitwheel.cli._torch import add_torch_arguments

    add_torch_arguments(parser)
    from fitwheel.cli._lockhosts import add_report_arguments

    add_report_arguments(parser)


def explain_lines(outcome: LockOutcome) -> list[str]:
    lines = [
        f"index left out, it could not be reached: {url}: {reason}"
        for url, reason in outcome.skipped_indexes.items()
    ]
    for target, resolution, router in zip(
        outcome.targets, outcome.resolutions, outcome.routers, strict=True
    ):
        lines.append(f"target {target.name} ({target.source}): {target.summary()}")
        if router is not None:
            lines += [f"  {line}" for line in router.explain_lines()]
        for cand in resolution.pins:
            trace = resolution.trace_of(cand)
            build = f" [{cand.label}]" if cand.label else ""
            lines.append(f"  {cand.name} {cand.version}{build}")
            if trace is None:
                continue
            for rank, label in enumerate(trace.ordered, 1):
                mark = "  <- locked" if cand.label == label else ""
                lines.append(f"    {rank}. {label}{mark}")
            if trace.has_plain_wheel:
                mark = "  <- locked" if cand.label is None else ""
                lines.append(f"    {len(trace.ordered) + 1}. (non-variant wheel){mark}")
            for label, reason in trace.rejected.items():
                lines.append(f"    rejected {label}: {reason}")
        for line in resolution.decisions:
            lines.append(f"  resolver: {line}")
    return lines


def report_json(outcome: LockOutcome, output: str) -> dict[str, Any]:
    targets = []
    for target, resolution, router in zip(
        outcome.targets, outcome.resolutions, outcome.routers, strict=True
    ):
        packages = []
        for cand in resolution.pins:
            packages.append(
                {
                    "name": str(cand.name),
                    "version": str(cand.version),
                    "filename": cand.link.filename,
                    "variant_label": cand.label,
                    "variant_properties": cand.variant.as_dict() if cand.variant else {},
                }
            )
        targets.append(
            {
                "name": target.name,
                "profile": target.source,
                "marker": target.marker,
                "summary": target.summary(),
                "torch_backend": router.report() if router is not None else None,
                "packages": packages,
            }
        )
    return {
        "fitwheel_report": 1,
        "lock": output,
        "indexes": list(outcome.config.index_urls),
        "find_links": list(outcome.config.find_links),
        # the indexes left out because they could not be reached (--unreachable-index warn)
        "unreachable_indexes": [
            {"url": url, "error": reason} for url, reason in outcome.skipped_indexes.items()
        ],
        "targets": targets,
    }


def _previous(path: Path) -> Lock | None:
    from fitwheel.lock.document import read_lock

    return read_lock(str(path)) if path.exists() else None


def _torch_settings(args: argparse.Namespace, previous: Lock | None, output: Path) -> TorchSettings:
    """The torch settings in force (flags over environment over files); where none is given,
    the backend and index root the lock was made with, so that ``lock --check`` and
    ``lock --upgrade`` re-lock as before."""

    from fitwheel.cli._torch import torch_settings_of

    settings = torch_settings_of(args)
    if previous is None:
        return settings
    recorded = previous.torch_backend_requested()
    if settings.backend is None and recorded:
        settings = settings._replace(
            backend=recorded, backend_origin=f"{output} (the backend it was locked with)"
        )
    if previous.torch_index_url and settings.index_url_origin == "the default":
        settings = settings._replace(
            index_url=previous.torch_index_url,
            index_url_origin=f"{output} (the index root it was locked with)",
        )
    return settings


def _with_plugins(lock: Lock, targets: Sequence[LockTarget], sources: SourceOptions) -> Lock:
    """The lock with the variant provider plugins whose answers the targets' profiles hold."""
    from fitwheel.cli._plugins import locked_plugins, plugins_named

    profiles = [t.profile for t in targets]
    if not plugins_named(profiles):
        return lock
    import dataclasses
    import os

    plugins = locked_plugins(profiles, sources=sources, env=os.environ)
    return dataclasses.replace(lock, plugins=plugins)


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._lockhosts import lock_targets
    from fitwheel.lock.locking import LockRequest, diff_summary, run_lock

    output = Path(args.output)
    try:
        previous = _previous(output)
    except FitwheelError:
        if args.check:
            raise
        previous = None  # an unreadable old lock is replaced; only its preferences are lost
    if args.check and previous is None:
        raise UsageError(f"--check needs the lock to check: {output} does not exist.")
    requirements = list(args.requirements)
    profiles = list(args.profiles)
    if previous is not None and not requirements and not args.requirement_files:
        requirements = list(previous.requirements)
    if previous is not None and not profiles:
        profiles = [t.profile for t in previous.targets if t.profile]
    if not requirements and not args.requirement_files:
        raise UsageError("name at least one requirement, or pass -r FILE.")
    enabled: frozenset[str] | bool = (
        True if args.enable_optional_all else frozenset(args.enable_optional)
    )
    targets = lock_targets(
        profiles,
        python_version=args.python_version,
        platforms=args.platform,
        gpu_policy=args.gpu_policy,
        enabled=enabled,
        variant_properties=args.variant_property,
    )
    from fitwheel.cli._sources import resolution_from, sources_from

    request = LockRequest(
        requirements=requirements,
        requirement_files=args.requirement_files,
        constraint_files=args.constraint_files,
        sources=sources_from(args),
        resolution=resolution_from(args),
        torch=_torch_settings(args, previous, output),
    )
    outcome = run_lock(request, targets, None if args.upgrade else previous)
    outcome.lock = _with_plugins(outcome.lock, targets, request.sources)
    from fitwheel.cli._reporting import reporter_for

    reporter = reporter_for(args)
    for warning in outcome.warnings:
        reporter.warning(warning)
    for line in outcome.notices:
        reporter.notice(f"fitwheel: {line}")
    if args.explain:
        print("\n".join(explain_lines(outcome)))
    if args.report:
        text = json.dumps(report_json(outcome, str(output)), indent=2) + "\n"
        if args.report == "-":
            sys.stdout.write(text)
        else:
            Path(args.report).write_text(text, encoding="utf-8")
    text = outcome.lock.dumps()
    if args.check:
        assert previous is not None
        current = output.read_text(encoding="utf-8")
        if current == text:
            if not args.quiet and args.report != "-":
                print(f"{output} is up to date for {len(targets)} targets.")
            return 0
        lines = diff_summary(previous, outcome.lock)
        print(f"{output} is out of date:", file=sys.stderr)
        for line in lines:
            print(f"  {line}", file=sys.stderr)
        print("Run 'fitwheel lock' with the same arguments to update it.", file=sys.stderr)
        return 1
    from fitwheel.fs import atomic_write

    atomic_write(output, text.encode("utf-8"))
    if not args.quiet and args.report != "-":
        count = len(outcome.lock.packages)
        files = sum(len(p.wheels) for p in outcome.lock.packages)
        names = ", ".join(t.name for t in targets)
        print(f"Locked {count} packages ({files} files) for {len(targets)} targets ({names}) "
              f"in {output}")  # fmt: skip
    return 0
