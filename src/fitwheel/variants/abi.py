"""The reserved ``abi_dependency`` namespace (PEP 817, PEP 850): builds per version of another
distribution, such as one build of an extension per torch minor version.

A property ``abi_dependency :: torch :: 2.9`` says the build needs ``torch==2.9.*``:

- the feature is the dependency's normalised name, with ``_`` for ``-`` (the feature alphabet has
  no ``-``): ``flash-attn`` is ``flash_attn``;
- the value is a release segment of one to three numbers, matched as ``=={value}.*``, so ``2``,
  ``2.9`` and ``2.9.1`` are different ranges, and ``2.0`` matches release ``2`` (release segments
  are compared padded with zeros). A value that is not such a segment never matches, and a
  version with a non-zero epoch matches nothing;
- several values of one feature mean OR; several features mean AND.

The namespace never has a provider entry: the installer answers it from the versions of the
dependencies. This module is the matching rule only; where the versions come from is the
resolver's business. :func:`with_abi_provider` lets the generic ordering rank such variants: it
adds an answer for the namespace, built from the file's own values, newest dependency version
first, after every other namespace (as variantlib appends it).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from fitwheel.variants.model import Provider, VariantDescription, VariantInfo
from fitwheel.variants.names import canonicalize_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    from packaging.version import Version

__all__ = [
    "ABI_NAMESPACE",
    "OVERRIDE_VARIABLE",
    "AbiChoice",
    "abi_choices",
    "abi_features",
    "feature_for",
    "matches_any",
    "parse_override",
    "parse_value",
    "preference_order",
    "uses_abi",
    "value_matches",
    "value_specifier",
    "with_abi_provider",
]

ABI_NAMESPACE = "abi_dependency"
#: ``pkg==ver,...``: versions that replace what the resolver would match against (variantlib's
#: variable, same form)
OVERRIDE_VARIABLE = "VARIANT_ABI_DEPENDENCY"
#: one to three release numbers
_VALUE_RE = re.compile(r"[0-9]+(?:\.[0-9]+){0,2}")
#: at most this many candidates per variant (one per combination of its values)
_MAX_CHOICES = 64

#: (feature, value) pairs: the dependency versions one candidate of a variant is built for
AbiChoice = tuple[tuple[str, str], ...]


def feature_for(name: str) -> str:
    """The feature name of distribution ``name``: normalised, ``-`` written as ``_``."""
    return canonicalize_name(name).replace("-", "_")


def parse_value(value: str) -> tuple[int, ...] | None:
    """The release numbers of a value, or None when it is not one to three numbers."""
    if not _VALUE_RE.fullmatch(value):
        return None
    return tuple(int(part) for part in value.split("."))


def value_specifier(value: str) -> str:
    """The version specifier a value stands for: ``2.9`` -> ``==2.9.*``."""
    parts = parse_value(value)
    if parts is None:
        raise ValueError(f"{value!r} is not an abi_dependency value (one to three numbers)")
    return "==" + ".".join(str(p) for p in parts) + ".*"


def value_matches(value: str, version: Version) -> bool:
    """Whether ``version`` is in the range ``=={value}.*`` (pre-, post- and dev-releases and
    local labels of the release included, as PEP 440's prefix match has them)."""
    parts = parse_value(value)
    if parts is None or version.epoch != 0:
        return False
    release = tuple(version.release) + (0,) * max(0, len(parts) - len(version.release))
    return release[: len(parts)] == parts


def matches_any(values: Iterable[str], version: Version) -> bool:
    """Several values of one feature: any of them."""
    return any(value_matches(v, version) for v in values)


def preference_order(values: Iterable[str]) -> tuple[str, ...]:
    """The valid values, the newest dependency version first; of two equal ones (``2.9`` and
    ``2.9.0``) the more specific first. Invalid values are left out."""
    valid = {v: parts for v in values if (parts := parse_value(v)) is not None}

    def key(value: str) -> tuple[tuple[int, ...], int]:
        parts = valid[value]
        padded = parts + (0,) * (3 - len(parts))
        return (padded, len(parts))

    return tuple(sorted(valid, key=key, reverse=True))


def uses_abi(info: VariantInfo) -> bool:
    return any(p.namespace == ABI_NAMESPACE for d in info.variants.values() for p in d.properties)


def abi_features(desc: VariantDescription) -> dict[str, tuple[str, ...]]:
    """The variant's abi_dependency features, each with its values, most preferred first."""
    grouped: dict[str, list[str]] = {}
    for prop in desc.properties:
        if prop.namespace == ABI_NAMESPACE:
            grouped.setdefault(prop.feature, []).append(prop.value)
    return {f: preference_order(vs) for f, vs in sorted(grouped.items())}


def abi_choices(desc: VariantDescription) -> list[AbiChoice]:
    """One choice per combination of the variant's abi values (several values of a feature are
    alternatives), the most preferred first; ``[()]`` for a variant without abi properties and
    ``[]`` for one whose values are all invalid."""
    features = abi_features(desc)
    if not features:
        return [()]
    names = list(features)
    combos = itertools.product(*(features[f] for f in names))
    return [
        tuple(zip(names, combo, strict=True)) for combo in itertools.islice(combos, _MAX_CHOICES)
    ]


def with_abi_provider(info: VariantInfo) -> VariantInfo:
    """``info`` with an answer for ``abi_dependency`` that the generic ordering understands: a
    static provider listing, per feature, the valid values the variants use (newest first), the
    namespace ranked after every other. Unchanged when no variant uses the namespace."""
    if not uses_abi(info):
        return info
    values: dict[str, list[str]] = {}
    for desc in info.variants.values():
        for feature, vs in abi_features(desc).items():
            values.setdefault(feature, []).extend(vs)
    static = {f: preference_order(vs) for f, vs in sorted(values.items())}
    static = {f: vs for f, vs in static.items() if vs}
    provider = Provider(
        ABI_NAMESPACE,
        static_properties=MappingProxyType(static),
        feature_order=tuple(static) if len(static) > 1 else None,
    )
    namespaces = info.namespace_priorities
    if ABI_NAMESPACE not in namespaces:
        namespaces = (*namespaces, ABI_NAMESPACE)
    return VariantInfo(
        namespace_priorities=namespaces,
        providers=MappingProxyType({**info.providers, ABI_NAMESPACE: provider}),
        variants=info.variants,
        feature_priorities=info.feature_priorities,
        property_priorities=info.property_priorities,
        schema=info.schema,
    )


def parse_override(text: str) -> tuple[Mapping[str, Version], list[str]]:
    """``VARIANT_ABI_DEPENDENCY``: ``pkg==ver`` items separated by commas, as feature -> version,
    and the items that are not of that form (skipped, as variantlib skips them). A local label
    is dropped (variantlib drops it too)."""
    from packaging.version import InvalidVersion, Version

    found: dict[str, Version] = {}
    bad: list[str] = []
    for raw in text.split(","):
        item = raw.strip()
        if not item:
            continue
        name, sep, version = item.partition("==")
        name, version = name.strip(), version.strip().split("+", 1)[0]
        if not sep or not re.fullmatch(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", name):
            bad.append(item)
            continue
        try:
            found[feature_for(name)] = Version(version)
        except InvalidVersion:
            bad.append(item)
    return MappingProxyType(found), bad
