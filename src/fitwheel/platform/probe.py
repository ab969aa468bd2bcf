"""The I/O seam of detection: a filesystem root, an environment, and whether native code may load.

Every provider reads the machine only through a :class:`Probe`, so tests (and ``--sysroot``) point
it at a directory tree that looks like another machine. Paths are given as they are on the target
(``/sys/bus/pci/devices``); symbolic links with absolute targets are resolved inside the root, and
link loops end after a bounded number of hops.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

_MAX_LINK_HOPS = 40
DEFAULT_READ_LIMIT = 1 << 20
# One shared instance: a Path caches its parsed parts, so comparing against it stays cheap on
# the thousands of reads a detection makes.
_HOST_ROOT = Path("/")


@dataclass(frozen=True)
class Probe:
    """``root``: the machine's ``/`` (``Path("/")`` for this machine).
    ``env``: the environment variables of the target.
    ``allow_native``: whether native libraries may be loaded and subprocesses run (never under a
    sysroot: the answer must come from files alone)."""

    root: Path = _HOST_ROOT
    env: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    allow_native: bool = True

    @classmethod
    def for_sysroot(cls, root: str | Path, env: Mapping[str, str] | None = None) -> Probe:
        return cls(Path(root).resolve(), dict(env or {}), allow_native=False)

    @property
    def is_host(self) -> bool:
        return self.root == _HOST_ROOT

    def resolve(self, path: str) -> Path | None:
        """The host path of target path ``path``, following links inside the root.

        Returns None when a link loop or too many hops is met. The result may not exist."""
        if self.is_host:
            return Path(path)
        parts = [p for p in path.split("/") if p not in ("", ".")]
        resolved: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = self.root.joinpath(*resolved, part)
            if candidate.is_symlink():
                hops += 1
                if hops > _MAX_LINK_HOPS:
                    return None
                try:
                    target = os.readlink(candidate)
                except OSError:
                    return None
                if target.startswith("/"):
                    resolved = []
                parts = [p for p in target.split("/") if p not in ("", ".")] + parts
                continue
            resolved.append(part)
        return self.root.joinpath(*resolved)

    def read_text(self, path: str, limit: int = DEFAULT_READ_LIMIT) -> str | None:
        """The file's text (undecodable bytes replaced), or None if it is missing or unreadable."""
        data = self.read_bytes(path, limit)
        return None if data is None else data.decode("utf-8", "replace")

    def read_bytes(self, path: str, limit: int = DEFAULT_READ_LIMIT) -> bytes | None:
        host = self.resolve(path)
        if host is None:
            return None
        try:
            with open(host, "rb") as fh:
                return fh.read(limit)
        except (OSError, ValueError):
            return None

    def exists(self, path: str) -> bool:
        host = self.resolve(path)
        return host is not None and host.exists()

    def listdir(self, path: str) -> list[str]:
        """Sorted entries of a directory; empty when it is missing or unreadable."""
        host = self.resolve(path)
        if host is None:
            return []
        try:
            return sorted(os.listdir(host))
        except OSError:
            return []

    def readlink(self, path: str) -> str | None:
        """The target of a link as stored (not resolved), or None."""
        parent, _, name = path.rstrip("/").rpartition("/")
        host = self.resolve(parent or "/")
        if host is None or not name:
            return None
        try:
            return os.readlink(host / name)
        except OSError:
            return None
