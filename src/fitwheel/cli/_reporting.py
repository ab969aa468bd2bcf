"""The reporters the command line gives fitwheel's layers (see :mod:`fitwheel.reporter`).

- :class:`ConsoleReporter`: notices and warnings on stderr, one line each, and progress bars
  drawn with rich while stderr is a terminal (rich is loaded only when a bar is first drawn);
- the same at ``-q``: warnings only; at ``-qq``: nothing;
- :class:`JsonReporter` (``--json``): keeps notices and warnings for the command's JSON
  document and draws nothing, so that stdout stays one document; warnings still go to stderr
  (one line each, hidden at ``-qq``), so none is lost.
"""

from __future__ import annotations

import sys

from fitwheel.reporter import Reporter

TYPE_CHECKING = False
if TYPE_CHECKING:  # no typing at run time: every command that says something loads this
    import argparse
    from typing import Any, TextIO

#: how a warning line starts on stderr
WARNING_PREFIX = "fitwheel: warning: "


class ConsoleReporter(Reporter):
    """Lines on ``stream``; ``quiet`` 1 hides notices and progress, 2 warnings too."""

    def __init__(self, stream: TextIO | None = None, *, quiet: int = 0) -> None:
        self.stream = sys.stderr if stream is None else stream
        self.quiet = quiet
        self._bar: Any = None
        self._tasks: dict[str, Any] = {}
        self._bars = quiet == 0 and self.stream.isatty()

    def notice(self, message: str) -> None:
        if self.quiet < 1:
            self._write(message)

    def warning(self, message: str) -> None:
        if self.quiet < 2:
            self._write(WARNING_PREFIX + message)

    def _write(self, line: str) -> None:
        if self._bar is not None:  # above the bars, which rich redraws below
            self._bar.console.print(line, markup=False, highlight=False, soft_wrap=True)
        else:
            print(line, file=self.stream, flush=True)

    def progress(self, what: str, advance: int, total: int | None = None) -> None:
        if not self._bars:
            return
        if self._bar is None:
            self._bar = _start_bars(self.stream)
        task = self._tasks.get(what)
        if task is None:
            task = self._tasks[what] = self._bar.add_task(what, total=total)
        self._bar.advance(task, advance)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
            self._tasks.clear()


def _start_bars(stream: TextIO) -> Any:
    from rich.console import Console
    from rich.progress import DownloadColumn, Progress, TransferSpeedColumn

    bar = Progress(
        *Progress.get_default_columns()[:2],
        DownloadColumn(),
        TransferSpeedColumn(),
        transient=True,
        console=Console(file=stream),
    )
    bar.start()
    return bar


class JsonReporter(Reporter):
    """Keeps what it is told for the command's JSON output; warnings are also written to
    ``stream`` (stderr), never to stdout."""

    def __init__(self, stream: TextIO | None = None, *, quiet: int = 0) -> None:
        self.notices: list[str] = []
        self.warnings: list[str] = []
        self._console = ConsoleReporter(stream, quiet=max(quiet, 1))  # no bars, no notices

    def notice(self, message: str) -> None:
        self.notices.append(message)

    def warning(self, message: str) -> None:
        self.warnings.append(message)
        self._console.warning(message)


def reporter_for(args: argparse.Namespace) -> Reporter:
    """The reporter a command's options ask for: JSON output, quiet levels, or the console."""
    quiet = int(getattr(args, "quiet", 0) or 0)
    if getattr(args, "json", False):
        return JsonReporter(quiet=quiet)
    return ConsoleReporter(quiet=quiet)
