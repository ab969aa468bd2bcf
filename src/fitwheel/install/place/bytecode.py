"""Byte-compiling installed modules (``install --compile``): a step after the install's
transaction has committed, run by the environment's own interpreter under a time bound.

The modules are compiled where they lie, at their final paths, so each ``.pyc`` names its
module's real path and matches the installed file's time stamp and size (a copy made when the
files were placed has a time stamp of its own). Each ``.pyc`` is written whole or not at all
(``py_compile`` writes a temporary file and renames it), exactly as Python itself writes one
when a module is first imported. Once the compiler has finished, each distribution's RECORD is
rewritten (a new file renamed over the old one) to list the byte-code that was written, without
hash or size, as pip lists it; the uninstaller removes a module's byte-code with the module,
whether RECORD lists it or not.

So whatever happens to the compiler, the environment stays consistent: the install has
committed and stands. A compiler that runs past its time bound is killed (with every process
it started); the byte-code it finished is recorded, the rest is made by Python on first import,
and a warning names the distributions left incomplete and the bound. One that cannot start or
fails is warned about the same way. An interrupt stops the compiler and propagates; the
byte-code written so far stays, unlisted, until the module is removed.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Sequence
from typing import NamedTuple

from fitwheel import proc
from fitwheel.fs import atomic_write
from fitwheel.reporter import SILENT, Reporter
from fitwheel.wheel.record import record_line

#: how long the compiler may run for one install, in seconds (every module of every wheel)
COMPILE_TIMEOUT = 600.0

# Run by the environment's interpreter: compiles each path of the JSON list on stdin and prints,
# as each is done, its index and its .pyc's path relative to the module's folder. A module that
# cannot be compiled (a syntax error, a file it cannot write) is left to import time.
_COMPILE = r"""
import json, os, py_compile, sys
for index, path in enumerate(json.load(sys.stdin)):
    try:
        cfile = py_compile.compile(path, doraise=True)
    except Exception:
        continue
    if cfile:
        rel = os.path.relpath(cfile, os.path.dirname(path)).replace(os.sep, "/")
        print(index, rel, flush=True)
"""

#: room in the compiler's output for each module's line (index and relative .pyc path)
_LINE_ROOM = 512


class ToCompile(NamedTuple):
    """One installed distribution's modules to compile."""

    #: ``name version``, for messages
    label: str
    #: its RECORD file, and the content it was installed with
    record: str
    content: bytes
    #: (final path, path as RECORD names it) of each ``.py`` file placed in purelib or platlib
    modules: list[tuple[str, str]]


def compile_installed(
    python: str,
    dists: Sequence[ToCompile],
    *,
    timeout: float = COMPILE_TIMEOUT,
    reporter: Reporter = SILENT,
) -> None:
    """Compile the modules of ``dists`` with ``python`` (at most ``timeout`` seconds for all of
    them) and list the byte-code written in each one's RECORD; every problem is a warning (see
    the module's text), said to ``reporter``."""
    paths: list[str] = []
    index: dict[str, int] = {}
    for dist in dists:
        for final, _rel in dist.modules:
            if final not in index:
                index[final] = len(paths)
                paths.append(final)
    if not paths:
        return
    done = _run(python, paths, timeout, reporter)
    compiled = {} if done is None else _compiled(done.stdout, len(paths))
    incomplete: list[str] = []
    for dist in dists:
        lines = []
        for final, rel in dist.modules:
            cfile = compiled.get(index[final])
            if cfile is None:
                continue
            lines.append(record_line(posixpath.join(posixpath.dirname(rel), cfile), "", ""))
        if len(lines) < len(dist.modules):
            incomplete.append(dist.label)
        if lines:
            atomic_write(dist.record, _with_lines(dist.content, lines))
    if done is not None and not done.ok:
        reporter.warning(_failure(python, done, incomplete, timeout))


def _run(python: str, paths: list[str], timeout: float, reporter: Reporter) -> proc.Finished | None:
    try:
        return proc.run(
            [python, "-I", "-c", _COMPILE],
            timeout=timeout,
            input=json.dumps(paths).encode("utf-8"),
            limit=proc.OUTPUT_LIMIT + _LINE_ROOM * len(paths),
        )
    except OSError as exc:
        reporter.warning(
            f"cannot byte-compile the installed modules: {python} does not run ({exc}); the "
            "install stands, and Python compiles each module when it is first imported"
        )
        return None


def _compiled(stdout: bytes, count: int) -> dict[int, str]:
    """Index -> relative ``.pyc`` path of each module the compiler reported done."""
    out: dict[int, str] = {}
    for line in stdout.decode("utf-8", "replace").splitlines():
        number, _, rel = line.partition(" ")
        if not number.isdigit() or not rel or int(number) >= count:
            continue  # the start of a line cut off by the output bound
        if rel.startswith("__pycache__/") and "/" not in rel[len("__pycache__/") :]:
            out[int(number)] = rel
    return out


def _with_lines(content: bytes, lines: list[str]) -> bytes:
    """RECORD ``content`` with ``lines`` added before its last line (RECORD's own row)."""
    cut = content.rfind(b"\n", 0, len(content) - 1) + 1
    return content[:cut] + "".join(lines).encode("utf-8") + content[cut:]


def _failure(python: str, done: proc.Finished, incomplete: list[str], timeout: float) -> str:
    names = ", ".join(incomplete) if incomplete else "the installed distributions"
    if done.timed_out:
        why = f"did not finish within its time bound of {timeout:g} s and was stopped"
    else:
        tail = done.text(stream="stderr").strip().splitlines()[-1:] or ["no message"]
        why = f"failed (exit code {done.returncode}: {tail[0]})"
    return (
        f"byte-compiling {names} with {python} {why}; the install stands, its RECORD lists the "
        "byte-code that was written, and Python compiles the other modules when they are first "
        "imported"
    )
