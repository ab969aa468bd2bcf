"""Index pages of the wrong shape: every field fitwheel reads from a PEP 691 page is checked for
its type, as variants files are, and a wrong one is an error naming the page and the entry (never
an internal error); so is a page nested deeper than any real one, and an HTML link whose hash is
not a hex digest."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fitwheel.index.simple import IndexPageError, parse_page

PAGE = "https://index.example/simple/demo/"
JSON = "application/vnd.pypi.simple.v1+json"
GOOD = {
    "filename": "demo-1.0-py3-none-any.whl",
    "url": "../../files/demo-1.0-py3-none-any.whl",
    "hashes": {"sha256": "ab" * 32},
}


def page(*files: Any) -> bytes:
    return json.dumps(
        {"meta": {"api-version": "1.1"}, "name": "demo", "files": list(files)}
    ).encode()


def test_a_well_formed_page_reads() -> None:
    entry = {**GOOD, "requires-python": ">=3.9", "yanked": "broken", "core-metadata": True}
    (link,) = parse_page(page(entry), JSON, PAGE)
    assert link.hashes == {"sha256": "ab" * 32}
    assert link.yanked == "broken" and link.metadata_hashes == {}
    assert link.requires_python == ">=3.9"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"hashes": ["sha256", "ab"]}, "'hashes' must be an object"),
        ({"hashes": {"sha256": 12}}, "not a hex digest"),
        ({"hashes": {"sha256": "not hex"}}, "not a hex digest"),
        ({"url": 7}, "'url' must be a non-empty string"),
        ({"filename": None}, "'filename' must be a non-empty string"),
        ({"yanked": 1}, "'yanked' must be a boolean or a reason"),
        ({"requires-python": [">=3"]}, "'requires-python' must be a string"),
        ({"core-metadata": "sha256"}, "'core-metadata' must be an object"),
        ({"dist-info-metadata": {"sha256": ["x"]}}, "not a hex digest"),
    ],
)
def test_a_field_of_the_wrong_type_names_the_page_and_the_entry(
    change: dict[str, Any], named: str
) -> None:
    entry = {**GOOD, **change}
    with pytest.raises(IndexPageError) as info:
        parse_page(page(GOOD, entry), JSON, PAGE)
    message = str(info.value)
    assert message.startswith(f"{PAGE}: file 2")
    assert named in message
    if isinstance(entry["filename"], str):
        assert "'demo-1.0-py3-none-any.whl'" in message


def test_an_entry_that_is_not_an_object() -> None:
    with pytest.raises(IndexPageError, match=r"file 1 on the PEP 691 project page is a list"):
        parse_page(page(["demo-1.0.whl"]), JSON, PAGE)


def test_a_page_nested_200000_deep_is_an_error_not_a_crash() -> None:
    deep = b'{"files": ' + b"[" * 200_000 + b"]" * 200_000 + b"}"
    with pytest.raises(IndexPageError, match="nested too deeply") as info:
        parse_page(deep, JSON, PAGE)
    assert str(info.value).startswith(PAGE)


def test_an_html_link_whose_hash_is_not_hex() -> None:
    html = b'<a href="demo-1.0-py3-none-any.whl#sha256=zz">demo</a>'
    with pytest.raises(IndexPageError) as info:
        parse_page(html, "text/html", PAGE)
    message = str(info.value)
    assert message.startswith(PAGE) and "'demo-1.0-py3-none-any.whl'" in message
    assert "'zz'" in message
    meta = b'<a href="demo-1.0-py3-none-any.whl" data-core-metadata="sha256=q">demo</a>'
    with pytest.raises(IndexPageError, match="not a hex digest"):
        parse_page(meta, "text/html", PAGE)
