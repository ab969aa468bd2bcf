"""The in-memory model of wheel-variant metadata, independent of any schema generation.

Every reader (``reading``) produces these objects and every writer (``writing``) consumes them,
so the rest of fitwheel never sees which generation of the format a file used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType

from fitwheel._values import Frozen, OrderedFrozen
from fitwheel.variants.errors import InvalidLabelError, InvalidPropertyError
from fitwheel.variants.names import (
    FEATURE_RE,
    LABEL_RE,
    NAMESPACE_RE,
    VALUE_RE,
    check_feature,
    check_label,
    check_namespace,
    check_value,
)

# The validators and alphabets live in ``names`` and are part of this module's interface too.
__all__ = [
    "FEATURE_RE",
    "LABEL_RE",
    "LEGACY_NULL_LABELS",
    "NAMESPACE_RE",
    "NULL_LABEL",
    "VALUE_RE",
    "Provider",
    "SupportedProperties",
    "VariantDescription",
    "VariantFeature",
    "VariantInfo",
    "VariantProperty",
    "check_feature",
    "check_label",
    "check_namespace",
    "check_value",
    "default_label",
    "properties_to_dict",
]

NULL_LABEL = "null"
#: Null-variant labels of the unversioned (pre-v0.0.2) generation, whose null wheels carry them;
#: only readers of that generation create descriptions with them.
LEGACY_NULL_LABELS = frozenset({"00000000"})

_PROPERTY_STRING_RE = re.compile(r"([^\s:]+)\s*::\s*([^\s:]+)\s*::\s*([^\s:]+)")
_FEATURE_STRING_RE = re.compile(r"([^\s:]+)\s*::\s*([^\s:]+)")

#: namespace -> feature -> values, most preferred first. The shape of a provider's "supported
#: configs" answer and of a profile's ``properties``; key order is meaning.
SupportedProperties = Mapping[str, Mapping[str, tuple[str, ...]]]


_set = object.__setattr__
_EMPTY: Mapping[str, tuple[str, ...]] = MappingProxyType({})


class VariantFeature(OrderedFrozen):
    """A feature of a namespace, written ``namespace :: feature``."""

    __slots__ = ("namespace", "feature")  # noqa: RUF023 (field order is comparison order)
    namespace: str
    feature: str

    def __init__(self, namespace: str, feature: str) -> None:
        _set(self, "namespace", check_namespace(namespace))
        _set(self, "feature", check_feature(feature))

    # Compared and hashed in the hot loops of ordering: spelled out rather than generic.
    def __eq__(self, other: object) -> bool:
        if type(other) is not VariantFeature:
            return NotImplemented
        return self.namespace == other.namespace and self.feature == other.feature

    def __hash__(self) -> int:
        return hash((self.namespace, self.feature))

    @classmethod
    def parse(cls, text: str) -> VariantFeature:
        """Parse ``"ns :: feature"``; whitespace around ``::`` is insignificant."""
        match = _FEATURE_STRING_RE.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise InvalidPropertyError(f"{text!r} is not of the form 'namespace :: feature'")
        return cls(match.group(1), match.group(2))

    def __str__(self) -> str:
        return f"{self.namespace} :: {self.feature}"


class VariantProperty(OrderedFrozen):
    """One value of a feature, written ``namespace :: feature :: value``."""

    __slots__ = ("namespace", "feature", "value")  # noqa: RUF023 (comparison order)
    namespace: str
    feature: str
    value: str

    def __init__(self, namespace: str, feature: str, value: str) -> None:
        _set(self, "namespace", check_namespace(namespace))
        _set(self, "feature", check_feature(feature))
        _set(self, "value", check_value(value))

    def __eq__(self, other: object) -> bool:
        if type(other) is not VariantProperty:
            return NotImplemented
        return (
            self.namespace == other.namespace
            and self.feature == other.feature
            and self.value == other.value
        )

    def __hash__(self) -> int:
        return hash((self.namespace, self.feature, self.value))

    def __lt__(self, other: object) -> bool:
        if type(other) is not VariantProperty:
            return NotImplemented
        return (self.namespace, self.feature, self.value) < (
            other.namespace,
            other.feature,
            other.value,
        )

    @classmethod
    def parse(cls, text: str) -> VariantProperty:
        """Parse ``"ns :: feature :: value"``; whitespace around ``::`` is insignificant."""
        match = _PROPERTY_STRING_RE.fullmatch(text.strip()) if isinstance(text, str) else None
        if match is None:
            raise InvalidPropertyError(
                f"{text!r} is not of the form 'namespace :: feature :: value'"
            )
        return cls(match.group(1), match.group(2), match.group(3))

    @property
    def feature_key(self) -> VariantFeature:
        return VariantFeature(self.namespace, self.feature)

    def __str__(self) -> str:
        return f"{self.namespace} :: {self.feature} :: {self.value}"


def properties_to_dict(props: Iterable[VariantProperty]) -> dict[str, dict[str, list[str]]]:
    """ns -> feature -> sorted values, keys sorted: the canonical form of a property set."""
    out: dict[str, dict[str, list[str]]] = {}
    for prop in sorted(props):
        out.setdefault(prop.namespace, {}).setdefault(prop.feature, []).append(prop.value)
    return out


def default_label(props: Iterable[VariantProperty]) -> str:
    """The label tools derive when none is given: 8 hex digits of a SHA-256 over the sorted
    properties (a tool convention, shared with variantlib), or ``null`` for no properties."""
    ordered = sorted(set(props))
    if not ordered:
        return NULL_LABEL
    import hashlib  # only publishing derives labels; keep it off the start-up path

    digest = hashlib.sha256()
    for prop in ordered:
        digest.update(f"{prop}\n".encode())
    return digest.hexdigest()[:8]


class VariantDescription(Frozen):
    """One variant: a label and the set of properties it maps to."""

    __slots__ = ("label", "properties")
    label: str
    properties: frozenset[VariantProperty]

    def __init__(self, label: str, properties: frozenset[VariantProperty] = frozenset()) -> None:
        _set(self, "label", check_label(label))
        _set(self, "properties", properties)
        if self.label == NULL_LABEL and self.properties:
            raise InvalidLabelError("the 'null' label can be used only for the null variant")
        if (
            self.label != NULL_LABEL
            and not self.properties
            and self.label not in LEGACY_NULL_LABELS
        ):
            raise InvalidLabelError(
                f"variant {self.label!r} has no properties: the null variant must use the "
                "'null' label"
            )

    @property
    def is_null(self) -> bool:
        return not self.properties

    @property
    def namespaces(self) -> frozenset[str]:
        return frozenset(p.namespace for p in self.properties)

    @property
    def features(self) -> frozenset[VariantFeature]:
        return frozenset(p.feature_key for p in self.properties)

    def as_dict(self) -> dict[str, dict[str, list[str]]]:
        return properties_to_dict(self.properties)


class Provider(Frozen):
    """A provider declaration (``providers.<namespace>``), in every generation's vocabulary.

    Exactly one kind applies: an install-time plugin (``requires``), a static provider
    (``static_properties``, answered from the file), or a provider built into the installer
    (``builtin``). ``enable_if`` and ``install_time`` exist only in 817-era files.
    """

    __slots__ = (
        "builtin",
        "enable_if",
        "feature_order",
        "namespace",
        "optional",
        "plugin_api",
        "requires",
        "static_properties",
    )
    namespace: str
    requires: tuple[str, ...]
    plugin_api: str | None
    static_properties: Mapping[str, tuple[str, ...]] | None
    feature_order: tuple[str, ...] | None
    optional: bool
    builtin: str | None
    enable_if: str | None

    def __init__(
        self,
        namespace: str,
        requires: tuple[str, ...] = (),
        plugin_api: str | None = None,
        static_properties: Mapping[str, tuple[str, ...]] | None = None,
        feature_order: tuple[str, ...] | None = None,
        optional: bool = False,
        builtin: str | None = None,
        enable_if: str | None = None,
    ) -> None:
        _set(self, "namespace", namespace)
        _set(self, "requires", requires)
        _set(self, "plugin_api", plugin_api)
        _set(self, "static_properties", static_properties)
        _set(self, "feature_order", feature_order)
        _set(self, "optional", optional)
        _set(self, "builtin", builtin)
        _set(self, "enable_if", enable_if)

    @property
    def is_static(self) -> bool:
        return self.static_properties is not None


class VariantInfo(Frozen):
    """The content of a ``variant.json`` or ``{name}-{version}-variants.json``.

    ``feature_priorities`` and ``property_priorities`` come only from 817-era files (schema v0.0.x,
    PEP 825 v0.1.0); the current form expresses feature order through static providers'
    ``feature_order`` and value order through the providers themselves.
    """

    __slots__ = (
        "feature_priorities",
        "namespace_priorities",
        "property_priorities",
        "providers",
        "schema",
        "variants",
    )
    namespace_priorities: tuple[str, ...]
    providers: Mapping[str, Provider]
    variants: Mapping[str, VariantDescription]
    feature_priorities: Mapping[str, tuple[str, ...]]
    property_priorities: Mapping[str, Mapping[str, tuple[str, ...]]]
    schema: str | None

    def __init__(
        self,
        namespace_priorities: tuple[str, ...],
        providers: Mapping[str, Provider],
        variants: Mapping[str, VariantDescription],
        feature_priorities: Mapping[str, tuple[str, ...]] = _EMPTY,
        property_priorities: Mapping[str, Mapping[str, tuple[str, ...]]] = MappingProxyType({}),
        schema: str | None = None,
    ) -> None:
        _set(self, "namespace_priorities", namespace_priorities)
        _set(self, "providers", providers)
        _set(self, "variants", variants)
        _set(self, "feature_priorities", feature_priorities)
        _set(self, "property_priorities", property_priorities)
        _set(self, "schema", schema)

    def static_namespaces(self) -> tuple[str, ...]:
        return tuple(ns for ns, p in self.providers.items() if p.is_static)
