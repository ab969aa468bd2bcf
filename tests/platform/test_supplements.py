"""Static answers joining a profile: order, duplicates, new namespaces, sources, grammar."""

from __future__ import annotations

import pytest

from fitwheel.errors import UsageError
from fitwheel.platform.detect import PROVIDER_MODULES
from fitwheel.platform.profile import Device, Profile, parse_profile
from fitwheel.platform.supplements import (
    answered_namespaces,
    parse_property_arguments,
    supplement,
)
from fitwheel.variants.errors import InvalidPropertyError

DETECTED = Profile(
    {"x86_64": {"level": ("v3", "v2", "v1")}, "nvidia": {"sm_arch": ("90_real",)}},
    (Device("nvidia", 0, "H100"),),
    {"platform_machine": "x86_64"},
    {"x86_64": "cpuid", "nvidia": "nvml"},
)


def test_added_values_come_after_the_detected_ones_without_duplicates() -> None:
    out = supplement(DETECTED, {"x86_64": {"level": ["v1", "v4", "v4"]}}, "variant-property")
    assert out.properties["x86_64"]["level"] == ("v3", "v2", "v1", "v4")
    assert out.sources["x86_64"] == "cpuid + variant-property"
    # the rest of the profile is kept, and the profile given is unchanged
    assert out.properties["nvidia"] == DETECTED.properties["nvidia"]
    assert out.devices == DETECTED.devices
    assert out.environment == DETECTED.environment
    assert DETECTED.properties["x86_64"]["level"] == ("v3", "v2", "v1")
    assert DETECTED.sources["x86_64"] == "cpuid"


def test_new_namespaces_and_features_come_after_the_existing_ones() -> None:
    out = supplement(
        DETECTED,
        {"ascend": {"npu_type": ["910b", "310p"]}, "x86_64": {"avx512": ["on"]}},
        "config:/etc/fitwheel.toml",
    )
    assert list(out.properties) == ["x86_64", "nvidia", "ascend"]
    assert list(out.properties["x86_64"]) == ["level", "avx512"]
    assert out.properties["ascend"] == {"npu_type": ("910b", "310p")}
    assert out.sources["ascend"] == "config:/etc/fitwheel.toml"
    # the same source twice is said once
    again = supplement(out, {"ascend": {"npu_type": ["910"]}}, "config:/etc/fitwheel.toml")
    assert again.sources["ascend"] == "config:/etc/fitwheel.toml"
    assert again.properties["ascend"]["npu_type"] == ("910b", "310p", "910")


def test_an_empty_answer_records_the_namespace_as_answered() -> None:
    out = supplement(DETECTED, {"ascend": {}}, "plugin ascend-variant-provider==0.0.2")
    assert out.properties["ascend"] == {}
    assert out.sources["ascend"] == "plugin ascend-variant-provider==0.0.2"
    assert supplement(DETECTED, {}, "variant-property") is DETECTED


def test_the_supplemented_profile_round_trips_through_json() -> None:
    out = supplement(DETECTED, {"ascend": {"npu_type": ["910b"]}}, "variant-property")
    back = parse_profile(out.to_json(), "test")
    assert back.properties["ascend"] == {"npu_type": ("910b",)}
    assert back.sources["ascend"] == "variant-property"


@pytest.mark.parametrize(
    "extra",
    [
        {"Ascend": {"npu_type": ["910b"]}},
        {"ascend": {"npu-type": ["910b"]}},
        {"ascend": {"npu_type": ["910B"]}},
    ],
)
def test_names_and_values_off_the_grammar_are_refused_naming_the_source(
    extra: dict[str, dict[str, list[str]]],
) -> None:
    with pytest.raises(InvalidPropertyError) as err:
        supplement(DETECTED, extra, "config:/home/u/.config/fitwheel/config.toml")
    assert "config:/home/u/.config/fitwheel/config.toml" in str(err.value)


def test_property_arguments_parse_in_order_and_errors_name_the_argument() -> None:
    parsed = parse_property_arguments(
        ["ascend :: npu_type :: 910b", "ascend::npu_type::310p", " ascend :: npu_type :: 910b "]
    )
    assert parsed == {"ascend": {"npu_type": ["910b", "310p"]}}
    for bad in ("ascend :: npu_type", "Ascend :: npu_type :: 910b", "ascend :: npu_type :: 9 10"):
        with pytest.raises(UsageError) as err:
            parse_property_arguments([bad])
        message = str(err.value)
        assert "--variant-property" in message and repr(bad) in message


def test_answered_namespaces_are_the_built_ins_and_whatever_the_profile_answers() -> None:
    assert answered_namespaces(Profile({})) == tuple(sorted(PROVIDER_MODULES))
    answered = supplement(DETECTED, {"ascend": {}}, "plugin ascend-variant-provider==0.0.2")
    listed = answered_namespaces(answered)
    assert "ascend" in listed and list(listed) == sorted(listed)
    written = Profile({"npu": {"kind": ("a",)}}, sources={"gaudi": "written by hand"})
    assert {"npu", "gaudi"} <= set(answered_namespaces(written))
