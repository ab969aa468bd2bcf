"""What ``lock``, ``sync``, ``export`` and ``bundle`` share on the command line: lock targets
from ``--profile`` files, and the host a lock is installed on (detected, a profile, a sysroot).

A host's marker values are its interpreter's, with the profile's ``environment`` on top (the
profile describes the machine; a sysroot's kernel and CPU files say what its machine is). Its
wheel tags are the interpreter's unless the profile names another machine, in which case they
are that machine's (as ``lock`` computes them for a target).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from fitwheel.errors import UsageError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.lock.selection import Host
    from fitwheel.lock.targets import LockTarget


def lock_targets(
    profiles: Sequence[str],
    *,
    python_version: str | None,
    platforms: Sequence[str],
    gpu_policy: str | None,
    enabled: frozenset[str] | bool,
    variant_properties: Sequence[str] = (),
) -> list[LockTarget]:
    from fitwheel.lock.targets import make_target, target_name
    from fitwheel.platform.policy import target_from_profile
    from fitwheel.platform.profile import load_profile
    from fitwheel.platform.supplements import answered_namespaces

    if not profiles:
        raise UsageError("name the targets to lock for: pass --profile FILE (repeatable).")
    taken: set[str] = set()
    out = []
    extra = None
    if variant_properties:
        from fitwheel.platform.supplements import parse_property_arguments, supplement

        extra = parse_property_arguments(variant_properties)
    for path in profiles:
        profile = load_profile(path)
        if extra is not None:
            profile = supplement(profile, extra, "variant-property")
        target = target_from_profile(profile, gpu_policy=gpu_policy or "all")
        # a profile is another machine: no plugin runs for it, and a namespace it does not
        # answer is said once per target, with the way to answer it
        target = target.replace(
            enabled_optional=enabled,
            answered=answered_namespaces(profile),
            other_machine=True,
        )
        out.append(
            make_target(
                target_name(path, taken),
                profile,
                target,
                python_version=python_version,
                platforms=platforms,
                source=path,
            )
        )
    return out


def host_for(
    args: argparse.Namespace, env: TargetEnvironment | None, cache_dir: Path | None = None
) -> Host:
    """The host ``args`` describe (``--profile``, ``--sysroot`` or this machine, detected with
    its answer kept under ``cache_dir``), installing into ``env`` (None: a profile alone, as
    ``export`` and ``bundle`` use it)."""
    from fitwheel.cli._targets import resolve_target
    from fitwheel.lock.selection import Host

    resolved = resolve_target(args, cache_dir=cache_dir)
    profile = resolved.profile
    if env is None:
        from fitwheel.lock.targets import make_target

        made = make_target(
            "host",
            profile,
            resolved.target,
            python_version=getattr(args, "python_version", None),
            platforms=getattr(args, "platform", None) or (),
            source=resolved.description,
        )
        return Host(made.target, profile.devices, made.environment, made.tags, resolved.description)
    markers = {**env.markers, **profile.environment}
    tags = env.tags
    machine = profile.environment.get("platform_machine")
    if machine and machine != env.markers.get("platform_machine"):
        from fitwheel.lock.targets import make_target

        made = make_target(
            "host", profile, resolved.target, python_version=env.python_version, platforms=()
        )
        tags = made.tags
    from fitwheel.lock.targets import with_driver_cuda

    supported = with_driver_cuda(
        profile, markers.get("platform_system", ""), resolved.target.supported, resolved.description
    )
    target = resolved.target.replace(environment=markers, supported=supported)
    return Host(target, profile.devices, markers, tuple(tags), resolved.description)


def add_report_arguments(parser: argparse.ArgumentParser) -> None:
    out = parser.add_argument_group("output")
    out.add_argument(
        "--explain",
        action="store_true",
        help="show, per package with variants, the builds in order and why others were rejected",
    )
    out.add_argument("--report", metavar="FILE", help="write a JSON report ('-' for stdout)")
