"""The one way fitwheel's layers tell the user something while they work.

A layer that has something to say takes a :class:`Reporter` and calls one of three methods:

- :meth:`Reporter.notice`: what fitwheel is doing or chose (a route, a wait for a lock, a
  recovered transaction); a script can do without it;
- :meth:`Reporter.warning`: something the user should act on or know (a lenient check that let
  something pass, a GPU build for a machine without that GPU);
- :meth:`Reporter.progress`: bytes of a named piece of work done (a download, an unpack).

The base class says nothing, so a layer called without a reporter is silent, and a layer never
prints. The command line supplies the reporters that write (``fitwheel.cli._reporting``: a
console one that draws progress bars on a terminal, a quiet one, one for ``--json``); the
install workflow records the warnings it gives so that a remembered install can give them again
(:class:`Recorder`). This is the only seam: no ``TextIO`` notice streams, no progress callbacks,
no ``warnings.warn`` between layers.
"""

from __future__ import annotations


class Reporter:
    """Says nothing. Subclasses decide where each kind of message goes."""

    def notice(self, message: str) -> None:
        """What fitwheel is doing or chose; one line, no trailing newline."""

    def warning(self, message: str) -> None:
        """Something the user should know or act on; one line, no ``warning:`` prefix."""

    def progress(self, what: str, advance: int, total: int | None = None) -> None:
        """``advance`` more bytes of ``what`` are done (``total``: its size, where known)."""

    def close(self) -> None:
        """The work is over: anything drawn on the screen is taken down."""


#: the reporter of layers called without one
SILENT = Reporter()


class Recorder(Reporter):
    """Passes everything on to ``inner`` and keeps the warnings, in order, as given."""

    def __init__(self, inner: Reporter = SILENT) -> None:
        self.inner = inner
        self.warnings: list[str] = []

    def notice(self, message: str) -> None:
        self.inner.notice(message)

    def warning(self, message: str) -> None:
        self.warnings.append(message)
        self.inner.warning(message)

    def progress(self, what: str, advance: int, total: int | None = None) -> None:
        self.inner.progress(what, advance, total)

    def close(self) -> None:
        self.inner.close()
