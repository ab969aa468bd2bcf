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
