"""``fitwheel download``: the files an install for a target would use, saved into a folder
(see :mod:`fitwheel.lock.downloading` and docs/installing.md)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import UsageError

if TYPE_CHECKING:
    from fitwheel.lock.downloading import DownloadOutcome
    from fitwheel.lock.targets import LockTarget

HELP = "Download the files an install for a target would use."

_EPILOG = """\
examples:
  # torch for a Windows box with an NVIDIA GPU, from this Linux machine (its driver picks
  # the CUDA build; a profile is what 'fitwheel detect --json' saves on that box)
  fitwheel download torch -d wheels --profile windows-rtx4090.json --torch-backend auto

  # the variant wheels a GPU server takes, chosen for its profile
  fitwheel download -r requirements.txt -d wheels --profile h100.json

  # for this machine and interpreter (as pip download), then install offline
  fitwheel download numpy -d wheels
  fitwheel install --no-index -f wheels numpy

Without --profile, --sysroot, --python-version or --platform the target is this machine and
the Python fitwheel runs under, and the files are those 'pip download' saves (a project with
source distributions only is saved as its sdist). For another target only wheels are saved, as
with 'pip download --only-binary :all:': a project with source distributions only is refused by
name. A file already in DIR with the right sha256 is kept; one of the same name with other
contents is an error (remove it, or use another folder).
"""


def configure(parser: argparse.ArgumentParser) -> None:
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = _EPILOG
    from fitwheel.cli._sources import add_requirement_arguments

    add_requirement_arguments(parser, "download")
    parser.add_argument(
        "-d", "--dest", required=True, metavar="DIR",
        help="the folder to save the files into (made if missing; its parent must exist)",
    )  # fmt: skip
    from fitwheel.cli._targets import add_target_arguments

    add_target_arguments(parser)
    parser.add_argument(
        "--python-version", metavar="X.Y", help="the target's Python version (default: this one)"
    )
    parser.add_argument(
        "--platform", action="append", default=[], metavar="TAG",
        help="the target's wheel platform tags, best first (repeatable; default: from the "
        "profile, else this machine's)",
    )  # fmt: skip
    from fitwheel.cli._sources import add_source_arguments

    add_source_arguments(parser)
    choice = parser.add_argument_group("choosing versions")
    choice.add_argument("--pre", action="store_true", help="consider pre-releases")
    choice.add_argument(
        "--no-deps", action="store_true", help="download the named projects, not dependencies"
    )
    choice.add_argument(
        "--allow-fallback", action="store_true",
        help="take a build without GPU support for a target whose GPU no build fits",
    )  # fmt: skip
    from fitwheel.cli._torch import add_torch_arguments

    add_torch_arguments(parser)
    out = parser.add_argument_group("output")
    out.add_argument(
        "--dry-run", action="store_true", help="list what would be saved; save nothing"
    )
    out.add_argument("--report", metavar="FILE", help="write a JSON report ('-' for stdout)")
    out.add_argument("-j", "--jobs", type=int, default=4, metavar="N", help="parallel downloads")


def download_target(args: argparse.Namespace, cache_dir: Path | None) -> LockTarget:
    """The target ``args`` name: a profile, a sysroot or this machine (detected), at the
    Python version and platforms given (default: this interpreter's, the profile's)."""
    from fitwheel.cli._targets import resolve_target, sysroot_of
    from fitwheel.lock.targets import make_target, target_name

    resolved = resolve_target(args, cache_dir=cache_dir)
    profile = resolved.profile
    if not args.profile and sysroot_of(args) is None:
        # this machine's detected marker values are the running interpreter's: the target's
        # come from it with --python-version and --platform on top (make_target's rule)
        from fitwheel.platform.profile import Profile

        profile = Profile(profile.properties, profile.devices, {}, profile.sources)
    name = target_name(args.profile, set()) if args.profile else "target"
    return make_target(
        name,
        profile,
        resolved.target,
        python_version=args.python_version,
        platforms=args.platform,
        source=resolved.description,
    )


def this_machine(args: argparse.Namespace) -> bool:
    """Whether the target is this machine and interpreter: none of --profile, --sysroot,
    --python-version and --platform (then sdists are saved as pip download saves them)."""
    from fitwheel.cli._targets import sysroot_of

    return not (args.profile or sysroot_of(args) or args.python_version or args.platform)


def report_json(outcome: DownloadOutcome, dest: Path) -> dict[str, object]:
    router = outcome.router
    target = outcome.target
    return {
        "fitwheel_report": 1,
        "dest": str(dest),
        "target": {
            "name": target.name,
            "source": target.source,
            "marker": target.marker,
            "summary": target.summary(),
            "torch_backend": router.report() if router is not None else None,
        },
        "download": [f.report() for f in outcome.files],
        # the indexes left out because they could not be reached (--unreachable-index warn)
        "unreachable_indexes": [
            {"url": url, "error": reason} for url, reason in outcome.skipped_indexes.items()
        ],
    }


def run(args: argparse.Namespace) -> int:
    if not args.requirements and not args.requirement_files:
        raise UsageError("name at least one requirement, or pass -r FILE.")
    if args.jobs < 1:
        raise UsageError("--jobs must be 1 or more.")
    from fitwheel.cli._reporting import reporter_for
    from fitwheel.cli._sources import sources_from
    from fitwheel.cli._torch import torch_settings_of
    from fitwheel.lock.downloading import check_folder, run_download
    from fitwheel.lock.locking import LockRequest
    from fitwheel.options import ResolutionOptions

    dest = Path(args.dest)
    check_folder(dest, dry_run=args.dry_run)  # before the resolution: a typo fails at once
    sources = sources_from(args)
    target = download_target(args, sources.cache_dir)
    request = LockRequest(
        requirements=args.requirements,
        requirement_files=args.requirement_files,
        constraint_files=args.constraint_files,
        sources=sources,
        resolution=ResolutionOptions(
            pre=args.pre, no_deps=args.no_deps, allow_fallback=args.allow_fallback
        ),
        torch=torch_settings_of(args),
    )
    reporter = reporter_for(args)
    try:
        outcome = run_download(
            request,
            target,
            dest,
            dry_run=args.dry_run,
            jobs=args.jobs,
            reporter=reporter,
            this_machine=this_machine(args),
        )
        for warning in outcome.warnings:
            reporter.warning(warning)
        for line in outcome.notices:
            reporter.notice(f"fitwheel: {line}")
    finally:
        reporter.close()
    if args.report:
        text = json.dumps(report_json(outcome, dest), indent=2) + "\n"
        if args.report == "-":
            sys.stdout.write(text)
        else:
            Path(args.report).write_text(text, encoding="utf-8")
    if args.quiet or args.report == "-":
        return 0
    verb = "Would save" if args.dry_run else "Saved"
    for f in outcome.files:
        label = f" [{f.label}]" if f.label else ""
        if f.action == "keep":
            print(f"Already saved {f.path}{label}")
        else:
            print(f"{verb} {f.path}{label}")
    fresh = sum(f.action == "save" for f in outcome.files)
    kept = len(outcome.files) - fresh
    done = "would be saved" if args.dry_run else "saved"
    also = f", {kept} already there" if kept else ""
    print(f"{fresh} files {done} in {dest}{also} (for {target.summary()})")
    return 0
