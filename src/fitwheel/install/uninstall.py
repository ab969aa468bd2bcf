"""Which files an installed distribution owns (from its RECORD), for replacing or removing it."""

from __future__ import annotations

import os
from importlib import metadata as importlib_metadata
from pathlib import Path

from fitwheel.errors import FitwheelError
from fitwheel.wheel.record import RecordError, installed_paths


class UninstallError(FitwheelError):
    pass


def owned_files(dist: importlib_metadata.Distribution, prefix: Path) -> set[Path]:
    """Every file of ``dist`` inside ``prefix``: RECORD entries, their byte-code, the dist-info.

    Files outside the environment are never removed (a RECORD can name anything)."""
    dist_info = Path(str(dist._path))  # type: ignore[attr-defined]
    base = dist_info.parent
    record = dist.read_text("RECORD")
    if record is None:
        name = dist.metadata["Name"]
        raise UninstallError(
            f"{name} is installed without a RECORD file, so fitwheel cannot tell its files: "
            "remove it with the tool that installed it."
        )
    try:
        listed = installed_paths(record)
    except RecordError as exc:
        raise UninstallError(
            f"{dist_info}/RECORD: {exc}; fitwheel cannot tell its files."
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
    return files
