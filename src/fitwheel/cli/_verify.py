"""``--verify`` on the commands that install (``install``, ``sync``): doctor's static checks on
what the command just put into the environment, failing it (exit 1, one paragraph) when a build
does not fit the machine."""

from __future__ import annotations

import argparse
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
        help=f"after {after}, run doctor's static checks on what was installed and fail "
        "when a build does not fit this machine",
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
    ``VerifyError`` on a failure."""
    from fitwheel.doctor.diagnose import verify_or_raise

    if profile is None:  # the command chose no variants: the machine still has to run them
        from fitwheel.cli._targets import resolve_target

        profile = resolve_target(args, cache_dir=cache_dir).profile
    passed = verify_or_raise(
        environment,
        profile,
        names,
        gpu_policy=getattr(args, "gpu_policy", None) or "all",
        requirements=requirements,
        action=action,
    )
    if not quiet:
        print(f"Verified: {passed} checks passed")
