"""The requirements-file grammar: lines, options in both spellings, nesting, the read seam,
requirement forms, and an error naming its place for every line refused."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from fitwheel.resolve.reqfile import MAX_DEPTH, RequirementsReader
from fitwheel.resolve.reqforms import LocalPath, Named, RequirementError, Url, Vcs, classify
from fitwheel.resolve.reqlines import MAX_FILE_BYTES, MAX_LINE_CHARS


def read(
    tmp_path: Path,
    text: str | bytes,
    env: Mapping[str, str] | None = None,
    files: Mapping[str, str] | None = None,
) -> tuple[RequirementsReader, Path]:
    for name, content in (files or {}).items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(content)
    path = tmp_path / "r.txt"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    reader = RequirementsReader(env=env)
    reader.parse(str(path))
    return reader, path


def refused(tmp_path: Path, text: str | bytes, **kwargs: object) -> str:
    with pytest.raises(RequirementError) as info:
        read(tmp_path, text, **kwargs)  # type: ignore[arg-type]
    return str(info.value)


# --- file options, in every spelling ---

URL = "https://mirror.invalid/simple"


@pytest.mark.parametrize(
    "line",
    [
        f"-i {URL}",
        f"-i{URL}",
        f"--index-url {URL}",
        f"--index-url={URL}",
        f"--pypi-url {URL}",
        f"--index-u {URL}",
    ],
)
def test_index_url_in_every_spelling(tmp_path: Path, line: str) -> None:
    reader, path = read(tmp_path, f"# head\n{line}\nx\n")
    assert reader.options.index_url is not None
    assert reader.options.index_url.value == URL
    assert reader.options.index_url.origin == f"{path}:2"


@pytest.mark.parametrize(
    ("line", "attribute"),
    [
        (f"--extra-index-url {URL}", "extra_index_urls"),
        (f"--extra-index-url={URL}", "extra_index_urls"),
        ("--trusted-host mirror.invalid:8443", "trusted_hosts"),
        ("--trusted-host=mirror.invalid:8443", "trusted_hosts"),
        ("-f https://mirror.invalid/links.html", "find_links"),
        ("-fhttps://mirror.invalid/links.html", "find_links"),
        ("--find-links https://mirror.invalid/links.html", "find_links"),
        ("--find-links=https://mirror.invalid/links.html", "find_links"),
    ],
)
def test_list_options_in_both_forms(tmp_path: Path, line: str, attribute: str) -> None:
    reader, path = read(tmp_path, f"{line}\n{line}\n")
    values = getattr(reader.options, attribute)
    assert [v.origin for v in values] == [f"{path}:1", f"{path}:2"]
    expected = line.split("=", 1)[1] if "=" in line else line.split(" ", 1)[-1]
    if line.startswith("-fhttps"):
        expected = line[2:]
    assert {v.value for v in values} == {expected}


@pytest.mark.parametrize(
    ("line", "attribute"),
    [
        ("--no-index", "no_index"),
        ("--pre", "pre"),
        ("--prefer-binary", "prefer_binary"),
        ("--require-hashes", "require_hashes"),
        ("--no-require-hashes", "no_require_hashes"),
    ],
)
def test_flags(tmp_path: Path, line: str, attribute: str) -> None:
    reader, path = read(tmp_path, f"x\n{line}\n")
    flag = getattr(reader.options, attribute)
    assert flag is not None and flag.origin == f"{path}:2"
    assert (line, flag) in reader.options.given()
    message = refused(tmp_path, f"x\n{line}=yes\n")
    assert f"{path}:2" in message and "takes no value" in message


def test_flags_share_a_line(tmp_path: Path) -> None:
    reader, _ = read(tmp_path, "--pre --prefer-binary --no-index\n")
    assert reader.options.pre and reader.options.prefer_binary and reader.options.no_index


@pytest.mark.parametrize(
    ("lines", "no_binary", "only_binary"),
    [
        (["--no-binary :all:"], [":all:"], []),
        (["--no-binary=foo,Bar_baz"], ["foo,Bar_baz"], []),
        (["--only-binary :all:", "--no-binary foo"], ["foo"], [":all:"]),
        (["--only-binary=:none:"], [], [":none:"]),
    ],
)
def test_binary_options_keep_their_order(
    tmp_path: Path, lines: list[str], no_binary: list[str], only_binary: list[str]
) -> None:
    reader, _ = read(tmp_path, "\n".join(lines) + "\n")
    assert [v.value for v in reader.options.no_binary] == no_binary
    assert [v.value for v in reader.options.only_binary] == only_binary
    assert [o for o, _v in reader.options.formats] == [
        line.split()[0].split("=")[0] for line in lines
    ]


def test_a_binary_option_value_that_is_an_option_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, "x\n--no-binary --pre\n")
    assert "r.txt:2" in message and "--no-binary" in message


def test_a_later_index_url_replaces_earlier_indexes_as_pip_does(tmp_path: Path) -> None:
    reader, _path = read(
        tmp_path,
        "--extra-index-url https://a.invalid\n-i https://b.invalid\n"
        "--extra-index-url https://c.invalid\n--extra-index-url https://d.invalid\n",
    )
    assert reader.options.index_url is not None
    assert reader.options.index_url.value == "https://b.invalid"
    assert [v.value for v in reader.options.extra_index_urls] == [
        "https://c.invalid",
        "https://d.invalid",
    ]


def test_options_accumulate_across_nested_files(tmp_path: Path) -> None:
    reader, _path = read(
        tmp_path,
        "-i https://a.invalid\n-r sub/more.txt\n--extra-index-url https://z.invalid\n",
        files={"sub/more.txt": "--extra-index-url https://b.invalid\n-i https://c.invalid\n"},
    )
    assert reader.options.index_url is not None
    assert reader.options.index_url.value == "https://c.invalid"
    assert reader.options.index_url.origin == f"{tmp_path / 'sub' / 'more.txt'}:2"
    assert [v.value for v in reader.options.extra_index_urls] == ["https://z.invalid"]


def test_relative_find_links_start_from_the_files_folder_where_they_exist(tmp_path: Path) -> None:
    (tmp_path / "sub" / "wheels").mkdir(parents=True)
    reader, _ = read(
        tmp_path,
        "-r sub/more.txt\n",
        files={"sub/more.txt": "-f wheels\n-f elsewhere\n-f /abs/path\n-f file:///x\n"},
    )
    assert [v.value for v in reader.options.find_links] == [
        str(tmp_path / "sub" / "wheels"),
        "elsewhere",
        "/abs/path",
        "file:///x",
    ]


def test_pip_only_options_are_read_and_kept(tmp_path: Path) -> None:
    reader, _path = read(
        tmp_path, "--use-feature fast-deps\n--all-releases=foo\n--only-final :all:\n"
    )
    assert [(o, v.value) for o, v in reader.options.pip_only] == [
        ("--use-feature", "fast-deps"),
        ("--all-releases", "foo"),
        ("--only-final", ":all:"),
    ]


# --- lines: continuations, comments, BOM, variables ---


def test_continuations_keep_the_first_lines_number(tmp_path: Path) -> None:
    reader, path = read(
        tmp_path,
        "alpha==1.0 \\\n    --hash=sha256:AA \\\n    --hash=sha256:bb\nbeta\\\n\\\n>=2\ngamma \\",
    )
    assert [(line.text, line.origin) for line in reader.lines] == [
        ("alpha==1.0", f"{path}:1"),
        ("beta>=2", f"{path}:4"),
        ("gamma", f"{path}:7"),
    ]
    assert reader.lines[0].hashes == {"sha256": frozenset({"aa", "bb"})}


def test_a_comment_line_never_continues_and_ends_a_continuation(tmp_path: Path) -> None:
    reader, _ = read(tmp_path, "# note \\\nalpha\nbeta \\\n# comment\ngamma\n")
    assert [line.text for line in reader.lines] == ["alpha", "beta", "gamma"]


def test_a_backslash_followed_by_spaces_does_not_continue(tmp_path: Path) -> None:
    message = refused(tmp_path, "alpha \\ \nbeta\n")
    assert "r.txt:1" in message and "not a valid requirement" in message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("# all comment\nalpha\n", ["alpha"]),
        ("alpha # after a space\n", ["alpha"]),
        ("alpha\t# after a tab\n", ["alpha"]),
        ("   # indented comment\nalpha\n", ["alpha"]),
        ("\n\n   \n\t\nalpha\n\n", ["alpha"]),
        (
            "x @ https://h.invalid/x-1.0-py3-none-any.whl#sha256=ab\n",
            ["x @ https://h.invalid/x-1.0-py3-none-any.whl#sha256=ab"],
        ),
        ("alpha\r\nbeta\r\n", ["alpha", "beta"]),
    ],
)
def test_comments_and_blank_lines(tmp_path: Path, text: str, expected: list[str]) -> None:
    reader, _ = read(tmp_path, text)
    assert [line.text for line in reader.lines] == expected


@pytest.mark.parametrize(
    ("data", "number"),
    [
        (b"\xef\xbb\xbf# Torch\nalpha\n", 2),
        ("# Torch\nalpha\n".encode("utf-16"), 2),
        ("# Torch\nalpha\n".encode("utf-32"), 2),
        ("# -*- coding: latin-1 -*-\n# caf\xe9\nalpha\n".encode("latin-1"), 3),
    ],
)
def test_byte_order_marks_and_coding_lines(tmp_path: Path, data: bytes, number: int) -> None:
    reader, path = read(tmp_path, data)
    assert [(line.text, line.origin) for line in reader.lines] == [("alpha", f"{path}:{number}")]


@pytest.mark.parametrize(
    ("line", "env", "expected"),
    [
        (
            "-i https://${INDEX_HOST}/simple",
            {"INDEX_HOST": "h.invalid"},
            "https://h.invalid/simple",
        ),
        ("-i https://${INDEX_HOST}/simple", {}, "https://${INDEX_HOST}/simple"),
        ("-i https://${INDEX_HOST}/simple", {"INDEX_HOST": ""}, "https://${INDEX_HOST}/simple"),
        (
            "-i https://${index_host}/simple",
            {"index_host": "h.invalid"},
            "https://${index_host}/simple",
        ),
        (
            "-i https://$INDEX_HOST/simple",
            {"INDEX_HOST": "h.invalid"},
            "https://$INDEX_HOST/simple",
        ),
        (
            "-i https://${USER_1}:${TOKEN}@${HOST}/simple",
            {"USER_1": "u", "TOKEN": "t", "HOST": "h.invalid"},
            "https://u:t@h.invalid/simple",
        ),
        ("-i https://${A}/simple", {"A": "x#no-comment"}, "https://x#no-comment/simple"),
    ],
)
def test_variables(tmp_path: Path, line: str, env: dict[str, str], expected: str) -> None:
    reader, _ = read(tmp_path, line + "\n", env=env)
    assert reader.options.index_url is not None
    assert reader.options.index_url.value == expected


def test_variables_come_from_the_mapping_given_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_HOST", "from-environ.invalid")
    reader, _ = read(tmp_path, "-i https://${SOME_HOST}/\n")
    assert reader.options.index_url is not None
    assert reader.options.index_url.value == "https://${SOME_HOST}/"


# --- nesting ---


def test_nested_files_relative_to_their_file(tmp_path: Path) -> None:
    reader, path = read(
        tmp_path,
        "alpha\n-r sub/more.txt\n--constraint=c.txt\nomega\n",
        files={
            "sub/more.txt": "beta\n-rdeeper.txt\n",
            "sub/deeper.txt": "gamma\n",
            "c.txt": "delta<2\n-r sub/deeper.txt\n",
        },
    )
    got = [(line.text, line.constraint) for line in reader.lines]
    assert got == [
        ("alpha", False),
        ("beta", False),
        ("gamma", False),
        ("delta<2", True),
        ("gamma", True),
        ("omega", False),
    ]
    assert reader.files == [
        str(path),
        str(tmp_path / "sub" / "more.txt"),
        str(tmp_path / "sub" / "deeper.txt"),
        str(tmp_path / "c.txt"),
        str(tmp_path / "sub" / "deeper.txt"),
    ]


def test_a_file_named_twice_is_read_once(tmp_path: Path) -> None:
    reader, _ = read(
        tmp_path,
        "-r a.txt\n-r b.txt\n",
        files={"a.txt": "-r common.txt\n", "b.txt": "-r ./common.txt\n", "common.txt": "x\n"},
    )
    assert [line.text for line in reader.lines] == ["x"]


@pytest.mark.parametrize(
    ("files", "chain"),
    [
        ({"a.txt": "-r r.txt\n"}, "a.txt"),
        ({"a.txt": "-r b.txt\n", "b.txt": "-c ./a.txt\n"}, "b.txt"),
    ],
)
def test_cycles_are_refused(tmp_path: Path, files: dict[str, str], chain: str) -> None:
    message = refused(tmp_path, "x\n-r a.txt\n", files=files)
    assert "names itself" in message and chain in message
    assert ".txt:1:" in message


def test_a_file_that_names_itself(tmp_path: Path) -> None:
    message = refused(tmp_path, "x\n-r r.txt\n")
    assert "r.txt:2" in message and "names itself" in message


def test_nesting_is_bounded(tmp_path: Path) -> None:
    files = {f"n{i}.txt": f"-r n{i + 1}.txt\n" for i in range(MAX_DEPTH + 5)}
    message = refused(tmp_path, "-r n0.txt\n", files=files)
    assert f"more than {MAX_DEPTH} deep" in message


def test_a_missing_nested_file_names_the_line(tmp_path: Path) -> None:
    message = refused(tmp_path, "x\n-r missing.txt\n")
    assert "r.txt:2" in message and "missing.txt" in message


# --- the read seam: URLs ---


def test_urls_are_read_through_the_reader(tmp_path: Path) -> None:
    pages = {
        "https://h.invalid/reqs/base.txt": "alpha\n-r extra.txt\n-c ../pins.txt\n",
        "https://h.invalid/reqs/extra.txt": "beta\n",
        "https://h.invalid/pins.txt": "alpha<2\n",
    }
    asked: list[str] = []

    def fetch(location: str) -> str:
        asked.append(location)
        if location in pages:
            return pages[location]
        return (tmp_path / location).read_text() if not location.startswith("http") else ""

    path = tmp_path / "r.txt"
    path.write_text("-r https://h.invalid/reqs/base.txt\n-c https://h.invalid/pins.txt\n")
    reader = RequirementsReader(fetch)
    reader.parse(str(path))
    assert asked == [str(path), *pages]
    assert [(line.text, line.constraint, line.origin) for line in reader.lines] == [
        ("alpha", False, "https://h.invalid/reqs/base.txt:1"),
        ("beta", False, "https://h.invalid/reqs/extra.txt:1"),
        ("alpha<2", True, "https://h.invalid/pins.txt:1"),
    ]


def test_the_default_reader_refuses_urls_naming_the_line(tmp_path: Path) -> None:
    message = refused(tmp_path, "x\n-c https://h.invalid/c.txt\n")
    assert "r.txt:2" in message and "https://h.invalid/c.txt is a URL" in message


def test_file_urls_are_read_locally(tmp_path: Path) -> None:
    (tmp_path / "other.txt").write_text("beta\n")
    reader, _ = read(tmp_path, f"-r {(tmp_path / 'other.txt').as_uri()}\n")
    assert [line.text for line in reader.lines] == ["beta"]


def test_a_reader_returning_bytes_is_decoded(tmp_path: Path) -> None:
    reader = RequirementsReader(lambda _location: b"\xef\xbb\xbfalpha\n")
    reader.parse("https://h.invalid/r.txt")
    assert [line.origin for line in reader.lines] == ["https://h.invalid/r.txt:1"]


# --- requirement forms ---


@pytest.mark.parametrize(
    ("text", "kind", "fields"),
    [
        ("requests", Named, {}),
        ("requests[socks,security]>=2.31; python_version >= '3.8'", Named, {}),
        ("torch==2.4.0+cu118", Named, {}),
        ("x @ https://h.invalid/x-1.0-py3-none-any.whl", Url, {"name": "x"}),
        ("x[a] @ file:///w/x-1.0.tar.gz ; sys_platform == 'linux'", Url, {"name": "x"}),
        ("https://h.invalid/f/pkg_a-1.0-py3-none-any.whl", Url, {"name": "pkg_a"}),
        ("https://h.invalid/f/pkg-1.0.tar.gz#egg=pkg", Url, {"name": "pkg"}),
        ("https://h.invalid/f/pkg-1.0.tar.gz", Url, {"name": None}),
        (
            "https://h.invalid/f/pkg-1.0-py3-none-any.whl; python_version < '3.12'",
            Url,
            {"name": "pkg"},
        ),
        ("./dist/x-1.0-py3-none-any.whl", LocalPath, {"path": "dist/x-1.0-py3-none-any.whl"}),
        ("x-1.0.tar.gz", LocalPath, {"path": "x-1.0.tar.gz"}),
        (".", LocalPath, {"path": "."}),
        ("./libs/core[a,b]", LocalPath, {"path": "libs/core", "extras": frozenset({"a", "b"})}),
        (".[socks]", LocalPath, {"path": ".", "extras": frozenset({"socks"})}),
        ("../shared ; sys_platform == 'linux'", LocalPath, {"path": "../shared"}),
        ("/abs/proj", LocalPath, {"path": "/abs/proj"}),
        (
            "git+https://h.invalid/org/repo.git@v1.2#egg=repo",
            Vcs,
            {
                "vcs": "git",
                "revision": "v1.2",
                "name": "repo",
                "repository": "https://h.invalid/org/repo.git",
            },
        ),
        (
            "git+ssh://git@h.invalid/org/mono.git@main#subdirectory=libs/u&egg=u",
            Vcs,
            {
                "revision": "main",
                "subdirectory": "libs/u",
                "repository": "ssh://git@h.invalid/org/mono.git",
            },
        ),
        (
            "git+file:///srv/repo",
            Vcs,
            {"revision": None, "name": None, "repository": "file:///srv/repo"},
        ),
        (
            "utils @ git+https://h.invalid/r.git@abc123",
            Vcs,
            {"name": "utils", "revision": "abc123"},
        ),
        ("hg+https://h.invalid/hg/lib#egg=lib", Vcs, {"vcs": "hg", "name": "lib"}),
        ("svn+svn://h.invalid/repo/trunk", Vcs, {"vcs": "svn"}),
        ("bzr+lp:project", Vcs, {"vcs": "bzr", "repository": "lp:project"}),
        ("x @ ./sub/proj", LocalPath, {"path": "sub/proj", "name": "x"}),
    ],
)
def test_requirement_forms(
    tmp_path: Path, text: str, kind: type, fields: dict[str, object]
) -> None:
    form = classify(text, "here", None)
    assert isinstance(form, kind)
    for name, value in fields.items():
        got = getattr(form, name)
        assert (str(got) if isinstance(got, Path) else got) == value, name
    reader, path = read(tmp_path, f"# first\n{text}\n")
    (line,) = reader.lines
    assert type(line.form) is kind and line.origin == f"{path}:2"
    if isinstance(line.form, LocalPath) and not text.startswith("/"):
        assert line.form.path.is_relative_to(tmp_path)


@pytest.mark.parametrize(
    ("line", "kind", "fields"),
    [
        ("-e .", LocalPath, {"extras": frozenset()}),
        ("-e .[socks]", LocalPath, {"extras": frozenset({"socks"})}),
        ("--editable ./path[a,b]", LocalPath, {"extras": frozenset({"a", "b"})}),
        ("--editable=./path", LocalPath, {}),
        ("-e git+https://h.invalid/p.git#egg=plugin", Vcs, {"name": "plugin"}),
        ('-e "plugin @ git+https://h.invalid/p.git@v2"', Vcs, {"name": "plugin", "revision": "v2"}),
        ("-e file:///srv/proj", LocalPath, {}),
        ("-e . --config-settings editable_mode=compat -C a=b", LocalPath, {}),
    ],
)
def test_editables(tmp_path: Path, line: str, kind: type, fields: dict[str, object]) -> None:
    reader, path = read(tmp_path, f"{line}\n")
    (item,) = reader.lines
    assert item.editable and type(item.form) is kind and item.origin == f"{path}:1"
    for name, value in fields.items():
        assert getattr(item.form, name) == value
    if "--config-settings" in line:
        assert item.config_settings == (("editable_mode", "compat"), ("a", "b"))


def test_requirement_options(tmp_path: Path) -> None:
    reader, _ = read(
        tmp_path,
        "a --hash=sha256:AB --hash sha256:cd --hash=sha512:ef\n"
        "b --variant=cuda12 --config-settings=k=v --config-settings k=w\n"
        "c --variant cpu\n",
    )
    a, b, c = reader.lines
    assert a.hashes == {"sha256": frozenset({"ab", "cd"}), "sha512": frozenset({"ef"})}
    assert (b.variant, b.config_settings) == ("cuda12", (("k", "v"), ("k", "w")))
    assert c.variant == "cpu"


# --- every refusal names its place ---


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("not a req!!", "not a valid requirement"),
        ("foo=1.0", "did you mean =="),
        ("--frobnicate", "no such option"),
        ("-x foo", "no such option in a requirements file: -x"),
        ("--no", "ambiguous"),
        ("-i", "needs a value"),
        ("--hash=sha256:abc", "belongs to a requirement"),
        ("x --hash=md5:abc", "sha256:HEXDIGEST"),
        ("x --hash=nocolon", "sha256:HEXDIGEST"),
        ("x --variant=", "--variant=LABEL"),
        ("x --config-settings novalue", "KEY=VALUE"),
        ("x --pre", "applies to the whole file"),
        ("x -i https://h.invalid", "applies to the whole file"),
        ("x -r other.txt", "on a line of its own"),
        ("-r a.txt -r b.txt", "names one file"),
        ("-r a.txt --pre", "names one file"),
        ("-e . --pre", "-e takes only --config-settings"),
        ("-e . --hash=sha256:ab", "-e takes only --config-settings"),
        ("--pre stray", "not one"),
        ("--index-url 'unclosed", "cannot be split"),
        ("-e https://h.invalid/x-1.0.tar.gz", "not an archive URL"),
        ("-e", "needs a value"),
        ("-e git+https://h.invalid/r.git", "name the project"),
        ("git+ext::sh -c evil#egg=x", "ext::"),
        ("x @ git+ext::ssh -oProxyCommand=evil", "ext::"),
        ("git+https://h.invalid/r.git@-b#egg=x", "revision"),
        ("git+-oProxyCommand=evil#egg=x", "starts its repository with '-'"),
        ("git+https://h.invalid/r.git@--upload-pack=evil#egg=x", "revision"),
        ("git+ftp://h.invalid/r.git#egg=x", "git URLs take one of"),
        ("git+git@h.invalid:org/r.git#egg=x", "write git+ssh://USER@HOST/PATH"),
        ("git+https://h.invalid/r.git#egg=x>=1", "#egg=NAME"),
        ("x @ gopher://h.invalid/x.whl", "not a URL fitwheel can read"),
        ("https://h.invalid/bad.whl", "not a valid wheel file name"),
        ("./path[!!]", "not a list of extras"),
        ("./path ; os_name ==", "not a valid marker"),
    ],
)
def test_every_refusal_names_its_line(tmp_path: Path, line: str, words: str) -> None:
    message = refused(
        tmp_path, f"ok\n# comment\n{line}\n", files={"a.txt": "", "b.txt": "", "other.txt": ""}
    )
    assert f"{tmp_path / 'r.txt'}:3" in message
    assert words in message


def test_a_constraints_file_cannot_name_an_editable(tmp_path: Path) -> None:
    message = refused(tmp_path, "-c c.txt\n", files={"c.txt": "x\n-e .\n"})
    assert "c.txt:2" in message and "constraints file" in message


# --- what is not a requirements file ---


def test_a_huge_line_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, "ok\n" + "a" * (MAX_LINE_CHARS + 1) + "\n")
    assert "r.txt:2" in message and "longer than" in message


def test_a_huge_file_is_refused(tmp_path: Path) -> None:
    message = refused(tmp_path, b"#" * (MAX_FILE_BYTES + 2))
    assert "r.txt" in message and "is it a requirements file" in message


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (bytes(range(256)) * 4, "is not utf-8 text"),
        (b"alpha\n\x00\x01\x02garbage\n", "NUL bytes"),
        (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "is not utf-8 text"),
        (b"# coding: no-such-codec\nalpha\n", "'no-such-codec'"),
    ],
)
def test_binary_garbage_is_refused_naming_the_file(tmp_path: Path, data: bytes, words: str) -> None:
    message = refused(tmp_path, data)
    assert str(tmp_path / "r.txt") in message and words in message


def test_a_file_url_file_reads_relative_paths_from_its_folder(tmp_path: Path) -> None:
    (tmp_path / "sub" / "wheels").mkdir(parents=True)
    (tmp_path / "sub" / "inner.txt").write_text("-f wheels\n./proj\n-r more.txt\n")
    (tmp_path / "sub" / "more.txt").write_text("beta\n")
    reader, _ = read(tmp_path, f"-r {(tmp_path / 'sub' / 'inner.txt').as_uri()}\n")
    proj, beta = reader.lines
    assert isinstance(proj.form, LocalPath) and proj.form.path == tmp_path / "sub" / "proj"
    assert beta.text == "beta"
    assert [v.value for v in reader.options.find_links] == [str(tmp_path / "sub" / "wheels")]
