"""Provider declarations and namespace priorities for a package's variant wheels.

They come from a ``[variant]`` table: in a ``pyproject.toml`` (``--pyproject``) or in a separate
TOML file (``--variants-config``), where the table may also sit at the top level. The shape is the
``providers`` / ``default-priorities`` part of ``variant.json``::

    [variant.default-priorities]
    namespace = ["nvidia", "x86_64"]

    [variant.providers.nvidia]
    requires = ["nvidia-variant-provider"]
    plugin-api = "nvidia_variant_provider.plugin:NvidiaVariantPlugin"

    [variant.providers.x86_64]
    builtin = "x86_64"

Exactly one of ``requires``, ``static-properties`` and ``builtin`` declares a provider's kind.
The reserved ``abi_dependency`` namespace (builds per version of a dependency: ``abi_dependency
:: torch :: 2.9`` needs ``torch==2.9.*``) has no provider table; it is listed in the namespace
list (fitwheel adds it last when a variant uses it and the list does not) and its values must be
one to three release numbers.
``build-requires`` (a plugin run at build time) is refused: fitwheel runs no plugins while
publishing, so such a provider must be written out as ``static-properties``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from fitwheel._values import Frozen
from fitwheel.errors import InputError
from fitwheel.toml import TomlReadError, load
from fitwheel.variants.abi import ABI_NAMESPACE, parse_value
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.model import (
    Provider,
    VariantProperty,
    check_feature,
    check_namespace,
    check_value,
)

_PROVIDER_KEYS = {
    "requires",
    "plugin-api",
    "static-properties",
    "feature-order",
    "optional",
    "builtin",
}


class VariantConfigError(InputError):
    """A variants config (or pyproject ``[variant]`` table) that cannot be used."""


class VariantConfig(Frozen):
    """A package's provider declarations, its namespace order, and the file they came from.

    A :class:`Frozen` rather than a dataclass: ``fitwheel variant make`` (a measured path) imports
    no ``dataclasses`` otherwise."""

    __slots__ = ("namespace_priorities", "providers", "source")
    namespace_priorities: tuple[str, ...]
    providers: Mapping[str, Provider]
    source: str

    def __init__(
        self, namespace_priorities: tuple[str, ...], providers: Mapping[str, Provider], source: str
    ) -> None:
        object.__setattr__(self, "namespace_priorities", namespace_priorities)
        object.__setattr__(self, "providers", providers)
        object.__setattr__(self, "source", source)

    def require_namespaces(self, namespaces: set[str]) -> None:
        missing = sorted(namespaces - set(self.providers) - {ABI_NAMESPACE})
        if missing:
            raise VariantConfigError(
                f"{self.source}: no provider is declared for namespace(s) {', '.join(missing)}; "
                f"add [variant.providers.{missing[0]}] (requires, static-properties or builtin) "
                "and list it in [variant.default-priorities] namespace"
            )

    def namespaces_for(self, namespaces: set[str]) -> tuple[str, ...]:
        """The namespace list of a variant that uses ``namespaces``: this config's, with
        ``abi_dependency`` last when the variant uses it and the config does not list it."""
        listed = self.namespace_priorities
        if ABI_NAMESPACE in namespaces and ABI_NAMESPACE not in listed:
            return (*listed, ABI_NAMESPACE)
        return listed

    def check_abi_values(self, properties: Iterable[VariantProperty]) -> None:
        for prop in sorted(properties):
            if prop.namespace == ABI_NAMESPACE and parse_value(prop.value) is None:
                raise VariantConfigError(
                    f"{self.source}: property '{prop}' can never be installed: an "
                    f"{ABI_NAMESPACE} value is one to three release numbers, such as 2.9 "
                    f"(matching {prop.feature}==2.9.*)"
                )


def load_config(path: str | Path, *, pyproject: bool = False) -> VariantConfig:
    """Read a variants config file, or a pyproject's ``[variant]`` table with ``pyproject=True``."""
    source = str(path)
    try:
        data = load(path, source)
    except OSError as exc:
        raise VariantConfigError(f"{source}: cannot read ({exc.strerror or exc})") from None
    except TomlReadError as exc:
        raise VariantConfigError(str(exc)) from None
    table: Any = data.get("variant")
    if table is None and not pyproject:
        table = data
    if not isinstance(table, dict) or not table:
        raise VariantConfigError(f"{source}: no [variant] table with providers")
    return parse_config(table, source=source)


def parse_config(table: Mapping[str, Any], *, source: str) -> VariantConfig:
    try:
        return _parse(table, source)
    except VariantFormatError as exc:
        raise VariantConfigError(str(exc.with_source(source))) from None


def _fail(source: str, path: str, rule: str) -> VariantConfigError:
    return VariantConfigError(f"{source}: at variant.{path}: {rule}")


def _str_list(value: Any, source: str, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise _fail(source, path, "expected a non-empty list of strings")
    return tuple(value)


def _parse(table: Mapping[str, Any], source: str) -> VariantConfig:
    priorities = table.get("default-priorities")
    if not isinstance(priorities, dict) or "namespace" not in priorities:
        raise _fail(source, "default-priorities", "a 'namespace' list is required")
    extra = set(priorities) - {"namespace"}
    if extra:
        raise _fail(
            source,
            "default-priorities",
            f"unsupported key(s) {', '.join(sorted(extra))}; express feature and value order "
            "through the providers (feature-order, static-properties)",
        )
    namespaces = _str_list(priorities["namespace"], source, "default-priorities.namespace")
    for ns in namespaces:
        check_namespace(ns, path="default-priorities.namespace")
    if len(set(namespaces)) != len(namespaces):
        raise _fail(source, "default-priorities.namespace", "a namespace is listed twice")
    # the reserved abi_dependency namespace is answered by the installer: listed, never provided
    provided = [ns for ns in namespaces if ns != ABI_NAMESPACE]
    raw_providers = table.get("providers", {} if not provided else None)
    if not isinstance(raw_providers, dict) or (provided and not raw_providers):
        raise _fail(source, "providers", "at least one provider table is required")
    if ABI_NAMESPACE in raw_providers:
        raise _fail(
            source,
            f"providers.{ABI_NAMESPACE}",
            f"{ABI_NAMESPACE!r} is a reserved namespace and must not have a provider (PEP 817, "
            "PEP 850): the installer matches its values against the dependency's version; "
            "remove the table and keep the namespace in default-priorities.namespace",
        )
    if set(raw_providers) != set(provided):
        raise _fail(
            source,
            "providers",
            "the providers must be exactly the namespaces of default-priorities.namespace "
            f"(providers: {sorted(raw_providers)}, namespaces: {sorted(provided)})",
        )
    providers = {ns: _provider(ns, raw_providers[ns], source) for ns in provided}
    return VariantConfig(namespaces, MappingProxyType(providers), source)


def _provider(ns: str, raw: Any, source: str) -> Provider:
    path = f"providers.{ns}"
    if not isinstance(raw, dict):
        raise _fail(source, path, "expected a table")
    if "build-requires" in raw:
        raise _fail(
            source,
            f"{path}.build-requires",
            "build-time plugins are not run by fitwheel; declare the values they would "
            "report as static-properties (with feature-order for several features)",
        )
    unknown = set(raw) - _PROVIDER_KEYS
    if unknown:
        raise _fail(source, path, f"unknown key(s) {', '.join(sorted(unknown))}")
    requires = _str_list(raw["requires"], source, f"{path}.requires") if "requires" in raw else ()
    static: dict[str, tuple[str, ...]] | None = None
    if "static-properties" in raw:
        sp = raw["static-properties"]
        if not isinstance(sp, dict) or not sp:
            raise _fail(source, f"{path}.static-properties", "expected a non-empty table")
        static = {}
        for feature, values in sp.items():
            check_feature(feature, path=f"{path}.static-properties")
            vals = _str_list(values, source, f"{path}.static-properties.{feature}")
            for value in vals:
                check_value(value, path=f"{path}.static-properties.{feature}")
            static[feature] = vals
    builtin = raw.get("builtin")
    if builtin is not None and (not isinstance(builtin, str) or not builtin):
        raise _fail(source, f"{path}.builtin", "expected a non-empty string")
    kinds = [
        k
        for k, present in (
            ("requires", requires),
            ("static-properties", static),
            ("builtin", builtin),
        )
        if present
    ]
    if len(kinds) != 1:
        raise _fail(
            source,
            path,
            "exactly one of requires, static-properties and builtin must be given "
            f"(found: {', '.join(kinds) or 'none'})",
        )
    plugin_api = raw.get("plugin-api")
    if plugin_api is not None and (not isinstance(plugin_api, str) or not requires):
        raise _fail(source, f"{path}.plugin-api", "a string, valid only with requires")
    feature_order: tuple[str, ...] | None = None
    if "feature-order" in raw:
        feature_order = _str_list(raw["feature-order"], source, f"{path}.feature-order")
        if (
            static is None
            or set(feature_order) != set(static)
            or len(set(feature_order)) != len(feature_order)
        ):
            raise _fail(
                source,
                f"{path}.feature-order",
                "valid only with static-properties, naming each of its features once",
            )
    elif static is not None and len(static) > 1:
        raise _fail(
            source, f"{path}.feature-order", "required when static-properties has 2+ features"
        )
    optional = raw.get("optional", False)
    if not isinstance(optional, bool):
        raise _fail(source, f"{path}.optional", "expected true or false")
    return Provider(
        namespace=ns,
        requires=requires,
        plugin_api=plugin_api,
        static_properties=MappingProxyType(static) if static is not None else None,
        feature_order=feature_order,
        optional=optional,
        builtin=builtin,
    )
