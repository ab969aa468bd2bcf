"""One command's hold on an environment it writes: :class:`EnvironmentSession`.

Every writer of an environment (install, a remembered install, sync, uninstall) runs inside
one session, which owns what they all need around their work:

- interrupt handling: SIGTERM and SIGINT raise :class:`KeyboardInterrupt` for the whole block
  (:func:`~fitwheel.install.env.signals.interruptible`), so every cleanup and rollback runs;
- the environment's lock (:func:`~fitwheel.install.place.transaction.environment_lock`), taken by
  :meth:`EnvironmentSession.hold` and kept until the session ends;
- crash recovery, run once when the lock is taken (a later recovery of that environment under
  the same hold has nothing to do: :func:`~fitwheel.install.env.recovery.recovered_while_held`);
- the inventory of installed distributions, read once;
- temporary folders, removed when the session ends, however it ends.
"""

from __future__ import annotations

import contextlib
import shutil
from typing import TYPE_CHECKING

from fitwheel.install.env.lock import environment_lock
from fitwheel.install.env.recovery import recovered_while_held
from fitwheel.install.env.signals import deferred, interruptible
from fitwheel.reporter import SILENT, Reporter

if TYPE_CHECKING:
    from importlib.metadata import Distribution
    from pathlib import Path
    from types import TracebackType

    from packaging.utils import NormalizedName

    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.env.inventory import Inventory


class EnvironmentSession:
    """Use as a context manager; :meth:`hold` an environment to write it."""

    def __init__(self, *, reporter: Reporter = SILENT) -> None:
        #: where "waiting for another fitwheel process" and unreadable records are said
        self.reporter = reporter
        self._stack = contextlib.ExitStack()
        self.env: TargetEnvironment | None = None
        #: what recovering the held environment did, one line per transaction, for the user
        self.recovered: list[str] = []
        self._installed: dict[NormalizedName, Distribution] | None = None
        self._inventory: Inventory | None = None

    def __enter__(self) -> EnvironmentSession:
        self._stack.__enter__()
        self._stack.enter_context(interruptible())
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        # temporary folders first, then the lock, then the signal handlers; an exception
        # goes on (nothing here swallows one)
        self._stack.__exit__(kind, value, traceback)

    def hold(self, env: TargetEnvironment) -> list[str]:
        """Take ``env``'s lock (waiting for another fitwheel process to finish with it) until
        the session ends, and recover what a killed process left behind; returns what that
        did (also in :attr:`recovered`)."""
        self.look_at(env)
        self._stack.enter_context(environment_lock(env.prefix, reporter=self.reporter))
        self.recovered = self._stack.enter_context(
            recovered_while_held(env.prefix, env.scheme.values())
        )
        return self.recovered

    def look_at(self, env: TargetEnvironment) -> None:
        """The environment whose inventory is read, without its lock (``--dry-run``)."""
        self.env = env

    def installed(self) -> dict[NormalizedName, Distribution]:
        """The installed distributions by name (read once, before anything is written)."""
        if self._installed is None:
            self._installed = self._env().installed(reporter=self.reporter)
        return self._installed

    def inventory(self) -> Inventory:
        """The installed distributions as fitwheel reads their records (read once)."""
        if self._inventory is None:
            from fitwheel.install.env.inventory import read_inventory

            self._inventory = read_inventory(self._env().site_dirs)
        return self._inventory

    def _env(self) -> TargetEnvironment:
        if self.env is None:
            raise ValueError("no environment: call hold() or look_at() first")
        return self.env

    def temp_dir(self, prefix: str, parent: Path | None = None) -> Path:
        """A new temporary folder (in ``parent``, else the system's temporary folder),
        removed with everything in it when the session ends."""
        import tempfile
        from pathlib import Path

        path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
        self._stack.callback(_remove, path)
        return path


def _remove(path: Path) -> None:
    with deferred():  # a signal waits until the folder is gone
        shutil.rmtree(path, ignore_errors=True)


def installed_label(dist: object) -> str | None:
    """The variant label of an installed distribution (from its ``variant.json``), if any."""
    from fitwheel.install.env.inventory import variant_of

    text = getattr(dist, "read_text", lambda _n: None)("variant.json")
    return variant_of(text, "variant.json")[0]
