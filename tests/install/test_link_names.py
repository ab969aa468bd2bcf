"""The transaction's link loop (:func:`fitwheel.install.place.transaction._link_names`): each
file linked relative to its open source and target folders where the platform allows it, with
the same answers as linking by whole paths: what is left after a missing folder or a refused
link, an existing file refused, a symbolic link linked as itself."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fitwheel.install.place.transaction import _link_names, _link_paths

WAYS = [_link_names, _link_paths]


def _tree(root: Path, names: list[str]) -> str:
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(name)
    return str(root) + os.sep


def _folders(root: Path, names: list[str]) -> str:
    for name in names:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
    return str(root) + os.sep


@pytest.mark.parametrize("link", WAYS)
def test_every_name_is_linked_in_order_across_folders(tmp_path: Path, link: object) -> None:
    # folders come and go in any order: a folder seen again is opened again
    names = ["top.py", "a/one.py", "a/b/two.py", "a/three.py", "top2.py", "c/d/e/deep.py"]
    src = _tree(tmp_path / "src", names)
    dst = _folders(tmp_path / "dst", names)
    left, missing = link(dst, src, names)  # type: ignore[operator]
    assert (left, missing) == ([], False)
    for name in names:
        made, cached = os.stat(dst + name), os.stat(src + name)
        assert (made.st_ino, made.st_dev) == (cached.st_ino, cached.st_dev)
        assert (tmp_path / "dst" / name).read_text() == name


@pytest.mark.parametrize("link", WAYS)
def test_a_missing_target_folder_leaves_the_rest(tmp_path: Path, link: object) -> None:
    names = ["a/one.py", "a/two.py", "b/three.py", "b/four.py"]
    src = _tree(tmp_path / "src", names)
    dst = _folders(tmp_path / "dst", names[:2])
    left, missing = link(dst, src, names)  # type: ignore[operator]
    assert (left, missing) == (["b/three.py", "b/four.py"], True)
    assert (tmp_path / "dst" / "a" / "two.py").is_file()


@pytest.mark.parametrize("link", WAYS)
def test_an_existing_file_is_refused(tmp_path: Path, link: object) -> None:
    names = ["a/one.py", "a/two.py"]
    src = _tree(tmp_path / "src", names)
    dst = _folders(tmp_path / "dst", names)
    (tmp_path / "dst" / "a" / "two.py").write_text("mine")
    with pytest.raises(FileExistsError):
        link(dst, src, names)  # type: ignore[operator]
    assert (tmp_path / "dst" / "a" / "two.py").read_text() == "mine"


@pytest.mark.parametrize("link", WAYS)
def test_a_symbolic_link_is_linked_as_itself(tmp_path: Path, link: object) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("outside")
    src = _tree(tmp_path / "src", ["a/real.py"])
    (tmp_path / "src" / "a" / "alias.py").symlink_to(outside)
    dst = _folders(tmp_path / "dst", ["a/x"])
    left, _ = link(dst, src, ["a/real.py", "a/alias.py"])  # type: ignore[operator]
    assert left == []
    made = tmp_path / "dst" / "a" / "alias.py"
    assert made.is_symlink()
    assert os.lstat(made).st_ino == os.lstat(tmp_path / "src" / "a" / "alias.py").st_ino
    assert os.stat(outside).st_nlink == 1  # the file it points to was not linked
