"""fitwheel's ``WheelDestination``: every file of a wheel goes to a staging folder first.

The staging folder lives inside the target environment (so the final move is a rename on one
filesystem). Files are numbered in small buckets rather than laid out as the final tree, so
staging creates few folders; each staged file remembers the final path it will take. Nothing
outside the staging folder is touched here. Byte-compilation, when asked for, also happens in
staging, by the target interpreter, with the final paths embedded.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import BinaryIO, Literal

from installer.destinations import WheelDestination
from installer.records import Hash, RecordEntry
from installer.scripts import Script
from installer.utils import Scheme, construct_record_file, copyfileobj_with_hashing, fix_shebang

from fitwheel.errors import FitwheelError
from fitwheel.install.unpacked import CachedMember

_COMPILE = r"""
import json, py_compile, sys, importlib.util
done = []
for staged, final in json.load(sys.stdin):
    cfile = importlib.util.cache_from_source(staged)
    try:
        py_compile.compile(staged, cfile=cfile, dfile=final, doraise=True)
    except (py_compile.PyCompileError, SyntaxError):
        continue
    done.append([cfile, importlib.util.cache_from_source(final)])
print(json.dumps(done))
"""


_BUCKET = 128


class UnsafeWheelError(FitwheelError):
    pass


class StagingDestination(WheelDestination):
    """Writes under ``stage_root``; ``placed`` maps each final path to its staged path."""

    def __init__(
        self,
        scheme: Mapping[str, str],
        *,
        prefix: Path,
        stage_root: Path,
        interpreter: str,
        compile_bytecode: bool = False,
        numbers: Iterator[int] | None = None,
        link_mode: str = "copy",
    ) -> None:
        self.scheme = dict(scheme)
        # plain strings on the per-file path: pathlib costs more than the I/O for small files
        self._bases = {name: os.path.abspath(folder) for name, folder in scheme.items()}
        self.prefix = prefix
        self.stage_root = stage_root
        self._stage = str(stage_root)
        self.interpreter = interpreter
        self.compile_bytecode = compile_bytecode
        #: final path -> staged path
        self.placed: dict[str, str] = {}
        self._numbers = numbers if numbers is not None else itertools.count()
        self.link_mode = link_mode
        self._buckets: set[str] = set()

    def final_path(self, scheme: str, path: str) -> str:
        base = self._bases[scheme]
        final = os.path.abspath(os.path.join(base, path))
        if not final.startswith(base + os.sep):
            raise UnsafeWheelError(f"the wheel wants to write {path} outside its {scheme} folder.")
        return final

    def staged_path(self, final: str) -> str:
        number = next(self._numbers)
        # small buckets: creating files in one huge folder is several times slower on ext4
        bucket = os.path.join(self._stage, str(number // _BUCKET))
        if bucket not in self._buckets:
            os.makedirs(bucket, exist_ok=True)
            self._buckets.add(bucket)
        return os.path.join(bucket, f"{number}{os.path.splitext(final)[1]}")

    def _write(self, scheme: str, path: str, stream: BinaryIO, is_executable: bool) -> RecordEntry:
        final = self.final_path(scheme, path)
        staged = self.staged_path(final)
        if isinstance(stream, CachedMember):
            self._place_cached(stream, staged, is_executable)
            self.placed[final] = staged
            return RecordEntry(path, Hash("sha256", stream.digest), stream.size)
        with open(staged, "wb") as handle:
            digest, size = copyfileobj_with_hashing(stream, handle, "sha256")
        if is_executable:
            mode = os.stat(staged).st_mode
            os.chmod(staged, mode | ((mode & 0o444) >> 2))
        self.placed[final] = staged
        return RecordEntry(path, Hash("sha256", digest), size)

    def _place_cached(self, member: CachedMember, staged: str, is_executable: bool) -> None:
        source = member.cached_path
        if self.link_mode == "hardlink":
            try:
                os.link(source, staged)
                return
            except OSError:
                pass  # another filesystem, or links not allowed: copy instead
        shutil.copyfile(source, staged)
        if is_executable:
            os.chmod(staged, 0o755)

    def write_file(
        self, scheme: Scheme, path: str | os.PathLike[str], stream: BinaryIO, is_executable: bool
    ) -> RecordEntry:
        path_ = os.fspath(path)
        if scheme == "scripts":
            with fix_shebang(stream, self.interpreter) as fixed:
                return self._write(scheme, path_, fixed, is_executable)
        return self._write(scheme, path_, stream, is_executable)

    def write_script(
        self, name: str, module: str, attr: str, section: Literal["console", "gui"]
    ) -> RecordEntry:
        script_name, data = Script(name, module, attr, section).generate(self.interpreter, "posix")
        with io.BytesIO(data) as stream:
            return self._write("scripts", script_name, stream, is_executable=True)

    def _compile(
        self, records: list[tuple[Scheme, RecordEntry]]
    ) -> list[tuple[Scheme, RecordEntry]]:
        jobs = []
        for scheme, record in records:
            if scheme in ("purelib", "platlib") and record.path.endswith(".py"):
                final = self.final_path(scheme, record.path)
                jobs.append((self.placed[final], final))
        if not jobs:
            return []
        try:
            out = subprocess.run(
                [self.interpreter, "-I", "-c", _COMPILE],
                input=json.dumps(jobs),
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as exc:
            raise FitwheelError(f"byte-compiling with {self.interpreter} failed: {exc}") from exc
        extra: list[tuple[Scheme, RecordEntry]] = []
        for staged, final in json.loads(out):
            self.placed[final] = staged
            in_purelib = final.startswith(self._bases["purelib"] + os.sep)
            lib = Scheme("purelib") if in_purelib else Scheme("platlib")
            rel = os.path.relpath(final, self._bases[lib])
            extra.append((lib, RecordEntry(rel.replace(os.sep, "/"), None, None)))
        return extra

    def finalize_installation(
        self,
        scheme: Scheme,
        record_file_path: str,
        records: Iterable[tuple[Scheme, RecordEntry]],
    ) -> None:
        record_list = list(records)
        if self.compile_bytecode:
            compiled = self._compile(record_list)
            record_list = record_list[:-1] + compiled + record_list[-1:]

        def prefix_for(file_scheme: str) -> str | None:
            if file_scheme == scheme:
                return None
            rel = os.path.relpath(self.scheme[file_scheme], start=self.scheme[scheme])
            return rel + "/"

        with construct_record_file(record_list, prefix_for) as stream:
            self._write(scheme, record_file_path, stream, is_executable=False)
