"""``install --target DIR`` and ``--prefix DIR``: where the wheels go instead of the interpreter's
own environment, as pip puts them.

``--prefix DIR`` is the interpreter's install scheme with ``DIR`` as its base
(``DIR/lib/pythonX.Y/site-packages``, ``DIR/bin``...): an environment of its own, whose
installed distributions are those under ``DIR``.

``--target DIR`` is pip's two steps: the wheels are installed (by the one wheel writer) into a
staging folder laid out as the interpreter's ``home`` scheme, as if nothing were installed (pip
ignores what is installed for ``--target``), and then each top-level entry of its purelib and
platlib, and of its data folder (``bin`` with the scripts, ``include``, data files), is moved
into ``DIR``. An entry that ``DIR`` already has is left alone with a warning, unless
``--upgrade`` is given: then it is replaced. A link is never replaced. The staging folder is made
inside ``DIR`` (so that the moves are renames) and removed however the install ends.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import InstallationError

if TYPE_CHECKING:
    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.env.session import EnvironmentSession
    from fitwheel.reporter import Reporter

#: the name the staging folder in ``--target DIR`` starts with
STAGING_PREFIX = ".fitwheel-target-"


def check_target_dir(target: Path) -> None:
    """Refuse a ``--target`` that exists and is not a folder (as pip does)."""
    if target.exists() and not target.is_dir():
        raise InstallationError(
            f"--target {target} exists and is not a folder: give a folder to install into."
        )


def prefix_environment(env: TargetEnvironment, prefix: Path) -> TargetEnvironment:
    """``env``'s interpreter installing under ``prefix`` (``--prefix``)."""
    from fitwheel.install.env.interpreter import environment_at

    return environment_at(env, "prefix", prefix)


def staging_environment(
    env: TargetEnvironment, target: Path, envs: EnvironmentSession, *, dry_run: bool = False
) -> TargetEnvironment:
    """An empty ``home``-scheme environment of ``env``'s interpreter in a staging folder inside
    ``target`` (made, with its parents, if missing), removed when ``envs`` ends; ``dry_run``:
    in the system's temporary folder, ``target`` untouched."""
    from fitwheel.install.env.interpreter import environment_at

    check_target_dir(target)
    if dry_run:
        return environment_at(env, "home", envs.temp_dir(STAGING_PREFIX))
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InstallationError(
            f"cannot create --target {target}: {exc.strerror or exc}; give a folder you can "
            "write to."
        ) from None
    return environment_at(env, "home", envs.temp_dir(STAGING_PREFIX, parent=target))


def move_into_target(
    staged: TargetEnvironment, target: Path, *, upgrade: bool, reporter: Reporter
) -> list[str]:
    """Move the staged install's entries into ``target`` (pip's rules, module docstring);
    returns the entries left alone because ``target`` has them already."""
    from fitwheel.install.env.signals import deferred

    purelib, platlib, data = (Path(staged.scheme[key]) for key in ("purelib", "platlib", "data"))
    libs = [purelib] + ([platlib] if platlib != purelib else [])
    kept: list[str] = []
    with deferred():  # a signal waits until every entry is moved: no half-moved package
        for folder in [*libs, data]:
            if not folder.is_dir():
                continue
            for item in sorted(os.listdir(folder)):
                source = folder / item
                if folder == data and (item == ".fitwheel" or _holds_any(source, libs)):
                    continue  # the lib folders (moved above) and the install's own state
                if not _replace(target / item, upgrade, reporter):
                    kept.append(item)
                    continue
                shutil.move(str(source), str(target / item))
    return kept


def _holds_any(folder: Path, inner: list[Path]) -> bool:
    return any(path == folder or folder in path.parents for path in inner)


def _replace(dest: Path, upgrade: bool, reporter: Reporter) -> bool:
    """Whether an entry may be moved to ``dest``: nothing there, or (``upgrade``) something
    that is removed first; a link is never replaced."""
    if not os.path.lexists(dest):
        return True
    if not upgrade:
        reporter.warning(f"target directory {dest} already exists; pass --upgrade to replace it.")
        return False
    if dest.is_symlink():
        reporter.warning(
            f"target directory {dest} already exists and is a link; fitwheel does not replace "
            "links: remove it if it should be replaced."
        )
        return False
    if dest.is_dir():
        shutil.rmtree(dest)
    else:
        dest.unlink()
    return True
