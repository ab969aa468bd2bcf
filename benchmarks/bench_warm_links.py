"""A warm install's floor in Python: the size check of every cached file and one hard link per
file, for a torch-sized tree (12,248 files in 726 folders), each way measured in one run,
alternately, round by round.

- ``whole paths``: the size check one ``stat`` per file relative to its open folder
  (:func:`fitwheel.install.cache.unpacked._sizes_match`), then the folders, then one ``link``
  per file by whole paths (the transaction's loop where links cannot be made relative to a
  folder, and everywhere before);
- ``dir_fd links`` (fitwheel's, as a warm install runs it): the same check, then each folder's
  files linked with ``src_dir_fd`` and ``dst_dir_fd`` (the kernel walks one name per path
  instead of two whole paths);
- ``one pass``: one pass over the manifest sorted by folder, each folder's source and target
  opened once, each file's size checked and the file linked in the same loop;
- ``check only`` (fitwheel's) and ``check, whole paths``: the size check alone, relative to the
  open folder and by whole path, to split the check from the links.

The tree is torch's own names (and member sizes) when the torch 2.13.0 CPU wheel is at hand
(``$FITWHEEL_BENCH_TORCH_DIR``, the peers benchmark's folder, or this machine's pip find-links
folder), else a synthetic tree of the same shape (said so); its files hold a few bytes each
(what is timed never reads them). Each way is timed twice over: by this process's CPU time
(what a shared machine disturbs least: the work is all system calls on one thread) and by the
wall clock. Work on ``/dev/shm`` where there is one (a tmpfs: no disk
noise), else ``$TMPDIR``.

    python -m benchmarks warm_links
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.harness import Case, compare, smoke

Table = list[tuple[str, list[str], list[int]]]
_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _torch_wheel() -> Path | None:
    places = [os.environ.get("FITWHEEL_BENCH_TORCH_DIR", ""), "/opt/wheels"]
    places.append(str(Path.home() / ".cache" / "fitwheel-bench"))
    for place in places:
        if place and Path(place).is_dir():
            found = sorted(Path(place).glob("torch-2.13.0*.whl"))
            if found:
                return found[0]
    return None


def tree() -> tuple[Table, str]:
    """(folder, names, sizes) rows sorted by folder, and where they came from."""
    by_folder: dict[str, tuple[list[str], list[int]]] = {}
    wheel = None if smoke() else _torch_wheel()
    if wheel is not None:
        with zipfile.ZipFile(wheel) as archive:
            members = [(i.filename, i.file_size) for i in archive.infolist() if not i.is_dir()]
        source = f"torch's own {len(members):,} names ({wheel.name})"
    else:
        count = 200 if smoke() else 12_248
        members = [(f"pkg/sub{i // 510}/mod{i // 17}/file{i}.py", i) for i in range(count)]
        source = f"a synthetic tree of {count:,} files"
    for name, size in members:
        folder, _, base = name.rpartition("/")
        names, sizes = by_folder.setdefault(folder, ([], []))
        names.append(base)
        sizes.append(size)
    return [(folder, *by_folder[folder]) for folder in sorted(by_folder)], source


def populate(root: Path, table: Table) -> None:
    """The cached entry's ``files`` folder: each file with a few bytes, its size recorded."""
    for row, (folder, names, sizes) in enumerate(table):
        where = root / folder if folder else root
        where.mkdir(parents=True, exist_ok=True)
        for i, name in enumerate(names):
            data = bytes(i % 7 + row % 3)
            (where / name).write_bytes(data)
            sizes[i] = len(data)


def _folders(table: Table) -> list[str]:
    every: set[str] = set()
    for folder, _, _ in table:
        while folder and folder not in every:
            every.add(folder)
            folder = folder.rpartition("/")[0]
    return sorted(every, key=lambda f: f.count("/"))


def _installed(src: str, dst: str, table: Table, entry: Path, *, relative: bool) -> None:
    """The size check, the folders and the links as the transaction makes them."""
    from fitwheel.install.cache.unpacked import _sizes_match
    from fitwheel.install.place.transaction import (
        LinkGroup,
        _link_names,
        _link_paths,
        _make_folders,
    )

    assert _sizes_match(entry, table)
    names = [f"{folder}/{n}" if folder else n for folder, ns, _ in table for n in ns]
    group = LinkGroup(dst, src, names, _folders(table))
    _make_folders(group)
    left, _ = (_link_names if relative else _link_paths)(group.dst, group.src, group.names)
    assert not left


def whole_paths(src: str, dst: str, table: Table, entry: Path) -> None:
    _installed(src, dst, table, entry, relative=False)


def dir_fd_links(src: str, dst: str, table: Table, entry: Path) -> None:
    _installed(src, dst, table, entry, relative=True)


def one_pass(src: str, dst: str, table: Table, entry: Path) -> None:
    del entry
    os.makedirs(dst, exist_ok=True)
    for folder in _folders(table):
        os.mkdir(dst + folder)
    link, stat, open_, close = os.link, os.stat, os.open, os.close
    for folder, names, sizes in table:
        sfd = open_(src + folder if folder else src, _FOLDER)
        dfd = open_(dst + folder if folder else dst, _FOLDER)
        try:
            for name, size in zip(names, sizes, strict=True):
                if stat(name, dir_fd=sfd).st_size != size:
                    raise AssertionError(name)
                link(name, name, src_dir_fd=sfd, dst_dir_fd=dfd)
        finally:
            close(sfd)
            close(dfd)


def check_only(src: str, dst: str, table: Table, entry: Path) -> None:
    from fitwheel.install.cache.unpacked import _sizes_match

    del src, dst
    assert _sizes_match(entry, table)


def check_whole_paths(src: str, dst: str, table: Table, entry: Path) -> None:
    del dst, entry
    stat = os.stat
    for folder, names, sizes in table:
        base = f"{src}{folder}/" if folder else src
        if [stat(base + n).st_size for n in names] != sizes:
            raise AssertionError(folder)


def _case(
    name: str,
    way: Callable[[str, str, Table, Path], None],
    work: Path,
    table: Table,
    clock: Callable[[], float],
) -> Case:
    entry = work / "entry"
    src = str(entry / "files") + os.sep
    dst = str(work / name.replace(" ", "-").replace(",", "")) + os.sep

    def setup() -> None:
        shutil.rmtree(dst, ignore_errors=True)

    return Case.func(name, lambda: way(src, dst, table, entry), setup=setup, clock=clock)


def main() -> None:
    table, source = tree()
    base = "/dev/shm" if Path("/dev/shm").is_dir() and not smoke() else None
    print(f"\n== warm links: {source}, {len(table)} folders, in {base or tempfile.gettempdir()}")
    with tempfile.TemporaryDirectory(prefix="fitwheel-bench-links-", dir=base) as tmp:
        work = Path(tmp)
        populate(work / "entry" / "files", table)
        ways = [
            ("whole paths", whole_paths),
            ("dir_fd links", dir_fd_links),
            ("one pass", one_pass),
            ("check only", check_only),
            ("check, whole paths", check_whole_paths),
        ]
        for clock, what in ((time.process_time, "CPU time"), (time.perf_counter, "wall-clock")):
            compare(
                f"size check and links of every file (in process, {what})",
                [_case(name, way, work, table, clock) for name, way in ways],
                repeat=15,
            )


if __name__ == "__main__":
    main()
