"""The command frame: help, usage errors, and failures that never show a traceback."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from fitwheel.cli.main import COMMANDS, main, run_guarded
from fitwheel.errors import FitwheelError


def args(debug: bool = False) -> argparse.Namespace:
    return argparse.Namespace(debug=debug)


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["--help"])
    assert exit_.value.code == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert f"\n  {name} " in out
    assert "positional arguments" not in out


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["bogus"])
    assert exit_.value.code == 2
    assert "unknown command 'bogus'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("failure", "expected"),
    [
        (FitwheelError("the index said 404"), "fitwheel: error: the index said 404"),
        (PermissionError(13, "Permission denied", "/venv/lib"), "Permission denied (/venv/lib)"),
        (KeyError("boom"), "internal error: KeyError: 'boom'. This is a bug in fitwheel"),
    ],
)
def test_failures_are_one_paragraph_without_traceback(
    capsys: pytest.CaptureFixture[str], failure: Exception, expected: str
) -> None:
    def command(_: argparse.Namespace) -> int:
        raise failure

    assert run_guarded(command, args()) == 1
    err = capsys.readouterr().err
    assert expected in err and "Traceback" not in err


def test_debug_shows_the_traceback() -> None:
    def command(_: argparse.Namespace) -> int:
        raise KeyError("boom")

    with pytest.raises(KeyError):
        run_guarded(command, args(debug=True))


def test_interrupt_exits_130(capsys: pytest.CaptureFixture[str]) -> None:
    def command(_: argparse.Namespace) -> int:
        raise KeyboardInterrupt

    assert run_guarded(command, args()) == 130
    assert "interrupted" in capsys.readouterr().err


def test_bare_invocation_prints_help_and_exits_2() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fitwheel"], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 2
    assert "commands:" in proc.stdout
