"""``fitwheel doctor``: check that what is installed runs on this machine.

Static checks by default (nothing of the environment is imported); ``--run`` adds smoke tests
in child processes of the target interpreter. Exit 0 when no check fails (warnings included: a
build for hardware the machine lacks runs, on the CPU only), 1 when one fails, 2 on bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys

from fitwheel.errors import UsageError

HELP = "Check that the installed builds run on this machine."


def configure(parser: argparse.ArgumentParser) -> None:
    from fitwheel.cli._targets import add_target_arguments

    parser.add_argument(
        "--python",
        metavar="PATH",
        help="interpreter or virtual environment to check (default: the active one)",
    )
    add_target_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")
    parser.add_argument(
        "--run",
        action="store_true",
        help="also run smoke tests in the target interpreter (import, devices, matmul, "
        "torch.compile, FlexAttention, MX formats, peer-to-peer, CPU kernels)",
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="S",
        help="time bound of each smoke test, in seconds (default 120)",
    )
    parser.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="TEST",
        help="leave out a smoke test by name (repeatable), e.g. --skip torch.compile",
    )


def run(args: argparse.Namespace) -> int:
    from fitwheel.cli._targets import resolve_target
    from fitwheel.doctor.diagnose import diagnose
    from fitwheel.doctor.report import checklist, report_json

    if not args.timeout > 0:
        raise UsageError("--timeout must be a positive number of seconds.")
    unknown: list[str] = []
    if args.skip:
        from fitwheel.doctor.smoke import SMOKE_TESTS

        unknown = [name for name in args.skip if name not in SMOKE_TESTS]
    if unknown:
        from fitwheel.doctor.smoke import SMOKE_TESTS

        raise UsageError(
            f"--skip {unknown[0]!r}: no such smoke test (choose from {', '.join(SMOKE_TESTS)})."
        )
    resolved = resolve_target(args)
    checks = diagnose(
        args.python,
        resolved.profile,
        run=args.run,
        timeout=args.timeout,
        skip=args.skip,
        gpu_policy=getattr(args, "gpu_policy", None) or "all",
    )
    report = report_json(checks)
    if args.json:
        sys.stdout.write(json.dumps(report, indent=2) + "\n")
    else:
        if not args.quiet:
            print(f"fitwheel doctor: checked against {resolved.description}")
        for line in checklist(checks):
            print(line)
    return 0 if report["ok"] else 1
