from pathlib import Path

import pytest

from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import Finder
from fitwheel.index.findlinks import FindLinksError, folder_links, local_path
from fitwheel.index.http import Session
from fitwheel.index.metadata import fetch_metadata
from tests.kit import FIXTURES, make_wheel, serve


def test_folder_lists_wheels_and_variants_json(tmp_path: Path) -> None:
    make_wheel(
        tmp_path,
        "torch",
        "2.9.0",
        label="cu128",
        variant={"nvidia": {"cuda_version_lower_bound": ["12.8"]}},
    )
    make_wheel(tmp_path, "torch", "2.9.0")
    (tmp_path / "torch-2.9.0-variants.json").write_bytes(
        (FIXTURES / "torch-2.9.0-variants.json").read_bytes()
    )
    (tmp_path / "notes.txt").write_text("x")
    names = [link.filename for link in folder_links(tmp_path)]
    assert names == [
        "torch-2.9.0-py3-none-any-cu128.whl",
        "torch-2.9.0-py3-none-any.whl",
        "torch-2.9.0-variants.json",
    ]
    finder = Finder(IndexConfig(None, (), (tmp_path.as_uri(),)))
    link = finder.variants_json_link("Torch", "2.9")
    assert link is not None and link.filename == "torch-2.9.0-variants.json"
    assert finder.read(link) == (FIXTURES / "torch-2.9.0-variants.json").read_bytes()
    assert finder.variants_json_link("torch", "2.8.0") is None
    wheel = next(link for link in finder.links("torch") if link.filename.endswith("any.whl"))
    assert b"Name: torch" in fetch_metadata(wheel, None)


def test_missing_folder_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FindLinksError, match="does not exist"):
        folder_links(tmp_path / "nope")


def test_local_path_forms(tmp_path: Path) -> None:
    assert local_path(tmp_path.as_uri()) == tmp_path
    assert local_path(str(tmp_path)) == tmp_path
    assert local_path("https://h/links.html") is None


def test_remote_find_links_page(tmp_path: Path) -> None:
    make_wheel(tmp_path / "w", "delta", "1.0")
    make_wheel(tmp_path / "w", "other", "1.0")
    (tmp_path / "w" / "links.html").write_text(
        '<a href="delta-1.0-py3-none-any.whl">d</a><a href="other-1.0-py3-none-any.whl">o</a>'
    )
    with serve(tmp_path / "w") as (url, _):
        finder = Finder(IndexConfig(None, (), (f"{url}/links.html",)), Session(retries=0, env={}))
        (link,) = finder.links("delta")
        assert link.url == f"{url}/delta-1.0-py3-none-any.whl"


def test_file_index_with_pages_or_plain_folders(tmp_path: Path) -> None:
    from tests.kit import build_simple_index

    make_wheel(tmp_path / "w", "paged", "1.0")
    make_wheel(tmp_path / "w", "paged", "2.0")
    simple = build_simple_index(tmp_path / "w", tmp_path / "site")
    (simple / "loose").mkdir()
    make_wheel(simple / "loose", "loose", "0.1")
    finder = Finder(IndexConfig(simple.as_uri() + "/"))
    paged = finder.links("Paged")
    assert sorted(link.filename for link in paged) == [
        "paged-1.0-py3-none-any.whl",
        "paged-2.0-py3-none-any.whl",
    ]
    assert all(link.url.startswith((tmp_path / "site" / "files").as_uri()) for link in paged)
    assert all(link.sha256 for link in paged)
    assert b"Name: paged" in fetch_metadata(paged[0], None)
    assert [link.filename for link in finder.links("loose")] == ["loose-0.1-py3-none-any.whl"]
    assert finder.links("absent") == []
    with pytest.raises(FindLinksError, match="does not exist"):
        Finder(IndexConfig((tmp_path / "nope").as_uri())).links("paged")
