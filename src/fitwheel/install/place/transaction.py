"""All-or-nothing changes to an environment: a lock, a journal, renames, and recovery.

A transaction owns a folder ``{prefix}/.fitwheel/txn-{id}/`` holding the staged files (``stage``),
the folders it builds (``build``, a mirror of the absolute paths they will take), the files it
displaces (``backup``) and ``journal.json``. Files come either staged (written into ``stage``,
moved into place by a rename) or linked (a file of the unpacked-wheel cache, hard-linked or
copied into place).

What another process may see stays whole: every new folder of the environment (a package, a
``.dist-info``, a ``share/`` tree, the highest folder that does not exist yet) is built complete
in ``build`` and moved in with one rename, the ``.dist-info`` folders last; a top-level folder of
``site-packages`` that belongs wholly to a replaced distribution is moved aside with one rename
and its new version moved in with another. Only files in folders that exist already (``bin/``, a
namespace package, a folder shared by several distributions) are placed one by one, each with a
rename or a link (a file appears whole). Committing is:

1. write the journal (every planned move) atomically; state ``prepared``;
2. build the new folders (nothing of the environment changes yet);
3. move every existing file it replaces or removes in shared folders into ``backup``, and put
   the new ones in place;
4. move each whole folder aside and in (the ``.dist-info`` folders last);
5. mark the journal ``committed``, then delete the folder.

After a crash at any point the journal tells what to undo: while it says ``prepared``,
:func:`recover` puts every backup back and removes every file and folder that was placed (a
planned path that had no backup did not exist before, and the lock kept everyone else out, so
whatever is there now is ours); once it says ``committed`` the new state stands and only the
folder is removed. A transaction folder without a journal never touched the environment and is
simply deleted. Recovery trusts no path of a journal: it acts only on paths inside the
environment (never on its scheme folders themselves) and on backups inside the transaction's
own folder, and ignores a journal that names anything else (:mod:`fitwheel.install.env.recovery`).
The lock (``flock`` on ``{prefix}/.fitwheel/lock``) serialises fitwheel processes on one
environment.

SIGTERM and SIGINT become :class:`KeyboardInterrupt` for a whole install (:func:`interruptible`,
:mod:`fitwheel.install.env.signals`): a transaction not yet committing is dropped, one committing
rolls back, and while rolling back or finishing the signal waits (:func:`deferred`). While files
are placed the signal is seen between steps (:func:`checkpoint`) and by the placing loops
themselves (:data:`fitwheel.threads.CANCEL`, every file copied and every few thousand linked),
so that a commit copying a large wheel rolls back promptly too. Once the journal says
``committed``, a signal no longer undoes anything: the install stands, and the command exits as
interrupted.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fitwheel.errors import InstallationError
from fitwheel.fs import FOLDER_FLAGS, link_or_copy, write_all
from fitwheel.install.env.recovery import (
    discard,
    finish,
    mark_committed,
    move,
    path_exists,
    rollback,
    state_dir,
    write_journal,
)
from fitwheel.install.env.signals import checkpoint, deferred, interruptible
from fitwheel.threads import CANCEL, cores, run_threads

__all__ = ["Entry", "LinkGroup", "Operation", "Transaction"]

#: how a staged file is created: a new file only, not inherited by child processes
_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


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


class Entry:
    """A folder put in place whole: built complete at ``build`` (in the transaction folder, on
    the same filesystem) and moved to ``final`` with one rename; what stood at ``final`` goes to
    ``backup`` first, with one rename too. ``build`` None: the folder is only moved aside;
    ``backup`` None: nothing stood there."""

    __slots__ = ("backup", "build", "final")

    def __init__(self, final: str, build: str | None, backup: str | None) -> None:
        self.final = final
        self.build = build
        self.backup = backup

    def __repr__(self) -> str:
        return f"Entry({self.final!r}, {self.build!r}, {self.backup!r})"

    def to_json(self) -> list[str | None]:
        return [self.final, self.build, self.backup]


class Transaction:
    def __init__(self, prefix: Path, link_mode: str = "hardlink") -> None:
        self.prefix = prefix
        #: "hardlink" (falling back to a copy across filesystems) or "copy"
        self.link_mode = link_mode
        self.operations: list[Operation] = []
        #: trees linked straight into folders that exist already, and into ``build``
        self.groups: list[LinkGroup] = []
        self.build_groups: list[LinkGroup] = []
        #: (staged, build path) of staged files that go into a folder being built
        self.build_moves: list[tuple[str, str]] = []
        self.entries: list[Entry] = []
        self.created_dirs: list[str] = []
        self.backed_up: list[tuple[str, str]] = []
        #: every final path that exists already and is replaced (not merely removed)
        self.replaced: list[str] = []
        #: (final, backup) of linked files whose folder exists already (the others need no
        #: undo of their own: their folders are removed whole)
        self._journal_linked: list[tuple[str, str | None]] = []
        self._written = 0
        self._written_folder: str | None = None
        self.folder = state_dir(self.prefix) / f"txn-{os.urandom(6).hex()}"
        # a signal between making the folder and handing the transaction back would leave the
        # folder with nobody to remove it: it waits (make the transaction under deferred() too,
        # so that it waits until the caller holds it)
        with deferred():
            (self.folder / "stage").mkdir(parents=True)

    @property
    def stage_root(self) -> Path:
        return self.folder / "stage"

    def stage_bytes(self, content: bytes, *, executable: bool = False) -> str:
        """Write ``content`` to a new file in the staging folder; returns its path."""
        self._written += 1
        folder = self._written_folder
        if folder is None:
            folder = self._written_folder = os.path.join(self.folder, "stage", "written")
            os.mkdir(folder)
        path = f"{folder}{os.sep}{self._written}"
        fd = os.open(path, _NEW_FILE, 0o666)
        try:
            write_all(fd, content)
            if executable:
                os.fchmod(fd, 0o755)
        finally:
            os.close(fd)
        return path

    def plan(
        self,
        placed: Mapping[str, str],
        removed: Iterable[str],
        groups: Sequence[LinkGroup] = (),
        *,
        whole: Iterable[str] = (),
    ) -> None:
        """Files to put in place (final path -> staged path), trees to link, and files to
        remove. A path both staged and linked gets the staged file; one linked by two groups,
        the later group's. ``whole``: the folders (``site-packages``) whose top-level folders
        are swapped whole when every file in them is removed."""
        groups = _without_overlaps(placed, groups)
        owned = set(removed)
        removed_set = set(owned)
        if removed_set:
            removed_set -= placed.keys()
            removed_set -= {g.dst + n for g in groups for n in g.names}
        layout = _Layout(str(self.folder), _swapped(owned, whole))
        layout.remove(removed_set)
        layout.stage(placed)
        for group in groups:
            layout.link(group)
        self.entries = layout.planned_entries()
        self.operations = layout.ops
        self.replaced = layout.replaced
        self.build_moves = layout.build_moves
        self.backed_up = layout.backed_up
        self._journal_linked = layout.journal_linked
        self.groups = layout.direct
        self.build_groups = layout.built
        self.created_dirs = sorted(layout.created, key=len)
        if layout.count:
            os.makedirs(layout.backup_root, exist_ok=True)

    def commit(self, *, hook: Any = None) -> None:
        """Apply the plan; on any failure (or SIGTERM/SIGINT) undo it and re-raise.

        ``hook`` (tests) is called after each step with its operation, and with None once the
        journal says committed."""
        journal = {
            "state": "prepared",
            "operations": [op.to_json() for op in self.operations],
            # the cached source is not needed to undo a link, only the paths
            "linked": self._journal_linked,
            "created_dirs": self.created_dirs,
            "entries": [e.to_json() for e in self.entries],
        }

        def step(op: Operation | None) -> None:
            if hook is not None:
                hook(op)
            checkpoint()

        # interruptible here too: a commit outside an install (uninstall, sync) rolls back on
        # SIGTERM and SIGINT as well; a signal while the journal is written waits for the
        # first checkpoint, where the whole journal is there to roll back by
        with interruptible(), deferred():
            write_journal(self.folder, journal)
            try:
                checkpoint()
                # 2. the new folders, complete, out of sight
                made: set[str] = set()
                for staged, target in self.build_moves:
                    parent = os.path.dirname(target)
                    if parent not in made:
                        os.makedirs(parent, exist_ok=True)
                        made.add(parent)
                    os.rename(staged, target)
                    step(Operation(target, None, staged))
                _place_all(self.build_groups, self.link_mode, step if hook else None)
                checkpoint()
                # 3. files in folders that exist already, one by one
                for op in self.operations:
                    if op.backup is not None:
                        move(op.final, op.backup)
                        step(op)
                for final, backup in self.backed_up:
                    move(final, backup)
                    step(Operation(final, backup, None))
                made = set()
                for op in self.operations:
                    if op.staged is not None:
                        parent = os.path.dirname(op.final)
                        if parent not in made:
                            os.makedirs(parent, exist_ok=True)
                            made.add(parent)
                        move(op.staged, op.final, parents=False)
                        step(op)
                _place_all(self.groups, self.link_mode, step if hook else None, self._scratch())
                checkpoint()
                # 4. whole folders: one rename aside, one rename in, .dist-info last
                for entry in self.entries:
                    if entry.backup is not None:
                        os.rename(entry.final, entry.backup)
                        step(Operation(entry.final, entry.backup, None))
                    if entry.build is not None:
                        os.rename(entry.build, entry.final)
                        step(Operation(entry.final, None, entry.build))
                mark_committed(self.folder)
            except BaseException:
                rollback(self.folder)
                raise
            if hook is not None:
                hook(None)
            finish(self.folder, [op.final for op in self.operations if op.staged is None])
            # a signal that came once the last step had passed its checkpoint ends the command
            # now, the install standing (not after the work that follows, byte-compiling)
            checkpoint()

    def _scratch(self) -> str | None:
        """Where files copied into shared folders are made first (the transaction folder, on
        the environment's filesystem), when any are."""
        if not self.groups:
            return None
        folder = os.path.join(self.folder, "copies")
        os.makedirs(folder, exist_ok=True)
        return folder

    def abandon(self) -> None:
        """Drop a transaction that never started committing."""
        with deferred():
            discard(self.folder)


def _swapped(owned: set[str], whole: Iterable[str]) -> set[str]:
    """The top-level folders of ``whole`` (``site-packages``) that belong wholly to what is
    removed: each is moved aside with one rename."""
    swapped: set[str] = set()
    if not owned:
        return swapped
    for root in whole:
        base = os.path.abspath(root) + os.sep
        tops = {
            f[len(base) :].partition(os.sep)[0]
            for f in owned
            if f.startswith(base) and os.sep in f[len(base) :]
        }
        for top in sorted(tops):
            path = base + top
            if _wholly_owned(path, owned):
                swapped.add(path)
    return swapped


class _Layout:
    """Where each file of a transaction goes: into a folder built whole in ``build`` (a new
    or swapped folder, moved in with one rename), or straight into a folder that exists (with
    a backup of what it replaces). Filled by :meth:`remove`, :meth:`stage` and :meth:`link`,
    in that order (backups are numbered as they are planned)."""

    def __init__(self, folder: str, swapped: set[str]) -> None:
        self.backup_root = os.path.join(folder, "backup")
        self.build_root = os.path.join(folder, "build")
        try:
            self.txn_dev = os.stat(folder).st_dev
        except OSError:
            self.txn_dev = -1
        self.count = 0
        self.swapped = swapped
        # folder -> "" (it exists: files go in one by one) or the new (or swapped) folder
        # above it that is built whole; asked once per folder
        self.state: dict[str, str] = {}
        #: folders this transaction creates one by one (another filesystem than its folder)
        self.created: set[str] = set()
        #: the folders built whole (those that get files)
        self.entries: set[str] = set()
        self.ops: list[Operation] = []
        self.replaced: list[str] = []
        self.build_moves: list[tuple[str, str]] = []
        self.journal_linked: list[tuple[str, str | None]] = []
        self.backed_up: list[tuple[str, str]] = []
        self.direct: list[LinkGroup] = []
        self.built: list[LinkGroup] = []

    def next_backup(self) -> str:
        self.count += 1
        return os.path.join(self.backup_root, str(self.count))

    def entry_of(self, path: str) -> str:
        """The folder built whole that holds ``path`` ("" when it goes in one by one)."""
        known = self.state.get(path)
        if known is not None:
            return known
        if path in self.swapped:
            result = path
        else:
            parent = os.path.dirname(path)
            above = "" if parent == path else self.entry_of(parent)
            if above or parent in self.created:
                result = above
                if parent in self.created:
                    self.created.add(path)
            elif os.path.isdir(path):
                result = ""
            elif path_exists(path):
                raise InstallationError(f"cannot install a folder over the file {path}.")
            elif _same_device(parent, self.txn_dev):
                result = path
            else:
                # another filesystem than the transaction folder: no rename can move a
                # folder built there, so its files go in one by one
                self.created.add(path)
                result = ""
        self.state[path] = result
        return result

    def backup_for(self, final: str) -> str | None:
        if not path_exists(final):
            return None
        if os.path.isdir(final) and not os.path.islink(final):
            raise InstallationError(f"cannot install a file over the folder {final}.")
        self.replaced.append(final)
        return self.next_backup()

    def remove(self, removed: Iterable[str]) -> None:
        """Files removed (those in a swapped folder go with it)."""
        in_swapped = tuple(p + os.sep for p in self.swapped)
        for final in sorted(removed):
            if in_swapped and final.startswith(in_swapped):
                continue
            if path_exists(final) and not os.path.isdir(final):
                self.ops.append(Operation(final, self.next_backup(), None))

    def stage(self, placed: Mapping[str, str]) -> None:
        """Staged files: moved into a folder being built, or into place with a rename."""
        for final, staged in sorted(placed.items()):
            parent = os.path.dirname(final)
            entry = self.entry_of(parent)
            if entry:
                self.entries.add(entry)
                self.build_moves.append((staged, self.build_root + final))
            else:
                fresh = parent in self.created
                backup = None if fresh else self.backup_for(final)
                self.ops.append(Operation(final, backup, staged))

    def link(self, group: LinkGroup) -> None:
        """A tree to link: split into the files linked into folders being built and those
        linked straight into place."""
        root = group.dst.rstrip(os.sep) or os.sep
        top_entry = self.entry_of(root)
        if top_entry:
            self.entries.add(top_entry)
            self.built.append(
                LinkGroup(
                    self.build_root + group.dst, group.src, group.names, group.dirs, group.top
                )
            )
            return
        # relative folder -> the folder built whole that holds it ("" when none)
        here: dict[str, str] = {"": ""}
        for rel in group.dirs:
            here[rel] = self._entry_below(group.dst + rel)
        direct_names, built_names = self._split_names(group, here, fresh=root in self.created)
        # the folders each part needs (those of the group's list; any it did not list are
        # found from the names when the files are placed)
        listed = len(here) == len(group.dirs) + 1
        if direct_names:
            dirs = [rel for rel in group.dirs if not here[rel]] if listed else []
            self.direct.append(LinkGroup(group.dst, group.src, direct_names, dirs))
        if built_names:
            dirs = [rel for rel in group.dirs if here[rel]] if listed else []
            self.built.append(LinkGroup(self.build_root + group.dst, group.src, built_names, dirs))

    def _entry_below(self, path: str) -> str:
        entry = self.entry_of(path)
        if entry:
            self.entries.add(entry)
        return entry

    def _split_names(
        self, group: LinkGroup, here: dict[str, str], *, fresh: bool
    ) -> tuple[list[str], list[str]]:
        """The group's names linked straight into place (each backed up, unless its folder
        is new) and those linked into a folder being built."""
        direct_names: list[str] = []
        built_names: list[str] = []
        for name in group.names:
            rel = name.rpartition("/")[0]
            found = here.get(rel)
            if found is None:  # a folder the group did not list
                found = here[rel] = self._entry_below(group.dst + rel)
            if found:
                built_names.append(name)
                continue
            direct_names.append(name)
            final = group.dst + name
            if fresh or (rel and group.dst + rel in self.created):
                continue  # a folder this transaction creates: nothing to back up
            backup = self.backup_for(final)
            self.journal_linked.append((final, backup))
            if backup is not None:
                self.backed_up.append((final, backup))
        return direct_names, built_names

    def planned_entries(self) -> list[Entry]:
        """Every folder moved in (or only aside) whole, code first, ``.dist-info`` last."""
        planned: list[Entry] = []
        for path in sorted(self.entries | self.swapped, key=_entry_order):
            backup = self.next_backup() if path in self.swapped else None
            # a swapped folder that gets nothing new is only moved aside
            build = self.build_root + path if path in self.entries else None
            planned.append(Entry(path, build, backup))
        return planned


def _entry_order(path: str) -> tuple[bool, str]:
    """Folders of code first, ``.dist-info`` folders last: a distribution shows up only once
    its files are there."""
    return (path.endswith(".dist-info"), path)


def _same_device(folder: str, dev: int) -> bool:
    try:
        return os.stat(folder).st_dev == dev
    except OSError:
        return False


def _wholly_owned(path: str, owned: set[str]) -> bool:
    """Whether every file below the folder ``path`` is in ``owned`` (byte-code aside)."""
    if os.path.islink(path) or not os.path.isdir(path):
        return False
    for folder, dirs, files in os.walk(path):
        cache = os.path.basename(folder) == "__pycache__"
        for name in files:
            full = os.path.join(folder, name)
            if full not in owned and not (cache and name.endswith(".pyc")):
                return False
        for name in dirs:
            full = os.path.join(folder, name)
            if os.path.islink(full) and full not in owned:
                return False
    return True


def _without_overlaps(placed: Mapping[str, str], groups: Sequence[LinkGroup]) -> list[LinkGroup]:
    """``groups`` without the names that a staged file or a later group also provides."""
    taken: dict[str, set[str]] = {}  # dst -> names that later groups link there
    staged: dict[str, set[str]] = {}  # dst -> names that staged files take there
    out: list[LinkGroup] = []
    for group in reversed(groups):
        dst = group.dst
        below = staged.get(dst)
        if below is None:
            # most groups of an install share a folder (site-packages): worked out once each
            below = staged[dst] = {final[len(dst) :] for final in placed if final.startswith(dst)}
        drop = set(below)
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


#: below this many files one thread copies them all; above, several share the work (a copy
#: waits on the file system, not on Python, and spreads over cores)
_THREADED_FILES = 2000


def _place_all(
    groups: list[LinkGroup], link_mode: str, hook: Any, scratch: str | None = None
) -> None:
    """Link (or copy) every file of ``groups`` into place, creating the folders they need
    first. ``scratch``: where copies are made before they take their place.

    Hard links take one thread and one ``link`` call per file, with no Python around it but the
    loop: a link is a short call into the kernel, and threads only add their hand-overs of the
    interpreter lock. A link that fails for another reason than an existing file (another
    filesystem, links not allowed) leaves the rest to :func:`_place_names`, which copies."""
    if hook is None:
        for group in groups:
            _make_folders(group)
    if hook is None and link_mode == "hardlink":
        for group in groups:
            left, missing = _link_names(group.dst, group.src, group.names)
            if left:
                # a missing folder is made there and linking goes on; otherwise links cannot
                # be made there and the rest are copied
                mode = link_mode if missing else "copy"
                _place_names(group.dst, group.src, left, mode, None, scratch)
        return
    total = sum(len(g.names) for g in groups)
    workers = min(4, cores())
    if hook is not None or workers < 2 or total < _THREADED_FILES:
        for group in groups:
            _place_names(group.dst, group.src, group.names, link_mode, hook, scratch)
        return
    import functools

    # contiguous slices: a wheel lists each folder's files together, so threads rarely share one
    targets = []
    for group in groups:
        size = -(-len(group.names) // workers)
        for start in range(0, len(group.names), size):
            chunk = group.names[start : start + size]
            targets.append(
                functools.partial(
                    _place_names, group.dst, group.src, chunk, link_mode, None, scratch
                )
            )
    run_threads(targets)


def _make_folders(group: LinkGroup) -> None:
    """The folder ``group.dst`` and every folder its names need below it, parents first (those
    that exist already are left as they are)."""
    dst = group.dst
    os.makedirs(dst, exist_ok=True)
    folders = group.dirs
    if not folders:
        needed = {name.rpartition("/")[0] for name in group.names}
        needed.discard("")
        every: set[str] = set()
        for folder in needed:
            while folder and folder not in every:
                every.add(folder)
                folder = folder.rpartition("/")[0]
        folders = sorted(every, key=lambda f: f.count("/"))
    for folder in folders:
        with contextlib.suppress(FileExistsError):
            os.mkdir(dst + folder)


#: hard links made between two looks for an interrupt (a link is a short call into the kernel)
_LINKS_BETWEEN_CHECKS = 4096


def _link_names(dst: str, src: str, names: list[str]) -> tuple[list[str], bool]:
    """Hard-link ``src + name`` to ``dst + name`` for each name, in order, into folders that
    exist. Returns the names left from the first link that failed for another reason than an
    existing file (which raises), and whether it failed for a missing folder.

    Where the platform links relative to open folders, each run of names in one folder is
    linked relative to that folder's source and target, each opened once: the kernel then
    walks one name per path instead of two whole paths (about 8% less CPU time for checking
    and linking a torch-sized tree, ``python -m benchmarks warm_links``). Symbolic links are
    linked as themselves, as ``link`` does."""
    if os.link not in os.supports_dir_fd:
        return _link_paths(dst, src, names)
    link, open_, close = os.link, os.open, os.close
    done = 0
    folder: str | None = None
    fds = [-1, -1]  # the source folder and the target folder open now
    try:
        for start in range(0, len(names), _LINKS_BETWEEN_CHECKS):
            CANCEL.check()
            for name in names[start : start + _LINKS_BETWEEN_CHECKS]:
                where, _, base = name.rpartition("/")
                if where != folder:
                    for i, fd in enumerate(fds):
                        fds[i] = -1
                        if fd >= 0:
                            close(fd)
                    fds[0] = open_(src + where, FOLDER_FLAGS)
                    fds[1] = open_(dst + where, FOLDER_FLAGS)
                    folder = where
                link(base, base, src_dir_fd=fds[0], dst_dir_fd=fds[1], follow_symlinks=False)
                done += 1
    except FileExistsError:
        raise
    except FileNotFoundError:
        return names[done:], True
    except OSError:
        return names[done:], False
    finally:
        for fd in fds:
            if fd >= 0:
                close(fd)
    return [], False


def _link_paths(dst: str, src: str, names: list[str]) -> tuple[list[str], bool]:
    """:func:`_link_names` by whole paths (where links cannot be made relative to folders)."""
    link = os.link
    done = 0
    try:
        for start in range(0, len(names), _LINKS_BETWEEN_CHECKS):
            CANCEL.check()
            for name in names[start : start + _LINKS_BETWEEN_CHECKS]:
                link(src + name, dst + name)
                done += 1
    except FileExistsError:
        raise
    except FileNotFoundError:
        return names[done:], True
    except OSError:
        return names[done:], False
    return [], False


def _place_names(
    dst: str, src: str, names: list[str], link_mode: str, hook: Any, scratch: str | None = None
) -> None:
    """Once a link fails for a reason other than an existing file (another filesystem, links
    not allowed there), the rest are copied (through ``scratch``, when given, so that each
    appears whole)."""
    try_link = link_mode == "hardlink"
    made: set[str] = set()
    for name in names:
        CANCEL.check()  # a copy of a large file takes a while: an interrupt rolls back first
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
        try_link = link_or_copy(src + name, dst + name, link=try_link, scratch=scratch)
        if hook is not None:
            hook(Operation(dst + name, None, src + name))
