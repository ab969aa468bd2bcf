from pathlib import Path

import pytest

from fitwheel.resolve.requirements import RequirementError, collect
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
        ("x @ https://h/x.whl", "archive URL is not supported yet"),
        ("--index-url http://h", "pass --index-url http://h on the command line"),
        ("x --hash=nocolon", "--hash"),
    ],
)
def test_bad_lines_name_their_place(tmp_path: Path, line: str, match: str) -> None:
    path = tmp_path / "r.txt"
    path.write_text(f"ok\n{line}\n")
    with pytest.raises(RequirementError, match=match) as info:
        collect([], files=[str(path)])
    assert f"{path}:2" in str(info.value)
