"""The target a command selects for: a saved profile, a sysroot, or this machine.

Commands that order variants share these options (``--profile``, ``--sysroot``, ``--gpu-policy``,
``--enable-optional``, ``--enable-optional-all``, ``--variant-property``) and turn them into a
:class:`~fitwheel.variants.ordering.Target` with :func:`resolve_target`, through the multi-GPU
policy; detection runs only when no profile is given. :func:`sysroot_probe` is the one way a
command turns ``--sysroot``/``FITWHEEL_SYSROOT`` into a probe.

Static answers join the profile through :func:`fitwheel.platform.supplements.supplement`, after
what detection or the profile says: for this machine the configuration file's
``[variant-properties]`` table, then ``--variant-property``; for another machine (a profile, a
sysroot) ``--variant-property`` alone, since the configuration file describes this one. The
namespaces of fitwheel's own providers and those the profile answers are the target's
``answered`` namespaces; a plugin provider's namespace outside them has no answer.

Under a sysroot the probe sees no host environment variables: the variables that steer GPU
runtimes (``CUDA_VISIBLE_DEVICES``, ``ROCM_PATH``, ``ZE_AFFINITY_MASK``, ...) describe the
machine fitwheel runs on, not the target, so the answer comes from the files under the sysroot
alone. fitwheel's own settings (``FITWHEEL_FORCE_*``, ``FITWHEEL_DETECT``, ``FITWHEEL_CONFIG``,
``FITWHEEL_DETECT_TIMEOUT``) are the user's instructions, not facts about a machine, and apply
to a sysroot as to this machine.
"""

from __future__ import annotations

import argparse
import os

from fitwheel._values import Frozen
from fitwheel.errors import UsageError

# ``typing`` and the platform modules stay unimported until a target is resolved: ``detect``
# imports this module on its start path. Type checkers treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.platform.probe import Probe
    from fitwheel.platform.profile import Profile
    from fitwheel.variants.ordering import Target

__all__ = [
    "SYSROOT_ENV",
    "ResolvedTarget",
    "add_plugin_arguments",
    "add_python_argument",
    "add_target_arguments",
    "add_variant_property_argument",
    "other_machine",
    "plugins_wanted",
    "resolve_target",
    "sysroot_of",
    "sysroot_probe",
    "target_environment",
    "target_for",
    "with_static_answers",
]

SYSROOT_ENV = "FITWHEEL_SYSROOT"


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
    add_variant_property_argument(parser)
    add_plugin_arguments(parser)


def add_variant_property_argument(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    help: str = "say the target supports this property, after what detection or the profile "
    "says for the same feature; no provider plugin runs for its namespace (repeatable; also the "
    "configuration file's [variant-properties] table)",
) -> None:
    """``--variant-property "NS :: FEATURE :: VALUE"`` (read by
    :func:`fitwheel.platform.supplements.parse_property_arguments`)."""
    parser.add_argument(
        "--variant-property",
        action="append",
        default=[],
        metavar='"NS :: FEATURE :: VALUE"',
        help=help,
    )


def add_plugin_arguments(parser: argparse.ArgumentParser) -> None:
    """``--allow-plugin NAME[==VERSION]`` (see :mod:`fitwheel.cli._plugins`)."""
    parser.add_argument(
        "--allow-plugin",
        action="append",
        default=[],
        metavar="NAME[==VERSION]",
        help="allow the variant provider plugin NAME to run on this machine, in an isolated "
        "environment, and answer for its namespace (repeatable; the hashes of its files are "
        "recorded on first use, and a changed file is refused)",
    )


def add_python_argument(parser: argparse.ArgumentParser, *, verb: str = "read") -> None:
    """``--python PATH``: the environment a command works on."""
    parser.add_argument(
        "--python",
        metavar="PATH",
        help=f"interpreter or virtual environment to {verb} (default: the active virtual "
        "environment)",
    )


def target_environment(args: argparse.Namespace) -> TargetEnvironment:
    """The environment ``--python`` names (else the active virtual environment), asked once
    per interpreter (the answers are kept in the cache, as for ``install``)."""
    from fitwheel.install.env.interpreter import inspect_environment
    from fitwheel.paths import CacheLayout, cache_root

    layout = CacheLayout(cache_root(None, os.environ))
    return inspect_environment(getattr(args, "python", None), os.environ, cache_dir=layout.envs)


def sysroot_of(args: argparse.Namespace) -> str | None:
    """The sysroot ``args`` name (``--sysroot``, else ``$FITWHEEL_SYSROOT``), or None."""
    return getattr(args, "sysroot", None) or os.environ.get(SYSROOT_ENV) or None


def sysroot_probe(root: str) -> Probe:
    """A probe that reads the files under ``root`` and no host environment variable.

    Raises :class:`UsageError` naming ``root`` when it is not a directory."""
    from fitwheel.platform.probe import Probe

    if not os.path.isdir(root):
        raise UsageError(
            f"sysroot {root} is not a directory (from --sysroot or ${SYSROOT_ENV}): give the "
            "folder that holds the target machine's /sys, /proc and /dev"
        )
    return Probe.for_sysroot(root, env={})


def _profile(args: argparse.Namespace, cache_dir: Path | None) -> tuple[Profile, str]:
    path = getattr(args, "profile", None)
    if path:
        from fitwheel.platform.profile import load_profile

        return load_profile(path), f"profile {path}"
    # Detection (providers, cache, overrides) is loaded only when no profile is given.
    from fitwheel.platform import detect
    from fitwheel.platform.probe import Probe

    root = sysroot_of(args)
    if root is not None:
        return detect.detect_profile(sysroot_probe(root)), f"sysroot {root}"
    if cache_dir:
        # a command's --cache-dir holds the detection cache too (one root for every cache)
        from fitwheel.paths import detect_dir

        return detect.detect_profile(
            Probe(), cache_dir=detect_dir(os.environ, cache_dir)
        ), "this machine"
    return detect.detect_profile(Probe()), "this machine"


def other_machine(args: argparse.Namespace) -> bool:
    """Whether ``args`` describe another machine (``--profile``, ``--sysroot``): no plugin runs
    for it, since a plugin probes the machine it runs on."""
    return bool(getattr(args, "profile", None)) or sysroot_of(args) is not None


def with_static_answers(args: argparse.Namespace, profile: Profile) -> Profile:
    """``profile`` with the configuration table's answers (this machine only) and then
    ``--variant-property``'s."""
    texts = getattr(args, "variant_property", None) or ()
    tables: dict[str, dict[str, dict[str, list[str]]]] = {}
    if not other_machine(args):
        from fitwheel.userconfig import variant_properties

        tables = variant_properties(os.environ)
    if not texts and not tables:
        return profile
    from fitwheel.platform.supplements import parse_property_arguments, supplement

    for path, table in tables.items():
        profile = supplement(profile, table, f"config:{path}")
    if texts:
        profile = supplement(profile, parse_property_arguments(texts), "variant-property")
    return profile


# -- allowed variant provider plugins: this machine only ----------------------------------------


def _with_plugins(
    args: argparse.Namespace, profile: Profile, description: str, cache_dir: Path | None
) -> Profile:
    """This machine's profile with the answers of the plugins allowed to run here; a saved
    profile or a sysroot describes another machine, which no plugin probes."""
    if description != "this machine" or not plugins_wanted(args):
        return profile
    from fitwheel.cli._plugins import machine_profile

    return machine_profile(args, profile, cache_dir)


def plugins_wanted(args: argparse.Namespace) -> bool:
    """Whether any plugin may run: one allowed by a flag or the configuration, or named by the
    lock being synced (checked without loading the plugin machinery)."""
    if getattr(args, "allow_plugin", None) or getattr(args, "locked_plugins", (None,))[0]:
        return True
    from fitwheel.userconfig import plugin_allowances

    return bool(plugin_allowances(os.environ))


def _enabled(args: argparse.Namespace) -> frozenset[str] | bool:
    if getattr(args, "enable_optional_all", False):
        return True
    return frozenset(getattr(args, "enable_optional", None) or ())


class ResolvedTarget(Frozen):
    """The target, a few words naming it for messages, and the profile it came from.

    A :class:`Frozen` rather than a dataclass: ``fitwheel select`` (whose start-up is measured)
    imports no ``dataclasses``."""

    __slots__ = ("description", "profile", "target")
    target: Target
    description: str
    profile: Profile

    def __init__(self, target: Target, description: str, profile: Profile) -> None:
        object.__setattr__(self, "target", target)
        object.__setattr__(self, "description", description)
        object.__setattr__(self, "profile", profile)


def resolve_target(args: argparse.Namespace, *, cache_dir: Path | None = None) -> ResolvedTarget:
    """The target ``args`` describe, with its name and profile; a machine detected here keeps
    its answer under ``cache_dir`` (the command's ``--cache-dir``; None: the usual cache)."""
    from fitwheel.platform.policy import target_from_profile
    from fitwheel.platform.supplements import answered_namespaces

    profile, description = _profile(args, cache_dir)
    profile = with_static_answers(args, profile)
    profile = _with_plugins(args, profile, description, cache_dir)
    gpu_policy = getattr(args, "gpu_policy", None)
    target = target_from_profile(profile, gpu_policy=gpu_policy or "all")
    # What the profile leaves out of the environment is the running interpreter's (marker
    # evaluation fills it in), as the profile format specifies.
    environment = target.environment
    if environment is None:
        environment = dict(profile.environment)
    target = target.replace(
        enabled_optional=_enabled(args),
        environment=environment,
        answered=answered_namespaces(profile),
        other_machine=other_machine(args),
    )
    return ResolvedTarget(target, description, profile)


def target_for(args: argparse.Namespace) -> tuple[Target, str]:
    """The target ``args`` describe, and a few words naming it for messages."""
    resolved = resolve_target(args)
    return resolved.target, resolved.description
