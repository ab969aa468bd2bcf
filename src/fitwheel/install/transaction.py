"""All-or-nothing changes to an environment: a lock, a journal, renames, and recovery.

A transaction owns a folder ``{prefix}/.fitwheel/txn-{id}/`` holding the staged files (``stage``),
the files it displaces (``backup``) and ``journal.json``. Files come either staged (written into
``stage``, moved into place by a rename) or linked (a file of the unpacked-wheel cache, hard-linked
or copied into place). Committing is:

1. write the journal (every planned move) atomically; state ``prepared``;
2. move every existing path it replaces or removes into ``backup`` (a rename);
3. create the new folders, move every staged file into place and link every linked one;
4. mark the journal ``committed``, then delete the folder.

After a crash at any point the journal tells what to undo: while it says ``prepared``,
:func:`recover` puts every backup back and removes every file that was placed (a planned path that
had no backup did not exist before, and the lock kept everyone else out, so whatever is there now
is ours); once it says ``committed`` the new state stands and only the folder is removed. A
transaction folder without a journal never touched the environment and is simply deleted. The
lock (``flock`` on ``{prefix}/.fitwheel/lock``) serialises fitwheel processes on one environment.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from fitwheel.errors import FitwheelError
from fitwheel.fs import atomic_write, link_or_copy, locked

STATE_DIR = ".fitwheel"
JOURNAL = "journal.json"
COMMITTED = "committed"


class TransactionError(FitwheelError):
    pass


def state_dir(prefix: Path) -> Path:
    return prefix / STATE_DIR


@contextlib.contextmanager
def environment_lock(prefix: Path, *, notice: TextIO | None = None) -> Iterator[None]:
    """Hold the environment's lock (waits for another fitwheel process to finish)."""

    def waiting() -> None:
        if notice is not None:
            print(f"waiting for another fitwheel process to finish with {prefix} ...", file=notice)

    with locked(state_dir(prefix) / "lock", on_wait=waiting):
        yield


# The journal and the commit mark guard against a killed process, whose writes the kernel still
# completes: a rename makes each appear whole. They are not flushed to the disk, and neither are
# the installed files (as with pip and uv): after a power cut the file system's own journal decides.
def _write_journal(folder: Path, data: dict[str, Any]) -> None:
    # json.dumps, not json.dump: only the former uses the C encoder (a journal lists every file)
    atomic_write(folder / JOURNAL, json.dumps(data, separators=(",", ":")).encode("utf-8"))


def _mark_committed(folder: Path) -> None:
    """The commit point: a file of its own, so the (long) journal is written only once."""
    (folder / COMMITTED).touch()


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


class Operation:
    """``final`` is replaced or removed: its old content goes to ``backup`` (when it existed),
    and ``staged`` (when given) takes its place."""

    __slots__ = ("backup", "final", "staged")

    def __init__(self, final: str, backup: str | None, staged: str | None) -> None:
        self.final = final
        self.backup = backup
        self.staged = staged

    def __repr__(self) -> str:
        return f"Operation({self.final!r}, {self.backup!r}, {self.staged!r})"

    def to_json(self) -> list[str | None]:
        return [self.final, self.backup, self.staged]


class LinkGroup:
    """Files of one cached tree to link into one folder: ``dst + name`` becomes a hard link to
    (or a copy of) ``src + name`` for every name (``/``-separated, relative). ``dirs`` lists
    every folder the names need below ``dst`` (relative, parents first). Names rather than
    path pairs: a wheel may have tens of thousands of files."""

    __slots__ = ("dirs", "dst", "names", "src", "top")

    def __init__(
        self, dst: str, src: str, names: list[str], dirs: list[str], top: list[str] | None = None
    ) -> None:
        self.dst = dst
        self.src = src
        self.names = names
        self.dirs = dirs
        #: the names directly in ``dst`` (worked out here when not given)
        self.top = [n for n in names if "/" not in n] if top is None else top


class Transaction:
    def __init__(self, prefix: Path, link_mode: str = "hardlink") -> None:
        self.prefix = prefix
        #: "hardlink" (falling back to a copy across filesystems) or "copy"
        self.link_mode = link_mode
        self.operations: list[Operation] = []
        self.groups: list[LinkGroup] = []
        self.created_dirs: list[str] = []
        self.backed_up: list[tuple[str, str]] = []
        #: (final, backup) of linked files whose folder exists already (the others need no
        #: undo of their own: their folders are removed whole)
        self._journal_linked: list[tuple[str, str | None]] = []
        self._written = 0
        self.folder = state_dir(self.prefix) / f"txn-{os.urandom(6).hex()}"
        (self.folder / "stage").mkdir(parents=True)

    @property
    def stage_root(self) -> Path:
        return self.folder / "stage"

    def stage_bytes(self, content: bytes, *, executable: bool = False) -> str:
        """Write ``content`` to a new file in the staging folder; returns its path."""
        self._written += 1
        folder = self.folder / "stage" / "written"
        if self._written == 1:
            folder.mkdir()
        path = os.path.join(folder, str(self._written))
        with open(path, "wb") as handle:
            handle.write(content)
        if executable:
            os.chmod(path, 0o755)
        return path

    def plan(
        self,
        placed: Mapping[str, str],
        removed: Iterable[str],
        groups: Sequence[LinkGroup] = (),
    ) -> None:
        """Files to put in place (final path -> staged path), trees to link, and files to
        remove. A path both staged and linked gets the staged file; one linked by two groups,
        the later group's."""
        groups = _without_overlaps(placed, groups)
        linked_finals: set[str] = set()
        if removed:
            linked_finals = {g.dst + n for g in groups for n in g.names}
        backup_root = os.path.join(str(self.folder), "backup")
        count = 0
        ops: list[Operation] = []
        for final in sorted(set(removed) - placed.keys() - linked_finals):
            if _exists(final) and not os.path.isdir(final):
                count += 1
                ops.append(Operation(final, os.path.join(backup_root, str(count)), None))
        # Whether each folder exists, asked once: a file in a folder this transaction creates
        # cannot exist yet, so most files of a new package cost no system call here.
        is_dir: dict[str, bool] = {}

        def backup_for(final: str) -> str | None:
            nonlocal count
            if not _exists(final):
                return None
            if os.path.isdir(final) and not os.path.islink(final):
                raise TransactionError(f"cannot install a file over the folder {final}.")
            count += 1
            return os.path.join(backup_root, str(count))

        for final, staged in sorted(placed.items()):
            parent = os.path.dirname(final)
            exists = is_dir.get(parent)
            if exists is None:
                exists = is_dir[parent] = os.path.isdir(parent)
            ops.append(Operation(final, backup_for(final) if exists else None, staged))
        journal_linked: list[tuple[str, str | None]] = []
        self.backed_up = []
        for group in groups:
            root = group.dst.rstrip(os.sep) or os.sep
            root_exists = is_dir.get(root)
            if root_exists is None:
                root_exists = is_dir[root] = os.path.isdir(root)
            # relative folder -> exists; the names' folders come parents first
            here: dict[str, bool] = {"": root_exists}
            for rel in group.dirs:
                parent = rel.rpartition("/")[0]
                exists = here[parent] and os.path.isdir(group.dst + rel)
                here[rel] = exists
                is_dir[group.dst + rel] = exists
            # when no folder below dst exists yet, only the files directly in it may
            names = group.names if any(here[d] for d in group.dirs) else group.top
            for name in names:
                if here[name.rpartition("/")[0]]:
                    final = group.dst + name
                    backup = backup_for(final)
                    journal_linked.append((final, backup))
                    if backup is not None:
                        self.backed_up.append((final, backup))
        self.groups = list(groups)
        self._journal_linked = journal_linked
        self.operations = ops
        self.created_dirs = _missing_dirs(is_dir)
        if count:
            os.makedirs(backup_root, exist_ok=True)

    def commit(self, *, hook: Any = None) -> None:
        """Apply the plan; on any failure (or SIGTERM/SIGINT) undo it and re-raise.

        ``hook`` (tests) is called after each rename with its operation, and with None once the
        journal says committed."""
        journal = {
            "state": "prepared",
            "operations": [op.to_json() for op in self.operations],
            # the cached source is not needed to undo a link, only the paths
            "linked": self._journal_linked,
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
            for final, backup in self.backed_up:
                _move(final, backup)
                if hook is not None:
                    hook(Operation(final, backup, None))
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
            _place_all(self.groups, self.link_mode, hook)
            _mark_committed(self.folder)
            if hook is not None:
                hook(None)
        except BaseException:
            rollback(self.folder)
            raise
        finally:
            _restore_signals(previous)
        _finish(self.folder, [op.final for op in self.operations if op.staged is None])

    def abandon(self) -> None:
        """Drop a transaction that never started committing."""
        _discard(self.folder)


def _missing_dirs(is_dir: Mapping[str, bool]) -> list[str]:
    """Every folder the plan's files need that does not exist yet, parents first."""
    missing: set[str] = set()
    for folder, exists in is_dir.items():
        while not exists and folder not in missing:
            missing.add(folder)
            parent = os.path.dirname(folder)
            if parent == folder:
                break
            known = is_dir.get(parent)
            exists = os.path.isdir(parent) if known is None else known
            folder = parent
    return sorted(missing, key=len)


def _without_overlaps(placed: Mapping[str, str], groups: Sequence[LinkGroup]) -> list[LinkGroup]:
    """``groups`` without the names that a staged file or a later group also provides."""
    taken: dict[str, set[str]] = {}  # dst -> names that later groups link there
    out: list[LinkGroup] = []
    for group in reversed(groups):
        dst = group.dst
        drop = {final[len(dst) :] for final in placed if final.startswith(dst)}
        later = taken.get(dst)
        names = group.names
        if drop and not later:
            drop.intersection_update(names)
        if drop or later:
            names = [n for n in names if n not in drop and not (later and n in later)]
            out.append(LinkGroup(dst, group.src, names, group.dirs))
        else:
            out.append(group)
        if len(groups) > 1:
            taken.setdefault(dst, set()).update(names)
    out.reverse()
    return out


#: below this many files one thread places them all; above, several share the work (links wait
#: on the file system, not on Python, and spread over cores)
_THREADED_FILES = 2000


def _place_all(groups: list[LinkGroup], link_mode: str, hook: Any) -> None:
    """Link (or copy) every file of ``groups`` into place, creating folders as needed (in the
    worker threads too: creating a folder waits on the file system as linking does)."""
    total = sum(len(g.names) for g in groups)
    workers = min(4, os.cpu_count() or 1)
    if hook is not None or workers < 2 or total < _THREADED_FILES:
        for group in groups:
            _place_names(group.dst, group.src, group.names, link_mode, hook)
        return
    import functools

    from fitwheel.threads import run_threads

    # contiguous slices: a wheel lists each folder's files together, so threads rarely share one
    targets = []
    for group in groups:
        size = -(-len(group.names) // workers)
        for start in range(0, len(group.names), size):
            chunk = group.names[start : start + size]
            targets.append(
                functools.partial(_place_names, group.dst, group.src, chunk, link_mode, None)
            )
    run_threads(targets)


def _place_names(dst: str, src: str, names: list[str], link_mode: str, hook: Any) -> None:
    """Once a link fails for a reason other than an existing file (another filesystem, links
    not allowed there), the rest are copied."""
    try_link = link_mode == "hardlink"
    made: set[str] = set()
    for name in names:
        folder = name.rpartition("/")[0]
        if folder not in made:
            try:
                os.mkdir(dst + folder)
            except FileExistsError:
                pass
            except FileNotFoundError:
                # its parent is not there yet (another thread may be about to make it)
                os.makedirs(dst + folder, exist_ok=True)
            made.add(folder)
        # a copy keeps the executable bits, which the cached file has
        try_link = link_or_copy(src + name, dst + name, link=try_link)
        if hook is not None:
            hook(Operation(dst + name, None, src + name))


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
    if not isinstance(data, dict):
        return {}
    if (folder / COMMITTED).exists():
        data["state"] = "committed"
    return data


def _finish(folder: Path, removed: list[str] | None = None) -> None:
    if removed is None:
        removed = [
            final for final, _b, staged in _journal(folder).get("operations", []) if staged is None
        ]
    _discard(folder)
    _prune_empty_parents([Path(final) for final in removed])


def rollback(folder: Path) -> None:
    """Undo a ``prepared`` transaction (idempotent: safe to repeat after a crash)."""
    data = _journal(folder)
    if data.get("state") == "prepared":
        for final_s, backup_s in reversed(data.get("linked", [])):
            if backup_s is not None:
                if _exists(backup_s):
                    _move(backup_s, final_s)
            elif _exists(final_s):
                os.unlink(final_s)
        for final_s, backup_s, staged_s in reversed(data["operations"]):
            final = Path(final_s)
            if backup_s is not None:
                if _exists(Path(backup_s)):
                    _move(Path(backup_s), final)
            elif staged_s is not None and not _exists(Path(staged_s)) and _exists(final):
                final.unlink()
        # a folder that did not exist when the transaction was planned holds only what it
        # placed there (the lock kept everyone else out): it goes whole, parents first
        for created in sorted(data.get("created_dirs", []), key=len):
            shutil.rmtree(created, ignore_errors=True)
    _discard(folder)


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
