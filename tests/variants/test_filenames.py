"""Wheel filenames with and without build tag and variant label; index variant file names."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.tags import Tag
from packaging.utils import parse_wheel_filename
from packaging.version import Version

from fitwheel.variants.errors import InvalidWheelFilenameError
from fitwheel.variants.filenames import (
    VariantsJsonFilename,
    WheelFilename,
    parse_variants_json_filename,
    variants_json_filename,
)

PARSED = [
    # name, version, build, python, abi, platform, label
    (
        "torch-2.8.0-cp313-cp313-manylinux_2_28_x86_64.whl",
        ("torch", "2.8.0", None, "cp313", "cp313", "manylinux_2_28_x86_64", None),
    ),
    (
        "torch-2.9.0-cp313-cp313-manylinux_2_28_x86_64-cuda12.6.whl",
        ("torch", "2.9.0", None, "cp313", "cp313", "manylinux_2_28_x86_64", "cuda12.6"),
    ),
    (
        "torch-2.8.0-cp313-cp313-win_amd64-00000000.whl",
        ("torch", "2.8.0", None, "cp313", "cp313", "win_amd64", "00000000"),
    ),
    ("test_package-0-1-py3-none-any.whl", ("test_package", "0", "1", "py3", "none", "any", None)),
    (
        "test_package-0-1a-py3-none-any-null.whl",
        ("test_package", "0", "1a", "py3", "none", "any", "null"),
    ),
    (
        "Foo.Bar-1.0rc1-py2.py3-none-any-x.y_z.whl",
        ("Foo.Bar", "1.0rc1", None, "py2.py3", "none", "any", "x.y_z"),
    ),
    (
        "pkg-1.0-py3-none-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        ("pkg", "1.0", None, "py3", "none", "manylinux_2_17_x86_64.manylinux2014_x86_64", None),
    ),
]


@pytest.mark.parametrize(("filename", "parts"), PARSED)
def test_parse_and_format(filename: str, parts: tuple[str | None, ...]) -> None:
    wheel = WheelFilename.parse(filename)
    name, version, build, py, abi, plat, label = parts
    assert (wheel.name, wheel.version, wheel.build) == (name, version, build)
    assert (wheel.python_tag, wheel.abi_tag, wheel.platform_tag) == (py, abi, plat)
    assert wheel.variant_label == label
    assert wheel.is_variant is (label is not None)
    assert wheel.format() == filename
    assert str(wheel) == filename
    # Without the label it is an ordinary wheel filename that packaging agrees with.
    plain = wheel.without_label()
    p_name, p_version, p_build, p_tags = parse_wheel_filename(plain.format())
    assert p_name == wheel.normalized_name
    assert p_version == wheel.parsed_version
    assert p_build == wheel.build_number
    assert p_tags == wheel.tags
    # variantlib 0.2.2 finds the same label.
    from variantlib.constants import VALIDATION_WHEEL_NAME_REGEX

    match = VALIDATION_WHEEL_NAME_REGEX.fullmatch(filename)
    assert match is not None
    assert match["variant_label"] == label
    assert match["build"] == build


def test_with_and_without_label() -> None:
    plain = WheelFilename.parse("demo-1.0-py3-none-any.whl")
    labelled = plain.with_label("cu126")
    assert labelled.format() == "demo-1.0-py3-none-any-cu126.whl"
    assert labelled.without_label() == plain
    built = WheelFilename.parse("demo-1.0-7-py3-none-any.whl").with_label("null")
    assert built.format() == "demo-1.0-7-py3-none-any-null.whl"
    assert WheelFilename.parse(built.format()) == built
    with pytest.raises(InvalidWheelFilenameError) as err:
        plain.with_label("CU126")
    assert "variant label 'CU126'" in err.value.rule


def test_tags_and_build_number() -> None:
    wheel = WheelFilename.parse("demo-1.0-12b-py2.py3-none-any-lbl.whl")
    assert wheel.build_number == (12, "b")
    assert wheel.tags == frozenset({Tag("py2", "none", "any"), Tag("py3", "none", "any")})
    assert wheel.parsed_version == Version("1.0")


@pytest.mark.parametrize(
    ("filename", "rule"),
    [
        ("demo-1.0-py3-none-any.zip", "must end with '.whl'"),
        ("demo-1.0-py3-none.whl", "has 5 to 7 '-'-separated parts"),
        ("demo-1.0-1-py3-none-any-lbl-x.whl", "this one has 8"),
        ("demo-1.0-2x-none-any.whl", "python tag '2x' must not start with a digit"),
        ("demo-1.0-py3-none-any-Foo.whl", "variant label 'Foo'"),
        ("demo-1.0-py3-none-any-a-b.whl", "build tag 'py3' must start with a digit"),
        ("demo-not a version-py3-none-any.whl", "is not a valid version"),
        ("demo-1.0-py3--any.whl", "abi tag '' must be non-empty"),
        ("-1.0-py3-none-any.whl", "distribution name"),
        ("demo-1.0-py3-none-any-.whl", "variant label ''"),
    ],
)
def test_invalid_filenames(filename: str, rule: str) -> None:
    with pytest.raises(InvalidWheelFilenameError) as err:
        WheelFilename.parse(filename)
    assert rule in err.value.rule
    assert err.value.source == filename
    assert str(err.value).startswith(filename)


_token = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)


@settings(max_examples=100, deadline=None)
@given(
    name=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.]{0,8}", fullmatch=True),
    version=st.sampled_from(["0", "1.0", "2.10.0", "1.0rc1", "1!2.0.post3.dev4", "2.8.0+cu128"]),
    build=st.none() | st.from_regex(r"[0-9][a-z0-9_]{0,3}", fullmatch=True),
    tags=st.tuples(_token, _token, _token),
    label=st.none() | st.from_regex(r"[0-9a-z._]{1,12}", fullmatch=True),
)
def test_any_valid_components_round_trip(
    name: str,
    version: str,
    build: str | None,
    tags: tuple[str, str, str],
    label: str | None,
) -> None:
    wheel = WheelFilename(name, version, *tags, build=build, variant_label=label)
    assert WheelFilename.parse(wheel.format()) == wheel


def test_variants_json_filename_normalises_like_wheel_filenames() -> None:
    assert variants_json_filename("torch", "2.10.0") == "torch-2.10.0-variants.json"
    assert variants_json_filename("Foo.Bar", "1.0-RC1") == "foo_bar-1.0rc1-variants.json"
    assert variants_json_filename("test-package", "0") == "test_package-0-variants.json"
    assert variants_json_filename("a__b--c", "2.8.0+CU128") == "a_b_c-2.8.0+cu128-variants.json"
    with pytest.raises(InvalidWheelFilenameError):
        variants_json_filename("-bad-", "1.0")
    with pytest.raises(InvalidWheelFilenameError):
        variants_json_filename("good", "not a version")


def test_parse_variants_json_filename() -> None:
    parsed = parse_variants_json_filename("torch-2.10.0-variants.json")
    assert parsed == VariantsJsonFilename("torch", "2.10.0")
    assert parsed.format() == "torch-2.10.0-variants.json"
    assert parsed.matches(WheelFilename.parse("Torch-2.10-cp313-cp313-linux_x86_64-xpu.whl"))
    assert not parsed.matches(WheelFilename.parse("torch-2.9.0-cp313-cp313-linux_x86_64.whl"))
    for bad, rule in (
        ("torch-2.10.0.json", "is named"),
        ("torch-vision-2.10.0-variants.json", "no '-' in name or version"),
        ("torch-x y-variants.json", "not a valid version"),
    ):
        with pytest.raises(InvalidWheelFilenameError) as err:
            parse_variants_json_filename(bad)
        assert rule in err.value.rule
        assert err.value.source == bad
