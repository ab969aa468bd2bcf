from pathlib import Path

import pytest

from fitwheel.resolve.requirements import RequirementError, collect, ignored, unsupported
from tests.kit import make_wheel


def test_files_nesting_hashes_and_continuations(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "more.txt").write_text("gamma>=1  # trailing comment\n")
    (tmp_path / "c.txt").write_text("delta<2\n")
    req = tmp_path / "req.txt"
    req.write_text(
        "# comment\nalpha==1.0 \\\n    --hash=sha256:AAAA --hash=sha256:bbbb\n"
        "beta[x]; python_version >= '3'\n-r sub/more.txt\n--constraint c.txt\n"
    )
    user = collect(["epsilon"], files=[str(req)])
    names = [r.name for r in user.requirements]
    assert names == ["epsilon", "alpha", "beta", "gamma"]
    assert user.requirements[1].hashes == {"sha256": frozenset({"aaaa", "bbbb"})}
    assert user.requirements[1].origin == f"{req}:2"
    assert [c.name for c in user.constraints] == ["delta"]


def test_wheel_paths_become_pinned_requirements(tmp_path: Path) -> None:
    wheel = make_wheel(
        tmp_path, "torch", "2.9.0", label="cuda12.8", variant={"nvidia": {"sm_arch": ["90_real"]}}
    )
    (item,) = collect([str(wheel)]).requirements
    assert str(item.requirement) == "torch==2.9.0"
    assert item.wheel_path == wheel


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("not a req!!", "not a valid requirement"),
        ("https://h/x.whl", "is not a valid wheel file name"),
        ("-e git+https://h/p.git", "name the project, with #egg=NAME"),
        ("x --hash=nocolon", "--hash"),
    ],
)
def test_bad_lines_name_their_place(tmp_path: Path, line: str, match: str) -> None:
    path = tmp_path / "r.txt"
    path.write_text(f"ok\n{line}\n")
    with pytest.raises(RequirementError, match=match) as info:
        collect([], files=[str(path)])
    assert f"{path}:2" in str(info.value)


def test_file_options_are_kept_with_their_place(tmp_path: Path) -> None:
    req = tmp_path / "req.txt"
    req.write_text(
        "--extra-index-url https://${INDEX_HOST}/whl/cu118\n-f wheels\n--pre\ntorch==2.4.0+cu118\n"
    )
    (tmp_path / "wheels").mkdir()
    user = collect([], files=[str(req)], env={"INDEX_HOST": "h.invalid"}, allow_pending=True)
    assert [str(r.requirement) for r in user.requirements] == ["torch==2.4.0+cu118"]
    (extra,) = user.options.extra_index_urls
    assert (extra.value, extra.origin) == ("https://h.invalid/whl/cu118", f"{req}:1")
    assert [f.value for f in user.options.find_links] == [str(tmp_path / "wheels")]
    assert user.options.pre is not None and user.options.pre.origin == f"{req}:3"
    assert not user.pending


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("x --config-settings a=b", "--config-settings is not passed"),
        ("-e ./dist/p-1.0.tar.gz", "an editable install takes a project folder"),
    ],
)
def test_what_is_not_acted_on_yet_is_refused_in_one_place(
    tmp_path: Path, line: str, words: str
) -> None:
    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    path = tmp_path / "r.txt"
    path.write_text(f"ok\n{line}\n")
    with pytest.raises(RequirementError) as info:
        collect([], files=[str(path)])
    assert f"{path}:2" in str(info.value) and words in str(info.value)
    user = collect([], files=[str(path)], allow_pending=True)
    assert [str(r.requirement) for r in user.requirements] == ["ok"]
    assert len(user.pending) == 1
    assert words in unsupported(user)[0]


@pytest.mark.parametrize(
    ("line", "name", "kind"),
    [
        ("-e .[socks]", "local-source[socks]", "folder"),
        ("-e git+https://h.invalid/p.git#egg=p", "p", "git"),
        ("p[x] @ git+https://h.invalid/p.git@v1 ; python_version >= '3'", "p[x]", "git"),
        ("hg+https://h.invalid/p#egg=p", "p", "hg"),
        ("https://h.invalid/p-1.0-py3-none-any.whl", "p", "url"),
        ("https://h.invalid/main.zip#egg=p", "p", "url"),
        (".[extra]", "local-source[extra]", "folder"),
    ],
)
def test_direct_forms_are_acted_on(tmp_path: Path, line: str, name: str, kind: str) -> None:
    from fitwheel.resolve.reqforms import Url, Vcs

    (tmp_path / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    path = tmp_path / "r.txt"
    path.write_text(f"ok\n{line}\n")
    user = collect([], files=[str(path)], direct=True)
    assert not user.pending
    item = user.requirements[1]
    assert str(item.requirement).split(";")[0].strip() == name
    assert item.origin == f"{path}:2"
    if kind == "folder":
        assert item.source_path == tmp_path and item.direct is None
    elif kind == "url":
        assert isinstance(item.direct, Url)
    else:
        assert isinstance(item.direct, Vcs) and item.direct.vcs == kind
    if kind != "folder":  # a command that installs nothing takes no direct reference
        with pytest.raises(RequirementError, match="direct reference") as info:
            collect([], files=[str(path)])
        assert f"{path}:2" in str(info.value)


@pytest.mark.parametrize(
    "line",
    ["-i http://h.invalid/simple", "--extra-index-url http://h.invalid/x", "--no-index",
     "-f ./w", "--trusted-host h.invalid", "--pre", "--require-hashes", "--no-require-hashes",
     "--only-binary :all:", "--no-binary x"],
)  # fmt: skip
def test_file_options_are_taken_not_refused(tmp_path: Path, line: str) -> None:
    path = tmp_path / "r.txt"
    path.write_text(f"ok\n{line}\n")
    user = collect([], files=[str(path)])
    assert [str(r.requirement) for r in user.requirements] == ["ok"]
    assert user.options and not unsupported(user) and not ignored(user.options)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("--prefer-binary", "--prefer-binary: fitwheel has no such option and ignores the line"),
        ("--use-feature fast-deps", "--use-feature fast-deps: fitwheel has no counterpart"),
    ],
)
def test_pip_options_without_a_counterpart_are_warnings(
    tmp_path: Path, line: str, words: str
) -> None:
    path = tmp_path / "r.txt"
    path.write_text(f"ok\n{line}\n")
    user = collect([], files=[str(path)])
    (warning,) = ignored(user.options)
    assert warning.startswith(f"{path}:2: ") and words in warning


def test_a_bom_a_tab_comment_and_a_file_url_wheel(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "alpha", "1.0")
    path = tmp_path / "r.txt"
    path.write_bytes(
        b"\xef\xbb\xbf# Torch\nbeta>=2\t# pinned below\n" + f"alpha @ {wheel.as_uri()}\n".encode()
    )
    user = collect([], files=[str(path)])
    assert [str(r.requirement) for r in user.requirements] == ["beta>=2", "alpha==1.0"]
    assert user.requirements[1].wheel_path == wheel.resolve()


def test_a_constraint_url_is_a_url_not_a_path(tmp_path: Path) -> None:
    path = tmp_path / "r.txt"
    path.write_text("ok\n-c https://h.invalid/pins.txt\n")
    with pytest.raises(RequirementError, match="is a URL") as info:
        collect([], files=[str(path)])
    assert f"{path}:2" in str(info.value)
    pages = {"https://h.invalid/pins.txt": "ok<2\n"}

    def fetch(location: str) -> str:
        return pages[location] if location in pages else Path(location).read_text()

    user = collect([], files=[str(path)], read=fetch)
    assert [str(c.requirement) for c in user.constraints] == ["ok<2"]
    assert user.files == [str(path), "https://h.invalid/pins.txt"]


def test_command_line_requirements_keep_spaces_and_own_options(tmp_path: Path) -> None:
    project = tmp_path / "my project"
    project.mkdir()
    (project / "pyproject.toml").write_text("[project]\nname = 'p'\n")
    user = collect(
        [f"{project}", "alpha==1 --hash=sha256:AB --variant=cpu"],
        editables=[str(project)],
    )
    local, alpha, editable = user.requirements
    assert local.source_path == project.resolve() and not local.editable
    assert alpha.hashes == {"sha256": frozenset({"ab"})} and alpha.variant == "cpu"
    assert editable.source_path == project.resolve() and editable.editable


def test_nested_files_are_listed_and_a_cycle_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\n-r b.txt\n")
    (tmp_path / "b.txt").write_text("beta\n")
    user = collect([], files=[str(tmp_path / "a.txt")])
    assert user.files == [str(tmp_path / "a.txt"), str(tmp_path / "b.txt")]
    (tmp_path / "b.txt").write_text("beta\n-r a.txt\n")
    with pytest.raises(RequirementError, match="names itself") as info:
        collect([], files=[str(tmp_path / "a.txt")])
    assert f"{tmp_path / 'b.txt'}:2" in str(info.value)


def test_a_named_file_url_must_be_a_file_of_that_project(tmp_path: Path) -> None:
    wheel = make_wheel(tmp_path, "alpha", "1.0")
    path = tmp_path / "r.txt"
    path.write_text(f"beta @ {wheel.as_uri()}\n")
    with pytest.raises(RequirementError, match="is a file of alpha, not of beta") as info:
        collect([], files=[str(path)])
    assert f"{path}:1" in str(info.value)
