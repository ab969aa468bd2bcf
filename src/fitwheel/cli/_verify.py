"""``--verify`` on the commands that install (``install``, ``sync``): doctor's static checks on
what the command just put into the environment, failing it (exit 1, one paragraph) when a build
does not fit the machine, and warning (on stderr, the command still succeeds) where a build is
for hardware the machine lacks (a CUDA build on a machine without an NVIDIA GPU)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.platform.profile import Profile


def add_verify_argument(group: argparse._ActionsContainer, after: str) -> None:
    """``--verify``, for a command that installs (``after``: "installing", "syncing")."""
    group.add_argument(
        "--verify",
        action="store_true",
        help=f"after {after}, run doctor's static checks on what was installed: fail "
        "when a build does not fit this machine, warn when it is for hardware the machine lacks",
    )


def verify(
    args: argparse.Namespace,
    environment: TargetEnvironment,
    profile: Profile | None,
    names: Iterable[str],
    *,
    action: str,
    requirements: bool = True,
    quiet: bool = False,
    cache_dir: Path | None = None,
) -> None:
    """Run the checks on ``names`` in ``environment`` for the machine ``profile`` describes
    (None: the one ``args`` name, detected now, its answer kept under ``cache_dir``); raises
    ``VerifyError`` on a failure; a warning is printed on stderr with its fix."""
    from fitwheel.doctor.diagnose import verify_or_raise
    from fitwheel.doctor.report import PASS, WARN

    if profile is None:  # the command chose no variants: the machine still has to run them
        from fitwheel.cli._targets import resolve_target

        profile = resolve_target(args, cache_dir=cache_dir).profile
    checks = verify_or_raise(
        environment,
        profile,
        names,
        gpu_policy=getattr(args, "gpu_policy", None) or "all",
        requirements=requirements,
        action=action,
    )
    warned = [c for c in checks if c.status == WARN]
    if int(getattr(args, "quiet", 0) or 0) < 2:
        from fitwheel.cli._reporting import WARNING_PREFIX

        for c in warned:
            fix = f" (fix: {c.fix})" if c.fix else ""
            print(
                f"{WARNING_PREFIX}--verify: {c.package or c.name}: {c.detail}{fix}",
                file=sys.stderr,
            )
    if not quiet:
        passed = sum(1 for c in checks if c.status == PASS)
        also = f", {len(warned)} warned" if warned else ""
        print(f"Verified: {passed} checks passed{also}")
