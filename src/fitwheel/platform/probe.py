"""The I/O seam of detection: a filesystem root, an environment, and whether native code may load.

Every provider reads the machine only through a :class:`Probe`, so tests (and ``--sysroot``) point
it at a directory tree that looks like another machine. Paths are given as they are on the target
(``/sys/bus/pci/devices``); symbolic links with absolute targets are resolved inside the root, and
link loops end after a bounded number of hops.
"""

from __future__ import annotations

import os

from fitwheel._values import Frozen

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

_MAX_LINK_HOPS = 40
DEFAULT_READ_LIMIT = 1 << 20
_HOST_ROOT = "/"


class Probe(Frozen):
    """``root``: the machine's ``/`` (``"/"`` for this machine), a string: paths are joined as
    strings because importing ``pathlib`` (and with it ``urllib.parse`` and ``ipaddress``) costs
    more than a whole detection of the CPU. ``env``: the environment variables of the target
    (default: this process's). ``allow_native``: whether native libraries may be loaded and
    subprocesses run (never under a sysroot: the answer must come from files alone)."""

    __slots__ = ("allow_native", "env", "root")

    root: str
    env: Mapping[str, str]
    allow_native: bool

    def __init__(
        self,
        root: str | os.PathLike[str] = _HOST_ROOT,
        env: Mapping[str, str] | None = None,
        allow_native: bool = True,
    ) -> None:
        object.__setattr__(self, "root", os.fspath(root))
        object.__setattr__(self, "env", dict(os.environ) if env is None else env)
        object.__setattr__(self, "allow_native", allow_native)

    @classmethod
    def for_sysroot(
        cls, root: str | os.PathLike[str], env: Mapping[str, str] | None = None
    ) -> Probe:
        return cls(os.path.realpath(root), dict(env or {}), allow_native=False)

    @property
    def is_host(self) -> bool:
        return self.root == _HOST_ROOT

    def resolve(self, path: str) -> str | None:
        """The host path of target path ``path``, following links inside the root.

        Returns None when a link loop or too many hops is met. The result may not exist."""
        if self.is_host:
            return path
        parts = [p for p in path.split("/") if p not in ("", ".")]
        resolved: list[str] = []
        hops = 0
        while parts:
            part = parts.pop(0)
            if part == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = os.path.join(self.root, *resolved, part)
            if os.path.islink(candidate):
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
        return os.path.join(self.root, *resolved)

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
        return host is not None and os.path.exists(host)

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
            return os.readlink(os.path.join(host, name))
        except OSError:
            return None
