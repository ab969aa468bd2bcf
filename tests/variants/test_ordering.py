"""Filtering and ordering of variants (PEP 825), built from model objects directly."""

from __future__ import annotations

import os
import random
from collections.abc import Mapping, Sequence
from types import MappingProxyType

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.model import (
    NULL_LABEL,
    Provider,
    VariantDescription,
    VariantInfo,
    VariantProperty,
)
from fitwheel.variants.ordering import (
    DeviceConstraint,
    Ordering,
    Target,
    effective_supported,
    explain_choice,
    order_variants,
    ranked_properties,
)
from tests.variants.strategies import supported_properties, variant_infos

#: the default run stays quick; the slow suite (make fuzz) sets FITWHEEL_FUZZ_EXAMPLES
EXAMPLES = 150
FUZZ_EXAMPLES = int(os.environ.get("FITWHEEL_FUZZ_EXAMPLES", "2000"))


def desc(label: str, *props: str) -> VariantDescription:
    return VariantDescription(label, frozenset(VariantProperty.parse(p) for p in props))


def plugin(ns: str, **kw: object) -> Provider:
    return Provider(ns, requires=(f"{ns}-provider",), **kw)  # type: ignore[arg-type]


def static(ns: str, props: Mapping[str, Sequence[str]], **kw: object) -> Provider:
    return Provider(
        ns,
        static_properties=MappingProxyType({f: tuple(v) for f, v in props.items()}),
        **kw,  # type: ignore[arg-type]
    )


def info_of(
    providers: Sequence[Provider],
    variants: Sequence[VariantDescription],
    *,
    feature_priorities: Mapping[str, tuple[str, ...]] | None = None,
    property_priorities: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None,
    namespaces: Sequence[str] | None = None,
) -> VariantInfo:
    return VariantInfo(
        namespace_priorities=tuple(namespaces or [p.namespace for p in providers]),
        providers={p.namespace: p for p in providers},
        variants={v.label: v for v in variants},
        feature_priorities=feature_priorities or {},
        property_priorities=property_priorities or {},
    )


def sup(**namespaces: Mapping[str, Sequence[str]]) -> dict[str, dict[str, tuple[str, ...]]]:
    return {ns: {f: tuple(vs) for f, vs in feats.items()} for ns, feats in namespaces.items()}


# --- worked examples from the standards ---------------------------------------------------------


def test_worked_example_of_the_pep():
    # PEP 817's worked example (also valid under 825): x86_64 plugin answers level v3, v2, v1;
    # blas_lapack is static [openblas, mkl, accelerate] with a package priority moving mkl first.
    info = info_of(
        [plugin("x86_64"), static("blas_lapack", {"provider": ["openblas", "mkl", "accelerate"]})],
        [
            desc("v4_mkl", "x86_64 :: level :: v4", "blas_lapack :: provider :: mkl"),
            desc("v3_openblas", "x86_64 :: level :: v3", "blas_lapack :: provider :: openblas"),
            desc("v3_mkl", "x86_64 :: level :: v3", "blas_lapack :: provider :: mkl"),
            desc("v2", "x86_64 :: level :: v2"),
            desc("mkl", "blas_lapack :: provider :: mkl"),
            desc(NULL_LABEL),
        ],
        property_priorities={"blas_lapack": {"provider": ("mkl",)}},
    )
    result = order_variants(info, Target(sup(x86_64={"level": ["v3", "v2", "v1"]})))
    assert result.labels == ["v3_mkl", "v3_openblas", "v2", "mkl", "null"]
    assert result.rejected == {"v4_mkl": "x86_64 :: level: v4 is not supported here"}


def test_best_value_per_feature_and_more_features_win():
    # PEP 825 corrects 817 here: a feature counts once, with its best supported value, so A's
    # extra low-ranked 90_real does not beat B's second feature; B has more keys and wins.
    info = info_of(
        [plugin("nvidia")],
        [
            desc("a", "nvidia :: sm_arch :: 120_real", "nvidia :: sm_arch :: 90_real"),
            desc("b", "nvidia :: sm_arch :: 120_real", "nvidia :: cuda :: 12.8"),
        ],
        feature_priorities={"nvidia": ("sm_arch", "cuda")},
    )
    target = Target(
        sup(nvidia={"sm_arch": ["120_real", "100_real", "90_real"], "cuda": ["12.8", "12.6"]})
    )
    assert order_variants(info, target).labels == ["b", "a"]


def test_label_breaks_ties_between_equal_property_sets():
    info = info_of(
        [plugin("x")],
        [desc("zeta", "x :: f :: a"), desc("alpha", "x :: f :: a"), desc("mid", "x :: f :: a")],
    )
    assert order_variants(info, Target(sup(x={"f": ["a"]}))).labels == ["alpha", "mid", "zeta"]


def test_a_worse_value_still_counts_when_it_is_the_only_supported_one():
    info = info_of(
        [plugin("x")],
        [desc("new", "x :: f :: 3"), desc("old", "x :: f :: 1", "x :: f :: 9")],
    )
    # 9 is not supported, so "old" ranks by 1, behind "new"'s 3.
    result = order_variants(info, Target(sup(x={"f": ["3", "2", "1"]})))
    assert result.labels == ["new", "old"]


# --- null ---------------------------------------------------------------------------------------


def test_null_comes_last_and_only_when_listed():
    variants = [desc(NULL_LABEL), desc("b", "x :: f :: b"), desc("a", "x :: f :: a")]
    target = Target(sup(x={"f": ["b", "a"]}))
    assert order_variants(info_of([plugin("x")], variants), target).labels == ["b", "a", "null"]
    without = info_of([plugin("x")], variants[1:])
    assert order_variants(without, target).labels == ["b", "a"]
    assert order_variants(without, Target({})).labels == []


# --- provider kinds -----------------------------------------------------------------------------


def test_static_namespaces_are_answered_from_the_file_not_the_profile():
    info = info_of(
        [static("blas", {"provider": ["openblas", "mkl"]})],
        [desc("mkl", "blas :: provider :: mkl"), desc("ob", "blas :: provider :: openblas")],
    )
    # The profile claims something else for the static namespace; it must be ignored.
    target = Target(sup(blas={"provider": ["mkl"]}))
    assert order_variants(info, target).labels == ["ob", "mkl"]


def test_static_feature_order_sets_the_order_of_features():
    info = info_of(
        [static("s", {"a": ["1", "2"], "b": ["1", "2"]}, feature_order=("b", "a"))],
        [
            desc("a_first", "s :: a :: 1", "s :: b :: 2"),
            desc("b_first", "s :: a :: 2", "s :: b :: 1"),
        ],
    )
    assert order_variants(info, Target({})).labels == ["b_first", "a_first"]


def test_feature_priorities_come_before_feature_order_and_provider_order():
    info = info_of(
        [plugin("p")],
        [desc("by_f", "p :: f :: 1", "p :: g :: 2"), desc("by_g", "p :: f :: 2", "p :: g :: 1")],
        feature_priorities={"p": ("g",)},
    )
    target = Target(sup(p={"f": ["1", "2"], "g": ["1", "2"]}))
    assert order_variants(info, target).labels == ["by_g", "by_f"]
    plain = info_of([plugin("p")], list(info.variants.values()))
    assert order_variants(plain, target).labels == ["by_f", "by_g"]


def test_property_priorities_reorder_but_never_make_a_value_supported():
    info = info_of(
        [plugin("p")],
        [desc("one", "p :: f :: 1"), desc("two", "p :: f :: 2"), desc("three", "p :: f :: 3")],
        property_priorities={"p": {"f": ("3", "2")}},
    )
    result = order_variants(info, Target(sup(p={"f": ["1", "2"]})))
    assert result.labels == ["two", "one"]
    assert result.rejected == {"three": "p :: f: 3 is not supported here"}


def test_builtin_providers_are_answered_from_the_target():
    info = info_of(
        [Provider("abi", builtin="abi")],
        [desc("t2", "abi :: torch :: 2"), desc("t3", "abi :: torch :: 3")],
    )
    result = order_variants(info, Target(sup(abi={"torch": ["3", "2"]})))
    assert result.labels == ["t3", "t2"]


def test_namespace_order_comes_from_the_file():
    variants = [desc("gpu", "g :: f :: 1"), desc("cpu", "c :: f :: 1")]
    target = Target(sup(g={"f": ["1"]}, c={"f": ["1"]}))
    gpu_first = info_of([plugin("g"), plugin("c")], variants)
    cpu_first = info_of([plugin("g"), plugin("c")], variants, namespaces=["c", "g"])
    assert order_variants(gpu_first, target).labels == ["gpu", "cpu"]
    assert order_variants(cpu_first, target).labels == ["cpu", "gpu"]


# --- optional and enable-if ---------------------------------------------------------------------


def test_optional_plugin_provider_takes_part_only_when_enabled():
    info = info_of(
        [plugin("amd", optional=True), plugin("nvidia")],
        [desc("rocm", "amd :: gfx_arch :: gfx942"), desc("cuda", "nvidia :: sm_arch :: 90_real")],
    )
    supported = sup(amd={"gfx_arch": ["gfx942"]}, nvidia={"sm_arch": ["90_real"]})
    off = order_variants(info, Target(supported))
    assert off.labels == ["cuda"]
    assert off.rejected == {"rocm": "amd: provider is optional and not enabled"}
    assert order_variants(info, Target(supported, enabled_optional=frozenset({"amd"}))).labels == [
        "rocm",
        "cuda",
    ]
    assert order_variants(info, Target(supported, enabled_optional=True)).labels == ["rocm", "cuda"]
    other = Target(supported, enabled_optional=frozenset({"intel"}))
    assert order_variants(info, other).labels == ["cuda"]


def test_optional_static_provider_is_incompatible_until_enabled():
    # PEP 817's debug-build case: an optional ahead-of-time provider is "disabled by default".
    info = info_of(
        [static("debug", {"build": ["on"]}, optional=True)],
        [desc("dbg", "debug :: build :: on"), desc(NULL_LABEL)],
    )
    assert order_variants(info, Target({})).labels == ["null"]
    enabled = Target({}, enabled_optional=frozenset({"debug"}))
    assert order_variants(info, enabled).labels == ["dbg", "null"]


def test_false_enable_if_disables_the_provider():
    info = info_of(
        [plugin("amd", enable_if="platform_system == 'Linux'")],
        [desc("rocm", "amd :: rocm_version :: 6.4")],
    )
    supported = sup(amd={"rocm_version": ["6.4"]})
    linux = Target(supported, environment={"platform_system": "Linux"})
    windows = Target(supported, environment={"platform_system": "Windows"})
    assert order_variants(info, linux).labels == ["rocm"]
    result = order_variants(info, windows)
    assert result.labels == []
    assert result.rejected == {
        "rocm": "amd: provider is disabled here by its enable-if (platform_system == 'Linux')"
    }
    # No environment: the target does not say, so the marker does not exclude the provider.
    assert order_variants(info, Target(supported)).labels == ["rocm"]


def test_invalid_enable_if_is_a_format_error_naming_the_provider():
    info = info_of([plugin("amd", enable_if="platform_system ==")], [desc("r", "amd :: f :: 1")])
    with pytest.raises(VariantFormatError) as err:
        order_variants(info, Target(sup(amd={"f": ["1"]}), environment={}))
    assert err.value.path == "providers.amd.enable-if"


# --- rejection reasons --------------------------------------------------------------------------


def test_reasons_name_the_feature_and_the_values():
    info = info_of(
        [plugin("intel"), plugin("nvidia")],
        [
            desc(
                "xpu",
                *(
                    f"intel :: device_ip :: {v}"
                    for v in ["12.55.8", "12.60.7", "12.71.4", "12.74.4", "20.1.0", "20.4.4"]
                ),
            ),
            desc("two", "nvidia :: cuda :: 12.6", "nvidia :: cuda :: 12.8"),
            desc("three", "nvidia :: cuda :: 1", "nvidia :: cuda :: 2", "nvidia :: cuda :: 3"),
            desc("empty", "nvidia :: sm_arch :: 90_real"),
        ],
    )
    result = order_variants(info, Target(sup(nvidia={"cuda": ["13.0"], "sm_arch": []})))
    assert result.rejected == {
        "xpu": "intel :: device_ip: none of 12.55.8, 12.60.7, ... is supported here",
        "two": "nvidia :: cuda: none of 12.6, 12.8 is supported here",
        "three": "nvidia :: cuda: none of 1, 2, 3 is supported here",
        # An empty answer means "not supported", never an error.
        "empty": "nvidia :: sm_arch: 90_real is not supported here",
    }
    assert list(result.rejected) == ["xpu", "two", "three", "empty"]


def test_reason_is_the_most_significant_failing_feature():
    info = info_of(
        [plugin("a"), plugin("b")],
        [desc("v", "b :: z :: 1", "a :: y :: 1", "a :: x :: 1")],
        namespaces=["b", "a"],
    )
    assert order_variants(info, Target({})).rejected == {"v": "b :: z: 1 is not supported here"}


def test_undeclared_namespace_is_rejected_with_a_reason():
    info = info_of([plugin("a")], [desc("v", "zz :: f :: 1")])
    result = order_variants(info, Target(sup(zz={"f": ["1"]})))
    assert result.labels == []
    assert result.rejected["v"].startswith("zz: ")


# --- device constraints -------------------------------------------------------------------------


GTX = "GPU 1 (NVIDIA GeForce GTX 1080 Ti, 6.1)"


def test_device_constraints_reject_variants_that_miss_a_device():
    info = info_of(
        [plugin("nvidia"), plugin("x86_64")],
        [
            desc("new", "nvidia :: sm_arch :: 90_real", "nvidia :: cuda :: 12.8"),
            desc("both", "nvidia :: sm_arch :: 90_real", "nvidia :: sm_arch :: 61_real"),
            desc("cpu", "x86_64 :: level :: v3"),
            desc("cuda_only", "nvidia :: cuda :: 12.8"),
        ],
    )
    target = Target(
        sup(
            nvidia={"sm_arch": ["90_real", "61_real"], "cuda": ["12.8"]},
            x86_64={"level": ["v3"]},
        ),
        device_constraints=(
            DeviceConstraint("nvidia", "GPU 0 (NVIDIA H100, 9.0)", {"sm_arch": ("90_real",)}),
            DeviceConstraint("nvidia", GTX, {"sm_arch": ("61_real",)}),
        ),
    )
    result = order_variants(info, target)
    # cuda_only declares no sm_arch, so the per-device feature does not apply to it.
    assert result.labels == ["both", "cuda_only", "cpu"]
    assert result.rejected == {"new": f"nvidia :: sm_arch: no value runs on {GTX}"}


def test_device_constraints_do_not_apply_to_static_namespaces():
    info = info_of([static("s", {"f": ["1"]})], [desc("v", "s :: f :: 1")])
    target = Target({}, device_constraints=(DeviceConstraint("s", "dev", {"f": ("2",)}),))
    assert order_variants(info, target).labels == ["v"]


# --- explanations -------------------------------------------------------------------------------


def test_explain_choice_names_the_deciding_property():
    info = info_of(
        [plugin("nvidia"), static("priority", {"order": ["1", "2", "3"]})],
        [
            desc("cu126", "nvidia :: cuda :: 12.0", "priority :: order :: 3"),
            desc("cu128", "nvidia :: cuda :: 12.0", "priority :: order :: 2"),
            desc("cu130", "nvidia :: cuda :: 13.0", "priority :: order :: 1"),
            desc(NULL_LABEL),
        ],
    )
    cuda13 = Target(sup(nvidia={"cuda": ["13.0", "12.0"]}))
    ordering = order_variants(info, cuda13)
    assert explain_choice(info, cuda13, ordering) == (
        "nvidia :: cuda :: 13.0 is preferred to 12.0 (cu128)"
    )
    cuda12 = Target(sup(nvidia={"cuda": ["12.9", "12.0"]}))
    ordering = order_variants(info, cuda12)
    assert ordering.labels == ["cu128", "cu126", "null"]
    assert "priority :: order :: 2" in explain_choice(info, cuda12, ordering)
    none = Target({})
    assert explain_choice(info, none, order_variants(info, none)).startswith("no other variant")
    assert ranked_properties(info, cuda13, info.variants["cu130"]) == (
        VariantProperty("nvidia", "cuda", "13.0"),
        VariantProperty("priority", "order", "1"),
    )
    assert ranked_properties(info, none, info.variants["cu130"]) is None


def test_effective_supported_is_what_the_selection_used():
    info = info_of(
        [
            plugin("nvidia"),
            static("blas", {"provider": ["openblas", "mkl"]}),
            plugin("amd", optional=True),
        ],
        [desc("v", "nvidia :: cuda :: 12.8")],
        property_priorities={"nvidia": {"cuda": ("12.6",)}},
    )
    target = Target(
        sup(
            nvidia={"sm_arch": ["90_real"], "cuda": ["12.8", "12.6"]},
            blas={"provider": ["mkl"]},
            amd={"gfx_arch": ["gfx942"]},
        )
    )
    assert effective_supported(info, target) == {
        "nvidia": {"sm_arch": ("90_real",), "cuda": ("12.6", "12.8")},
        "blas": {"provider": ("openblas", "mkl")},
    }


# --- properties over generated files ------------------------------------------------------------


def _compatible(info: VariantInfo, target: Target, variant: VariantDescription) -> bool:
    """The standard's compatibility rule, written out plainly (no ordering involved)."""
    for prop in variant.properties:
        provider = info.providers[prop.namespace]
        enabled = target.enabled_optional
        if provider.optional and not (
            enabled is True or (not isinstance(enabled, bool) and prop.namespace in enabled)
        ):
            return False
    by_feature: dict[tuple[str, str], set[str]] = {}
    for prop in variant.properties:
        by_feature.setdefault((prop.namespace, prop.feature), set()).add(prop.value)
    for (ns, feature), values in by_feature.items():
        provider = info.providers[ns]
        answer = (
            provider.static_properties
            if provider.static_properties is not None
            else target.supported.get(ns, {})
        )
        if not values & set(answer.get(feature, ())):
            return False
    return True


@st.composite
def cases(draw: st.DrawFn) -> tuple[VariantInfo, Target]:
    info = draw(variant_infos(legacy=draw(st.booleans())))
    enabled = draw(st.booleans() | st.frozensets(st.sampled_from(list(info.namespace_priorities))))
    return info, Target(draw(supported_properties(info)), enabled_optional=enabled)


def check_partition_and_rule(case: tuple[VariantInfo, Target]) -> None:
    info, target = case
    result = order_variants(info, target)
    ordered = result.labels
    assert len(ordered) == len(set(ordered))
    assert set(ordered).isdisjoint(result.rejected)
    assert set(ordered) | set(result.rejected) == set(info.variants)
    assert list(result.rejected) == [label for label in info.variants if label in result.rejected]
    for label, variant in info.variants.items():
        assert (label in ordered) == _compatible(info, target, variant), label
    if NULL_LABEL in ordered:
        assert ordered[-1] == NULL_LABEL


@settings(max_examples=EXAMPLES, deadline=None)
@given(cases())
def test_every_label_is_either_ordered_or_rejected_and_compatibility_is_the_rule(
    case: tuple[VariantInfo, Target],
) -> None:
    check_partition_and_rule(case)


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(cases())
def test_compatibility_rule_at_length(case: tuple[VariantInfo, Target]) -> None:
    check_partition_and_rule(case)


@settings(max_examples=EXAMPLES, deadline=None)
@given(cases(), st.randoms(use_true_random=False))
def test_order_does_not_depend_on_file_order_or_on_other_variants(
    case: tuple[VariantInfo, Target], rnd: random.Random
) -> None:
    info, target = case
    result = order_variants(info, target)
    items = list(info.variants.items())
    rnd.shuffle(items)
    shuffled = VariantInfo(
        info.namespace_priorities,
        info.providers,
        dict(items),
        info.feature_priorities,
        info.property_priorities,
    )
    assert order_variants(shuffled, target).labels == result.labels
    # Dropping one variant leaves the relative order of the rest unchanged.
    if items:
        dropped = items[0][0]
        fewer = VariantInfo(
            info.namespace_priorities,
            info.providers,
            dict(items[1:]),
            info.feature_priorities,
            info.property_priorities,
        )
        assert order_variants(fewer, target).labels == [x for x in result.labels if x != dropped]


def test_ordering_labels_property():
    a = desc("a", "x :: f :: 1")
    assert Ordering((a,)).labels == ["a"]
