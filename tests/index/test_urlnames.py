"""``url_filename``: the file a URL names is the last segment of its path, percent-decoded once;
a segment that decodes to no plain file name names nothing. Page links take their file names
from it and keep their URLs as the page wrote them."""

from __future__ import annotations

import pytest

from fitwheel.index.simple import parse_html, parse_json
from fitwheel.index.urlnames import names_file, url_filename

NAME = "torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl"
BASE = "https://download.example/whl/cpu/"


@pytest.mark.parametrize(
    ("url", "name"),
    [
        (BASE + "torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl", NAME),
        (BASE + "torch-2.13.0%2bcpu-cp311-cp311-manylinux_2_28_x86_64.whl", NAME),
        (BASE + NAME, NAME),  # a literal + is a +, never a space
        (BASE + "torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl#sha256=ab", NAME),
        (BASE + "torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl?a=b/c.whl", NAME),
        (BASE + "my%20pkg-1.0.tar.gz", "my pkg-1.0.tar.gz"),
        (BASE + "caf%C3%A9-1.0-py3-none-any.whl", "café-1.0-py3-none-any.whl"),
        (BASE + "a%7Eb-1.0.zip", "a~b-1.0.zip"),
        (BASE + "x%252Bcpu.whl", "x%2Bcpu.whl"),  # decoded once, as a server reads it
        ("file:///srv/wheels/demo-1.0%2Blocal-py3-none-any.whl", "demo-1.0+local-py3-none-any.whl"),
        ("demo-1.0-py3-none-any.whl", "demo-1.0-py3-none-any.whl"),
    ],
)
def test_the_last_segment_decoded(url: str, name: str) -> None:
    assert url_filename(url) == name
    assert names_file(url, name)


@pytest.mark.parametrize(
    "url",
    [
        BASE,  # a folder
        BASE + "?file=demo-1.0-py3-none-any.whl",
        BASE + ".",
        BASE + "%2E%2E",
        BASE + "sub%2Fdemo-1.0-py3-none-any.whl",  # an encoded / makes a path, not a name
        BASE + "sub%2fdemo-1.0-py3-none-any.whl",
        BASE + "sub%5Cdemo-1.0-py3-none-any.whl",
        BASE + "demo%00-1.0-py3-none-any.whl",
        BASE + "demo%FF-1.0-py3-none-any.whl",  # not UTF-8
    ],
)
def test_a_segment_that_is_no_plain_file_name_names_nothing(url: str) -> None:
    assert url_filename(url) is None
    assert not names_file(url, "demo-1.0-py3-none-any.whl")
    assert not names_file(url, "")


def test_a_url_naming_another_file_does_not_name_this_one() -> None:
    assert not names_file(BASE + "torch-2.13.0%2Bcu130-cp311-cp311-manylinux_2_28_x86_64.whl", NAME)
    assert not names_file(BASE + "torch-2.13.0%20cpu-cp311-cp311-manylinux_2_28_x86_64.whl", NAME)
    assert not names_file(BASE + "sub%2F" + NAME, NAME)
    assert not names_file(BASE + NAME + "/", NAME)


def test_page_links_are_named_by_the_decoded_segment_and_keep_their_urls() -> None:
    href = "torch-2.13.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl"
    text = (
        f'<a href="{href}#sha256={"a" * 64}">{NAME}</a>'
        '<a href="../">up</a><a href="sub%2Fevil-1.0-py3-none-any.whl">evil</a>'
    )
    (link,) = parse_html(text, BASE)
    assert link.filename == NAME
    assert link.url == BASE + href  # fetched and locked as the page wrote it
    assert link.sha256 == "a" * 64
    (json_link,) = parse_json(
        {"files": [{"filename": NAME, "url": href, "hashes": {"sha256": "b" * 64}}]}, BASE
    )
    assert json_link.filename == NAME and json_link.url == BASE + href
