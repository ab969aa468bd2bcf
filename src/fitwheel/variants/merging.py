"""Combine the variant metadata of several wheels (or files) of one release into one.

PEP 825's rules, which make the result independent of the order of the inputs:

- namespace lists must be prefix-consistent (each is a prefix of the longest); the longest wins;
  the reserved ``abi_dependency``, which a file may list or not, is left out of that comparison
  and listed last when any input lists it;
- a provider declared by several inputs must be declared identically (value order counts);
- ``variants`` is the union, and a label must map to the same property set everywhere;
- 817-era feature and property priorities of a namespace must agree among all inputs whose
  namespace list contains that namespace (one with none and one with some is a conflict).

Nothing is mutated: inputs are immutable and the result is built only after every check passed
(unlike variantlib 0.2.2, whose merge adds labels before it checks the namespace list).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TypeVar

from fitwheel.variants.abi import ABI_NAMESPACE
from fitwheel.variants.errors import MergeConflictError
from fitwheel.variants.model import Provider, VariantDescription, VariantInfo

__all__ = ["merge_variant_infos"]

_T = TypeVar("_T")


def merge_variant_infos(infos: Iterable[VariantInfo], *, source: str | None = None) -> VariantInfo:
    """Merge ``infos`` (at least one) by PEP 825's rules, or raise :class:`MergeConflictError`
    naming the key and both conflicting values. ``source`` names the result in errors."""
    items = list(infos)
    if not items:
        raise MergeConflictError("there is no variant metadata to merge", source=source)

    # the reserved abi_dependency namespace may or may not be listed: it is compared apart
    # and, when any input lists it, kept at the end
    lists = [tuple(ns for ns in i.namespace_priorities if ns != ABI_NAMESPACE) for i in items]
    longest = max(lists, key=len)
    for ns_list in lists:
        if tuple(longest[: len(ns_list)]) != tuple(ns_list):
            raise MergeConflictError(
                "namespace lists must be prefix-consistent: "
                f"{list(ns_list)} is not a prefix of {list(longest)}",
                path="default-priorities.namespace",
                source=source,
            )

    providers: dict[str, Provider] = {}
    for info in items:
        for ns, provider in info.providers.items():
            known = providers.setdefault(ns, provider)
            if not _same_provider(known, provider):
                first, second = _ordered_pair(known, provider)
                raise MergeConflictError(
                    f"provider {ns!r} is declared differently: {first!r} vs {second!r}",
                    path=f"providers.{ns}",
                    source=source,
                )

    variants: dict[str, VariantDescription] = {}
    for info in items:
        for label, desc in info.variants.items():
            known_desc = variants.setdefault(label, desc)
            if known_desc != desc:
                first_d, second_d = _ordered_pair(known_desc, desc)
                raise MergeConflictError(
                    f"label {label!r} maps to two property sets: {_props(first_d)} vs "
                    f"{_props(second_d)}",
                    path=f"variants.{label}",
                    source=source,
                )

    feature_prios = _merge_priorities(
        items, lambda info: info.feature_priorities, "feature", source
    )
    property_prios = _merge_priorities(
        items, lambda info: info.property_priorities, "property", source
    )

    if any(ABI_NAMESPACE in info.namespace_priorities for info in items):
        longest = (*longest, ABI_NAMESPACE)
    schemas = {info.schema for info in items}
    ordered_providers = {ns: providers[ns] for ns in longest if ns in providers}
    ordered_providers.update({ns: p for ns, p in sorted(providers.items()) if ns not in longest})
    return VariantInfo(
        namespace_priorities=tuple(longest),
        providers=MappingProxyType(ordered_providers),
        variants=MappingProxyType(dict(sorted(variants.items()))),
        feature_priorities=MappingProxyType(feature_prios),
        property_priorities=MappingProxyType(property_prios),
        schema=schemas.pop() if len(schemas) == 1 else None,
    )


def _merge_priorities(
    items: list[VariantInfo],
    get: Callable[[VariantInfo], Mapping[str, _T]],
    what: str,
    source: str | None,
) -> dict[str, _T]:
    merged: dict[str, _T] = {}
    seen: dict[str, object] = {}
    for info in items:
        prios = get(info)
        for ns in info.namespace_priorities:
            value = _freeze(prios.get(ns))
            if ns in seen and seen[ns] != value:
                first, second = sorted((repr(seen[ns]), repr(value)))
                raise MergeConflictError(
                    f"{what} priorities of namespace {ns!r} differ: {first} vs {second}",
                    path=f"default-priorities.{what}.{ns}",
                    source=source,
                )
            seen[ns] = value
            if ns in prios:
                merged[ns] = prios[ns]
    return dict(sorted(merged.items()))


def _freeze(value: object) -> object:
    if isinstance(value, Mapping):
        return tuple(sorted((k, _freeze(v)) for k, v in value.items()))
    return value


def _same_provider(a: Provider, b: Provider) -> bool:
    return _provider_key(a) == _provider_key(b)


def _provider_key(p: Provider) -> tuple[object, ...]:
    static = None
    if p.static_properties is not None:
        static = tuple(sorted((f, tuple(v)) for f, v in p.static_properties.items()))
    return (
        p.namespace,
        tuple(p.requires),
        p.plugin_api,
        static,
        None if p.feature_order is None else tuple(p.feature_order),
        p.optional,
        p.builtin,
        p.enable_if,
    )


def _ordered_pair(a: _T, b: _T) -> tuple[_T, _T]:
    """The two sides of a conflict in a fixed order, so the message does not depend on which
    input came first."""
    return (a, b) if repr(a) <= repr(b) else (b, a)


def _props(desc: VariantDescription) -> str:
    return "{" + ", ".join(str(p) for p in sorted(desc.properties)) + "}"
