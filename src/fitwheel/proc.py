"""The one way fitwheel runs a child process: a time bound, a process group of its own, bounded
output.

Every child (build backend hooks, doctor's smoke scripts, byte-compiling, git, plugins, the
probes of an interpreter or a libc) goes through :func:`run`. The child starts in a session of
its own, so that a timeout or an interrupt of fitwheel kills the whole group (compilers a build
started, a git helper) rather than the first process alone. Its output is kept up to a bound,
whatever it writes, so a chatty or hostile child cannot exhaust memory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
from collections.abc import Mapping, Sequence

#: the most bytes of each output stream kept (the tail where the stream is longer)
OUTPUT_LIMIT = 1 << 20


class Finished:
    """How a child ended: its exit code (None: killed at the time bound), and its output."""

    __slots__ = ("args", "returncode", "stderr", "stdout", "timed_out")

    def __init__(
        self, args: Sequence[str], returncode: int | None, stdout: bytes, stderr: bytes
    ) -> None:
        self.args = list(args)
        self.returncode = returncode
        self.timed_out = returncode is None
        self.stdout = stdout
        self.stderr = stderr

    @property
    def ok(self) -> bool:
        return self.returncode == 0

    def text(self, *, stream: str = "stdout") -> str:
        data = self.stdout if stream == "stdout" else self.stderr
        return data.decode("utf-8", "replace")


def run(
    args: Sequence[str],
    *,
    timeout: float,
    env: Mapping[str, str] | None = None,
    cwd: str | os.PathLike[str] | None = None,
    input: bytes | None = None,
    merge_stderr: bool = False,
    limit: int = OUTPUT_LIMIT,
) -> Finished:
    """Run ``args`` and wait at most ``timeout`` seconds; then the whole process group is killed
    and the result says ``timed_out``. ``OSError`` (no such program) reaches the caller.

    Input and output go through unnamed temporary files rather than pipes, so a child that
    writes more than a pipe holds, or reads nothing, never blocks; only the last ``limit``
    bytes of each stream are read back.
    With ``merge_stderr`` the child's stderr is written into its stdout.
    An exception in the waiting thread (an interrupt) kills the group before it propagates."""
    with (
        tempfile.TemporaryFile() as out,
        tempfile.TemporaryFile() as err,
        tempfile.TemporaryFile() as given,
    ):
        if input is not None:  # from a file too, so a child that does not read never blocks us
            given.write(input)
            given.seek(0)
        proc = subprocess.Popen(
            list(args),
            cwd=cwd,
            env=None if env is None else dict(env),
            stdin=given if input is not None else subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT if merge_stderr else err,
            start_new_session=True,
        )
        code: int | None
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(proc)
            code = None
        except BaseException:
            kill_group(proc)
            raise
        return Finished(args, code, _tail(out, limit), _tail(err, limit))


def _tail(stream: object, limit: int) -> bytes:
    import io

    assert isinstance(stream, io.BufferedRandom)
    size = stream.seek(0, os.SEEK_END)
    stream.seek(max(0, size - limit))
    return stream.read()


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill ``proc``'s process group (it was started in a session of its own) and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except OSError:
        proc.kill()
    proc.wait()


class VenvError(Exception):
    """A virtual environment could not be made; the text says why (for the caller's error)."""


def venv_python(folder: str | os.PathLike[str]) -> str:
    """The interpreter of the virtual environment ``folder`` (``bin/python``, or
    ``Scripts/python.exe`` where that is its layout)."""
    posix = os.path.join(folder, "bin", "python")
    return posix if os.path.exists(posix) else os.path.join(folder, "Scripts", "python.exe")


def make_venv(
    python: str | os.PathLike[str], folder: str | os.PathLike[str], timeout: float
) -> str:
    """A fresh virtual environment without pip of ``python`` in ``folder``, made within
    ``timeout`` seconds (build environments, plugins' isolated environments); its interpreter.
    Raises :class:`VenvError` naming what failed: the interpreter could not run, ``venv`` did
    not finish in time, or it failed (its own last words)."""
    command = [os.fspath(python), "-m", "venv", "--without-pip", os.fspath(folder)]
    try:
        done = run(command, timeout=timeout)
    except OSError as exc:
        raise VenvError(f"cannot run {os.fspath(python)}: {exc.strerror or exc}") from None
    if done.timed_out:
        raise VenvError(f"`{os.fspath(python)} -m venv` did not finish within {timeout:g} s")
    if not done.ok:
        said = (done.text(stream="stderr").strip() or done.text().strip())[-2000:]
        raise VenvError(
            f"`{os.fspath(python)} -m venv` failed (exit status {done.returncode}): "
            f"{said or 'it said nothing'}"
        )
    return venv_python(folder)
