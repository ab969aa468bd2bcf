"""The environment's lock: one fitwheel process at a time writes an environment."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from fitwheel.fs import locked
from fitwheel.install.env.recovery import state_dir


@contextlib.contextmanager
def environment_lock(prefix: Path, *, notice: TextIO | None = None) -> Iterator[None]:
    """Hold the environment's lock (waits for another fitwheel process to finish)."""

    def waiting() -> None:
        if notice is not None:
            print(f"waiting for another fitwheel process to finish with {prefix} ...", file=notice)

    with locked(state_dir(prefix) / "lock", on_wait=waiting):
        yield
