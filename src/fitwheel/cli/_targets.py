"""The target a command selects for: a saved profile, a sysroot, or this machine.

Commands that order variants share these options (``--profile``, ``--sysroot``, ``--gpu-policy``,
``--enable-optional``, ``--enable-optional-all``) and turn them into a
:class:`~fitwheel.variants.ordering.Target` with :func:`target_for`, through the multi-GPU
policy; detection runs only when no profile is given.
"""

from __future__ import annotations

import argparse
import os

from fitwheel.errors import FitwheelError
from fitwheel.platform.policy import target_from_profile
from fitwheel.platform.profile import Profile, load_profile
from fitwheel.variants.frozen import Frozen
from fitwheel.variants.ordering import Target

__all__ = ["ResolvedTarget", "UsageError", "add_target_arguments", "resolve_target", "target_for"]

SYSROOT_ENV = "FITWHEEL_SYSROOT"


class UsageError(FitwheelError):
    """An option this invocation cannot honour; reported like a usage error."""

    exit_code = 2


def add_target_arguments(parser: argparse.ArgumentParser) -> None:
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--profile",
        metavar="FILE",
        help="a saved profile (from 'fitwheel detect --json') describing the target",
    )
    where.add_argument(
        "--sysroot",
        metavar="DIR",
        help=f"detect the target from files under DIR instead of / (also ${SYSROOT_ENV})",
    )
    parser.add_argument(
        "--gpu-policy",
        metavar="POLICY",
        help="how GPU builds must fit a machine with several GPUs: all (default; every GPU), "
        "any, or device=N",
    )
    parser.add_argument(
        "--enable-optional",
        action="append",
        default=[],
        metavar="NS",
        help="enable the optional provider of namespace NS (repeatable)",
    )
    parser.add_argument(
        "--enable-optional-all", action="store_true", help="enable every optional provider"
    )


def _detect(root: str | None) -> tuple[Profile, str]:
    # Detection (providers, cache, overrides) is loaded only when no profile is given.
    from fitwheel.platform import detect
    from fitwheel.platform.probe import Probe

    if root is not None:
        if not os.path.isdir(root):
            raise FitwheelError(
                f"--sysroot {root}: not a directory; give the folder that holds the target "
                "machine's /sys, /proc and /dev"
            )
        return detect.detect_profile(Probe.for_sysroot(root)), f"sysroot {root}"
    return detect.detect_profile(Probe()), "this machine"


def _profile(args: argparse.Namespace) -> tuple[Profile, str]:
    path = getattr(args, "profile", None)
    if path:
        return load_profile(path), f"profile {path}"
    root = getattr(args, "sysroot", None) or os.environ.get(SYSROOT_ENV) or None
    return _detect(root)


def _enabled(args: argparse.Namespace) -> frozenset[str] | bool:
    if getattr(args, "enable_optional_all", False):
        return True
    return frozenset(getattr(args, "enable_optional", None) or ())


class ResolvedTarget(Frozen):
    """The target, a few words naming it for messages, and the profile it came from."""

    __slots__ = ("description", "profile", "target")
    target: Target
    description: str
    profile: Profile

    def __init__(self, target: Target, description: str, profile: Profile) -> None:
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "profile", profile)


def resolve_target(args: argparse.Namespace) -> ResolvedTarget:
    """The target ``args`` describe, with its name and profile."""
    profile, description = _profile(args)
    gpu_policy = getattr(args, "gpu_policy", None)
    target = target_from_profile(profile, gpu_policy=gpu_policy or "all")
    # What the profile leaves out of the environment is the running interpreter's (marker
    # evaluation fills it in), as the profile format specifies.
    environment = target.environment
    if environment is None:
        environment = dict(profile.environment)
    target = target.replace(enabled_optional=_enabled(args), environment=environment)
    return ResolvedTarget(target, description, profile)


def target_for(args: argparse.Namespace) -> tuple[Target, str]:
    """The target ``args`` describe, and a few words naming it for messages."""
    resolved = resolve_target(args)
    return resolved.target, resolved.description
