"""Options every command and sub-command takes (``--debug``, ``-q``), and the one target path.

The commands are enumerated from the command table and each module's own parser, so a new
command or sub-command is covered without editing this file.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fitwheel.cli.main import COMMANDS, main

MACHINES = Path(__file__).resolve().parents[1] / "platform" / "machines"
PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"
MISSING = "/nonexistent/fitwheel-test/x-1.0-py3-none-any.whl"


def _leaves(prefix: list[str], parser: argparse.ArgumentParser) -> list[list[str]]:
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [prefix]
    return [
        path for name, child in subs[0].choices.items() for path in _leaves([*prefix, name], child)
    ]


def _failing_args(parser: argparse.ArgumentParser) -> list[str]:
    """Arguments that parse and then fail: every input names a file that does not exist."""
    out: list[str] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        if not action.option_strings:
            if action.nargs != "?":
                out.append(MISSING)
        elif action.required:
            out += [action.option_strings[0], MISSING]
    if "--profile" in parser._option_string_actions:
        out += ["--profile", "/nonexistent/fitwheel-test/profile.json"]
    if "--cache-dir" in parser._option_string_actions:
        out += ["--cache-dir", "/nonexistent/fitwheel-test/cache"]  # never the user's cache
    if "--no-index" in parser._option_string_actions:
        out.append("--no-index")  # never the network
    return out


def _commands() -> list[tuple[list[str], list[str]]]:
    found = []
    for name, (module_name, _) in COMMANDS.items():
        parser = argparse.ArgumentParser(prog=f"fitwheel {name}")
        importlib.import_module(module_name).configure(parser)
        for path in _leaves([name], parser):
            leaf = parser
            for word in path[1:]:
                sub = next(a for a in leaf._actions if isinstance(a, argparse._SubParsersAction))
                leaf = sub.choices[word]
            rest = _failing_args(leaf)
            if rest:  # a sub-command without inputs (``config list``) cannot be made to fail
                found.append((path, rest))
    return found


COMMAND_LINES = _commands()
IDS = [" ".join(path) for path, _ in COMMAND_LINES]


def test_every_subcommand_is_enumerated() -> None:
    assert {"variant make", "variant show", "variant strip", "index build", "detect"} <= set(IDS)


@pytest.mark.parametrize(("path", "rest"), COMMAND_LINES, ids=IDS)
def test_debug_is_accepted_and_lets_the_traceback_through(
    path: list[str], rest: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Without --debug the failure is one paragraph; with it, after the sub-command or
    # before it, the exception reaches the caller (the program prints its traceback).
    assert main([*path, *rest]) == 1
    assert capsys.readouterr().err.startswith("fitwheel: error: ")
    with pytest.raises(Exception) as raised:
        main([*path, *rest, "--debug"])
    assert not isinstance(raised.value, SystemExit), capsys.readouterr().err
    if len(path) > 1:
        with pytest.raises(Exception) as raised:
            main([path[0], "--debug", *path[1:], *rest])
        assert not isinstance(raised.value, SystemExit), capsys.readouterr().err


@pytest.mark.parametrize(("path", "rest"), COMMAND_LINES, ids=IDS)
def test_quiet_is_accepted(
    path: list[str], rest: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    for quiet in ("-q", "--quiet"):
        assert main([*path, *rest, quiet]) == 1
        err = capsys.readouterr().err
        assert err.startswith("fitwheel: error: "), err


def test_debug_prints_a_traceback_from_a_subcommand() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "fitwheel", "index", "build", MISSING, "-o", MISSING, "--debug"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 1
    assert "Traceback (most recent call last)" in proc.stderr


def test_quiet_drops_notices_and_keeps_the_result(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out_file = tmp_path / "p.json"
    argv = ["detect", "--profile", str(PROFILES / "h100.json"), "-o", str(out_file)]
    assert main(argv) == 0
    loud = capsys.readouterr().out
    assert "Profile written to" in loud
    assert main([*argv, "-q"]) == 0
    quiet = capsys.readouterr().out
    assert "Profile written to" not in quiet
    assert "nvidia" in quiet and json.loads(out_file.read_text())["properties"]["nvidia"]


def _install_target(argv: list[str]) -> dict[str, object]:
    """The profile ``fitwheel install`` would select for, as its parser reads ``argv``."""
    from fitwheel.cli import install_cmd

    parser = argparse.ArgumentParser()
    install_cmd.configure(parser)
    _, profile, _ = install_cmd._target(parser.parse_args(["pkg", *argv]))
    assert profile is not None
    return json.loads(profile.dumps())


@pytest.mark.parametrize(
    ("name", "value"),
    [("CUDA_VISIBLE_DEVICES", ""), ("NVIDIA_VISIBLE_DEVICES", "void")],
)
def test_install_sysroot_does_not_read_the_host_environment(
    name: str, value: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root = MACHINES / "gpu-h100-open"
    monkeypatch.setenv("FITWHEEL_CACHE_DIR", "/nonexistent/fitwheel-test/cache")
    monkeypatch.delenv("FITWHEEL_SYSROOT", raising=False)
    assert main(["detect", "--sysroot", str(root), "--json"]) == 0
    detected = json.loads(capsys.readouterr().out)
    assert detected["properties"]["nvidia"]["sm_arch"] == ["90_real", "90_virtual"]
    # A host variable that would hide this machine's GPUs says nothing about the sysroot's.
    monkeypatch.setenv(name, value)
    for argv in (["--sysroot", str(root)], []):
        if not argv:
            monkeypatch.setenv("FITWHEEL_SYSROOT", str(root))
        target = _install_target(argv)
        assert target["properties"] == detected["properties"]
        assert target["devices"] == detected["devices"]


def test_fitwheel_overrides_apply_under_a_sysroot(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FITWHEEL_FORCE_NVIDIA_SM_ARCH", "80_real")
    target = _install_target(["--sysroot", str(MACHINES / "gpu-h100-open")])
    assert target["properties"]["nvidia"]["sm_arch"] == ["80_real"]  # type: ignore[index]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_install_sysroot_not_a_directory_is_a_usage_error(
    how: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    missing = str(tmp_path / "no-such-root")
    env = {**os.environ, "FITWHEEL_CACHE_DIR": str(tmp_path / "cache")}
    argv = ["install", "pkg", "--no-index", "--dry-run", "--python", sys.executable]
    if how == "flag":
        argv += ["--sysroot", missing]
    else:
        env["FITWHEEL_SYSROOT"] = missing
    proc = subprocess.run(
        [sys.executable, "-m", "fitwheel", *argv],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"sysroot {missing} is not a directory" in proc.stderr
    assert "Traceback" not in proc.stderr
