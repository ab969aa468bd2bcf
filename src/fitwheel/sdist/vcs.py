"""Checkouts of version-control repositories, for building a project from them.

Only git is run: the ``git`` on ``PATH``, through the one child-process runner
(:func:`fitwheel.proc.run`) with a time bound, ``GIT_TERMINAL_PROMPT=0`` (a repository that
wants a password fails instead of waiting for one) and the ``ext`` transport turned off. A
checkout is made as pip makes it: a clone, the revision asked for (a branch, a tag or a commit;
the default branch when none is named) resolved to a commit and checked out, then
``git submodule update --init --recursive``. Mercurial, Subversion and Bazaar repositories are
refused with an error that names their tool.

The repository URL may carry credentials (git needs them); every message shows the ``shown``
form the caller gives instead, and git's own output has the URL replaced by it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from pathlib import Path

from fitwheel.errors import BuildError

#: seconds one git command may run (a clone of a large repository takes a while)
GIT_TIMEOUT = 600.0
#: the tool each version-control system needs, and its project's name
TOOLS = {"hg": "Mercurial (hg)", "svn": "Subversion (svn)", "bzr": "Bazaar (bzr)"}
_HEX_RE = re.compile(r"^[0-9a-fA-F]{7,40}$")


class VcsError(BuildError):
    """A repository that could not be checked out: no git, a failing git, an unknown
    revision."""


def refuse_other(vcs: str, shown: str) -> None:
    """Raise for a repository of another system than git: its tool is missing, or fitwheel
    does not check out such repositories."""
    tool = TOOLS.get(vcs, vcs)
    if shutil.which(vcs) is None:
        raise VcsError(
            f"{shown}: installing from a {vcs} repository needs {tool}, which is not on PATH: "
            f"install {tool}, or check the project out yourself and name its folder."
        )
    raise VcsError(
        f"{shown}: fitwheel checks out git repositories only, not {tool} ones: check the "
        f"project out with {vcs} and name its folder."
    )


class Git:
    """The ``git`` on ``PATH``, run for one repository (``repository``, shown as ``shown``)."""

    def __init__(
        self,
        repository: str,
        shown: str,
        *,
        env: Mapping[str, str],
        timeout: float = GIT_TIMEOUT,
        url_shown: str | None = None,
    ) -> None:
        program = shutil.which("git", path=env.get("PATH", os.defpath))
        if program is None:
            raise VcsError(
                f"{shown}: installing from a git repository needs git, which is not on PATH: "
                "install git (apt-get install git, or your system's package), or check the "
                "project out yourself and name its folder."
            )
        self.program = program
        self.repository = repository
        self.shown = shown
        #: what git's own output says instead of the repository URL (no credentials)
        self.url_shown = shown if url_shown is None else url_shown
        self.timeout = timeout
        self.env = {
            **env,
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": env.get("GIT_ASKPASS", "true"),
            "LC_ALL": "C",
        }

    def run(self, *args: str, cwd: Path | None = None, check: bool = True) -> str | None:
        """git's standard output, or None where it failed and ``check`` is off."""
        from fitwheel import proc

        command = [self.program, "-c", "protocol.ext.allow=never", *args]
        try:
            done = proc.run(command, timeout=self.timeout, env=self.env, cwd=cwd)
        except OSError as exc:
            raise VcsError(f"{self.shown}: cannot run git: {exc}.") from None
        if done.timed_out:
            raise VcsError(
                f"{self.shown}: `git {args[0]}` did not finish within {self.timeout:g} s: is "
                "the repository reachable? Check the URL and your network."
            )
        if done.returncode != 0:
            if not check:
                return None
            said = done.text(stream="stderr").strip() or done.text().strip()
            said = said.replace(self.repository, self.url_shown)[-1500:]
            raise VcsError(
                f"{self.shown}: `git {args[0]}` failed: {said or 'no output'}. Check the URL, "
                "the revision and your access to the repository."
            )
        return done.text()

    def commit_of(self, folder: Path, name: str) -> str | None:
        out = self.run(
            "rev-parse", "--verify", "--quiet", f"{name}^{{commit}}", cwd=folder, check=False
        )
        return out.strip() if out else None


def checkout(
    repository: str,
    revision: str | None,
    dest: Path,
    *,
    shown: str,
    url_shown: str,
    env: Mapping[str, str],
    timeout: float = GIT_TIMEOUT,
) -> str:
    """Clone ``repository`` into ``dest`` (which must not exist), check out ``revision`` (a
    branch, tag or commit; None: the default branch) with its submodules; returns the commit.
    Messages start with ``shown`` and show the repository as ``url_shown``."""
    if repository.startswith("-") or (revision is not None and revision.startswith("-")):
        raise VcsError(f"{shown}: a repository or revision that starts with '-' is refused.")
    git = Git(repository, shown, env=env, timeout=timeout, url_shown=url_shown)
    git.run("clone", "--quiet", "--no-checkout", "--", repository, str(dest))
    commit = _resolve(git, dest, revision)
    git.run("checkout", "--quiet", "--detach", commit, cwd=dest)
    if (dest / ".gitmodules").is_file():
        git.run("submodule", "update", "--init", "--recursive", "--quiet", cwd=dest)
    return commit


def _resolve(git: Git, folder: Path, revision: str | None) -> str:
    """The commit ``revision`` names in the clone at ``folder``, as pip looks it up: a branch
    of the remote, a tag, a commit there, else a commit fetched by its name."""
    if revision is None:
        found = git.commit_of(folder, "HEAD")
        if found is None:
            raise VcsError(f"{git.shown}: the repository has no commits to check out.")
        return found
    for name in (f"refs/remotes/origin/{revision}", f"refs/tags/{revision}"):
        found = git.commit_of(folder, name)
        if found is not None:
            return found
    if _HEX_RE.match(revision):
        found = git.commit_of(folder, revision)
        if found is not None:
            return found
    # a ref the clone did not bring (a pull request's head, a commit off every branch)
    if git.run("fetch", "--quiet", "origin", "--", revision, cwd=folder, check=False) is not None:
        found = git.commit_of(folder, "FETCH_HEAD")
        if found is not None:
            return found
    raise VcsError(
        f"{git.shown}: the repository has no branch, tag or commit {revision!r}: name one it "
        "has after '@' (or none, for its default branch)."
    )


def head_of(folder: Path, env: Mapping[str, str]) -> tuple[str, str] | None:
    """(the ``origin`` remote's URL, the checked-out commit) of the git work tree at
    ``folder``, or None where it is not one (or git is missing)."""
    if shutil.which("git", path=env.get("PATH", os.defpath)) is None:
        return None
    try:
        git = Git(str(folder), str(folder), env=env, timeout=30.0)
        remote = git.run("config", "--get", "remote.origin.url", cwd=folder, check=False)
        commit = git.commit_of(folder, "HEAD")
    except VcsError:
        return None
    if not remote or commit is None:
        return None
    return remote.strip(), commit


def is_commit(revision: str | None) -> bool:
    """Whether ``revision`` is written as a whole commit id (40 hex digits)."""
    return revision is not None and len(revision) == 40 and _HEX_RE.match(revision) is not None
