"""The cached-wheel install plan: layout, RECORD lines, scripts, entry points, overlaps."""

import csv
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fitwheel.install.linked import LinkPlanError, entry_point_scripts, launcher, shebang
from fitwheel.install.transaction import LinkGroup, _without_overlaps
from fitwheel.install.unpacked import CachedLayout, CachedMember, UnpackError, layout
from fitwheel.wheel.record import record_line

WHEEL = "Wheel-Version: 1.0\nRoot-Is-Purelib: true\n"


def _layout(members: list[CachedMember], wheel_text: str) -> CachedLayout:
    return layout(
        members,
        distribution="pkg",
        wheel_version="1.0",
        dist_info="pkg-1.0.dist-info",
        data_dir="pkg-1.0.data",
        wheel_text=wheel_text,
    )


@pytest.mark.parametrize(
    "broken",
    [
        {"version": 3},
        {"root_files": "a\nb"},
        {"data_members": [["x", "yes", "h", 1]]},
        {"root_is_purelib": "true"},
    ],
)
def test_a_manifest_of_another_shape_is_a_cache_miss(broken: dict[str, object]) -> None:
    good = _layout([CachedMember("pkg/__init__.py", False, "h1", 1)], WHEEL).to_json()
    assert CachedLayout.from_json(good) is not None
    assert CachedLayout.from_json({**good, **broken}) is None


def test_layout_splits_root_files_data_members_and_skipped_bytecode() -> None:
    members = [
        CachedMember("pkg/__init__.py", False, "h1", 1),
        CachedMember("pkg/sub/deep/m.py", False, "h2", 2),
        CachedMember("pkg/__pycache__/m.cpython-311.pyc", False, "h3", 3),
        CachedMember("pkg-1.0.data/scripts/tool", True, "h4", 4),
        CachedMember("pkg-1.0.dist-info/METADATA", False, "h5", 5),
        CachedMember("pkg-1.0.dist-info/RECORD", False, "", 0),
        CachedMember("top.py", False, "h6", 6),
    ]
    out = _layout(members, WHEEL)
    assert out.root_is_purelib is True
    files = out.root_files
    assert files == [
        "pkg/__init__.py",
        "pkg/sub/deep/m.py",
        "pkg-1.0.dist-info/METADATA",
        "top.py",
    ]
    dirs = out.root_dirs
    assert set(dirs) == {"pkg", "pkg/sub", "pkg/sub/deep", "pkg-1.0.dist-info"}
    assert all(dirs.index(d.rpartition("/")[0]) < dirs.index(d) for d in dirs if "/" in d)
    assert out.skipped == ["pkg/__pycache__/m.cpython-311.pyc"]
    assert out.data_members == [("pkg-1.0.data/scripts/tool", True, "h4", 4)]
    rows = list(csv.reader(io.StringIO(out.root_record)))
    assert CachedLayout.from_json(json.loads(json.dumps(out.to_json()))) == out
    assert rows[0] == ["pkg/__init__.py", "sha256=h1", "1"]
    assert len(rows) == len(files)


@pytest.mark.parametrize(
    "text", ["Wheel-Version: 2.0\nRoot-Is-Purelib: true\n", "Root-Is-Purelib: false\n"]
)
def test_layout_refuses_a_wheel_format_it_does_not_know(text: str) -> None:
    with pytest.raises(UnpackError, match="Wheel-Version"):
        _layout([], text)


def test_platlib_when_root_is_not_purelib() -> None:
    out = _layout([], "Wheel-Version: 1.0\nRoot-Is-Purelib: false\n")
    assert out.root_is_purelib is False


@given(st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30))
def test_record_lines_read_back_as_written(path: str) -> None:
    line = record_line(path, "sha256=abc", 12)
    assert list(csv.reader(io.StringIO(line, newline=""))) == [[path, "sha256=abc", "12"]]


def test_entry_points_are_parsed_and_checked() -> None:
    text = (
        "[console_scripts]\nfw = pkg.cli:main\nfw-x = pkg.cli:app.run [extra]\n"
        "[gui_scripts]\nfwg=pkg.gui:start\n[other]\nignored = x:y\n"
    )
    assert entry_point_scripts(text, "e.txt") == [
        ("fw", "pkg.cli", "main"),
        ("fw-x", "pkg.cli", "app.run"),
        ("fwg", "pkg.gui", "start"),
    ]
    with pytest.raises(LinkPlanError, match="not valid"):
        entry_point_scripts("[console_scripts]\n../evil = pkg:main\n", "e.txt")
    with pytest.raises(LinkPlanError, match="names no function"):
        entry_point_scripts("[console_scripts]\nfw = pkg\n", "e.txt")
    with pytest.raises(LinkPlanError, match="cannot be parsed"):
        entry_point_scripts("console_scripts\nfw = pkg:main\n", "e.txt")


def test_launchers_name_the_interpreter_even_with_spaces() -> None:
    assert shebang("/venv/bin/python") == b"#!/venv/bin/python\n"
    relayed = shebang("/my venv/bin/python")
    assert relayed.startswith(b"#!/bin/sh\n") and b'"/my venv/bin/python"' in relayed
    assert shebang("/x" * 100).startswith(b"#!/bin/sh\n")  # over the kernel's #! limit
    script = launcher("/venv/bin/python", "pkg.cli", "app.run").decode()
    assert "from pkg.cli import app" in script and "sys.exit(app.run())" in script
    compile(script, "launcher", "exec")


def test_overlaps_go_to_staged_files_then_later_groups() -> None:
    first = LinkGroup("/site/", "/cache/a/", ["shared.py", "a.py", "x-1.dist-info/INSTALLER"], [])
    second = LinkGroup("/site/", "/cache/b/", ["shared.py", "b.py"], [])
    elsewhere = LinkGroup("/bin/", "/cache/b/s/", ["shared.py"], [])
    staged = {"/site/x-1.dist-info/INSTALLER": "/stage/1"}
    out = _without_overlaps(staged, [first, second, elsewhere])
    assert out[0].names == ["a.py"]
    assert out[1].names == ["shared.py", "b.py"]
    assert out[2].names == ["shared.py"]
