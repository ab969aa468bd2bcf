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
variable rule that also admits them, and the resulting tree is evaluated by packaging. The one
exception is the plain PEP 508 markers of provider ``enable-if`` conditions: those made only of
``==`` / ``!=`` / ``in`` string comparisons joined by ``and`` / ``or`` are evaluated by a small
evaluator here (:func:`evaluate_environment_marker`), which keeps packaging off the start-up
path; any other marker goes to packaging.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from collections.abc import Set as AbstractSet
from functools import lru_cache

from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.model import SupportedProperties, VariantDescription

# ``typing`` stays unimported at run time (this module is on the start-up path of ``fitwheel
# select``); type checkers treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from packaging.markers import Marker

# packaging is imported where it is used: evaluating the common provider conditions (enable-if)
# needs none of it, which keeps ``fitwheel select`` from loading it.

__all__ = [
    "VARIANT_MARKERS",
    "evaluate_environment_marker",
    "evaluate_marker",
    "is_simple_environment_marker",
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

    With ``supported``, ``variant_properties`` keeps only the values the target supports. Give
    the supported lists the selection used (:func:`fitwheel.variants.ordering.effective_supported`);
    a namespace ``supported`` does not mention keeps all its values, since the selected wheel's
    namespaces are all supported and only a static provider's answer can be missing there.
    """
    if variant is None:
        return dict(_NON_VARIANT)
    props = variant.properties
    if supported is not None:
        props = frozenset(
            p
            for p in props
            if p.namespace not in supported or p.value in supported[p.namespace].get(p.feature, ())
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
    from packaging import markers as _markers
    from packaging.markers import Marker

    checked = _check_tree(tree, text)
    # as Marker() does: 'extra' literals are normalised (``extra == "Extra_B"`` is "extra-b"),
    # since packaging normalises the environment's extra before comparing
    normalize = getattr(_markers, "_normalize_extra_values", None)
    if normalize is not None:
        checked = normalize(checked)
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
    from packaging.markers import UndefinedComparison, UndefinedEnvironmentName

    parsed = parse_marker(marker) if isinstance(marker, str) else marker
    env: dict[str, str | AbstractSet[str]] = dict(environment or {})
    env.update(variant_marker_environment(variant, supported))
    try:
        return parsed.evaluate(env)
    except (UndefinedComparison, UndefinedEnvironmentName) as exc:
        raise VariantFormatError(f"marker {str(parsed)!r} cannot be evaluated: {exc}") from None


# --- plain PEP 508 markers (provider enable-if) -------------------------------------------------

#: Markers compared as plain strings by packaging (never as versions).
_STRING_NAMES = frozenset(
    {
        "implementation_name",
        "os_name",
        "platform_machine",
        "platform_python_implementation",
        "platform_system",
        "platform_version",
        "sys_platform",
    }
)

#: A clause: (marker name, operator, literal, whether the name is on the left).
_Clause = tuple[str, str, str, bool]


@lru_cache(maxsize=1)
def _token_re() -> re.Pattern[str]:
    return re.compile(
        r"""[ \t]*(?:
            (?P<str>'[^'\\]*'|"[^"\\]*")
          | (?P<op>==|!=|not[ \t]+in\b|in\b)
          | (?P<bool>and\b|or\b)
          | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
        )""",
        re.VERBOSE,
    )


@lru_cache(maxsize=256)
def _simple_form(text: str) -> tuple[tuple[_Clause, ...], ...] | None:
    """``text`` as an ``or`` of ``and``-groups of string comparisons, or None when it uses
    anything else (parentheses, version markers, other operators): packaging handles those."""
    pattern = _token_re()
    tokens: list[tuple[str, str]] = []
    pos = 0
    end = len(text.rstrip(" \t"))
    while pos < end:
        match = pattern.match(text, pos)
        if match is None or match.end() == pos:
            return None
        kind = match.lastgroup
        assert kind is not None
        token = match.group(kind)
        if kind == "str" and not token.isprintable():
            return None  # packaging decodes such literals as Python strings
        tokens.append((kind, token))
        pos = match.end()
    groups: list[list[_Clause]] = [[]]
    i = 0
    while True:
        if i + 3 > len(tokens):
            return None
        (k1, v1), (k2, v2), (k3, v3) = tokens[i : i + 3]
        if k2 != "op":
            return None
        op = "not in" if v2.startswith("not") else v2
        if k1 == "name" and k3 == "str" and v1 in _STRING_NAMES:
            groups[-1].append((v1, op, v3[1:-1], True))
        elif k1 == "str" and k3 == "name" and v3 in _STRING_NAMES:
            groups[-1].append((v3, op, v1[1:-1], False))
        else:
            return None
        i += 3
        if i == len(tokens):
            return tuple(tuple(g) for g in groups)
        kind, word = tokens[i]
        if kind != "bool":
            return None
        if word == "or":
            groups.append([])
        i += 1


def is_simple_environment_marker(text: str) -> bool:
    """Whether ``text`` is a plain PEP 508 marker made only of string comparisons joined by
    ``and``/``or``: such a marker is valid without consulting packaging."""
    return _simple_form(text) is not None


def _fast_evaluate(text: str, environment: Mapping[str, str]) -> bool | None:
    form = _simple_form(text)
    if form is None:
        return None
    result = False
    for group in form:
        holds = True
        for name, op, literal, name_left in group:
            value = environment.get(name)
            if value is None:
                return None  # packaging fills in the running interpreter's value
            if op == "==":
                ok = value == literal
            elif op == "!=":
                ok = value != literal
            else:
                inside = literal in value if not name_left else value in literal
                ok = inside if op == "in" else not inside
            if not ok:
                holds = False
                break
        result = result or holds
    return result


def evaluate_environment_marker(text: str, environment: Mapping[str, str] | None) -> bool:
    """Evaluate a plain PEP 508 marker (such as a provider's ``enable-if``) for a target.

    ``environment`` holds the target's marker values; names it lacks take the running
    interpreter's values, as :meth:`packaging.markers.Marker.evaluate` does. Comparisons of
    string-valued names joined by ``and``/``or`` are answered directly; everything else goes to
    packaging. A marker that cannot be parsed raises :class:`VariantFormatError`.
    """
    env = environment or {}
    fast = _fast_evaluate(text, env)
    if fast is not None:
        return fast
    from packaging.markers import InvalidMarker, Marker, UndefinedComparison

    try:
        return Marker(text).evaluate(dict(env))
    except InvalidMarker as exc:
        first = str(exc).splitlines()[0] if str(exc) else "invalid"
        raise VariantFormatError(f"{text!r} is not a valid environment marker: {first}") from None
    except UndefinedComparison as exc:
        raise VariantFormatError(f"marker {text!r} cannot be evaluated: {exc}") from None
