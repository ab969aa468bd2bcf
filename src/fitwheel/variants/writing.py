"""Write variant metadata in the current form, the one variantlib 0.2.2 and uv 0.13 read.

Output: ``$schema`` :data:`CURRENT_SCHEMA_URL`, ``default-priorities.namespace``, ``providers`` and
``variants``, as JSON with a 4-space indent, keys sorted and a final newline. Each provider is
exactly one of

- a plugin: ``requires``, ``plugin-api`` when set;
- static: ``static-properties`` (values most preferred first) and ``feature-order`` (whenever the
  model has one, and always with two or more features);
- built in: ``builtin``;

plus ``optional`` only when true. Variant value lists are sorted (they are sets).

Metadata without any provider (PEP 825 files) is written in the PEP 825 v0.1.1 form instead
(:data:`PEP825_SCHEMA_URL`: no ``providers`` key), which uv reads and variantlib does not.

817-era data the current form cannot hold is handled by these rules:

- Folded, nothing lost: property priorities of a static namespace reorder its values (listed
  values first, in priority order, then the rest in their previous order); feature priorities of
  a static namespace reorder its ``feature-order`` the same way. Priorities naming values or
  features the provider does not list are meaningless and dropped.
- Lossy: ``enable-if``; feature or property priorities of a plugin or builtin namespace; priorities
  of any kind in provider-less (825) metadata; the all-zero null label of the unversioned
  generation (written as ``null``, so wheels named with the old label no longer match). By default
  these raise :class:`LossyConversionError`, which lists every item. With ``allow_lossy=True`` they
  are dropped (the null variant is written under ``null``).

The reserved ``abi_dependency`` namespace is written without a provider entry (PEP 817 and
PEP 850 forbid one); it may be listed in the namespace list or not.

Metadata that breaks the model's rules (a namespace without provider, a provider of no kind or of
two kinds, a variant using an undeclared namespace) raises :class:`VariantFormatError`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from fitwheel.variants._schema import CURRENT_SCHEMA_URL, PEP825_SCHEMA_URL
from fitwheel.variants.abi import ABI_NAMESPACE
from fitwheel.variants.errors import InvalidLabelError, VariantFormatError
from fitwheel.variants.model import (
    NULL_LABEL,
    Provider,
    VariantInfo,
    check_feature,
    check_label,
    check_namespace,
    check_value,
    properties_to_dict,
)

__all__ = [
    "CURRENT_SCHEMA_URL",
    "PEP825_SCHEMA_URL",
    "LossyConversionError",
    "dump_variant_info",
    "to_json_dict",
    "variant_json_for_wheel",
    "wheel_variant_info",
]


class LossyConversionError(VariantFormatError):
    """Metadata holds 817-era data that the current form cannot express.

    ``items`` lists each lost item as ``(key path, what is lost)``.
    """

    def __init__(
        self,
        rule: str,
        *,
        path: str = "",
        source: str | None = None,
        items: tuple[tuple[str, str], ...] = (),
    ) -> None:
        self.items = items
        super().__init__(rule, path=path, source=source)

    def with_source(self, source: str) -> LossyConversionError:
        return LossyConversionError(self.rule, path=self.path, source=source, items=self.items)


def dump_variant_info(info: VariantInfo, *, allow_lossy: bool = False) -> str:
    """The JSON text of ``info`` in the current form (see the module docstring)."""
    return json.dumps(to_json_dict(info, allow_lossy=allow_lossy), indent=4, sort_keys=True) + "\n"


def variant_json_for_wheel(info: VariantInfo, label: str, *, allow_lossy: bool = False) -> str:
    """The ``*.dist-info/variant.json`` text for the wheel of variant ``label``: every provider
    and the namespace list of ``info``, and that one variant."""
    return dump_variant_info(wheel_variant_info(info, label), allow_lossy=allow_lossy)


def wheel_variant_info(info: VariantInfo, label: str) -> VariantInfo:
    """``info`` narrowed to the single variant ``label`` (what a wheel's ``variant.json`` holds)."""
    if label not in info.variants:
        known = ", ".join(sorted(info.variants)) or "none"
        raise InvalidLabelError(
            f"no variant {label!r} in this metadata (labels: {known})", path=f"variants.{label}"
        )
    return VariantInfo(
        namespace_priorities=info.namespace_priorities,
        providers=info.providers,
        variants=MappingProxyType({label: info.variants[label]}),
        feature_priorities=info.feature_priorities,
        property_priorities=info.property_priorities,
        schema=info.schema,
    )


def to_json_dict(info: VariantInfo, *, allow_lossy: bool = False) -> dict[str, Any]:
    """``info`` as a JSON-ready dict in the current form (see the module docstring)."""
    lost: list[tuple[str, str]] = []
    namespaces = list(info.namespace_priorities)
    if not namespaces:
        raise VariantFormatError(
            "the namespace list must name at least one namespace", path="default-priorities"
        )
    if len(set(namespaces)) != len(namespaces):
        raise VariantFormatError(
            "the namespace list names a namespace twice", path="default-priorities.namespace"
        )
    for i, ns in enumerate(namespaces):
        check_namespace(ns, path=f"default-priorities.namespace[{i}]")
    declared = set(namespaces)

    out: dict[str, Any] = {"default-priorities": {"namespace": namespaces}}
    # the reserved abi_dependency namespace never has a provider entry (PEP 817, PEP 850)
    with_provider = declared - {ABI_NAMESPACE}
    if info.providers or declared == {ABI_NAMESPACE}:
        out["$schema"] = CURRENT_SCHEMA_URL
        if ABI_NAMESPACE in info.providers:
            raise VariantFormatError(
                f"{ABI_NAMESPACE!r} is a reserved namespace and must not have a provider",
                path=f"providers.{ABI_NAMESPACE}",
            )
        if set(info.providers) != with_provider:
            raise VariantFormatError(
                "default-priorities.namespace and the keys of providers must name the same "
                f"namespaces ({', '.join(sorted(with_provider))} vs "
                f"{', '.join(sorted(info.providers))})",
                path="providers",
            )
        out["providers"] = {
            ns: _provider_dict(
                ns,
                info.providers[ns],
                info.feature_priorities.get(ns),
                info.property_priorities.get(ns, {}),
                lost,
            )
            for ns in namespaces
            if ns != ABI_NAMESPACE
        }
    else:
        out["$schema"] = PEP825_SCHEMA_URL
        for ns in info.feature_priorities:
            lost.append((f"default-priorities.feature.{ns}", "feature priorities"))
        for ns in info.property_priorities:
            lost.append((f"default-priorities.property.{ns}", "property priorities"))

    variants: dict[str, dict[str, dict[str, list[str]]]] = {}
    for key, desc in info.variants.items():
        path = f"variants.{key}"
        check_label(key, path=path)
        if desc.is_null and key != NULL_LABEL:
            # Only the unversioned generation's all-zero label gets here (the model refuses any
            # other label for the null variant).
            lost.append((path, f"the legacy null label {key!r} (written as 'null')"))
            key = NULL_LABEL
        elif desc.label != key:
            raise InvalidLabelError(
                f"the variant stored under {key!r} is labelled {desc.label!r}", path=path
            )
        elif key == NULL_LABEL and not desc.is_null:
            raise InvalidLabelError("the 'null' label is reserved for the null variant", path=path)
        undeclared = sorted(desc.namespaces - declared - {ABI_NAMESPACE})
        if undeclared:
            raise VariantFormatError(
                f"variant {key!r} uses namespace {undeclared[0]!r}, which "
                "default-priorities.namespace does not list",
                path=f"{path}.{undeclared[0]}",
            )
        variants[key] = properties_to_dict(desc.properties)
    out["variants"] = variants

    if lost and not allow_lossy:
        listed = "; ".join(f"{p}: {what}" for p, what in lost)
        raise LossyConversionError(
            "the current variant metadata form cannot express " + listed + " (write with "
            "allow_lossy=True to drop them)",
            path=lost[0][0],
            items=tuple(lost),
        )
    return out


def _provider_dict(
    provider_key: str,
    provider: Provider,
    feature_prio: tuple[str, ...] | None,
    property_prio: Mapping[str, tuple[str, ...]],
    lost: list[tuple[str, str]],
) -> dict[str, Any]:
    ns = provider.namespace
    path = f"providers.{ns}"
    if provider_key != ns:
        raise VariantFormatError(
            f"the provider stored under {provider_key!r} is for namespace {ns!r}",
            path=f"providers.{provider_key}",
        )
    kinds = [
        name
        for name, present in (
            ("requires", bool(provider.requires)),
            ("static-properties", provider.static_properties is not None),
            ("builtin", provider.builtin is not None),
        )
        if present
    ]
    if len(kinds) != 1:
        found = ", ".join(kinds) if kinds else "none"
        raise VariantFormatError(
            "a provider must be exactly one of a plugin (requires), static (static-properties) "
            f"or built in (builtin); found {found}",
            path=path,
        )
    if provider.plugin_api is not None and not provider.requires:
        raise VariantFormatError("plugin-api is valid only with requires", path=path)
    if provider.feature_order is not None and provider.static_properties is None:
        raise VariantFormatError("feature-order is valid only with static-properties", path=path)
    if provider.enable_if is not None:
        lost.append((f"{path}.enable-if", f"the marker {provider.enable_if!r}"))

    table: dict[str, Any] = {}
    if provider.optional:
        table["optional"] = True
    if provider.requires:
        table["requires"] = list(provider.requires)
        if provider.plugin_api is not None:
            table["plugin-api"] = provider.plugin_api
    if provider.builtin is not None:
        table["builtin"] = provider.builtin
    if provider.static_properties is None:
        if feature_prio is not None:
            lost.append((f"default-priorities.feature.{ns}", "feature priorities"))
        if property_prio:
            lost.append((f"default-priorities.property.{ns}", "property priorities"))
        return table

    static = {f: list(values) for f, values in provider.static_properties.items()}
    for feature, values in static.items():
        fpath = f"{path}.static-properties.{feature}"
        check_feature(feature, path=fpath)
        for i, value in enumerate(values):
            check_value(value, path=f"{fpath}[{i}]")
        if len(set(values)) != len(values):
            raise VariantFormatError("a static value is listed twice", path=fpath)
    if not static or not all(static.values()):
        raise VariantFormatError(
            "a static provider must list at least one value for each of at least one feature",
            path=f"{path}.static-properties",
        )
    for feature, prio in property_prio.items():
        if feature in static:
            current = static[feature]
            static[feature] = [v for v in prio if v in current] + [
                v for v in current if v not in prio
            ]
    order = list(provider.feature_order) if provider.feature_order is not None else None
    if order is not None and (set(order) != set(static) or len(order) != len(static)):
        raise VariantFormatError(
            "feature-order must list each feature of static-properties once "
            f"({', '.join(sorted(static))}); the provider has {', '.join(order)}",
            path=f"{path}.feature-order",
        )
    if order is None and (len(static) >= 2 or feature_prio):
        order = list(static)
    if order is not None and feature_prio:
        leading = [f for f in feature_prio if f in static]
        order = leading + [f for f in order if f not in leading]
    table["static-properties"] = static
    if order is not None and (len(static) >= 2 or provider.feature_order is not None):
        table["feature-order"] = order
    return table
