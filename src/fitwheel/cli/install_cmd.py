"""``fitwheel install``: install packages, choosing the variant that fits the target.

Option names follow pip's. Heavy modules (resolver, HTTP, rich) are imported inside :func:`run`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fitwheel.errors import UsageError

if TYPE_CHECKING:
    from fitwheel.install.installer import InstallResult
    from fitwheel.install.workflow import InstallOutcome
    from fitwheel.platform.profile import Profile
    from fitwheel.variants.ordering import Target

HELP = "Install packages, choosing the variant that fits."


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "requirements",
        nargs="*",
        metavar="REQUIREMENT",
        help="a requirement (name[extras] specifier; marker) or a wheel file",
    )
    parser.add_argument(
        "-r",
        "--requirement",
        action="append",
        default=[],
        metavar="FILE",
        dest="requirement_files",
        help="install from a requirements file",
    )
    parser.add_argument(
        "-e",
        "--editable",
        action="append",
        default=[],
        metavar="PATH",
        dest="editables",
        help="install a local project in editable mode (PEP 660)",
    )
    parser.add_argument(
        "-c",
        "--constraint",
        action="append",
        default=[],
        metavar="FILE",
        dest="constraint_files",
        help="limit versions with a constraints file",
    )
    index = parser.add_argument_group("package sources")
    index.add_argument("-i", "--index-url", metavar="URL", help="the main simple index")
    index.add_argument(
        "--extra-index-url",
        action="append",
        default=[],
        metavar="URL",
        help="another index to consult (repeatable)",
    )
    index.add_argument(
        "-f",
        "--find-links",
        action="append",
        default=[],
        metavar="DIR",
        help="a folder (or page) of wheels to consider (repeatable)",
    )
    index.add_argument("--no-index", action="store_true", help="use only --find-links")
    index.add_argument(
        "--index-strategy",
        choices=("first-index", "unsafe-first-match", "unsafe-best-match"),
        default="first-index",
        help="with several indexes (searched in this order: those named on the command line, "
        "then pip's configured ones; each group's extra indexes before its main one, as in uv): "
        "take a package from the first index that has it (default; "
        "safe against dependency confusion), prefer the first index's versions but look at all "
        "(unsafe-first-match), or take the best version of any index (unsafe-best-match, pip's "
        "way)",
    )
    index.add_argument("--cert", metavar="FILE", help="a CA bundle to trust for HTTPS")
    index.add_argument(
        "--trusted-host",
        action="append",
        default=[],
        metavar="HOST",
        help="do not check the HTTPS certificate of HOST (or HOST:PORT) (repeatable)",
    )
    index.add_argument(
        "--timeout",
        type=float,
        metavar="SEC",
        help="seconds to wait for a server's answer, and for each stretch of a download to "
        "make progress (default 30; pages must be whole within 4 times this)",
    )
    index.add_argument(
        "--retries",
        type=int,
        metavar="N",
        help="times to try a request again after a failure or time-out (default 3)",
    )
    index.add_argument("--cache-dir", metavar="DIR", help="where downloads and pages are cached")
    index.add_argument(
        "--link-mode",
        choices=("copy", "hardlink"),
        default="hardlink",
        help="install files by hard-linking them from the unpacked-wheel cache (default; falls "
        "back to copying across filesystems; an installed file shares storage with the cache, "
        "as with uv) or by copying them",
    )
    index.add_argument(
        "--no-cache-dir",
        action="store_true",
        help="keep nothing: pages, downloads and unpacked wheels go to a temporary folder",
    )
    target = parser.add_argument_group("target")
    target.add_argument(
        "--python",
        metavar="PATH",
        help="interpreter or virtual environment to install into (default: the "
        "active virtual environment)",
    )
    target.add_argument(
        "--break-system-packages",
        action="store_true",
        help="install into an interpreter that the operating system manages (PEP 668)",
    )
    from fitwheel.cli._targets import add_target_arguments

    add_target_arguments(parser)
    from fitwheel.cli._torch import add_torch_arguments

    add_torch_arguments(parser)
    variants = parser.add_argument_group("variants")
    variants.add_argument(
        "--no-variants",
        action="store_true",
        help="ignore variant wheels; install non-variant wheels only",
    )
    variants.add_argument(
        "--variant",
        action="append",
        default=[],
        metavar="NAME=LABEL",
        help="install this variant of NAME without checking the target",
    )
    variants.add_argument(
        "--allow-fallback",
        action="store_true",
        help="accept a build without GPU support when none fits the GPU here",
    )
    choice = parser.add_argument_group("choosing versions")
    choice.add_argument("--pre", action="store_true", help="consider pre-releases")
    choice.add_argument("--no-deps", action="store_true", help="do not install dependencies")
    choice.add_argument(
        "-U",
        "--upgrade",
        action="store_true",
        help="upgrade the named packages to the newest allowed versions",
    )
    choice.add_argument(
        "--force-reinstall",
        action="store_true",
        help="reinstall even what is already installed as chosen, checking the cached copies "
        "of its files first (one edited through a hard link is unpacked afresh)",
    )
    parser.add_argument(
        "--allow-overwrite",
        action="store_true",
        help="let a wheel replace files that another installed distribution owns (refused "
        "by default; the environment's own files are always refused)",
    )
    choice.add_argument(
        "--require-hashes",
        action="store_true",
        help="require a pinned version and --hash for every distribution",
    )
    choice.add_argument(
        "--only-binary",
        action="append",
        default=[],
        metavar="NAMES",
        help="never build these packages from source (comma-separated names, :all: or :none:; "
        "as pip)",
    )
    choice.add_argument(
        "--no-binary",
        action="append",
        default=[],
        metavar="NAMES",
        help="build these packages from their source distributions instead of using wheels "
        "(comma-separated names, :all: or :none:; as pip)",
    )
    choice.add_argument(
        "--build-timeout",
        type=float,
        default=None,
        metavar="SECONDS",
        help="how long each step of a source build may run (default 900)",
    )
    out = parser.add_argument_group("output")
    out.add_argument("--dry-run", action="store_true", help="resolve and report; change nothing")
    index.add_argument(
        "--refresh",
        action="store_true",
        help="ask the indexes again for every cached page, however fresh, and resolve afresh "
        "(by default a page is reused while its Cache-Control max-age lasts, and an install "
        "whose every input is unchanged reuses its earlier resolution)",
    )
    out.add_argument(
        "--explain",
        action="store_true",
        help="show every variant considered, why others were rejected, and where "
        "the target's values came from",
    )
    out.add_argument("--report", metavar="FILE", help="write a JSON report ('-' for stdout)")
    out.add_argument("--compile", action="store_true", help="byte-compile installed modules")
    from fitwheel.cli._verify import add_verify_argument

    add_verify_argument(out, "installing")
    out.add_argument("-j", "--jobs", type=int, default=4, metavar="N", help="parallel downloads")


def _forced(values: list[str]) -> dict[str, str]:
    out = {}
    for item in values:
        name, sep, label = item.partition("=")
        if not sep or not name.strip() or not label.strip():
            raise UsageError(f"--variant {item!r}: expected NAME=LABEL, e.g. torch=cuda12.8.")
        out[name.strip()] = label.strip()
    return out


def _split_names(values: list[str]) -> list[str]:
    return [n.strip() for v in values for n in v.split(",") if n.strip()]


def _target(
    args: argparse.Namespace, need_hardware: bool = False
) -> tuple[Target | None, Profile | None, str]:
    if args.no_variants and not need_hardware:
        return None, None, "variants disabled"
    from fitwheel.cli._targets import resolve_target

    resolved = resolve_target(args)
    # Markers are evaluated against the interpreter installed into (--python), which the
    # workflow inspects; the profile's environment (the running one's) must not stand in for it.
    return resolved.target.replace(environment=None), resolved.profile, resolved.description


def _progress() -> tuple[Any, Any]:
    """A rich progress bar on a terminal; nothing otherwise."""
    if not sys.stderr.isatty():
        return None, None
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

    bar = Progress(
        *Progress.get_default_columns()[:2], DownloadColumn(), TransferSpeedColumn(), transient=True
    )
    tasks: dict[str, Any] = {}

    def advance(filename: str, size: int) -> None:
        if filename not in tasks:
            tasks[filename] = bar.add_task(filename, total=None)
        bar.advance(tasks[filename], size)

    return bar, advance


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


#: requirement strings that name a file, a folder or a URL (never remembered)
_LOCAL_HINTS = ("/", "\\", "://", "@", "~")
_LOCAL_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar")


def _recall(args: argparse.Namespace, target: Target | None, profile: Profile | None) -> Any:
    """A :class:`fitwheel.install.remembered.Recall` for this install, or None where it cannot
    be remembered (see that module)."""
    import os

    from fitwheel.install.remembered import DISABLE_ENV, Recall

    if os.environ.get(DISABLE_ENV, "") not in ("", "0"):
        return None
    if (
        args.explain
        or args.report
        or args.verify
        or args.editables
        or args.no_cache_dir
        or args.force_reinstall
        or args.require_hashes
        or args.find_links
        or args.no_index
        or args.refresh
    ):
        return None
    for text in args.requirements:
        if text.startswith(".") or any(h in text for h in _LOCAL_HINTS):
            return None
        if text.lower().endswith(_LOCAL_SUFFIXES):
            return None
    from fitwheel.errors import FitwheelError

    try:
        return Recall(
            options=vars(args),
            env=os.environ,
            python=args.python,
            cache_dir=args.cache_dir,
            target=(target, profile),
        )
    except (FitwheelError, OSError, KeyError, TypeError, ValueError):
        return None  # the full path names the problem


def run(args: argparse.Namespace) -> int:
    if not args.requirements and not args.requirement_files and not args.editables:
        raise UsageError("name at least one requirement, or pass -r FILE.")
    if args.jobs < 1:
        raise UsageError("--jobs must be at least 1.")
    if args.timeout is not None and not args.timeout > 0:
        raise UsageError("--timeout must be a number of seconds above 0.")
    if args.retries is not None and args.retries < 0:
        raise UsageError("--retries must be 0 or more.")
    if args.build_timeout is not None and not args.build_timeout > 0:
        raise UsageError("--build-timeout must be a positive number of seconds.")
    forced = _forced(args.variant)
    from fitwheel.cli._torch import torch_settings_of

    torch = torch_settings_of(args)
    target, profile, description = _target(args, need_hardware=torch.backend == "auto")
    recall = _recall(args, target, profile)
    notice = None if args.quiet else sys.stderr
    if recall is not None:
        replayed = recall.replay(
            dry_run=args.dry_run,
            link_mode=args.link_mode,
            allow_overwrite=args.allow_overwrite,
            break_system_packages=args.break_system_packages,
            compile_bytecode=args.compile,
            notice=notice,
        )
        if replayed is not None:
            for warning in replayed.record.warnings:
                print(f"fitwheel: warning: {warning}", file=sys.stderr)
            if not args.quiet:
                rows = [(p.name, p.version, p.label, p.action) for p in replayed.record.plan]
                for line in _summary(rows, replayed.installed, args.dry_run):
                    print(line)
            return 0
    from fitwheel.install.report import explain_lines, report_json
    from fitwheel.install.workflow import InstallRequest, run_install

    request = InstallRequest(
        requirements=args.requirements,
        requirement_files=args.requirement_files,
        constraint_files=args.constraint_files,
        editables=args.editables,
        index_url=args.index_url,
        extra_index_urls=args.extra_index_url,
        find_links=args.find_links,
        no_index=args.no_index,
        index_strategy=args.index_strategy,
        python=args.python,
        dry_run=args.dry_run,
        no_variants=args.no_variants,
        forced_variants=forced,
        allow_fallback=args.allow_fallback,
        pre=args.pre,
        no_deps=args.no_deps,
        upgrade=args.upgrade,
        force_reinstall=args.force_reinstall,
        require_hashes=args.require_hashes,
        no_binary=args.no_binary,
        only_binary=args.only_binary,
        build_timeout=args.build_timeout,
        compile_bytecode=args.compile,
        jobs=args.jobs,
        no_cache=args.no_cache_dir,
        break_system_packages=args.break_system_packages,
        cert=args.cert,
        link_mode=args.link_mode,
        allow_overwrite=args.allow_overwrite,
        cache_dir=Path(args.cache_dir) if args.cache_dir else None,
        timeout=args.timeout,
        retries=args.retries,
        trusted_hosts=args.trusted_host,
    )
    request.torch = torch
    request.remember = recall is not None
    request.refresh = args.refresh
    bar, advance = _progress() if not args.quiet else (None, None)
    with bar if bar is not None else contextlib.nullcontext():
        outcome = run_install(
            request,
            target=target,
            profile=profile,
            progress=advance,
            notice=notice,
        )
    if recall is not None:
        if outcome.installed is not None and recall.recovered:
            outcome.installed.notes[:0] = recall.recovered
        recall.keep(outcome)
    for warning in outcome.warnings:
        print(f"fitwheel: warning: {warning}", file=sys.stderr)
    if args.explain:
        if outcome.router is not None:
            print("\n".join(outcome.router.explain_lines()))
        for line in outcome.gpu_builds:
            print(f"gpu build without the gpu: {line}")
        print("\n".join(explain_lines(outcome, profile, description)))
        for line in outcome.resolution.decisions:
            print(f"  resolver: {line}")
    if args.report:
        text = json.dumps(report_json(outcome, profile), indent=2) + "\n"
        if args.report == "-":
            sys.stdout.write(text)
        else:
            Path(args.report).write_text(text, encoding="utf-8")
    if not args.quiet and args.report != "-":
        for line in _summary(_planned_rows(outcome), outcome.installed, args.dry_run):
            print(line)
    if args.verify and not args.dry_run:
        _verify(args, outcome, profile)
    return 0


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
    )
