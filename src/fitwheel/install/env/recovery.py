"""A transaction's journal, and recovery from a killed process by reading it.

Each transaction writes ``journal.json`` in its folder ``{prefix}/.fitwheel/txn-{id}/`` (every
planned move) before it changes anything, and a ``committed`` mark once it is done. After a
crash the journal tells what to undo: while it says ``prepared``, :func:`recover` puts every
backup back and removes every file and folder that was placed; once it says ``committed`` the
new state stands and only the folder is removed. A transaction folder without a journal never
touched the environment and is simply deleted. Recovery trusts no path of a journal: it acts
only on paths inside the environment (never on its scheme folders themselves) and on backups
inside the transaction's own folder, and ignores a journal that names anything else.

Recovery runs once while the environment's lock is held (:func:`recovered_while_held`): a
later :func:`recover` of the same environment under that same hold finds nothing to do, since
the lock kept every other process out, and returns at once.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from fitwheel.fs import atomic_write
from fitwheel.install.env.signals import deferred

STATE_DIR = ".fitwheel"
JOURNAL = "journal.json"
COMMITTED = "committed"

#: the environments (their prefixes) recovered while this process holds their lock
_HELD: set[str] = set()


def state_dir(prefix: Path) -> Path:
    return prefix / STATE_DIR


# The journal and the commit mark guard against a killed process, whose writes the kernel still
# completes: a rename makes each appear whole. They are not flushed to the disk, and neither are
# the installed files (as with pip and uv): after a power cut the file system's own journal decides.
def write_journal(folder: Path, data: dict[str, Any]) -> None:
    # json.dumps, not json.dump: only the former uses the C encoder (a journal lists every file)
    atomic_write(folder / JOURNAL, json.dumps(data, separators=(",", ":")).encode("utf-8"))


def mark_committed(folder: Path) -> None:
    """The commit point: a file of its own, so the (long) journal is written only once."""
    (folder / COMMITTED).touch()


def move(src: str | Path, dst: str | Path, *, parents: bool = True) -> None:
    if parents:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.replace(src, dst)
    except OSError as exc:
        if exc.errno != 18:  # EXDEV: another filesystem (a scheme path outside the prefix)
            raise
        shutil.copy2(src, dst)
        os.unlink(src)


def path_exists(path: str | Path) -> bool:
    return os.path.lexists(path)


def discard(folder: Path) -> None:
    shutil.rmtree(folder, ignore_errors=True)


def _prune_empty_parents(paths: Iterable[Path]) -> None:
    """Remove folders that removing files left empty (``__pycache__``, a package, a dist-info)."""
    for path in sorted({p.parent for p in paths}, key=lambda p: len(p.parts), reverse=True):
        current = path
        while current.name not in ("site-packages", "bin", "Scripts", "") and current.is_dir():
            if not _only_empty_caches(current):
                break
            shutil.rmtree(current, ignore_errors=True)
            current = current.parent


def _only_empty_caches(folder: Path) -> bool:
    for entry in folder.iterdir():
        if entry.name == "__pycache__" and entry.is_dir() and not any(entry.iterdir()):
            continue
        return False
    return True


def _journal(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / JOURNAL).read_text())
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    if (folder / COMMITTED).exists():
        data["state"] = "committed"
    return data


def finish(folder: Path, removed: list[str] | None = None) -> None:
    if removed is None:
        removed = [
            final for final, _b, staged in _journal(folder).get("operations", []) if staged is None
        ]
    discard(folder)
    _prune_empty_parents([Path(final) for final in removed])


class _Bounds:
    """Which paths a journal may name: files and folders inside the environment (but not its
    scheme folders, nor fitwheel's state), and backups inside the transaction's own folder."""

    def __init__(self, prefix: Path, folder: Path, scheme: Iterable[str]) -> None:
        self.prefix = os.path.realpath(prefix)
        self.own = os.path.realpath(folder)
        self.state = os.path.join(self.prefix, STATE_DIR)
        kept = {self.prefix}
        # without the scheme: the folders every environment has
        for name in ("bin", "Scripts", "lib", "lib64", "Lib"):
            kept.add(os.path.join(self.prefix, name))
        for root in scheme:
            path = os.path.realpath(root)
            while path.startswith(self.prefix + os.sep) and path not in kept:
                kept.add(path)
                path = os.path.dirname(path)
        #: folders that must never be removed whole (the scheme folders and those above them)
        self.kept = kept

    @staticmethod
    def _real(path: object) -> str | None:
        if not isinstance(path, str) or not os.path.isabs(path) or "\0" in path:
            return None
        if os.path.normpath(path) != path.rstrip(os.sep) and path != os.sep:
            return None  # '..' or '.' parts
        return os.path.join(os.path.realpath(os.path.dirname(path)), os.path.basename(path))

    def target(self, path: object, *, folder: bool = False) -> bool:
        real = self._real(path)
        if real is None or not real.startswith(self.prefix + os.sep):
            return False
        if real == self.state or real.startswith(self.state + os.sep):
            return False
        if folder and os.path.basename(real) in ("site-packages", "dist-packages"):
            return False
        return not (folder and real in self.kept)

    def own_path(self, path: object) -> bool:
        real = self._real(path)
        return real is not None and real.startswith(self.own + os.sep)

    def optional_own(self, path: object) -> bool:
        return path is None or self.own_path(path)


def _trusted(data: Mapping[str, Any], bounds: _Bounds) -> bool:
    """Whether every path of a journal is one recovery may act on."""
    try:
        for final, backup, staged in data.get("operations", []):
            if not (
                bounds.target(final) and bounds.optional_own(backup) and bounds.optional_own(staged)
            ):
                return False
        for final, backup in data.get("linked", []):
            if not (bounds.target(final) and bounds.optional_own(backup)):
                return False
        for created in data.get("created_dirs", []):
            if not bounds.target(created, folder=True):
                return False
        for final, build, backup in data.get("entries", []):
            if not (
                bounds.target(final, folder=True)
                and bounds.optional_own(build)
                and bounds.optional_own(backup)
            ):
                return False
    except (TypeError, ValueError):
        return False
    return True


def rollback(folder: Path, scheme: Iterable[str] = ()) -> bool:
    """Undo a ``prepared`` transaction (idempotent: safe to repeat after a crash). A journal
    that names a path outside the environment is not acted on: False then."""
    with deferred():
        data = _journal(folder)
        if data.get("state") != "prepared":
            discard(folder)
            return True
        if not _trusted(data, _Bounds(folder.parent.parent, folder, scheme)):
            discard(folder)
            return False
        for final_s, _build_s, backup_s in reversed(data.get("entries", [])):
            if backup_s is None:
                # a new folder: whatever stands there is ours
                if path_exists(final_s):
                    _remove_tree(final_s)
            elif path_exists(backup_s):
                if path_exists(final_s):
                    _remove_tree(final_s)
                os.rename(backup_s, final_s)
        for final_s, backup_s in reversed(data.get("linked", [])):
            if backup_s is not None:
                if path_exists(backup_s):
                    move(backup_s, final_s)
            elif path_exists(final_s):
                os.unlink(final_s)
        for final_s, backup_s, staged_s in reversed(data.get("operations", [])):
            final = Path(final_s)
            if backup_s is not None:
                if path_exists(Path(backup_s)):
                    move(Path(backup_s), final)
            elif staged_s is not None and not path_exists(Path(staged_s)) and path_exists(final):
                final.unlink()
        # a folder that did not exist when the transaction was planned holds only what it
        # placed there (the lock kept everyone else out): it goes whole, parents first
        for created in sorted(data.get("created_dirs", []), key=len):
            _remove_tree(created)
        discard(folder)
    return True


def _remove_tree(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def recover(prefix: Path, scheme: Iterable[str] = ()) -> list[str]:
    """Finish or undo transactions that a killed process left behind (call with the lock held).
    ``scheme``: the environment's install folders, which recovery never removes whole.

    Returns one line per transaction dealt with, for the user."""
    root = state_dir(prefix)
    notes: list[str] = []
    if _HELD and os.path.abspath(prefix) in _HELD:
        return notes  # recovered when the lock was taken, which is still held
    if not root.is_dir():
        return notes
    scheme = list(scheme)
    with deferred():
        for folder in sorted(root.glob("txn-*")):
            state = _journal(folder).get("state")
            if state == "prepared":
                if rollback(folder, scheme):
                    notes.append(f"rolled back an interrupted install ({folder.name})")
                else:
                    notes.append(
                        f"ignored the journal {folder / JOURNAL}: it names paths outside "
                        f"{prefix}, which fitwheel never writes; nothing was changed"
                    )
            elif state == "committed":
                _finish_trusted(folder, prefix, scheme)
                notes.append(f"finished an interrupted install ({folder.name})")
            else:
                discard(folder)
    return notes


def _finish_trusted(folder: Path, prefix: Path, scheme: Iterable[str]) -> None:
    bounds = _Bounds(prefix, folder, scheme)
    removed = [
        final
        for final, _b, staged in _journal(folder).get("operations", [])
        if staged is None and bounds.target(final)
    ]
    finish(folder, removed)


@contextlib.contextmanager
def recovered_while_held(prefix: Path, scheme: Iterable[str] = ()) -> Iterator[list[str]]:
    """Recover ``prefix`` (call with its lock held) and yield what that did; until the block
    ends, :func:`recover` of the same prefix has nothing more to do."""
    notes = recover(prefix, scheme)
    key = os.path.abspath(prefix)
    _HELD.add(key)
    try:
        yield notes
    finally:
        _HELD.discard(key)
