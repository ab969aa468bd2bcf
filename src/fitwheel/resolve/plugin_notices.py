"""The notices of a resolution whose chosen packages have variants no one could answer for.

A variant whose namespace only a provider plugin answers, when no plugin ran and no static
answer was given, is not compatible (:func:`fitwheel.variants.ordering.unanswered_plugins`).
That choice is said once per namespace, whichever packages it concerns: the plugin, its version
range, the index it would come from (the one the first such package came from) and how to allow
it or answer without it (:func:`fitwheel.variants.plugin_need.notice_text`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from fitwheel.resolve.diagnose import index_of
from fitwheel.variants.ordering import unanswered_plugins
from fitwheel.variants.plugin_need import notice_text

if TYPE_CHECKING:
    from fitwheel.resolve.candidates import CandidateSource
    from fitwheel.resolve.resolver import Resolution
    from fitwheel.variants.plugin_need import PluginNeed

__all__ = ["plugin_notices"]


def plugin_notices(resolution: Resolution, source: CandidateSource) -> list[str]:
    """One line per namespace whose variants the chosen packages could not use for want of an
    answer (an empty list when there is none, or no target)."""
    target = source.options.target
    if target is None or target.answered is None:
        return []
    found: dict[str, tuple[PluginNeed, list[str], str | None]] = {}
    for cand in resolution.pins:
        trace = resolution.trace_of(cand)
        if trace is None or trace.info is None or trace.forced:
            continue
        for need in unanswered_plugins(trace.info, target):
            entry = found.get(need.namespace)
            if entry is None:
                where = index_of(source.finder, cand.name, cand.link)
                entry = found[need.namespace] = (need, [], where[0] if where else None)
            entry[1].append(f"{cand.name} {cand.version}")
    return [
        notice_text(need, packages, index, other_machine=target.other_machine)
        for need, packages, index in found.values()
    ]
