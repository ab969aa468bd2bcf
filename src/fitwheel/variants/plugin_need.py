"""Variants that need a provider plugin nobody allowed: what to call it, and what to tell the user.

A provider declared with ``requires`` (an install-time plugin) answers for its namespace by
running third-party code. fitwheel answers the namespaces of its own providers itself, takes
static answers (``--variant-property``, the ``[variant-properties]`` configuration table, a
profile's properties) for any namespace, and runs a plugin only when the user allows it. A
namespace with none of these has no answer: the variants that use it are not compatible, and the
user is told once per namespace (:func:`notice_text`) which plugin would answer, where it would
come from and how to allow it or answer without it. :func:`rejection` is the same said per
variant (``--explain``, ``select``).
"""

from __future__ import annotations

import re

from fitwheel._values import Frozen

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.variants.model import Provider

__all__ = ["PluginNeed", "notice_text", "plugin_need", "rejection"]

#: the project name at the start of a PEP 508 requirement
_NAME_RE = re.compile(r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)")


class PluginNeed(Frozen):
    """The plugin a namespace's provider names: its ``requires`` and the project to allow."""

    __slots__ = ("namespace", "project", "requires")
    namespace: str
    #: the provider's ``requires``, as the file writes them
    requires: tuple[str, ...]
    #: the plugin's project name (``--allow-plugin`` takes it); the plugin-api top-level
    #: module when there is no ``requires``
    project: str

    def __init__(self, namespace: str, requires: tuple[str, ...], project: str) -> None:
        object.__setattr__(self, "namespace", namespace)
        object.__setattr__(self, "requires", requires)
        object.__setattr__(self, "project", project)

    @property
    def wanted(self) -> str:
        """The plugin with its version range, as the file asks for it."""
        return ", ".join(" ".join(r.split()) for r in self.requires) or self.project


def plugin_need(provider: Provider) -> PluginNeed | None:
    """What ``provider`` would run, or None when it runs nothing (static, built-in)."""
    if provider.static_properties is not None or provider.builtin:
        return None
    if not provider.requires and not provider.plugin_api:
        return None
    project = ""
    if provider.requires:
        match = _NAME_RE.match(provider.requires[0])
        project = match.group(1) if match else provider.requires[0].strip()
    elif provider.plugin_api:
        project = provider.plugin_api.split(":", 1)[0].split(".", 1)[0].strip()
    return PluginNeed(provider.namespace, provider.requires, project)


_CONFIG_TABLE = "the configuration file's [variant-properties] table"


def _fix(need: PluginNeed, elsewhere: str) -> str:
    return (
        f'--variant-property "{need.namespace} :: FEATURE :: VALUE" (or {elsewhere}) says what '
        "the target supports without running it"
    )


def rejection(need: PluginNeed, *, other_machine: bool = False) -> str:
    """Why a variant using ``need``'s namespace is not compatible: one line."""
    if other_machine:
        return (
            f"{need.namespace}: no answer for this namespace in the target's profile; its "
            f"provider plugin {need.wanted} probes the machine it runs on, so it never runs "
            f"for another machine: {_fix(need, 'the profile')}"
        )
    return (
        f"{need.namespace}: answered only by the provider plugin {need.wanted}, and fitwheel "
        f"runs no third-party code unless allowed: --allow-plugin {need.project} allows it, or "
        f"{_fix(need, _CONFIG_TABLE)}"
    )


def notice_text(
    need: PluginNeed,
    packages: list[str],
    index: str | None,
    *,
    other_machine: bool = False,
) -> str:
    """The one notice for a namespace whose variants were skipped: the namespace, the plugin and
    its version range, the index it would come from, the packages concerned, and the way out."""
    whose = ", ".join(packages)
    where = f" from {index}" if index else ""
    skipped = (
        f"the variants of {whose} that need namespace '{need.namespace}' were skipped "
        "(the null or non-variant build is taken)"
    )
    if other_machine:
        return (
            f"{skipped}: the target's profile has no answer for '{need.namespace}', and its "
            f"provider plugin {need.wanted}{where} never runs for another machine. Add the "
            f'answer to the profile, or pass --variant-property "{need.namespace} :: FEATURE '
            ':: VALUE"'
        )
    return (
        f"{skipped}: only the provider plugin {need.wanted}{where} can say what this machine "
        "supports there, and fitwheel runs no third-party code unless allowed. Allow it with "
        f"--allow-plugin {need.project} (or a [plugins.allow.{need.project}] table in the "
        "configuration file), or state the answer with --variant-property "
        f'"{need.namespace} :: FEATURE :: VALUE" (or a [variant-properties] table in the '
        "configuration file)"
    )
