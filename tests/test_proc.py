"""The one child-process runner: time bound, group kill, bounded output, input."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from fitwheel import proc


def test_output_and_code() -> None:
    done = proc.run(
        [
            sys.executable,
            "-c",
            "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)",
        ],
        timeout=30,
    )
    assert done.returncode == 3 and not done.ok and not done.timed_out
    assert done.text().strip() == "out"
    assert done.text(stream="stderr").strip() == "err"


def test_input_reaches_the_child() -> None:
    done = proc.run(
        [sys.executable, "-c", "import sys; print(sys.stdin.read()[::-1])"],
        timeout=30,
        input=b"abc",
    )
    assert done.ok and done.text().strip() == "cba"


def test_merge_stderr() -> None:
    done = proc.run(
        [sys.executable, "-c", "import sys; print('a', file=sys.stderr)"],
        timeout=30,
        merge_stderr=True,
    )
    assert done.text().strip() == "a" and done.stderr == b""


def test_output_is_bounded_to_its_tail() -> None:
    done = proc.run(
        [sys.executable, "-c", "import sys; sys.stdout.write('x' * 100000 + 'END')"],
        timeout=30,
        limit=10,
    )
    assert done.stdout == b"x" * 7 + b"END"


def test_timeout_kills_the_whole_group(tmp_path: Path) -> None:
    marker = tmp_path / "grandchild.pid"
    script = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(marker)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(60)\n"
    )
    start = time.monotonic()
    done = proc.run([sys.executable, "-c", script], timeout=2)
    assert done.timed_out and done.returncode is None
    assert time.monotonic() - start < 30
    pid = int(marker.read_text())
    for _ in range(100):  # the grandchild was killed with its group (reaped by init)
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        with open(f"/proc/{pid}/stat") as stat:
            if stat.read().split()[2] == "Z":
                break
        time.sleep(0.05)
    else:
        pytest.fail("the grandchild outlived the time bound")


def test_missing_program_raises_oserror() -> None:
    with pytest.raises(OSError):
        proc.run(["/nonexistent/program"], timeout=5)


def test_make_venv_makes_an_environment_without_pip(tmp_path: Path) -> None:
    python = proc.make_venv(sys.executable, tmp_path / "env", timeout=120)
    assert os.path.isfile(python) and python == proc.venv_python(tmp_path / "env")
    done = proc.run([python, "-c", "import sys; print(sys.prefix != sys.base_prefix)"], timeout=60)
    assert done.text().strip() == "True"
    assert not list((tmp_path / "env").rglob("pip"))


def _fake_python(folder: Path, body: str) -> Path:
    script = folder / "python"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(0o755)
    return script


@pytest.mark.skipif(os.name != "posix", reason="a shell script stands in for the interpreter")
@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("echo 'Error: no space left on device' >&2; exit 3", "failed (exit status 3): Error: no"),
        ("exit 1", "failed (exit status 1): it said nothing"),
        ("sleep 30", "did not finish within 0.5 s"),
    ],
)
def test_make_venv_says_why_it_failed(tmp_path: Path, body: str, said: str) -> None:
    python = _fake_python(tmp_path, body)
    with pytest.raises(proc.VenvError) as caught:
        proc.make_venv(python, tmp_path / "env", timeout=0.5)
    assert said in str(caught.value) and str(python) in str(caught.value)


def test_make_venv_names_an_interpreter_that_cannot_run(tmp_path: Path) -> None:
    with pytest.raises(proc.VenvError, match=r"cannot run .*missing-python"):
        proc.make_venv(tmp_path / "missing-python", tmp_path / "env", timeout=10)
