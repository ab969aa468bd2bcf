import json

import pytest

from fitwheel.index.simple import (
    IndexPageError,
    parse_html,
    parse_json,
    parse_page,
    project_url,
    variants_json_key,
)

PAGE = "https://example.invalid/simple/torch/"


def test_html_anchor_attributes_become_link_fields() -> None:
    text = """<html><body>
    <a href="../../files/torch-2.9.0-py3-none-any.whl#sha256=ABCDEF"
       data-requires-python="&gt;=3.10" data-core-metadata="sha256=1234">x</a>
    <a href="/files/torch-2.8.0-py3-none-any.whl" data-yanked="broken build"
       data-dist-info-metadata="true">y</a>
    <a href="torch-2.7.0-py3-none-any.whl" data-yanked>z</a>
    <a>no href</a>
    </body></html>"""
    links = parse_html(text, PAGE)
    assert [link.filename for link in links] == [
        "torch-2.9.0-py3-none-any.whl",
        "torch-2.8.0-py3-none-any.whl",
        "torch-2.7.0-py3-none-any.whl",
    ]
    first, second, third = links
    assert first.url == "https://example.invalid/files/torch-2.9.0-py3-none-any.whl"
    assert first.sha256 == "abcdef"
    assert first.requires_python == ">=3.10"
    assert first.metadata_hashes == {"sha256": "1234"}
    assert first.yanked is None
    assert second.yanked == "broken build"
    assert second.metadata_hashes == {}
    assert second.url == "https://example.invalid/files/torch-2.8.0-py3-none-any.whl"
    assert third.yanked == ""
    assert third.metadata_hashes is None
    assert third.url == PAGE + "torch-2.7.0-py3-none-any.whl"


def test_html_base_tag_changes_relative_urls() -> None:
    text = (
        '<html><head><base href="https://mirror.invalid/pkgs/"></head>'
        '<a href="a-1-py3-none-any.whl">a</a></html>'
    )
    (link,) = parse_html(text, PAGE)
    assert link.url == "https://mirror.invalid/pkgs/a-1-py3-none-any.whl"


def test_json_page_fields() -> None:
    data = {
        "meta": {"api-version": "1.1"},
        "files": [
            {
                "filename": "a-1-py3-none-any.whl",
                "url": "../../f/a-1-py3-none-any.whl",
                "hashes": {"SHA256": "AA"},
                "requires-python": ">=3.8",
                "yanked": "bad",
                "core-metadata": {"sha256": "bb"},
            },
            {
                "filename": "a-2-py3-none-any.whl",
                "url": "https://cdn.invalid/a-2-py3-none-any.whl#sha256=cc",
                "hashes": {},
                "yanked": True,
                "dist-info-metadata": True,
            },
            {
                "filename": "a-3-py3-none-any.whl",
                "url": "a-3-py3-none-any.whl",
                "hashes": {},
                "yanked": False,
                "core-metadata": False,
            },
        ],
    }
    one, two, three = parse_json(data, PAGE)
    assert one.url == "https://example.invalid/f/a-1-py3-none-any.whl"
    assert one.hashes == {"sha256": "aa"}
    assert one.requires_python == ">=3.8"
    assert one.yanked == "bad"
    assert one.metadata_hashes == {"sha256": "bb"}
    assert two.yanked == ""
    assert two.sha256 == "cc"  # the fragment is used when the hashes table is empty
    assert two.metadata_hashes == {}
    assert three.yanked is None and three.metadata_hashes is None


def test_json_page_without_files_is_an_error_naming_the_page() -> None:
    with pytest.raises(IndexPageError, match=r"example\.invalid/simple/torch"):
        parse_json({"meta": {}}, PAGE)
    with pytest.raises(IndexPageError, match="not valid JSON"):
        parse_page(b"{nope", "application/vnd.pypi.simple.v1+json", PAGE)


def test_parse_page_dispatches_on_content_type() -> None:
    body = json.dumps(
        {
            "files": [
                {"filename": "x-1-py3-none-any.whl", "url": "x-1-py3-none-any.whl", "hashes": {}}
            ]
        }
    ).encode()
    assert (
        parse_page(body, "application/vnd.pypi.simple.v1+json", PAGE)[0].filename
        == "x-1-py3-none-any.whl"
    )
    html = b'<a href="y-1-py3-none-any.whl">y</a>'
    assert parse_page(html, "text/html", PAGE)[0].filename == "y-1-py3-none-any.whl"


@pytest.mark.parametrize(
    ("filename", "expected"),
    [
        ("torch-2.9.0-variants.json", ("torch", "2.9.0")),
        ("Foo_Bar-1.0-variants.json", ("foo-bar", "1.0")),
        ("torch-2.9.0-py3-none-any.whl", None),
        ("variants.json", None),
    ],
)
def test_variants_json_found_by_filename(filename: str, expected: object) -> None:
    assert variants_json_key(filename) == expected


def test_project_url_normalises_the_name() -> None:
    assert project_url("http://h/simple", "Foo.Bar_baz") == "http://h/simple/foo-bar-baz/"


def test_a_hostile_page_of_unterminated_attributes_is_read_in_one_pass() -> None:
    """A megabyte of ``<a x="`` (each quote closed only by the next tag's) reads as a page of
    anchors without an href: no link, and no time growing with the square of the size."""
    from fitwheel.index.simple import parse_html

    assert parse_html('<a x="' * 200_000, "http://127.0.0.1/simple/p/") == []


def test_hashes_in_a_fragment_are_read_among_its_other_parts() -> None:
    from fitwheel.index.simple import split_fragment

    assert split_fragment("https://h/p-1.0.tar.gz#sha256=AB12") == (
        "https://h/p-1.0.tar.gz",
        {"sha256": "ab12"},
    )
    # pip reads a hash wherever it stands in the fragment, beside egg= or subdirectory=
    assert split_fragment("https://h/p-1.0.tar.gz#egg=p&sha256=ab12&subdirectory=x") == (
        "https://h/p-1.0.tar.gz",
        {"sha256": "ab12"},
    )
    assert split_fragment("https://h/p-1.0.tar.gz#md5=00") == (
        "https://h/p-1.0.tar.gz",
        {"md5": "00"},
    )
    assert split_fragment("https://h/p-1.0.tar.gz") == ("https://h/p-1.0.tar.gz", {})
