"""All-or-nothing changes to an environment: a lock, a journal, renames, and recovery.

A transaction owns a folder ``{prefix}/.fitwheel/txn-{id}/`` holding the staged files (``stage``),
the files it displaces (``backup``) and ``journal.json``. Committing is:

1. write the journal (every planned move) atomically; state ``prepared``;
2. move every existing path it replaces or removes into ``backup`` (a rename);
3. move every staged file into place (a rename);
4. mark the journal ``committed``, then delete the folder.

Each step is a rename, so after a crash at any point the journal tells what to undo: while it says
``prepared``, :func:`recover` puts every backup back and removes every file that was placed; once it
says ``committed`` the new state stands and only the folder is removed. A transaction folder
without a journal never touched the environment and is simply deleted. The lock (``flock`` on
``{prefix}/.fitwheel/lock``) serialises fitwheel processes on one environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from fitwheel.errors import FitwheelError

STATE_DIR = ".fitwheel"
JOURNAL = "journal.json"


class TransactionError(FitwheelError):
    pass


def state_dir(prefix: Path) -> Path:
    return prefix / STATE_DIR


@contextlib.contextmanager
def environment_lock(prefix: Path, *, notice: TextIO | None = None) -> Iterator[None]:
    """Hold the environment's lock (waits for another fitwheel process to finish)."""
    folder = state_dir(prefix)
    folder.mkdir(parents=True, exist_ok=True)
    handle = (folder / "lock").open("a+")
    try:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - no flock on this platform
            yield
            return
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if notice is not None:
                print(
                    f"waiting for another fitwheel process to finish with {prefix} ...", file=notice
                )
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)
    finally:
        handle.close()


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _write_journal(folder: Path, data: dict[str, Any]) -> None:
    tmp = folder / (JOURNAL + ".tmp")
    # json.dumps, not json.dump: only the former uses the C encoder (a journal lists every file)
    text = json.dumps(data, separators=(",", ":"))
    with tmp.open("w") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, folder / JOURNAL)
    _fsync_dir(folder)


def _move(src: str | Path, dst: str | Path, *, parents: bool = True) -> None:
    if parents:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
    try:
        os.replace(src, dst)
    except OSError as exc:
        if exc.errno != 18:  # EXDEV: another filesystem (a scheme path outside the prefix)
            raise
        shutil.copy2(src, dst)
        os.unlink(src)


def _exists(path: str | Path) -> bool:
    return os.path.lexists(path)


@dataclass
class Operation:
    """``final`` is replaced or removed: its old content goes to ``backup`` (when it existed),
    and ``staged`` (when given) takes its place."""

    final: str
    backup: str | None
    staged: str | None

    def to_json(self) -> list[str | None]:
        return [self.final, self.backup, self.staged]


@dataclass
class Transaction:
    prefix: Path
    folder: Path = field(init=False)
    operations: list[Operation] = field(default_factory=list)
    created_dirs: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.folder = state_dir(self.prefix) / f"txn-{uuid.uuid4().hex[:12]}"
        (self.folder / "stage").mkdir(parents=True)

    @property
    def stage_root(self) -> Path:
        return self.folder / "stage"

    def plan(self, placed: Mapping[str, str], removed: Iterable[str]) -> None:
        """Files to put in place (final path -> staged path) and files to remove."""
        backup_root = os.path.join(str(self.folder), "backup")
        count = 0
        ops: list[Operation] = []
        for final in sorted(set(removed) - placed.keys()):
            if _exists(final) and not os.path.isdir(final):
                count += 1
                ops.append(Operation(final, os.path.join(backup_root, str(count)), None))
        dirs: set[str] = set()
        known: set[str] = set()
        for final, staged in sorted(placed.items()):
            backup = None
            if _exists(final):
                if os.path.isdir(final) and not os.path.islink(final):
                    raise TransactionError(f"cannot install a file over the folder {final}.")
                count += 1
                backup = os.path.join(backup_root, str(count))
            ops.append(Operation(final, backup, staged))
            parent = os.path.dirname(final)
            while parent not in known and parent not in dirs and not os.path.isdir(parent):
                dirs.add(parent)
                parent = os.path.dirname(parent)
            known.add(os.path.dirname(final))
        self.operations = ops
        self.created_dirs = sorted(dirs, key=len)
        if count:
            os.makedirs(backup_root, exist_ok=True)

    def commit(self, *, hook: Any = None) -> None:
        """Apply the plan; on any failure (or SIGTERM/SIGINT) undo it and re-raise.

        ``hook`` (tests) is called after each rename with its operation, and with None once the
        journal says committed."""
        journal = {
            "state": "prepared",
            "operations": [op.to_json() for op in self.operations],
            "created_dirs": self.created_dirs,
        }
        _write_journal(self.folder, journal)
        previous = _defer_signals()
        try:
            for op in self.operations:
                if op.backup is not None:
                    _move(op.final, op.backup)
                if hook is not None:
                    hook(op)
            made: set[str] = set()
            for op in self.operations:
                if op.staged is not None:
                    parent = os.path.dirname(op.final)
                    if parent not in made:
                        os.makedirs(parent, exist_ok=True)
                        made.add(parent)
                    _move(op.staged, op.final, parents=False)
                if hook is not None:
                    hook(op)
            _write_journal(self.folder, {**journal, "state": "committed"})
            if hook is not None:
                hook(None)
        except BaseException:
            rollback(self.folder)
            raise
        finally:
            _restore_signals(previous)
        _finish(self.folder)

    def abandon(self) -> None:
        """Drop a transaction that never started committing."""
        _discard(self.folder)


def _discard(folder: Path) -> None:
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
    return data if isinstance(data, dict) else {}


def _finish(folder: Path) -> None:
    removed = [
        Path(final)
        for final, _b, staged in _journal(folder).get("operations", [])
        if staged is None
    ]
    _discard(folder)
    _prune_empty_parents(removed)


def rollback(folder: Path) -> None:
    """Undo a ``prepared`` transaction (idempotent: safe to repeat after a crash)."""
    data = _journal(folder)
    if data.get("state") == "prepared":
        for final_s, backup_s, staged_s in reversed(data["operations"]):
            final = Path(final_s)
            if backup_s is not None:
                if _exists(Path(backup_s)):
                    _move(Path(backup_s), final)
            elif staged_s is not None and not _exists(Path(staged_s)) and _exists(final):
                final.unlink()
        for created in sorted(data.get("created_dirs", []), key=len, reverse=True):
            with contextlib.suppress(OSError):
                _remove_empty_tree(Path(created))
    _discard(folder)


def _remove_empty_tree(folder: Path) -> None:
    for dirpath, _dirnames, _files in os.walk(folder, topdown=False):
        with contextlib.suppress(OSError):
            os.rmdir(dirpath)


def recover(prefix: Path) -> list[str]:
    """Finish or undo transactions that a killed process left behind (call with the lock held).

    Returns one line per transaction dealt with, for the user."""
    root = state_dir(prefix)
    notes: list[str] = []
    if not root.is_dir():
        return notes
    for folder in sorted(root.glob("txn-*")):
        state = _journal(folder).get("state")
        if state == "prepared":
            rollback(folder)
            notes.append(f"rolled back an interrupted install ({folder.name})")
        elif state == "committed":
            _finish(folder)
            notes.append(f"finished an interrupted install ({folder.name})")
        else:
            _discard(folder)
    return notes


def _defer_signals() -> dict[int, Any]:
    """Turn SIGTERM into KeyboardInterrupt while renames run, so that commit() rolls back."""
    previous: dict[int, Any] = {}
    if sys.platform == "win32" or not _main_thread():
        return previous

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous[signal.SIGTERM] = signal.signal(signal.SIGTERM, interrupt)
    return previous


def _restore_signals(previous: dict[int, Any]) -> None:
    for signum, handler in previous.items():
        signal.signal(signum, handler)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()
