"""fitwheel's ``WheelDestination``: every file of a wheel goes to a staging folder first.

The staging folder lives inside the target environment (so the final move is a rename on one
filesystem). Files are numbered in small buckets rather than laid out as the final tree, so
staging creates few folders; each staged file remembers the final path it will take. Nothing
outside the staging folder is touched here. Byte-compilation, when asked for, also happens in
staging, by the target interpreter, with the final paths embedded.

This is the general path: wheels given by path, and byte-compiled installs.
:class:`UnpackedWheelSource` feeds it from the unpacked-wheel cache; its members are
:class:`CachedMemberStream` streams, which the destination links or copies by path instead of
reading.
"""

from __future__ import annotations

import io
import itertools
import json
import os
import subprocess
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO, Literal, cast

from installer.destinations import WheelDestination
from installer.records import Hash, RecordEntry, parse_record_file
from installer.scripts import Script
from installer.sources import WheelContentElement, WheelSource
from installer.utils import Scheme, construct_record_file, copyfileobj_with_hashing, fix_shebang

from fitwheel.errors import FitwheelError, InvalidWheelError
from fitwheel.fs import link_or_copy
from fitwheel.install.unpacked import UnpackedWheel

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


class CachedMemberStream(io.RawIOBase):
    """A member of an unpacked wheel: its path, RECORD hash and size, and a stream that opens the
    file only if someone reads it (the destination usually copies or links it by path)."""

    def __init__(self, path: str, digest: str, size: int) -> None:
        super().__init__()
        self.cached_path = path
        self.digest = digest
        self.size = size
        self._file: io.BufferedReader | None = None

    def _open(self) -> io.BufferedReader:
        if self._file is None:
            self._file = open(self.cached_path, "rb")  # noqa: SIM115 - closed in close()
        return self._file

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = 0) -> int:
        return self._open().seek(offset, whence)

    def readinto(self, buffer: Any) -> int:
        return self._open().readinto(buffer)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        super().close()


class UnpackedWheelSource(WheelSource):
    """A :class:`installer.sources.WheelSource` over an unpacked wheel in the cache."""

    def __init__(self, unpacked: UnpackedWheel) -> None:
        super().__init__(unpacked.distribution, unpacked.manifest.wheel_version)
        self.unpacked = unpacked
        self.folder = unpacked.folder

    @property
    def dist_info_dir(self) -> str:
        return self.unpacked.dist_info_dir

    @property
    def data_dir(self) -> str:
        return self.unpacked.data_dir

    @property
    def dist_info_filenames(self) -> list[str]:
        prefix = self.dist_info_dir + "/"
        return [
            name[len(prefix) :]
            for name, *_ in self.unpacked.members
            if name.startswith(prefix) and "/" not in name[len(prefix) :]
        ]

    def read_dist_info(self, filename: str) -> str:
        return self.unpacked.read_dist_info(filename)

    def validate_record(self, *, validate_contents: bool = True) -> None:
        """Checked when the wheel was unpacked."""

    def get_contents(self) -> Iterator[WheelContentElement]:
        records = {r[0]: r for r in parse_record_file(self.read_dist_info("RECORD").splitlines())}
        base = str(self.folder / "files")
        for name, executable, digest, size in self.unpacked.members:
            stream = CachedMemberStream(os.path.join(base, name), digest, size)
            with stream:
                yield (records.get(name, (name, "", "")), cast(BinaryIO, stream), bool(executable))


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
            raise InvalidWheelError(
                path, f"the wheel wants to write it outside its {scheme} folder"
            )
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
        if isinstance(stream, CachedMemberStream):
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

    def _place_cached(self, member: CachedMemberStream, staged: str, is_executable: bool) -> None:
        source = member.cached_path
        # a link shares the cached file's mode, so a file to make executable is copied
        needs_x = is_executable and not os.access(source, os.X_OK)
        link = self.link_mode == "hardlink" and not needs_x
        if not link_or_copy(source, staged, link=link) and is_executable:
            os.chmod(staged, 0o755)

    def write_file(
        self, scheme: Scheme, path: str | os.PathLike[str], stream: BinaryIO, is_executable: bool
    ) -> RecordEntry:
        path_ = os.fspath(path)
        if scheme == "scripts":
            # a script is made executable whatever the archive says, as pip does
            with fix_shebang(stream, self.interpreter) as fixed:
                return self._write(scheme, path_, fixed, is_executable=True)
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
