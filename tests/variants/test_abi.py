"""The abi_dependency matching rule: a value is ``=={value}.*``, several values mean OR, checked
against packaging's own prefix match over a grid of values and versions."""

from __future__ import annotations

import itertools
from types import MappingProxyType

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from fitwheel.variants.abi import (
    ABI_NAMESPACE,
    abi_choices,
    feature_for,
    matches_any,
    parse_override,
    parse_value,
    preference_order,
    value_matches,
    value_specifier,
    with_abi_provider,
)
from fitwheel.variants.model import Provider, VariantDescription, VariantInfo, VariantProperty
from fitwheel.variants.ordering import Target, order_variants

VALUES = ["0", "1", "2", "2.0", "2.0.0", "2.9", "2.9.0", "2.9.1", "2.10", "2.10.0", "3", "10.1"]
VERSIONS = [
    "0.1", "1", "1.9", "2", "2.0", "2.0.0", "2.0.1", "2.1", "2.9", "2.9.0", "2.9.1", "2.9.1.1",
    "2.9.0rc1", "2.9.0.dev3", "2.9.0.post1", "2.9.0+cu128", "2.9a1", "2.10.0", "2.10.0+cpu",
    "2.10.1", "2.90", "3.0", "10.1.4", "1!2.9.0",
]  # fmt: skip


@pytest.mark.parametrize(("value", "version"), list(itertools.product(VALUES, VERSIONS)))
def test_a_value_matches_as_a_prefix_specifier(value: str, version: str) -> None:
    expected = SpecifierSet(f"=={value}.*").contains(Version(version), prereleases=True)
    assert value_matches(value, Version(version)) is expected
    assert value_specifier(value) == f"=={value}.*"


def test_the_documented_cases() -> None:
    assert value_matches("2.9", Version("2.9.1"))
    assert not value_matches("2.9", Version("2.10.0"))
    assert value_matches("2.0", Version("2"))  # release segments compare padded with zeros
    assert value_matches("2", Version("2.10.0"))
    assert not value_matches("2.9.1", Version("2.9.0"))
    assert not value_matches("2.9", Version("1!2.9.0"))  # a non-zero epoch matches nothing


@pytest.mark.parametrize("value", ["cu128", "2.9.1.0", "2_9", "", ".2", "2.", "v2"])
def test_a_value_that_is_not_a_release_never_matches(value: str) -> None:
    assert parse_value(value) is None
    assert not value_matches(value, Version("2.9.1"))
    with pytest.raises(ValueError, match="one to three numbers"):
        value_specifier(value)


@pytest.mark.parametrize("version", VERSIONS)
def test_several_values_mean_or(version: str) -> None:
    values = ("2.9", "2.10")
    parsed = Version(version)
    assert matches_any(values, parsed) is any(value_matches(v, parsed) for v in values)
    assert not matches_any((), parsed)


def test_features_are_normalised_names() -> None:
    assert feature_for("Flash-Attn") == "flash_attn"
    assert feature_for("flash.attn") == "flash_attn"
    assert feature_for("torch") == "torch"


def test_preference_is_newest_first_then_most_specific() -> None:
    assert preference_order(["2", "2.9", "2.10", "2.10.0", "cu128", "2.9.1"]) == (
        "2.10.0",
        "2.10",
        "2.9.1",
        "2.9",
        "2",
    )


def test_the_override_variable() -> None:
    found, bad = parse_override("torch==2.10.0, Flash-Attn==2.7.4+cu128,bad-entry,x==notaversion,,")
    assert dict(found) == {"torch": Version("2.10.0"), "flash_attn": Version("2.7.4")}
    assert bad == ["bad-entry", "x==notaversion"]
    assert parse_override("") == (MappingProxyType({}), [])


def _desc(label: str, *props: str) -> VariantDescription:
    return VariantDescription(label, frozenset(VariantProperty.parse(p) for p in props))


def test_choices_are_one_per_combination_best_first() -> None:
    desc = _desc(
        "multi",
        "abi_dependency :: torch :: 2.9",
        "abi_dependency :: torch :: 2.10",
        "abi_dependency :: numpy :: 2",
        "x86_64 :: level :: v3",
    )
    assert abi_choices(desc) == [
        (("numpy", "2"), ("torch", "2.10")),
        (("numpy", "2"), ("torch", "2.9")),
    ]
    assert abi_choices(_desc("plain", "x86_64 :: level :: v3")) == [()]
    assert abi_choices(_desc("bad", "abi_dependency :: torch :: cu128")) == []


def test_the_ordering_ranks_abi_builds_after_every_other_namespace() -> None:
    variants = {
        "t29": _desc("t29", "abi_dependency :: torch :: 2.9"),
        "t210": _desc("t210", "abi_dependency :: torch :: 2.10"),
        "t210v3": _desc("t210v3", "abi_dependency :: torch :: 2.10", "x86_64 :: level :: v3"),
        "bad": _desc("bad", "abi_dependency :: torch :: cu128"),
        "null": VariantDescription("null"),
    }
    info = VariantInfo(
        ("x86_64",),
        MappingProxyType({"x86_64": Provider("x86_64", builtin="x86_64")}),
        MappingProxyType(variants),
    )
    augmented = with_abi_provider(info)
    assert augmented.namespace_priorities == ("x86_64", ABI_NAMESPACE)
    target = Target(MappingProxyType({"x86_64": MappingProxyType({"level": ("v3", "v2")})}))
    ordering = order_variants(augmented, target)
    assert ordering.labels == ["t210v3", "t210", "t29", "null"]
    assert set(ordering.rejected) == {"bad"}
    # without the answer, the generic ordering has no provider for the namespace
    assert order_variants(info, target).labels == ["null"]
    plain = VariantInfo((), MappingProxyType({}), MappingProxyType({"null": variants["null"]}))
    assert with_abi_provider(plain) is plain
