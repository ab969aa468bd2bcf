from pathlib import Path

import pytest
from fwtestkit import FIXTURES, make_wheel, serve

from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import Finder
from fitwheel.index.findlinks import FindLinksError, folder_links, local_path
from fitwheel.index.http import Session
from fitwheel.index.metadata import fetch_metadata


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
