"""The ``--report`` JSON and the ``--explain`` text of an install (shapes from the CLI contract)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from fitwheel.index.config import IndexConfig
from fitwheel.install.workflow import InstallOutcome
from fitwheel.platform.profile import Profile

REPORT_VERSION = 1


def report_json(outcome: InstallOutcome, profile: Profile | None) -> dict[str, Any]:
    entries = []
    for p in outcome.planned:
        cand = p.candidate
        entries.append(
            {
                "name": str(cand.name),
                "version": str(cand.version),
                "filename": cand.link.filename,
                "url": cand.link.url,
                "sha256": p.sha256,
                "variant_label": cand.label,
                "variant_properties": cand.variant.as_dict() if cand.variant is not None else {},
                "requested": p.requested,
                "action": p.action,
                "built_from_source": cand.is_sdist,
            }
        )
        router = outcome.router
        source = router.sources.get(cand.name) if router is not None else None
        backend = router.index_backend(cand.name, cand.link.url) if router is not None else None
        if backend is not None:  # from the backend index (not a find-links file beside it)
            entries[-1]["torch_backend"] = backend
        elif source is not None and source.kind == "variant-index":
            entries[-1]["variant_index"] = source.url
    env = outcome.environment
    return {
        "fitwheel_report": REPORT_VERSION,
        "environment": {
            "python": env.python,
            "prefix": str(env.prefix),
            "markers": dict(env.markers),
        },
        # in the order searched, each with where it came from
        "indexes": list(outcome.config.search_order()),
        "index_origins": [
            {"url": url, "origin": outcome.config.origin_of(url)}
            for url in outcome.config.search_order()
        ],
        # the indexes left out because they could not be reached (--unreachable-index warn)
        "unreachable_indexes": [
            {"url": url, "error": reason} for url, reason in outcome.skipped_indexes.items()
        ],
        "find_links": list(outcome.config.find_links),
        "target_sources": dict(profile.sources) if profile is not None else {},
        "install": entries,
        "torch_backend": outcome.router.report() if outcome.router is not None else None,
        # wheels fetched before they were pinned (null: none were, as in a dry run)
        "speculative": outcome.speculative,
    }


def explain_lines(outcome: InstallOutcome, profile: Profile | None, target_desc: str) -> list[str]:
    """For each package with variants: the candidates in order, each rejection with its reason,
    and where each detected value came from."""
    lines: list[str] = index_lines(outcome.config, outcome.skipped_indexes)
    used: set[str] = set()
    chosen = {(p.candidate.name, str(p.candidate.version)): p.candidate for p in outcome.planned}
    for (name, version), trace in sorted(outcome.resolution.traces.items()):
        if (name, version) not in chosen:
            continue
        cand = chosen[(name, version)]
        if trace.info is not None:
            used.update(trace.info.namespace_priorities)
        source = trace.variants_source or "no variant metadata"
        lines.append(f"{name} {version}: variants from {source}")
        if trace.forced:
            lines.append(
                f"  forced with --variant: {trace.forced} (not checked against the target)"
            )
        for rank, label in enumerate(trace.ordered, 1):
            mark = "  <- chosen" if cand.label == label else ""
            lines.append(f"  {rank}. {label}{mark}")
        if trace.has_plain_wheel:
            mark = "  <- chosen" if cand.label is None else ""
            lines.append(f"  {len(trace.ordered) + 1}. (non-variant wheel){mark}")
        for label in trace.no_wheel:
            lines.append(
                f"  skipped {label}: compatible, but no wheel for this interpreter and platform"
            )
        for label, reason in trace.rejected.items():
            lines.append(f"  rejected {label}: {reason}")
    router = outcome.router
    if router is not None and router.choice is not None and router.choice.requested == "auto":
        used.update(("nvidia", "amd", "intel"))  # the torch backend was chosen on them
    if lines:
        lines.append(f"target: {target_desc}")
        if profile is not None:
            others = [ns for ns in profile.properties if ns not in used]
            for ns, features in profile.properties.items():
                if ns not in used:
                    continue
                origin = profile.sources.get(ns, target_desc)
                values = "; ".join(f"{f} = {_shown(v)}" for f, v in features.items())
                lines.append(f"  {ns} ({origin}): {values}")
            if not any(ns in used for ns in profile.properties):
                lines.append("  (nothing for the namespaces these packages use)")
            if others:
                lines.append(f"  also known, not used by these packages: {', '.join(others)}")
            for dev in profile.devices:
                lines.append(f"  device: {dev.describe()}")
    else:
        lines.append("no package in this install publishes variants")
    if outcome.passed_over:
        lines.append("passed over by --index-strategy first-index:")
        lines += [f"  {line}" for line in outcome.passed_over]
    return lines


def index_lines(config: IndexConfig, skipped: Mapping[str, str] | None = None) -> list[str]:
    """The indexes in the order searched, each with where it came from (and, for one left out
    because it could not be reached, why), and the find-links."""
    lines = ["indexes, in the order searched:"]
    order = config.search_order()
    for rank, url in enumerate(order, 1):
        lines.append(f"  {rank}. {url} ({config.origin_of(url)})")
        if skipped and url in skipped:
            lines.append(f"     left out, it could not be reached: {skipped[url]}")
    if not order:
        lines.append("  (none: --no-index)")
    for link in config.find_links:
        lines.append(f"  find-links: {link} ({config.origins.get('find-links', 'find-links')})")
    return lines


_SHOWN = 6


def _shown(values: tuple[str, ...]) -> str:
    """The most preferred values, and how many more: a CUDA driver supports dozens of bounds."""
    if len(values) <= _SHOWN:
        return ", ".join(values)
    return f"{', '.join(values[:_SHOWN])}, ... ({len(values) - _SHOWN} more)"
