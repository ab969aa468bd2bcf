"""The reporters the command line gives fitwheel's layers."""

from __future__ import annotations

import argparse
import io
import os
import pty

from fitwheel.cli._reporting import ConsoleReporter, JsonReporter, reporter_for
from fitwheel.reporter import SILENT, Recorder


def _say_all(reporter: object) -> None:
    from fitwheel.reporter import Reporter

    assert isinstance(reporter, Reporter)
    reporter.notice("torch: from the cpu index")
    reporter.warning("a.whl: RECORD lists no hash for a/x.py")
    reporter.progress("a.whl", 10, 100)
    reporter.close()


def test_console_levels() -> None:
    warned = "fitwheel: warning: a.whl: RECORD lists no hash for a/x.py\n"
    for quiet, expected in (
        (0, "torch: from the cpu index\n" + warned),
        (1, warned),
        (2, ""),
    ):
        out = io.StringIO()
        _say_all(ConsoleReporter(out, quiet=quiet))
        assert out.getvalue() == expected, quiet


def test_no_bars_off_a_terminal() -> None:
    out = io.StringIO()
    reporter = ConsoleReporter(out)
    reporter.progress("a.whl", 10)
    assert out.getvalue() == ""
    reporter.close()


def test_bars_on_a_terminal_are_taken_down() -> None:
    main, child = pty.openpty()
    with os.fdopen(child, "w") as stream:
        reporter = ConsoleReporter(stream)
        reporter.progress("big.whl", 1024, 4096)
        reporter.notice("between bars")
        reporter.close()
    os.set_blocking(main, False)
    drawn = b""
    try:
        while chunk := os.read(main, 65536):
            drawn += chunk
    except (BlockingIOError, OSError):
        pass
    os.close(main)
    assert b"between bars" in drawn
    assert b"big.whl" in drawn


def test_json_keeps_everything_and_writes_only_warnings_to_stderr() -> None:
    err = io.StringIO()
    reporter = JsonReporter(err)
    _say_all(reporter)
    assert reporter.notices == ["torch: from the cpu index"]
    assert reporter.warnings == ["a.whl: RECORD lists no hash for a/x.py"]
    assert err.getvalue() == "fitwheel: warning: a.whl: RECORD lists no hash for a/x.py\n"
    silent = io.StringIO()
    _say_all(JsonReporter(silent, quiet=2))
    assert silent.getvalue() == ""


def test_recorder_passes_on_and_keeps_warnings() -> None:
    inner = JsonReporter(io.StringIO())
    recorder = Recorder(inner)
    _say_all(recorder)
    assert recorder.warnings == inner.warnings == ["a.whl: RECORD lists no hash for a/x.py"]
    assert inner.notices == ["torch: from the cpu index"]
    _say_all(SILENT)  # the silent reporter accepts everything


def test_reporter_for_options() -> None:
    assert isinstance(reporter_for(argparse.Namespace(json=True, quiet=0)), JsonReporter)
    console = reporter_for(argparse.Namespace(quiet=2))
    assert isinstance(console, ConsoleReporter) and console.quiet == 2
    assert isinstance(reporter_for(argparse.Namespace()), ConsoleReporter)
