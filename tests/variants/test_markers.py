"""Variant environment markers on top of packaging's marker engine."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.markers import Marker

from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.markers import (
    evaluate_environment_marker,
    evaluate_marker,
    parse_marker,
    variant_marker_environment,
)
from fitwheel.variants.model import NULL_LABEL, VariantDescription, VariantProperty
from tests.variants.strategies import variant_descriptions

#: the default run stays quick; the slow suite (make fuzz) sets FITWHEEL_FUZZ_EXAMPLES
EXAMPLES = 150
FUZZ_EXAMPLES = int(os.environ.get("FITWHEEL_FUZZ_EXAMPLES", "2000"))

CUDA = VariantDescription(
    "cu128",
    frozenset(
        {
            VariantProperty("nvidia", "sm_arch", "120_real"),
            VariantProperty("nvidia", "sm_arch", "110_real"),
            VariantProperty("nvidia", "cuda_version_lower_bound", "12.8"),
        }
    ),
)
NULL = VariantDescription(NULL_LABEL)
LINUX = {"sys_platform": "linux", "platform_system": "Linux", "python_version": "3.11"}


@pytest.mark.parametrize(
    ("marker", "expected"),
    [
        ('"nvidia" in variant_namespaces', True),
        ('"amd" in variant_namespaces', False),
        ('"amd" not in variant_namespaces', True),
        ('"nvidia :: sm_arch" in variant_features', True),
        ('"nvidia :: sm_arch" not in variant_features', False),
        ('"nvidia :: sm_arch :: 120_real" in variant_properties', True),
        ('"nvidia :: sm_arch :: 90_real" in variant_properties', False),
        ('variant_label == "cu128"', True),
        ('"cu128" == variant_label', True),
        ('variant_label != "cu128"', False),
        ('variant_label != "null"', True),
        # whitespace around :: is insignificant, in any amount, on the literal's side too
        ('"nvidia::sm_arch::120_real" in variant_properties', True),
        ('"  nvidia   ::sm_arch::   120_real " in variant_properties', True),
        ("'nvidia ::sm_arch' in variant_features", True),
        # combined with standard markers and parentheses
        ('"nvidia" in variant_namespaces and sys_platform == "linux"', True),
        ('"nvidia" in variant_namespaces and sys_platform == "win32"', False),
        (
            '("amd" in variant_namespaces or variant_label == "cu128") and python_version >= "3.9"',
            True,
        ),
        (
            'extra == "test" or "nvidia :: cuda_version_lower_bound :: 12.8" in variant_properties',
            True,
        ),
    ],
)
def test_markers_on_a_variant(marker: str, expected: bool) -> None:
    assert evaluate_marker(marker, LINUX, CUDA) is expected


def test_variant_properties_keeps_only_supported_values_with_825_semantics():
    # A wheel built for {120_real, 110_real} on a 110-only machine.
    supported = {"nvidia": {"sm_arch": ("110_real",), "cuda_version_lower_bound": ("12.8",)}}
    marker = '"nvidia :: sm_arch :: 120_real" in variant_properties'
    assert evaluate_marker(marker, LINUX, CUDA) is True
    assert evaluate_marker(marker, LINUX, CUDA, supported=supported) is False
    assert evaluate_marker(
        '"nvidia :: sm_arch :: 110_real" in variant_properties', LINUX, CUDA, supported=supported
    )
    # Filtering never removes the feature or the namespace.
    assert evaluate_marker('"nvidia :: sm_arch" in variant_features', LINUX, CUDA, supported={})
    assert evaluate_marker('"nvidia" in variant_namespaces', LINUX, CUDA, supported={})


def test_namespaces_without_an_answer_keep_their_values():
    # A static provider's namespace is answered by the file, not by the target's lists.
    blas = VariantDescription(
        "mkl", frozenset({VariantProperty("blas", "provider", "mkl"), *CUDA.properties})
    )
    supported = {"nvidia": {"sm_arch": ("110_real",)}}
    env = variant_marker_environment(blas, supported)
    assert env["variant_properties"] == frozenset(
        {"blas :: provider :: mkl", "nvidia :: sm_arch :: 110_real"}
    )


def test_non_variant_wheel_has_an_empty_label_and_empty_sets():
    assert evaluate_marker('variant_label == ""', LINUX, None)
    assert evaluate_marker('variant_label != "null"', LINUX, None)
    assert evaluate_marker('"nvidia" not in variant_namespaces', LINUX, None)
    assert not evaluate_marker('"nvidia" in variant_namespaces', LINUX, None)
    assert not evaluate_marker('"a :: b :: c" in variant_properties', LINUX, None)


def test_null_variant_differs_from_non_variant_only_by_its_label():
    assert evaluate_marker('variant_label == "null"', LINUX, NULL)
    assert not evaluate_marker('variant_label == "null"', LINUX, None)
    for marker in ['"x" not in variant_namespaces', '"x :: y" not in variant_features']:
        assert evaluate_marker(marker, LINUX, NULL) == evaluate_marker(marker, LINUX, None)


def test_environment_dict():
    env = variant_marker_environment(CUDA, {"nvidia": {"sm_arch": ("120_real",)}})
    assert env == {
        "variant_namespaces": frozenset({"nvidia"}),
        "variant_features": frozenset({"nvidia :: sm_arch", "nvidia :: cuda_version_lower_bound"}),
        "variant_properties": frozenset({"nvidia :: sm_arch :: 120_real"}),
        "variant_label": "cu128",
    }
    assert variant_marker_environment(None) == {
        "variant_namespaces": frozenset(),
        "variant_features": frozenset(),
        "variant_properties": frozenset(),
        "variant_label": "",
    }


def test_standard_markers_still_come_from_packaging():
    plain = Marker('python_version >= "3.8" and platform_system == "Linux"')
    assert evaluate_marker(plain, LINUX, CUDA) is True
    assert evaluate_marker(str(plain), {**LINUX, "platform_system": "Darwin"}, None) is False
    # With no environment, the running interpreter's values are used, as packaging does.
    here = 'python_version >= "3"'
    assert evaluate_marker(here, None, None) is Marker(here).evaluate()


@pytest.mark.parametrize(
    "marker",
    [
        'variant_properties == "a :: b :: c"',  # sets only take in / not in
        'variant_namespaces in "nvidia"',  # the set must be on the right
        '"nvidia" < variant_namespaces',
        'variant_label in "cu128"',  # the label only takes == / !=
        '"cu" in variant_label',
        "variant_label == variant_label",
        'variant_label >= "a"',
    ],
)
def test_operators_outside_the_standard_are_errors(marker: str) -> None:
    with pytest.raises(VariantFormatError, match="variant_"):
        evaluate_marker(marker, LINUX, CUDA)


@pytest.mark.parametrize(
    "marker",
    [
        "variant_label ==",
        '"nvidia" in variant_namespace',  # misspelt name
        '"nvidia" in variant_namespaces and',
        '("nvidia" in variant_namespaces',
        "",
    ],
)
def test_unparseable_markers_are_format_errors(marker: str) -> None:
    with pytest.raises(VariantFormatError, match="cannot be parsed"):
        parse_marker(marker)


def test_non_string_marker_is_a_format_error():
    with pytest.raises(VariantFormatError):
        parse_marker(42)  # type: ignore[arg-type]


def test_parsed_marker_prints_in_canonical_form():
    assert str(parse_marker("'a::b::c' in variant_properties")) == (
        '"a :: b :: c" in variant_properties'
    )


_spaces = st.sampled_from(["", " ", "  ", "\t"])


@settings(max_examples=EXAMPLES, deadline=None)
@given(
    variant_descriptions(),
    st.data(),
    _spaces,
    _spaces,
)
def test_membership_matches_the_declared_properties(
    variant: VariantDescription, data: st.DataObject, left: str, right: str
) -> None:
    props = sorted(variant.properties)
    if props and data.draw(st.booleans()):
        prop = data.draw(st.sampled_from(props))
    else:
        prop = data.draw(
            st.builds(
                VariantProperty,
                st.sampled_from(["aa", "nvidia"]),
                st.sampled_from(["f", "sm_arch"]),
                st.sampled_from(["1", "2"]),
            )
        )
    literal = f"{prop.namespace}{left}::{right}{prop.feature}{left}::{right}{prop.value}"
    assert evaluate_marker(f'"{literal}" in variant_properties', None, variant) is (
        prop in variant.properties
    )
    feature = f"{prop.namespace}{right}::{left}{prop.feature}"
    assert evaluate_marker(f"'{feature}' not in variant_features", None, variant) is (
        prop.feature_key not in variant.features
    )
    assert evaluate_marker(f'variant_label == "{variant.label}"', None, variant)


# --- plain markers (provider enable-if) ---------------------------------------------------------

_names = st.sampled_from(
    ["platform_system", "sys_platform", "platform_machine", "os_name", "implementation_name"]
)
_words = st.sampled_from(["Linux", "linux", "Windows", "win32", "x86_64", "arm", "aarch64", ""])
_ops = st.sampled_from(["==", "!=", "in", "not in", "not  in"])


@st.composite
def _clauses(draw: st.DrawFn) -> str:
    name, op, word = draw(_names), draw(_ops), draw(_words)
    quote = draw(st.sampled_from(["'", '"']))
    literal = f"{quote}{word}{quote}"
    gap = draw(st.sampled_from(["", " ", "  "])) if op in ("==", "!=") else " "
    if draw(st.booleans()):
        return f"{name}{gap}{op}{gap}{literal}"
    return f"{literal}{gap}{op}{gap}{name}"


@st.composite
def _plain_markers(draw: st.DrawFn) -> str:
    clauses = draw(st.lists(_clauses(), min_size=1, max_size=4))
    text = clauses[0]
    for clause in clauses[1:]:
        text += f" {draw(st.sampled_from(['and', 'or']))} {clause}"
    if draw(st.integers(0, 5)) == 0:
        text = f"({text}) and python_version >= '3'"  # outside the direct subset
    return text


@settings(max_examples=EXAMPLES, deadline=None)
@given(_plain_markers(), st.dictionaries(_names, _words))
def test_environment_markers_agree_with_packaging(text: str, env: dict[str, str]) -> None:
    assert evaluate_environment_marker(text, env) is Marker(text).evaluate(env)


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(_plain_markers(), st.dictionaries(_names, _words))
def test_environment_markers_agree_with_packaging_at_length(text: str, env: dict[str, str]):
    assert evaluate_environment_marker(text, env) is Marker(text).evaluate(env)


def test_environment_markers_of_published_files():
    linux = "platform_system == 'Linux' or platform_system == 'Windows'"
    assert evaluate_environment_marker(linux, {"platform_system": "Linux"})
    assert not evaluate_environment_marker(linux, {"platform_system": "Darwin"})
    arm = "platform_machine == 'aarch64' or 'arm' in platform_machine"
    assert evaluate_environment_marker(arm, {"platform_machine": "armv7l"})
    assert not evaluate_environment_marker(arm, {"platform_machine": "x86_64"})
    # Names the target does not give take the running interpreter's values.
    here = "sys_platform == 'linux' or sys_platform != 'linux'"
    assert evaluate_environment_marker(here, {})
    assert evaluate_environment_marker("python_version >= '3'", None)


@pytest.mark.parametrize("text", ["platform_system ==", "platform_system = 'Linux'", ""])
def test_invalid_environment_markers_are_format_errors(text: str) -> None:
    with pytest.raises(VariantFormatError, match="not a valid environment marker"):
        evaluate_environment_marker(text, {"platform_system": "Linux"})


def test_simple_environment_markers_need_no_marker_parser() -> None:
    # Provider conditions are evaluated on every selection; the common forms must not pay for
    # loading packaging's marker machinery.
    script = (
        "import sys\n"
        "from fitwheel.variants.markers import evaluate_environment_marker as e\n"
        "m = \"platform_system == 'Linux' or platform_system == 'Windows'\"\n"
        "assert e(m, {'platform_system': 'Linux'})\n"
        "print(sorted(n for n in sys.modules if n.startswith('packaging')))\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_extra_names_are_normalised_on_both_sides() -> None:
    """``extra == "extra_b"`` holds for the extra ``extra-b`` (and ``Extra.B``), as in
    packaging's own Marker: the resolver asks with normalised extra names."""
    from fitwheel.variants.markers import evaluate_marker

    for asked in ("extra-b", "extra_b", "Extra.B"):
        assert evaluate_marker('extra == "extra_b"', {"extra": asked}, None)
    assert not evaluate_marker('extra == "extra_b"', {"extra": "extra-c"}, None)
