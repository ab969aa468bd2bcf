"""fitwheel-demo: reports which build of itself is installed.

Every build carries the same code; only ``_build.py`` differs, and a variant build also carries
``fitwheel_demo-1.0.dist-info/variant.json``, which :func:`variant_properties` reads back.
"""

from __future__ import annotations

import json
from importlib import metadata

from fitwheel_demo._build import BUILD, DESCRIPTION

__all__ = ["BUILD", "DESCRIPTION", "describe", "variant_properties"]


def variant_properties() -> dict[str, dict[str, list[str]]]:
    """The properties of the installed variant, from its variant.json (empty for a plain build)."""
    dist = metadata.distribution("fitwheel-demo")
    text = dist.read_text("variant.json")
    if not text:
        return {}
    variants = json.loads(text).get("variants", {})
    return next(iter(variants.values()), {}) if variants else {}


def describe() -> str:
    lines = [f"fitwheel-demo build: {BUILD} ({DESCRIPTION})"]
    for namespace, features in variant_properties().items():
        for feature, values in features.items():
            lines.append(f"  {namespace} :: {feature} :: {', '.join(values)}")
    return "\n".join(lines)
