"""The environment's lock: one fitwheel process at a time writes an environment."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from fitwheel.fs import locked
from fitwheel.install.env.recovery import state_dir
from fitwheel.reporter import SILENT, Reporter


@contextlib.contextmanager
def environment_lock(prefix: Path, *, reporter: Reporter = SILENT) -> Iterator[None]:
    """Hold the environment's lock (waits for another fitwheel process to finish)."""

    def waiting() -> None:
        reporter.notice(f"waiting for another fitwheel process to finish with {prefix} ...")

    with locked(state_dir(prefix) / "lock", on_wait=waiting):
        yield
