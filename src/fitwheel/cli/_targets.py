"""The target a command selects for: a saved profile, a sysroot, or this machine.

Commands that order variants share these options (``--profile``, ``--sysroot``, ``--gpu-policy``,
``--enable-optional``, ``--enable-optional-all``) and turn them into a
:class:`~fitwheel.variants.ordering.Target` with :func:`target_for`. Detection and the multi-GPU
policy are used when this fitwheel has them; without them a profile maps to a target directly.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import importlib.util
import os
from types import ModuleType

from fitwheel.errors import FitwheelError
from fitwheel.platform.profile import Profile, load_profile
from fitwheel.variants.ordering import Target

__all__ = ["UsageError", "add_target_arguments", "target_for"]

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


def _optional_module(name: str) -> ModuleType | None:
    # Parts of the platform layer are optional in this build; use them only when present.
    try:
        if importlib.util.find_spec(name) is None:
            return None
    except ModuleNotFoundError:
        return None
    return importlib.import_module(name)


def _detect(root: str | None) -> tuple[Profile, str]:
    detect = _optional_module("fitwheel.platform.detect")
    if detect is None or not hasattr(detect, "detect_profile"):
        what = f"the sysroot {root}" if root else "this machine"
        raise UsageError(
            f"this fitwheel cannot detect {what}: hardware detection is not available; "
            "pass --profile FILE with a saved profile instead"
        )
    from fitwheel.platform.probe import Probe

    if root is not None:
        if not os.path.isdir(root):
            raise FitwheelError(
                f"--sysroot {root}: not a directory; give the folder that holds the target "
                "machine's /sys, /proc and /dev"
            )
        return detect.detect_profile(Probe.for_sysroot(root)), f"sysroot {root}"
    cached = getattr(detect, "cached_profile_json", None)
    text = cached() if cached is not None else None
    if text is not None:
        import json

        from fitwheel.platform.profile import parse_profile

        return parse_profile(json.loads(text), "detection cache"), "this machine"
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


def target_for(args: argparse.Namespace) -> tuple[Target, str]:
    """The target ``args`` describe, and a few words naming it for messages."""
    profile, description = _profile(args)
    gpu_policy = getattr(args, "gpu_policy", None)
    policy = _optional_module("fitwheel.platform.policy")
    enabled = _enabled(args)
    if policy is not None and hasattr(policy, "target_from_profile"):
        if gpu_policy:
            target = policy.target_from_profile(profile, gpu_policy=gpu_policy)
        else:
            target = policy.target_from_profile(profile)
        if not isinstance(target, Target):
            raise TypeError("target_from_profile must return a Target")
        # What the profile leaves out of the environment is the running interpreter's (marker
        # evaluation fills it in), as the profile format specifies.
        environment = target.environment
        if environment is None:
            environment = dict(profile.environment)
        return (
            dataclasses.replace(target, enabled_optional=enabled, environment=environment),
            description,
        )
    if gpu_policy:
        raise UsageError(
            "--gpu-policy is not available in this fitwheel: GPU variants are checked "
            "against the profile's combined properties"
        )
    target = Target(
        supported=profile.properties,
        enabled_optional=enabled,
        environment=dict(profile.environment),
    )
    return target, description
