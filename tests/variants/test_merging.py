"""Merging per-wheel metadata into one index file by PEP 825's order-independent rules."""

from __future__ import annotations

import random
from collections.abc import Callable
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitwheel.variants.errors import MergeConflictError
from fitwheel.variants.merging import merge_variant_infos
from fitwheel.variants.model import Provider, VariantDescription, VariantInfo, VariantProperty
from fitwheel.variants.reading import loads_variant_info
from fitwheel.variants.writing import dump_variant_info, wheel_variant_info
from tests.variants.strategies import variant_infos

SOURCE = "demo-1.0-variants.json"


def make(
    namespaces: tuple[str, ...],
    variants: dict[str, str] | None = None,
    providers: dict[str, Provider] | None = None,
    **extra: object,
) -> VariantInfo:
    """``variants``: label -> 'ns::f::v, ns::f::v' (empty string: the null variant)."""
    descs = {}
    for label, text in (variants or {}).items():
        props = frozenset(VariantProperty.parse(p) for p in text.split(",") if p.strip())
        descs[label] = VariantDescription(label, props)
    if providers is None:
        providers = {ns: Provider(ns, requires=(f"{ns}-provider",)) for ns in namespaces}
    return VariantInfo(namespaces, MappingProxyType(providers), MappingProxyType(descs), **extra)  # type: ignore[arg-type]


def test_prefix_consistent_lists_merge_to_the_longest() -> None:
    a = make(("cpu",), {"v3": "cpu::level::v3"})
    b = make(("cpu", "gpu"), {"cu": "gpu::cuda::12.0", "null": ""})
    for order in ([a, b], [b, a]):
        merged = merge_variant_infos(order, source=SOURCE)
        assert merged.namespace_priorities == ("cpu", "gpu")
        assert set(merged.variants) == {"v3", "cu", "null"}
        assert list(merged.providers) == ["cpu", "gpu"]


def test_inconsistent_namespace_lists_conflict() -> None:
    a = make(("cpu", "gpu"))
    b = make(("gpu", "cpu"))
    with pytest.raises(MergeConflictError) as err:
        merge_variant_infos([a, b], source=SOURCE)
    assert err.value.source == SOURCE
    assert err.value.path == "default-priorities.namespace"
    assert "['gpu', 'cpu']" in err.value.rule and "['cpu', 'gpu']" in err.value.rule


def test_label_mapped_to_two_property_sets_conflicts_whatever_the_order() -> None:
    a = make(("gpu",), {"cu": "gpu::cuda::12.0"})
    b = make(("gpu",), {"cu": "gpu::cuda::13.0, gpu::arch::a"})
    messages = set()
    for order in ([a, b], [b, a]):
        with pytest.raises(MergeConflictError) as err:
            merge_variant_infos(order, source=SOURCE)
        assert err.value.path == "variants.cu"
        assert "gpu :: cuda :: 12.0" in err.value.rule
        assert "gpu :: arch :: a, gpu :: cuda :: 13.0" in err.value.rule
        messages.add(str(err.value))
    assert len(messages) == 1


def test_providers_must_be_equal() -> None:
    static_a = {"blas": Provider("blas", static_properties={"vendor": ("mkl", "openblas")})}
    static_b = {"blas": Provider("blas", static_properties={"vendor": ("openblas", "mkl")})}
    a = make(("blas",), providers=static_a)
    b = make(("blas",), providers=static_b)
    with pytest.raises(MergeConflictError) as err:
        merge_variant_infos([a, b])
    assert err.value.path == "providers.blas"
    assert "('mkl', 'openblas')" in err.value.rule and "('openblas', 'mkl')" in err.value.rule
    # The same declaration (even as another mapping type) merges.
    same = make(
        ("blas",),
        providers={
            "blas": Provider(
                "blas", static_properties=dict(static_a["blas"].static_properties or {})
            )
        },
    )
    assert merge_variant_infos([a, same]).providers == static_a


def test_817_priorities_must_agree_where_the_namespace_is_known() -> None:
    a = make(("cpu",), feature_priorities={"cpu": ("level",)})
    b = make(("cpu",))
    with pytest.raises(MergeConflictError) as err:
        merge_variant_infos([a, b])
    assert err.value.path == "default-priorities.feature.cpu"
    # A namespace new to the longer list may bring its own priorities (817's rule).
    c = make(
        ("cpu", "gpu"),
        feature_priorities={"cpu": ("level",)},
        property_priorities={"gpu": {"cuda": ("13.0",)}},
    )
    merged = merge_variant_infos([a, c])
    assert merged.feature_priorities == {"cpu": ("level",)}
    assert merged.property_priorities == {"gpu": {"cuda": ("13.0",)}}


def test_a_failed_merge_changes_nothing() -> None:
    a = make(("cpu",), {"v3": "cpu::level::v3"})
    bad = make(("gpu",), {"new": "gpu::cuda::12.0"})
    snapshot = (repr(a), repr(bad))
    with pytest.raises(MergeConflictError):
        merge_variant_infos([a, bad])
    assert (repr(a), repr(bad)) == snapshot
    # The rejected input's label does not leak into a later merge (variantlib bug B9).
    assert set(merge_variant_infos([a, a]).variants) == {"v3"}


def test_nothing_to_merge() -> None:
    with pytest.raises(MergeConflictError) as err:
        merge_variant_infos([], source=SOURCE)
    assert err.value.source == SOURCE


def test_per_wheel_files_of_torch_210_merge_back_to_the_index(
    published_bytes: Callable[[str], bytes],
) -> None:
    index = loads_variant_info(published_bytes("torch-2.10.0-variants.json"), "t")
    wheels = [wheel_variant_info(index, label) for label in index.variants]
    merged = merge_variant_infos(reversed(wheels))
    assert merged == index


@st.composite
def split_into_wheels(draw: st.DrawFn) -> tuple[VariantInfo, list[VariantInfo]]:
    """A release's index metadata and per-wheel pieces of it, each with a namespace list that is
    a prefix of the full one (long enough for its variant)."""
    info = draw(variant_infos(legacy=draw(st.booleans())))
    full = info.namespace_priorities
    pieces = [info]  # the full list has to come from somewhere
    for label, desc in info.variants.items():
        need = max((full.index(ns) + 1 for ns in desc.namespaces), default=1)
        size = draw(st.integers(need, len(full)))
        kept = full[:size]
        pieces.append(
            VariantInfo(
                kept,
                {ns: info.providers[ns] for ns in kept},
                {label: desc},
                {ns: v for ns, v in info.feature_priorities.items() if ns in kept},
                {ns: v for ns, v in info.property_priorities.items() if ns in kept},
            )
        )
    pieces[0] = VariantInfo(
        full, info.providers, {}, info.feature_priorities, info.property_priorities
    )
    return info, draw(st.permutations(pieces))


@settings(max_examples=80, deadline=None)
@given(split_into_wheels(), st.randoms(use_true_random=False))
def test_merge_is_order_independent_and_reassembles_the_index(
    case: tuple[VariantInfo, list[VariantInfo]], rnd: random.Random
) -> None:
    info, pieces = case
    merged = merge_variant_infos(pieces)
    assert merged == info
    shuffled = list(pieces)
    rnd.shuffle(shuffled)
    again = merge_variant_infos(shuffled)
    assert again == merged
    assert dump_variant_info(again, allow_lossy=True) == dump_variant_info(merged, allow_lossy=True)


@settings(max_examples=60, deadline=None)
@given(st.lists(variant_infos(max_namespaces=2, max_variants=3), min_size=2, max_size=4), st.data())
def test_merge_either_succeeds_or_conflicts_in_every_order(
    infos: list[VariantInfo], data: st.DataObject
) -> None:
    order = data.draw(st.permutations(infos))
    try:
        first = merge_variant_infos(infos)
    except MergeConflictError:
        with pytest.raises(MergeConflictError):
            merge_variant_infos(order)
        return
    assert merge_variant_infos(order) == first
