"""Hypothesis strategies for valid wheel-variant metadata (shared by the tests of the format core).

Import from test modules in this directory as ``from strategies import variant_infos``.

Every object these strategies build satisfies the rules of the current (PEP 850 v0.2.0) form:
the namespace list and the provider keys name the same namespaces, every variant uses only
declared namespaces, labels follow the grammar and the null rule, and static providers with two
or more features carry a ``feature_order``. ``legacy=True`` adds what only 817-era files can say
(``enable_if``, feature and property priorities of plugin providers).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from hypothesis import strategies as st

from fitwheel.variants.model import (
    NULL_LABEL,
    Provider,
    SupportedProperties,
    VariantDescription,
    VariantInfo,
    VariantProperty,
)

__all__ = [
    "PUBLISHED_DIR",
    "PUBLISHED_FILES",
    "feature_names",
    "feature_values",
    "fuzz_examples",
    "labels",
    "namespaces",
    "property_sets",
    "providers",
    "supported_properties",
    "variant_descriptions",
    "variant_infos",
    "variant_properties",
]

#: Byte-for-byte copies of the index files PyTorch published for torch 2.8, 2.9 and 2.10 and the
#: matching torchvision releases (schema generations: unversioned, v0.0.2, v0.0.3).
PUBLISHED_DIR = Path(__file__).resolve().parent / "data" / "published"
PUBLISHED_FILES = (
    "torch-2.8.0-variants.json",
    "torch-2.9.0-variants.json",
    "torch-2.10.0-variants.json",
    "torchvision-0.23.0-variants.json",
    "torchvision-0.24.0-variants.json",
    "torchvision-0.25.0-variants.json",
)


def fuzz_examples(default: int = 300) -> int:
    """Hypothesis example count for fuzz-style tests; ``FITWHEEL_FUZZ_EXAMPLES`` overrides it."""
    try:
        return max(1, int(os.environ.get("FITWHEEL_FUZZ_EXAMPLES", default)))
    except ValueError:
        return default


#: Short tokens keep shrinking fast and make collisions (shared values, labels) likely.
namespaces = st.from_regex(r"[a-z0-9_]{1,6}", fullmatch=True)
feature_names = st.from_regex(r"[a-z0-9_]{1,6}", fullmatch=True)
feature_values = st.from_regex(r"[a-z0-9_.]{1,6}", fullmatch=True)
labels = st.from_regex(r"[0-9a-z._]{1,10}", fullmatch=True).filter(lambda s: s != NULL_LABEL)

_requirements = st.sampled_from(
    [
        "demo-provider>=0.1",
        "nvidia-variant-provider>=0.0.2,<1.0.0",
        "x86-64-provider ; platform_machine == 'x86_64'",
        "plugin_pkg==1.2.3",
    ]
)
_plugin_apis = st.sampled_from(["demo_provider", "demo_provider:Plugin", "pkg.mod:Obj.attr"])
_markers = st.sampled_from(["platform_system == 'Linux'", "sys_platform != 'darwin'"])


def variant_properties(
    ns: st.SearchStrategy[str] = namespaces,
) -> st.SearchStrategy[VariantProperty]:
    return st.builds(VariantProperty, ns, feature_names, feature_values)


def property_sets(
    ns: st.SearchStrategy[str] = namespaces, *, min_size: int = 1, max_size: int = 5
) -> st.SearchStrategy[frozenset[VariantProperty]]:
    return st.frozensets(variant_properties(ns), min_size=min_size, max_size=max_size)


@st.composite
def variant_descriptions(
    draw: st.DrawFn, ns: st.SearchStrategy[str] = namespaces, *, allow_null: bool = True
) -> VariantDescription:
    """A valid description: the null variant (label ``null``) or a labelled, non-empty one."""
    if allow_null and draw(st.integers(0, 7)) == 0:
        return VariantDescription(NULL_LABEL, frozenset())
    return VariantDescription(draw(labels), draw(property_sets(ns)))


@st.composite
def _static_properties(draw: st.DrawFn) -> dict[str, tuple[str, ...]]:
    features = draw(st.lists(feature_names, min_size=1, max_size=3, unique=True))
    return {
        f: tuple(draw(st.lists(feature_values, min_size=1, max_size=4, unique=True)))
        for f in features
    }


@st.composite
def providers(draw: st.DrawFn, namespace: str, *, legacy: bool = False) -> Provider:
    """A provider of one of the three kinds (install-time plugin, static, builtin)."""
    kind = draw(
        st.sampled_from(["plugin", "static", "builtin"] if not legacy else ["plugin", "static"])
    )
    optional = draw(st.booleans())
    if kind == "static":
        static = draw(_static_properties())
        order: tuple[str, ...] | None = None
        if len(static) >= 2:
            order = tuple(draw(st.permutations(list(static))))
        return Provider(
            namespace,
            static_properties=MappingProxyType(static),
            feature_order=order,
            optional=optional,
        )
    if kind == "builtin":
        name = draw(st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True))
        return Provider(namespace, builtin=name, optional=optional)
    return Provider(
        namespace,
        requires=tuple(draw(st.lists(_requirements, min_size=1, max_size=2, unique=True))),
        plugin_api=draw(st.none() | _plugin_apis),
        optional=optional,
        enable_if=draw(st.none() | _markers) if legacy else None,
    )


@st.composite
def variant_infos(
    draw: st.DrawFn,
    *,
    max_namespaces: int = 4,
    max_variants: int = 6,
    legacy: bool = False,
    values_from_static: bool = False,
    with_null: bool | None = None,
) -> VariantInfo:
    """A valid :class:`VariantInfo` in the current form (or 817-era form with ``legacy=True``).

    ``values_from_static``: variants of static namespaces use only values the provider lists (what
    a well-formed file does; the format itself does not require it). ``with_null``: force the
    null variant in (True) or out (False); None lets hypothesis choose.
    """
    ns_list = draw(st.lists(namespaces, min_size=1, max_size=max_namespaces, unique=True))
    provs = {ns: draw(providers(ns, legacy=legacy)) for ns in ns_list}

    def props_for(ns: str) -> st.SearchStrategy[frozenset[VariantProperty]]:
        prov = provs[ns]
        if values_from_static and prov.static_properties is not None:
            pool = [
                VariantProperty(ns, f, v)
                for f, values in prov.static_properties.items()
                for v in values
            ]
            return st.frozensets(st.sampled_from(pool), min_size=1, max_size=4)
        return property_sets(st.just(ns), max_size=3)

    variants: dict[str, VariantDescription] = {}
    for _ in range(draw(st.integers(0, max_variants))):
        used = draw(st.lists(st.sampled_from(ns_list), min_size=1, max_size=2, unique=True))
        props: frozenset[VariantProperty] = frozenset()
        for ns in used:
            props |= draw(props_for(ns))
        label = draw(labels)
        variants.setdefault(label, VariantDescription(label, props))
    null = draw(st.booleans()) if with_null is None else with_null
    if null:
        variants[NULL_LABEL] = VariantDescription(NULL_LABEL, frozenset())

    feature_prios: dict[str, tuple[str, ...]] = {}
    property_prios: dict[str, dict[str, tuple[str, ...]]] = {}
    if legacy:
        for ns, prov in provs.items():
            if prov.is_static:
                continue
            known = sorted(
                {p.feature for d in variants.values() for p in d.properties if p.namespace == ns}
            )
            if known and draw(st.booleans()):
                feature_prios[ns] = tuple(draw(st.permutations(known)))
            if known and draw(st.booleans()):
                feature = draw(st.sampled_from(known))
                vals = sorted(
                    {
                        p.value
                        for d in variants.values()
                        for p in d.properties
                        if p.namespace == ns and p.feature == feature
                    }
                )
                property_prios[ns] = {feature: tuple(draw(st.permutations(vals)))}

    return VariantInfo(
        namespace_priorities=tuple(ns_list),
        providers=MappingProxyType(provs),
        variants=MappingProxyType(variants),
        feature_priorities=MappingProxyType(feature_prios),
        property_priorities=MappingProxyType(
            {ns: MappingProxyType(v) for ns, v in property_prios.items()}
        ),
    )


@st.composite
def supported_properties(draw: st.DrawFn, info: VariantInfo) -> SupportedProperties:
    """What a target could support for ``info``: for each namespace a random subset of the values
    the file's variants use (plus an unrelated one), in random preference order. Static providers
    answer with their own list, as an installer would."""
    out: dict[str, Mapping[str, tuple[str, ...]]] = {}
    for ns in info.namespace_priorities:
        prov = info.providers[ns]
        if prov.static_properties is not None:
            out[ns] = MappingProxyType(dict(prov.static_properties))
            continue
        by_feature: dict[str, set[str]] = {}
        for desc in info.variants.values():
            for p in desc.properties:
                if p.namespace == ns:
                    by_feature.setdefault(p.feature, set()).add(p.value)
        answer: dict[str, tuple[str, ...]] = {}
        for feature in sorted(by_feature):
            chosen = draw(st.lists(st.sampled_from(sorted(by_feature[feature])), unique=True))
            if draw(st.booleans()):
                chosen.append("zz_unused")
            if chosen:
                answer[feature] = tuple(chosen)
        if answer:
            out[ns] = MappingProxyType(answer)
    return MappingProxyType(out)
