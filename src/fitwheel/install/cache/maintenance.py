"""Looking after a cache (``fitwheel cache``): what it holds, whether it is intact, and removing
what is damaged, left behind or unused.

Every path comes from :class:`fitwheel.paths.CacheLayout`. Entries of the unpacked-wheel cache are
removed only under their exclusive lock, taken without waiting (an entry another process is
installing from is left alone), and with one rename aside before the folder is deleted, so that
no process ever sees half an entry. Downloaded wheels are checked against the sha256 their
folder is named by.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from fitwheel.fs import locked
from fitwheel.install.cache.layout import MANIFEST, CachedLayout, read_members
from fitwheel.install.cache.unpacked import check_members
from fitwheel.paths import CacheLayout

#: leftovers of killed processes (temporary folders, partial downloads) older than this go
_STALE_SECONDS = 3600


@dataclass(slots=True)
class Problem:
    path: str
    problem: str


@dataclass(slots=True)
class CacheReport:
    root: str
    checked: int = 0
    damaged: list[Problem] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    skipped_in_use: list[str] = field(default_factory=list)
    freed_bytes: int = 0


def _size(path: Path) -> int:
    if path.is_symlink() or path.is_file():
        return path.lstat().st_size
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            try:
                total += os.lstat(os.path.join(folder, name)).st_size
            except OSError:
                continue
    return total


def info(layout: CacheLayout) -> dict[str, dict[str, int]]:
    """Entries and bytes in each of the cache's folders."""
    out: dict[str, dict[str, int]] = {}
    for name, folder in (
        ("wheels", layout.wheels),
        ("unpacked", layout.unpacked),
        ("http", layout.http),
        ("envs", layout.envs),
        ("detect", layout.detect),
        ("remembered", layout.remembered),
    ):
        entries = 0
        if name in ("wheels", "unpacked"):
            entries = sum(1 for _ in _entries(folder))
        elif folder.is_dir():
            entries = sum(1 for _ in folder.rglob("*") if _.is_file())
        out[name] = {"entries": entries, "bytes": _size(folder) if folder.exists() else 0}
    return out


def _entries(folder: Path) -> Iterator[tuple[str, Path]]:
    """(sha256, path) of each entry of the wheels or unpacked folder."""
    if not folder.is_dir():
        return
    for shard in sorted(folder.iterdir()):
        if len(shard.name) != 2 or not shard.is_dir():
            continue
        for entry in sorted(shard.iterdir()):
            if entry.is_dir() and len(entry.name) == 64:
                yield entry.name, entry


def _unpacked_problem(entry: Path) -> str | None:
    try:
        data = CachedLayout.from_json(json.loads((entry / MANIFEST).read_text()))
    except (OSError, ValueError) as exc:
        return f"its manifest cannot be read ({exc})"
    if data is None:
        return "its manifest is of another version or shape"
    try:
        members = read_members(entry)
    except (OSError, ValueError) as exc:
        return f"its member list cannot be read ({exc})"
    return check_members(entry, members, hashes=True)


def _wheel_problem(sha256: str, entry: Path) -> str | None:
    files = [p for p in entry.iterdir() if p.is_file()]
    if not files:
        return "it holds no wheel"
    for path in files:
        digest = hashlib.sha256()
        try:
            with path.open("rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
        except OSError as exc:
            return f"{path.name}: {exc.strerror}"
        if digest.hexdigest() != sha256:
            return f"{path.name} does not have the sha256 its folder is named by"
    return None


def verify(layout: CacheLayout) -> CacheReport:
    """Hash every file of every entry (downloaded wheels and unpacked wheels)."""
    report = CacheReport(str(layout.root))
    for sha256, entry in _entries(layout.wheels):
        report.checked += 1
        problem = _wheel_problem(sha256, entry)
        if problem is not None:
            report.damaged.append(Problem(str(entry), problem))
    for _sha256, entry in _entries(layout.unpacked):
        report.checked += 1
        problem = _unpacked_problem(entry)
        if problem is not None:
            report.damaged.append(Problem(str(entry), problem))
    return report


def _remove_unpacked(layout: CacheLayout, entry: Path, report: CacheReport) -> None:
    lock = locked(entry.parent / f"{entry.name}.lock", wait=False)
    if not lock.__enter__():
        report.skipped_in_use.append(str(entry))
        return
    try:
        size = _size(entry)
        aside = layout.unpacked / "tmp" / f"{os.urandom(16).hex()}-removed"
        aside.parent.mkdir(parents=True, exist_ok=True)
        os.rename(entry, aside)
    finally:
        lock.release()
    shutil.rmtree(aside, ignore_errors=True)
    report.removed.append(str(entry))
    report.freed_bytes += size


def _remove_wheel(entry: Path, report: CacheReport) -> None:
    size = _size(entry)
    shutil.rmtree(entry, ignore_errors=True)
    report.removed.append(str(entry))
    report.freed_bytes += size


def _leftovers(layout: CacheLayout, now: float, report: CacheReport) -> None:
    """Temporary folders and partial downloads that killed processes left behind."""
    for tmp in (layout.unpacked / "tmp", layout.wheels / "tmp"):
        if not tmp.is_dir():
            continue
        for item in tmp.iterdir():
            try:
                age = now - item.lstat().st_mtime
            except OSError:
                continue
            if age < _STALE_SECONDS:
                continue  # perhaps a process at work
            if item.suffix == ".part":
                with locked(item, wait=False) as free:  # a download resuming holds it
                    if not free:
                        continue
            size = _size(item)
            if item.is_dir() and not item.is_symlink():
                shutil.rmtree(item, ignore_errors=True)
            else:
                item.unlink(missing_ok=True)
            report.removed.append(str(item))
            report.freed_bytes += size


def clean(layout: CacheLayout, *, now: float | None = None) -> CacheReport:
    """Remove every damaged entry (as :func:`verify` finds them) and the leftovers of killed
    processes."""
    report = verify(layout)
    for problem in report.damaged:
        entry = Path(problem.path)
        if entry.parent.parent == layout.unpacked:
            _remove_unpacked(layout, entry, report)
        else:
            _remove_wheel(entry, report)
    _leftovers(layout, time.time() if now is None else now, report)
    return report


def prune(layout: CacheLayout, *, older_than_days: float, now: float | None = None) -> CacheReport:
    """Remove the wheels and unpacked wheels not used for ``older_than_days`` days (0: all of
    them, and the index pages and remembered resolutions too), and the leftovers of killed
    processes."""
    now = time.time() if now is None else now
    limit = now - older_than_days * 86400
    report = CacheReport(str(layout.root))
    for sha256, entry in _entries(layout.unpacked):
        report.checked += 1
        if _last_use(entry.parent / f"{sha256}.lock", entry) <= limit:
            _remove_unpacked(layout, entry, report)
    for sha256, entry in _entries(layout.wheels):
        report.checked += 1
        unpacked = layout.unpacked / sha256[:2] / sha256
        if unpacked.exists():
            continue  # kept with its unpacked form
        if _last_use(layout.unpacked / sha256[:2] / f"{sha256}.lock", entry) <= limit:
            _remove_wheel(entry, report)
    for folder in (layout.http, layout.remembered):
        if older_than_days <= 0 and folder.is_dir():
            report.freed_bytes += _size(folder)
            shutil.rmtree(folder, ignore_errors=True)
            report.removed.append(str(folder))
    _leftovers(layout, now, report)
    return report


def _last_use(lock: Path, entry: Path) -> float:
    """When an entry was last installed from (its lock file is touched each time)."""
    for path in (lock, entry):
        try:
            return path.stat().st_mtime
        except OSError:
            continue
    return 0.0
