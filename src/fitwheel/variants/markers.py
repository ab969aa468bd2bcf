"""Variant environment markers (PEP 817/825) on top of :mod:`packaging.markers`.

Four marker names exist besides the PEP 508 ones:

- ``variant_namespaces``: set of namespaces, e.g. ``"nvidia" in variant_namespaces``;
- ``variant_features``: set of ``"ns :: feature"``;
- ``variant_properties``: set of ``"ns :: feature :: value"``;
- ``variant_label``: the label, compared with ``==`` / ``!=``.

The sets take only ``in`` / ``not in`` (with the string on the left), the label only ``==`` and
``!=``. Whitespace around ``::`` is insignificant on both sides. Semantics are PEP 825's: with
``supported`` given, ``variant_properties`` holds only the values the target supports (filtering
never removes a whole feature, so the namespace and feature sets keep every declared entry);
a non-variant wheel has the label ``""`` and empty sets; the null variant has the label ``null``.

packaging cannot parse these names, so parsing reuses packaging's own marker grammar with a
variable rule that also admits them, and the resulting tree is evaluated by packaging; no second
marker engine exists.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from functools import lru_cache
from typing import Any

from packaging.markers import Marker, UndefinedComparison, UndefinedEnvironmentName

from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.model import SupportedProperties, VariantDescription

__all__ = [
    "VARIANT_MARKERS",
    "evaluate_marker",
    "parse_marker",
    "variant_marker_environment",
]

VARIANT_MARKERS = frozenset(
    {"variant_namespaces", "variant_features", "variant_properties", "variant_label"}
)
_SET_MARKERS = frozenset({"variant_namespaces", "variant_features", "variant_properties"})
_SEPARATOR_RE = re.compile(r"\s*::\s*")
_NON_VARIANT: dict[str, str | frozenset[str]] = {
    "variant_namespaces": frozenset(),
    "variant_features": frozenset(),
    "variant_properties": frozenset(),
    "variant_label": "",
}


def _canonical(text: str) -> str:
    return _SEPARATOR_RE.sub(" :: ", text.strip())


def variant_marker_environment(
    variant: VariantDescription | None, supported: SupportedProperties | None = None
) -> dict[str, str | frozenset[str]]:
    """The values of the four variant markers for ``variant`` (None: a non-variant wheel).

    With ``supported``, ``variant_properties`` keeps only the values the target supports.
    """
    if variant is None:
        return dict(_NON_VARIANT)
    props = variant.properties
    if supported is not None:
        props = frozenset(
            p for p in props if p.value in supported.get(p.namespace, {}).get(p.feature, ())
        )
    return {
        "variant_namespaces": frozenset(p.namespace for p in variant.properties),
        "variant_features": frozenset(f"{p.namespace} :: {p.feature}" for p in variant.properties),
        "variant_properties": frozenset(str(p) for p in props),
        "variant_label": variant.label,
    }


def _variable_rule() -> re.Pattern[str]:
    from packaging._tokenizer import DEFAULT_RULES

    names = "|".join(sorted(VARIANT_MARKERS))
    return re.compile(rf"\b(?:{names})\b|(?:{DEFAULT_RULES['VARIABLE'].pattern})", re.VERBOSE)


@lru_cache(maxsize=1)
def _rules() -> dict[str, re.Pattern[str]]:
    from packaging._tokenizer import DEFAULT_RULES

    return {**DEFAULT_RULES, "VARIABLE": _variable_rule()}


def _check_tree(tree: list[Any], text: str) -> list[Any]:
    """Check the operators used with variant names and bring literals to canonical form."""
    from packaging._parser import Value, Variable

    out: list[Any] = []
    for node in tree:
        if isinstance(node, list):
            out.append(_check_tree(node, text))
            continue
        if not isinstance(node, tuple):
            out.append(node)
            continue
        lhs, op, rhs = node
        names = [
            side.value
            for side in (lhs, rhs)
            if isinstance(side, Variable) and side.value in VARIANT_MARKERS
        ]
        if not names:
            out.append(node)
            continue
        name = names[0]
        op_text = op.serialize()
        if name in _SET_MARKERS:
            if not (isinstance(lhs, Value) and isinstance(rhs, Variable)) or op_text not in (
                "in",
                "not in",
            ):
                raise VariantFormatError(
                    f"marker {text!r}: {name} is a set and can only be tested as "
                    f"'\"...\" in {name}' or '\"...\" not in {name}'"
                )
            out.append((Value(_canonical(lhs.value)), op, rhs))
            continue
        if op_text not in ("==", "!=") or len(names) == 2:
            raise VariantFormatError(
                f"marker {text!r}: variant_label can only be compared with == or != "
                "against a quoted string"
            )
        out.append(node)
    return out


def parse_marker(text: str) -> Marker:
    """Parse a marker that may use the variant names; VariantFormatError when it cannot."""
    if not isinstance(text, str):
        raise VariantFormatError(f"a marker must be a string, not {type(text).__name__}")
    return _parse_marker(text)


@lru_cache(maxsize=512)
def _parse_marker(text: str) -> Marker:
    from packaging._parser import _parse_full_marker
    from packaging._tokenizer import ParserSyntaxError, Tokenizer

    try:
        tree = _parse_full_marker(Tokenizer(text, rules=_rules()))
    except ParserSyntaxError as exc:
        raise VariantFormatError(
            f"marker {text!r} cannot be parsed: {exc.message} at position {exc.span[0]}"
        ) from None
    except RecursionError:
        raise VariantFormatError(f"marker {text[:60]!r}... is nested too deeply") from None
    checked = _check_tree(tree, text)
    from_markers = getattr(Marker, "_from_markers", None)
    if from_markers is not None:
        return from_markers(checked)  # type: ignore[no-any-return]
    # Older packaging: a Marker is its parsed tree; build it the way its constructor would.
    marker = Marker.__new__(Marker)
    marker._markers = checked
    return marker


def evaluate_marker(
    marker: str | Marker,
    environment: Mapping[str, str] | None,
    variant: VariantDescription | None,
    *,
    supported: SupportedProperties | None = None,
) -> bool:
    """Evaluate ``marker`` for a wheel with ``variant`` (None: a non-variant wheel).

    ``environment`` overrides the running interpreter's PEP 508 values (None: use them as they
    are). ``supported`` enables PEP 825's filtering of ``variant_properties``.
    """
    parsed = marker if isinstance(marker, Marker) else parse_marker(marker)
    env: dict[str, str | AbstractSet[str]] = dict(environment or {})
    env.update(variant_marker_environment(variant, supported))
    try:
        return parsed.evaluate(env)
    except (UndefinedComparison, UndefinedEnvironmentName) as exc:
        raise VariantFormatError(f"marker {str(parsed)!r} cannot be evaluated: {exc}") from None
