"""git checkouts through the one child-process runner: revisions resolved as pip resolves them,
submodules checked out, and every failure said with the repository as shown (never with its
credentials) and the way on."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from fitwheel.sdist.vcs import VcsError, checkout, head_of, is_commit, refuse_other

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git (make system-deps)")

#: file: submodules are off by default in git; a user turns them on the same way
FILE_SUBMODULES = {
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "protocol.file.allow",
    "GIT_CONFIG_VALUE_0": "always",
}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@localhost", *args],
        cwd=repo, capture_output=True, text=True, check=True,
        env={**os.environ, **FILE_SUBMODULES},
    )  # fmt: skip
    return done.stdout.strip()


def commit(repo: Path, name: str, text: str) -> str:
    (repo / name).write_text(text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", text)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """main: one (tagged v1), two; branch side: three (off one)."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "f", "one")
    git(repo, "tag", "v1")
    git(repo, "checkout", "-q", "-b", "side")
    commit(repo, "f", "three")
    git(repo, "checkout", "-q", "main")
    commit(repo, "f", "two")
    return repo


def content_at(repo: Path, tmp_path: Path, revision: str | None) -> tuple[str, str]:
    dest = tmp_path / f"co-{revision}"
    found = checkout(
        repo.as_uri(), revision, dest, shown="the repo", url_shown="the repo", env=os.environ
    )
    return (dest / "f").read_text(), found


@pytest.mark.parametrize(
    ("revision", "text"), [(None, "two"), ("main", "two"), ("v1", "one"), ("side", "three")]
)
def test_a_branch_a_tag_or_the_default_branch(
    repo: Path, tmp_path: Path, revision: str | None, text: str
) -> None:
    content, found = content_at(repo, tmp_path, revision)
    assert content == text
    assert found == git(repo, "rev-parse", f"{revision or 'HEAD'}^{{commit}}")
    assert is_commit(found)


def test_a_commit_by_its_id_whole_or_short(repo: Path, tmp_path: Path) -> None:
    first = git(repo, "rev-parse", "v1^{commit}")
    assert content_at(repo, tmp_path, first) == ("one", first)
    assert content_at(repo, tmp_path, first[:10]) == ("one", first)


def test_an_unknown_revision_says_what_to_name(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(VcsError, match="no branch, tag or commit 'nope'") as info:
        checkout(
            repo.as_uri(), "nope", tmp_path / "co", shown="REPO", url_shown="REPO", env=os.environ
        )
    assert str(info.value).startswith("REPO:")


def test_submodules_are_checked_out(repo: Path, tmp_path: Path) -> None:
    inner = tmp_path / "inner"
    inner.mkdir()
    git(inner, "init", "-q", "-b", "main")
    commit(inner, "g", "inner file")
    git(repo, "submodule", "add", "-q", inner.as_uri(), "sub")
    git(repo, "commit", "-q", "-m", "with a submodule")
    dest = tmp_path / "co"
    checkout(
        repo.as_uri(), None, dest, shown="r", url_shown="r", env={**os.environ, **FILE_SUBMODULES}
    )
    assert (dest / "sub" / "g").read_text() == "inner file"


def test_credentials_never_show_and_git_never_prompts(tmp_path: Path) -> None:
    url = "https://user:s3cr3t@127.0.0.1:9/repo.git"
    with pytest.raises(VcsError) as info:
        checkout(url, None, tmp_path / "co", shown="req.txt:3: git+https://127.0.0.1:9/repo.git",
                 url_shown="https://user:****@127.0.0.1:9/repo.git", env=os.environ,
                 timeout=60)  # fmt: skip
    said = str(info.value)
    assert "s3cr3t" not in said
    # git's own words name the repository as shown, not the message's own prefix again
    assert said.startswith("req.txt:3: git+https://127.0.0.1:9/repo.git: `git clone` failed")
    assert said.count("req.txt:3") == 1, said
    assert "git clone" in str(info.value) and "Check the URL" in str(info.value)


def test_a_leading_dash_is_refused_before_git_runs(tmp_path: Path) -> None:
    with pytest.raises(VcsError, match="starts with '-'"):
        checkout(
            "--upload-pack=touch x", None, tmp_path / "co", shown="r", url_shown="r", env=os.environ
        )
    with pytest.raises(VcsError, match="starts with '-'"):
        checkout(
            "file:///x", "--output=y", tmp_path / "co", shown="r", url_shown="r", env=os.environ
        )
    assert not (tmp_path / "co").exists()


def test_no_git_on_path_is_said(tmp_path: Path) -> None:
    with pytest.raises(VcsError, match="needs git, which is not on PATH: install git"):
        checkout(
            "file:///x",
            None,
            tmp_path / "co",
            shown="r",
            url_shown="r",
            env={"PATH": str(tmp_path)},
        )


@pytest.mark.parametrize(
    ("vcs", "tool"), [("hg", "Mercurial"), ("svn", "Subversion"), ("bzr", "Bazaar")]
)
def test_other_systems_name_their_tool(
    vcs: str, tool: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(VcsError, match=f"needs {tool} .*which is not on PATH"):
        refuse_other(vcs, "where")


def test_head_of_a_work_tree(repo: Path, tmp_path: Path) -> None:
    dest = tmp_path / "co"
    found = checkout(repo.as_uri(), "v1", dest, shown="r", url_shown="r", env=os.environ)
    assert head_of(dest, os.environ) == (repo.as_uri(), found)
    assert head_of(tmp_path, os.environ) is None


def test_git_output_names_the_repository_once(tmp_path: Path) -> None:
    url = "https://127.0.0.1:9/repo.git"
    with pytest.raises(VcsError) as info:
        checkout(url, None, tmp_path / "co", shown=f"req.txt:4: git+{url}", url_shown=url,
                 env=os.environ, timeout=60)  # fmt: skip
    said = str(info.value)
    assert said.count("req.txt:4") == 1, said
    assert f"unable to access '{url}/'" in said, said
