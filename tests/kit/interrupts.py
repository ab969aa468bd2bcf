"""A large install to interrupt: a wheel of about 100 MB (a few members of incompressible data,
many small files) served from a loopback index, and a ``fitwheel install`` of it run as a
child process that a test (or a benchmark) sends SIGINT at a chosen moment."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.kit.env import clean_env
from tests.kit.wheels import build_simple_index, make_wheel

NAME = "bigpkg"
#: the console script of the environment the tests run in
FITWHEEL = Path(sys.executable).with_name("fitwheel")


#: the smaller distributions ``bigpkg`` depends on (so that several wheels download at once)
DEPENDENCIES = ("bigdep-one", "bigdep-two", "bigdep-three")


def _package(
    name: str, rng: random.Random, *, blobs: int, blob_bytes: int, modules: int
) -> dict[str, str | bytes]:
    top = name.replace("-", "_")
    files: dict[str, str | bytes] = {f"{top}/__init__.py": "VERSION = '1.0'\nBUILD = 'plain'\n"}
    for i in range(blobs):
        files[f"{top}/data/blob{i}.bin"] = rng.randbytes(blob_bytes)
    packages = ("ops", "nn", "utils", "io")
    for i in range(modules):
        files[f"{top}/{packages[i % 4]}/mod{i}.py"] = f"# module {i}\n" + "\n".join(
            f"VALUE_{j} = {rng.random()!r}" for j in range(40)
        )
    for package in (*packages, "data"):
        files[f"{top}/{package}/__init__.py"] = ""
    return files


def make_wheels(folder: Path, *, megabytes: int = 100, seed: int = 0) -> Path:
    """In ``folder``: ``bigpkg-1.0-py3-none-any.whl``, of about ``megabytes`` MiB (four members
    of random bytes and 2,000 small modules in a few packages, one of them ``bigpkg/ops``),
    and the three smaller wheels it depends on (a tenth of its size each, 300 modules); each
    file's content follows from ``seed``. Returns ``folder``."""
    rng = random.Random(seed)
    blob = (megabytes << 20) * 95 // 100 // 4
    for dep in DEPENDENCIES:
        make_wheel(
            folder,
            dep,
            "1.0",
            files=_package(dep, rng, blobs=1, blob_bytes=blob * 4 // 10, modules=300),
        )
    files = _package(NAME, rng, blobs=4, blob_bytes=blob, modules=2000)
    make_wheel(folder, NAME, "1.0", requires=DEPENDENCIES, files=files)
    return folder


def build_index(out: Path, *, megabytes: int = 100, seed: int = 0) -> Path:
    """:func:`make_wheels` under ``out`` and a static simple index of them; returns the index
    folder (serve ``out``: the pages are under ``/simple/``)."""
    wheels = make_wheels(out / "wheels", megabytes=megabytes, seed=seed)
    index = build_simple_index(wheels, out / "index")
    shutil.rmtree(wheels)  # the index has its own copies
    return index


def _content_digest(path: str) -> str:
    digest = hashlib.sha256()
    if path.endswith(".dist-info" + os.sep + "RECORD"):
        # the byte-code an install lists there depends on how far compiling got
        with open(path, "rb") as handle:
            lines = [line for line in handle if b"__pycache__/" not in line]
        digest.update(b"".join(lines))
        return digest.hexdigest()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def tree_digest(root: Path) -> dict[str, str]:
    """Every file and folder under ``root`` with the sha256 of each file's content: an
    environment's state, to compare. Byte code is left out (``__pycache__`` folders, and the
    lines of RECORD naming them), and so is fitwheel's own state folder."""
    listing: dict[str, str] = {}
    for folder, dirs, files in os.walk(root):
        rel_folder = os.path.relpath(folder, root)
        dirs[:] = sorted(d for d in dirs if d not in (".fitwheel", "__pycache__"))
        for name in dirs:
            listing[os.path.join(rel_folder, name) + "/"] = "dir"
        for name in files:
            path = os.path.join(folder, name)
            if os.path.islink(path):
                listing[os.path.join(rel_folder, name)] = "link:" + os.readlink(path)
                continue
            listing[os.path.join(rel_folder, name)] = _content_digest(path)
    return listing


def leftovers(folder: Path) -> list[str]:
    """What is left in ``folder`` (a run's TMPDIR), relative."""
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@dataclass
class Interrupted:
    #: the exit status a shell reports (128 + N for a process killed by signal N)
    status: int
    #: seconds from the signal to the process's end (None: it ended before the signal)
    reaction: float | None
    stderr: str


def shell_status(returncode: int) -> int:
    """The status a shell gives for a child's ``returncode`` (a signal N is 128 + N)."""
    return 128 - returncode if returncode < 0 else returncode


def install_argv(
    venv: Path, index: str, *, compile_bytecode: bool = True, program: Path = FITWHEEL
) -> list[str]:
    """``fitwheel install --no-cache-dir bigpkg`` into ``venv`` from ``index``; ``--compile``
    (byte-compiling follows the commit point, so that a signal often comes after it).
    ``program``: the ``fitwheel`` to run (the development one by default)."""
    argv = [str(program), "install", "--python", str(venv / "bin" / "python"), "--no-cache-dir"]
    if compile_bytecode:
        argv.append("--compile")
    return [*argv, "--index-url", index, NAME]


def handling_signals(pid: int) -> bool:
    """Whether process ``pid`` catches SIGTERM: fitwheel's own handling of interrupts is in
    place (Python alone catches SIGINT only). Read from ``/proc``."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) & (1 << (signal.SIGTERM - 1)))
    except OSError:
        pass
    return False


def _until(proc: subprocess.Popen[str], ready: Callable[[int], bool]) -> bool:
    """Wait until ``ready(pid)`` (True) or the process ended (False)."""
    while not ready(proc.pid):
        if proc.poll() is not None:
            return False
        time.sleep(0.002)
    return True


def run_install(
    argv: list[str],
    tmpdir: Path,
    *,
    delay: float | None,
    after: Callable[[int], bool] | None = None,
    again: float | None = None,
) -> Interrupted:
    """Run ``argv`` with ``TMPDIR`` at ``tmpdir`` in a process group of its own, sending SIGINT
    to the group (as a terminal's Ctrl-C does) ``delay`` seconds after the start (None: never),
    or after ``after(pid)`` became true when given, and a second one ``again`` seconds later
    when given (while it cleans up); waits at most 120 s for it to end (then kills it and
    fails)."""
    env = clean_env(TMPDIR=str(tmpdir))
    proc = subprocess.Popen(
        argv,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    sent: float | None = None
    try:
        if delay is not None and (after is None or _until(proc, after)):
            try:
                proc.wait(delay)
            except subprocess.TimeoutExpired:
                sent = time.monotonic()
                os.killpg(proc.pid, signal.SIGINT)
                if again is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(again)
                    if proc.poll() is None:
                        os.killpg(proc.pid, signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise AssertionError(f"{' '.join(argv)} did not end within 120 s of its start") from None
    reaction = None if sent is None else time.monotonic() - sent
    return Interrupted(shell_status(proc.returncode), reaction, stderr)


def unpacking(tmpdir: Path, name: str = NAME) -> Callable[[int], bool]:
    """Whether an install with ``TMPDIR`` at ``tmpdir`` and ``--no-cache-dir`` is writing the
    large members of ``name``'s wheel into its temporary unpacked-wheel cache (a megabyte of one
    is there: created empty while downloading, they grow only once unpacking began)."""
    top = name.replace("-", "_")
    pattern = f"fitwheel-cache-*/unpacked/tmp/*/files/{top}/data/blob*.bin"

    def ready(_pid: int) -> bool:
        for path in tmpdir.glob(pattern):
            try:
                if path.stat().st_size > 1 << 20:
                    return True
            except OSError:
                continue
        return False

    return ready


def delays(seed: int, count: int, span: float) -> Iterator[float]:
    """``count`` moments spread over ``span`` seconds (one in each of ``count`` equal slices,
    at a random place in it), in random order."""
    rng = random.Random(seed)
    slots = [(i + rng.random()) * span / count for i in range(count)]
    rng.shuffle(slots)
    yield from slots
