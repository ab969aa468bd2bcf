"""Which files an installed distribution owns (from its RECORD), and removing distributions.

:func:`uninstall` removes whole distributions all-or-nothing, as an install writes them: under
the environment's lock, after recovering what a killed run left, in one journalled transaction
(:mod:`fitwheel.install.place.transaction`), so a failure, Ctrl-C, SIGTERM or ``kill -9`` leaves the
environment as it was before or as it is after, never in between. A distribution without a
RECORD is refused before anything is touched: nobody can tell which files are its own.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import InstallationError
from fitwheel.reporter import SILENT, Reporter
from fitwheel.wheel.record import RecordError, installed_paths

if TYPE_CHECKING:
    # only the types: reading an environment's distributions is the caller's
    from importlib import metadata as importlib_metadata

    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.env.inventory import Installed
    from fitwheel.install.place.transaction import Operation


class UninstallError(InstallationError):
    pass


def files_of(dist_info: Path, prefix: Path, name: str) -> set[Path]:
    """Every file of the distribution whose ``.dist-info`` folder is ``dist_info`` inside
    ``prefix``: RECORD entries, their byte-code, the dist-info folder's files.

    Files outside the environment are never removed (a RECORD can name anything)."""
    base = dist_info.parent
    try:
        record = (dist_info / "RECORD").read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UninstallError(
            f"{name} is installed without a RECORD file ({dist_info}), so fitwheel cannot tell "
            "its files: nothing was removed. Remove it with the tool that installed it (a "
            "system package manager, or an installer that keeps its own file list)."
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UninstallError(
            f"{dist_info}/RECORD cannot be read ({exc}); fitwheel cannot tell the files of "
            f"{name}: nothing was removed."
        ) from None
    try:
        listed = installed_paths(record)
    except RecordError as exc:
        raise UninstallError(
            f"{dist_info}/RECORD: {exc}; fitwheel cannot tell the files of {name}: nothing "
            "was removed."
        ) from None
    files: set[Path] = set()
    for relpath in listed:
        path = Path(os.path.normpath(base / relpath))
        if not path.is_relative_to(prefix):
            continue
        files.add(path)
        if path.suffix == ".py":
            cache = path.parent / "__pycache__"
            if cache.is_dir():
                files.update(cache.glob(f"{path.stem}.*.pyc"))
    if dist_info.is_dir():
        files.update(p for p in dist_info.rglob("*") if not p.is_dir())
    return {p for p in files if os.path.lexists(p)}


def owned_files(dist: importlib_metadata.Distribution, prefix: Path) -> set[Path]:
    """:func:`files_of` for an ``importlib.metadata`` distribution."""
    dist_info = Path(str(dist._path))  # type: ignore[attr-defined]
    return files_of(dist_info, prefix, dist.metadata["Name"] or dist_info.name)


class Removal:
    """One distribution to remove and the files that go with it."""

    __slots__ = ("dist", "files")

    def __init__(self, dist: Installed, files: list[Path]) -> None:
        self.dist = dist
        self.files = files


class UninstallResult:
    __slots__ = ("cancelled", "not_installed", "notes", "removed")

    def __init__(
        self,
        removed: list[Removal],
        not_installed: list[str],
        notes: list[str],
        cancelled: bool = False,
    ) -> None:
        self.removed = removed
        #: the names asked for that are not installed (skipped, as pip does)
        self.not_installed = not_installed
        #: what recovering a killed run did
        self.notes = notes
        #: the user answered no: nothing was removed
        self.cancelled = cancelled


def uninstall(
    env: TargetEnvironment,
    names: Sequence[str],
    *,
    confirm: Callable[[list[Removal]], bool] | None = None,
    reporter: Reporter = SILENT,
    commit_hook: Callable[[Operation | None], None] | None = None,
) -> UninstallResult:
    """Remove the distributions ``names`` from ``env``, all of them or none.

    ``confirm`` is asked once, with every removal planned (None: no question); a name that is
    not installed is skipped. A distribution that cannot be planned (no RECORD) stops it all
    before anything changes."""
    from fitwheel.install.env.session import EnvironmentSession
    from fitwheel.install.env.signals import deferred
    from fitwheel.install.place.transaction import Transaction
    from fitwheel.variants.names import canonicalize_name

    with EnvironmentSession(reporter=reporter) as session:
        notes = session.hold(env)
        inventory = session.inventory()
        removals: list[Removal] = []
        missing: list[str] = []
        seen: set[str] = set()
        for name in names:
            key = canonicalize_name(name)
            if key in seen:
                continue
            seen.add(key)
            dist = inventory.get(key)
            if dist is None:
                missing.append(name)
                continue
            files = sorted(files_of(dist.folder, env.prefix, dist.name))
            removals.append(Removal(dist, files))
        if not removals:
            return UninstallResult([], missing, notes)
        if confirm is not None and not confirm(removals):
            return UninstallResult([], missing, notes, cancelled=True)
        with deferred():  # a signal waits until the transaction is held (and abandoned)
            txn = Transaction(env.prefix)
        try:
            txn.plan({}, [str(path) for removal in removals for path in removal.files])
        except BaseException:
            txn.abandon()
            raise
        txn.commit(hook=commit_hook)
    return UninstallResult(removals, missing, notes)
