"""The slotted value classes that replace dataclasses on the start-up path."""

from __future__ import annotations

import pytest

from fitwheel.variants.errors import InvalidPropertyError
from fitwheel.variants.model import Provider, VariantFeature, VariantInfo, VariantProperty
from fitwheel.variants.ordering import DeviceConstraint, Ordering, Target


def test_values_compare_hash_and_print_by_their_fields() -> None:
    a = VariantProperty("nvidia", "sm_arch", "90_real")
    assert a == VariantProperty("nvidia", "sm_arch", "90_real")
    assert hash(a) == hash(VariantProperty("nvidia", "sm_arch", "90_real"))
    assert a != VariantProperty("nvidia", "sm_arch", "80_real")
    assert repr(a) == "VariantProperty(namespace='nvidia', feature='sm_arch', value='90_real')"
    # a different class with equal field values is not equal
    assert VariantFeature("nvidia", "sm_arch") != ("nvidia", "sm_arch")
    assert Target({}) != Ordering(())


def test_properties_order_by_namespace_then_feature_then_value() -> None:
    props = [
        VariantProperty("x86_64", "level", "v3"),
        VariantProperty("amd", "rocm_version", "6.4"),
        VariantProperty("amd", "gfx_arch", "gfx942"),
        VariantProperty("amd", "gfx_arch", "gfx90a"),
    ]
    assert [str(p) for p in sorted(props)] == [
        "amd :: gfx_arch :: gfx90a",
        "amd :: gfx_arch :: gfx942",
        "amd :: rocm_version :: 6.4",
        "x86_64 :: level :: v3",
    ]
    a, b = VariantFeature("a", "z"), VariantFeature("b", "a")
    assert a < b and a <= b and b > a and b >= a and not a > b


def test_values_are_immutable() -> None:
    prop = VariantProperty("a", "b", "c")
    with pytest.raises(AttributeError, match="immutable"):
        prop.value = "d"  # type: ignore[misc]
    with pytest.raises(AttributeError, match="immutable"):
        del prop.value  # type: ignore[misc]


def test_replace_copies_with_changes_and_checks_again() -> None:
    provider = Provider("nvidia", requires=("p",), enable_if="platform_system == 'Linux'")
    changed = provider.replace(enable_if=None)
    assert changed.enable_if is None and changed.requires == ("p",)
    assert provider.enable_if == "platform_system == 'Linux'"
    with pytest.raises(TypeError, match="no field 'nope'"):
        provider.replace(nope=1)
    with pytest.raises(InvalidPropertyError):
        VariantProperty("a", "b", "c").replace(value="UPPER")


def test_defaults_are_not_shared_between_instances() -> None:
    first, second = Ordering(()), Ordering(())
    assert first.rejected == {} and first.rejected is not second.rejected
    info = VariantInfo(("a",), {}, {})
    assert dict(info.feature_priorities) == {} and info.schema is None
    assert DeviceConstraint("nvidia", "GPU 0", {}).device == "GPU 0"
