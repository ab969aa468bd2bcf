"""What this machine's filesystem charges for the operations an install is made of.

Installing a wheel comes down to creating folders, creating files (an unpacked-wheel cache, or
the environment itself) and hard-linking files. Their costs differ by orders of magnitude on
some filesystems, and they bound every installer alike: this benchmark puts numbers on them for
the disk the other install benchmarks run on (``$TMPDIR``), 1,300 of each, the file count of the
35-distribution tree.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

from benchmarks.harness import Case, compare

COUNT = 1300


def _case(name: str, work: Path, make: Callable[[Path, int], None]) -> Case:
    folder = work / name.replace(" ", "-")

    def setup() -> None:
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir()

    def run() -> None:
        for i in range(COUNT):
            make(folder, i)

    return Case.func(name, run, setup=setup)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="fitwheel-bench-fs-") as tmp:
        work = Path(tmp)
        source = work / "source"
        source.write_bytes(b"x" * 2000)

        def create(folder: Path, i: int) -> None:
            fd = os.open(folder / f"f{i}.py", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.write(fd, b"x" * 2000)
            finally:
                os.close(fd)

        def link(folder: Path, i: int) -> None:
            os.link(source, folder / f"f{i}.py")

        def mkdir(folder: Path, i: int) -> None:
            os.mkdir(folder / f"d{i}")

        compare(
            f"{COUNT} files of 2 kB created, hard-linked, and {COUNT} folders made",
            [
                _case("create and write", work, create),
                _case("hard link", work, link),
                _case("make folder", work, mkdir),
            ],
            repeat=5,
        )


if __name__ == "__main__":
    main()
