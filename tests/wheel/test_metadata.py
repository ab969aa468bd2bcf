"""METADATA and WHEEL as fitwheel reads them: real shapes, tolerated oddities, clear errors."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from fitwheel.errors import InvalidWheelError
from fitwheel.index.simple import Link
from fitwheel.install.cache.layout import CachedLayout, UnpackError, layout
from fitwheel.resolve.candidates import Candidate
from fitwheel.resolve.provider import InvalidCandidateMetadata, Provider
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.names import canonicalize_name
from fitwheel.wheel.metadata import (
    CoreMetadata,
    InvalidMetadataError,
    WheelInfo,
    parse_metadata,
    parse_wheel_info,
)

SETUPTOOLS_STYLE = b"""Metadata-Version: 2.1
Name: Demo.Pkg
Version: 1.0rc1
Summary: A demo
Home-page: https://example.invalid
Classifier: Programming Language :: Python :: 3
Requires-Python: >=3.9
Description-Content-Type: text/x-rst
Provides-Extra: cuda
Provides-Extra: test
Requires-Dist: numpy (>=1.20)
Requires-Dist: nvidia-cublas ; (extra == 'cuda') and "nvidia :: cuda :: 12" in variant_properties
Requires-Dist: pytest[testing]>=7; extra == "test"
Description: Demo
        =====
        <SPACES>
        |a line with a bar
        Requires-Dist: not-a-dependency

A body that looks like headers:
Requires-Dist: also-not-a-dependency
""".replace(b"<SPACES>", b"        ")


def test_reads_the_fields_resolving_and_publishing_need() -> None:
    meta = parse_metadata(SETUPTOOLS_STYLE, "demo.whl")
    assert meta == CoreMetadata(
        name="Demo.Pkg",
        version="1.0rc1",
        requires_dist=(
            "numpy (>=1.20)",
            "nvidia-cublas ; (extra == 'cuda') and \"nvidia :: cuda :: 12\" in variant_properties",
            'pytest[testing]>=7; extra == "test"',
        ),
        requires_python=">=3.9",
        provides_extra=("cuda", "test"),
        summary="A demo",
        metadata_version="2.1",
    )


def test_crlf_line_ends_and_no_body() -> None:
    data = b"Metadata-Version: 2.4\r\nName: a\r\nVersion: 2\r\nRequires-Dist: b\r\n"
    meta = parse_metadata(data, "a.whl")
    assert (meta.name, meta.version, meta.requires_dist) == ("a", "2", ("b",))


def test_missing_fields_are_none_or_empty() -> None:
    meta = parse_metadata(b"Metadata-Version: 2.1\nName: bare\n\nbody\n", "bare.whl")
    assert meta.version is None
    assert meta.requires_dist == ()
    assert meta.requires_python is None
    assert meta.provides_extra == ()


def test_non_utf8_in_a_field_nobody_reads_is_tolerated() -> None:
    data = b"Metadata-Version: 2.1\nName: old\nVersion: 1\nAuthor: Jos\xe9\nSummary: caf\xe9\n"
    meta = parse_metadata(data, "old.whl")
    assert (meta.name, meta.version) == ("old", "1")
    assert meta.summary is None


def test_non_utf8_in_a_needed_field_names_the_file() -> None:
    data = b"Metadata-Version: 2.1\nName: caf\xe9\nVersion: 1\n"
    with pytest.raises(InvalidMetadataError, match=r"^cafe\.whl: its Name field cannot be read"):
        parse_metadata(data, "cafe.whl")


def test_a_field_given_twice_is_refused() -> None:
    data = b"Name: a\nName: b\nVersion: 1\n"
    with pytest.raises(InvalidMetadataError, match="Name field"):
        parse_metadata(data, "twice.whl")


@pytest.mark.parametrize(
    "data",
    [
        b"Name: a\nVersion: 1\nthis is not a header\nRequires-Dist: hidden\n\nbody\n",
        b"Name: a\nVersion : 1\n",
        b"Name: a\n: no field name\n",
    ],
)
def test_a_malformed_header_names_the_file_and_line(data: bytes) -> None:
    with pytest.raises(InvalidMetadataError, match=r"^bad\.whl \(METADATA\): line \d") as caught:
        parse_metadata(data, "bad.whl (METADATA)")
    assert isinstance(caught.value, InvalidWheelError)
    assert caught.value.path == "bad.whl (METADATA)"


def test_wheel_file() -> None:
    data = (
        b"Wheel-Version: 1.0\nGenerator: bdist_wheel (0.43)\nRoot-Is-Purelib: true\n"
        b"Tag: py2-none-any\nTag: py3-none-any\n"
    )
    assert parse_wheel_info(data, "WHEEL") == WheelInfo(
        wheel_version="1.0",
        root_is_purelib=True,
        tags=("py2-none-any", "py3-none-any"),
        generator="bdist_wheel (0.43)",
    )
    assert not parse_wheel_info("Wheel-Version: 1.0\n", "WHEEL").root_is_purelib


def test_wheel_file_without_version_is_read_but_not_installable() -> None:
    info = parse_wheel_info(b"Root-Is-Purelib: false\n", "p.dist-info/WHEEL")
    assert info.wheel_version is None
    with pytest.raises(InvalidMetadataError, match=r"Wheel-Version \(none\)"):
        info.check_installable("p.dist-info")


@pytest.mark.parametrize(
    "text", ["Wheel-Version: 2.0\n", "Root-Is-Purelib: true\n", "Wheel-Version: 10.1\n"]
)
def test_install_layout_refuses_wheel_versions_it_does_not_know(text: str) -> None:
    with pytest.raises(
        UnpackError, match=r"^p-1\.dist-info: its WHEEL file says Wheel-Version .*only version 1\.x"
    ):
        _layout(text)


def _layout(wheel_text: str) -> CachedLayout:
    return layout(
        [],
        distribution="p",
        wheel_version="1",
        dist_info="p-1.dist-info",
        data_dir="p-1.data",
        wheel_text=wheel_text,
    )


def test_install_layout_takes_purelib_from_the_wheel_file() -> None:
    out = _layout("Wheel-Version: 1.1\nRoot-Is-Purelib: True\n")
    assert out.root_is_purelib is True


def test_wheel_file_with_a_duplicated_field_is_refused() -> None:
    with pytest.raises(InvalidMetadataError, match="Wheel-Version more than once"):
        parse_wheel_info(b"Wheel-Version: 1.0\nWheel-Version: 2.0\n", "WHEEL")


def _wheel_with_metadata(folder: Path, metadata: bytes) -> Path:
    path = folder / "demo-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("demo/__init__.py", b"")
        archive.writestr("demo-1.0.dist-info/METADATA", metadata)
        archive.writestr("demo-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\n")
        archive.writestr("demo-1.0.dist-info/RECORD", b"")
    return path


def _candidate(path: Path) -> Candidate:
    wheel = WheelFilename.parse(path.name)
    link = Link(filename=path.name, url=path.as_uri())
    return Candidate(canonicalize_name(wheel.name), wheel.parsed_version, link, wheel)


def test_resolver_reads_dependencies_through_the_one_parser(tmp_path: Path) -> None:
    meta = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\nRequires-Dist: dep>=2; extra == 'x'\n"
    provider = Provider(source=None, session=None, environment={})  # type: ignore[arg-type]
    requires = provider._read_requires(_candidate(_wheel_with_metadata(tmp_path, meta)))
    assert [(str(req), marker) for req, marker in requires] == [("dep>=2", "extra == 'x'")]


def test_resolver_refuses_a_malformed_header_instead_of_dropping_dependencies(
    tmp_path: Path,
) -> None:
    """The email parser took everything after a non-header line as the body: the dependency
    listed after it was silently lost."""
    meta = b"Name: demo\nVersion: 1.0\nnot a header\nRequires-Dist: dep\n"
    provider = Provider(source=None, session=None, environment={})  # type: ignore[arg-type]
    # refused as invalid metadata: the resolver skips that candidate with a warning
    with pytest.raises(InvalidCandidateMetadata, match="line 3 is not a 'Field: value' header"):
        provider._read_requires(_candidate(_wheel_with_metadata(tmp_path, meta)))


_FIELD_NAMES = [
    "Metadata-Version", "Name", "Version", "Summary", "Requires-Python", "Requires-Dist",
    "Provides-Extra", "Wheel-Version", "Root-Is-Purelib", "Tag", "Generator", "X-Custom",
]  # fmt: skip


@given(
    st.lists(
        st.tuples(
            st.sampled_from(_FIELD_NAMES),
            st.text(st.characters(min_codepoint=33, max_codepoint=126), max_size=20),
        ),
        max_size=12,
    )
)
def test_the_fast_path_answers_as_packaging_metadata_does(
    fields: list[tuple[str, str]],
) -> None:
    """Plain ASCII headers skip the email machinery; the answer must be packaging's."""
    from packaging.metadata import parse_email

    from fitwheel.wheel.metadata import _parse_plain

    block = "".join(f"{key}: {value}\n" if value else f"{key}:\n" for key, value in fields)
    # an encoded word (=?...) is left to packaging on purpose: the fast path declines it
    assume("=?" not in block)
    plain = _parse_plain(block.encode())
    assert plain is not None
    raw, unparsed = parse_email(block.encode())
    assert plain == (dict(raw), unparsed)


@pytest.mark.parametrize(
    "block",
    [
        b"Name: a\n  continued\n",
        b"Summary: =?utf-8?q?caf=C3=A9?=\n",
        "Summary: caf\u00e9\n".encode(),
        b"Name: trailing \n",
        b"Author: someone\n",
    ],
)
def test_the_fast_path_leaves_anything_else_to_packaging(block: bytes) -> None:
    from fitwheel.wheel.metadata import _parse_plain

    assert _parse_plain(block) is None


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b"Name: demo\nVersion: not a version!\n\n", "'not a version!', which is not a valid"),
        (b"Name: demo\nVersion: 1.0\nSummary: caf\xe9\n\n", "not UTF-8 (line 3"),
        (b"Name: demo\nVersion: 1.0\n\nA description in Latin-1: \xe9\n", "not UTF-8 (line 4"),
        (b"Version: 1.0\n\n", "no Name field"),
        (b"Name: -demo-\nVersion: 1.0\n\n", "not a valid project name"),
        (b"Name: demo\n\n", "no Version field"),
    ],
)
def test_installable_metadata_refuses_what_the_environment_could_not_read(
    data: bytes, problem: str
) -> None:
    from fitwheel.wheel.metadata import InvalidMetadataError, parse_installable_metadata

    with pytest.raises(InvalidMetadataError) as info:
        parse_installable_metadata(data, "demo-1.0-py3-none-any.whl")
    assert str(info.value).startswith("demo-1.0-py3-none-any.whl: ")
    assert problem in str(info.value)


def test_installable_metadata_reads_a_good_file() -> None:
    from fitwheel.wheel.metadata import parse_installable_metadata

    meta = parse_installable_metadata(
        "Name: demo\nVersion: 1.0\nSummary: café\n\n".encode(), "w.whl"
    )
    assert (meta.name, meta.version, meta.summary) == ("demo", "1.0", "café")
