"""The cached-wheel install plan: layout, RECORD lines, scripts, entry points, overlaps."""

import configparser
import csv
import io
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fitwheel.install.cache.layout import CachedLayout, CachedMember, UnpackError, layout
from fitwheel.install.place.linked import (
    LinkPlanError,
    _plain_sections,
    entry_point_scripts,
    entry_point_sections,
    launcher,
    shebang,
)
from fitwheel.install.place.transaction import LinkGroup, _without_overlaps
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
        {"version": 4},
        {"root_files": ["a", "b"]},
        {"data_members": [["x", "yes", "h", 1]]},
        {"sizes": [["pkg", "__init__.py\0m.py", [1]]]},
        {"sizes": [["pkg", ["__init__.py"], [1]]]},
        {"read_hashes": {"RECORD": "h"}},
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
    # every member is size-checked, by folder; the .dist-info files read are hashed
    checked = {
        f"{d}/{n}" if d else n: z
        for d, names, sizes in out.sizes
        for n, z in zip(names, sizes, strict=True)
    }
    assert checked == {m.name: m.size for m in members}
    assert out.read_hashes == {"METADATA": "h5"}
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


def _configparser_sections(text: str) -> dict[str, dict[str, str]] | None:
    """What configparser itself reads from ``text`` (None: it refuses it)."""
    parser = configparser.ConfigParser(delimiters="=", interpolation=None)
    parser.optionxform = str  # type: ignore[assignment,method-assign]
    try:
        parser.read_string(text)
    except configparser.Error:
        return None
    return {name: dict(parser.items(name)) for name in parser.sections()}


AWKWARD = [
    "",
    "\n\n",
    "[console_scripts]\nfw = pkg.cli:main\n",
    "[console_scripts]\r\nfw=pkg.cli:main\r\n\r\n[gui_scripts]\r\ng = a.b:c [extra, more]\r\n",
    "[console_scripts]\nfw = pkg.cli:main\n  continued\n",
    "[console_scripts]\nfw = pkg.cli:main\n\n  after.a.blank:line\n",
    "[console_scripts]\n  indented = pkg:main\n",
    "  [console_scripts]\nfw = pkg:main\n",
    "[console_scripts]\nfw = a:b\nfw = c:d\n",
    "[console_scripts]\nfw = a:b\n[console_scripts]\ng = c:d\n",
    "[DEFAULT]\nshared = x:y\n[console_scripts]\nfw = a:b\n",
    "fw = a:b\n[console_scripts]\n",
    "[console_scripts]\n# fw = a:b\n; g = c:d\n   # indented comment\nh = e:f # not a comment\n",
    "[console_scripts]\nfw = a:b\rg = c:d\n",
    "\ufeff[console_scripts]\nfw = a:b\n",
    "[console_scripts] trailing\nfw = a:b\n",
    "[a]]\nx = y\n",
    "[console_scripts]\nfw : a:b\n",
    "[console_scripts]\nfw\n",
    "[console_scripts]\nfw =\ng =   \t\n",
    "[console_scripts]\nFW = a:b\nfw = c:d\n",
    "[console_scripts]\nfw = a = b\n",
    "[console_scripts]\nfw = a:b\x0c\n",
    "[console_scripts]\nfw = a:b\u2028g = c:d\n",
    "[console_scripts]\n\x85\nfw = a:b\n",
    "[c]\nx = a\t \tb\n",
]


@pytest.mark.parametrize("text", AWKWARD)
def test_entry_points_read_as_configparser_reads_them(text: str) -> None:
    expected = _configparser_sections(text)
    if expected is None:
        with pytest.raises(LinkPlanError, match="cannot be parsed"):
            entry_point_sections(text, "e.txt")
    else:
        assert entry_point_sections(text, "e.txt") == expected
    # what the plain reader takes, it takes as configparser does
    plain = _plain_sections(text)
    assert plain is None or plain == expected


_PIECES = st.lists(
    st.sampled_from(
        [
            "[",
            "]",
            "=",
            " ",
            "\t",
            "\n",
            "\r",
            "#",
            ";",
            ":",
            ".",
            ",",
            "a",
            "b",
            "DEFAULT",
            "console_scripts",
            "\x0c",
            "\x85",
            "\ufeff",
            "é",
            "-",
            "_",
            "0",
        ]
    ),
    max_size=40,
).map("".join)
_LINES = st.lists(
    st.sampled_from(
        [
            "[console_scripts]",
            "[gui_scripts]",
            "[a.b]",
            "[DEFAULT]",
            "x = a:b",
            "x=a:b",
            "y = c.d:e [f]",
            "Y = c",
            "  z = q:r",
            "",
            "  ",
            "# c",
            "; c",
            "x = a:b ",
            "\tcont",
            "x =",
            "w = a:b\r",
            "[ a ]",
            "v = a = b",
        ]
    ),
    max_size=12,
).flatmap(lambda lines: st.sampled_from(["\n", "\r\n"]).map(lambda end: end.join(lines)))


@given(st.one_of(_PIECES, _LINES))
def test_the_plain_reader_agrees_with_configparser(text: str) -> None:
    plain = _plain_sections(text)
    assert plain is None or plain == _configparser_sections(text)


def test_the_plain_reader_takes_the_usual_files() -> None:
    text = (
        "[console_scripts]\nfw = pkg.cli:main\nfw-gui = pkg.gui:run [gui]\n\n"
        "[pkg.plugins]\nfirst = pkg.plugins.first:Plugin\n"
    )
    assert _plain_sections(text) == _configparser_sections(text)


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
