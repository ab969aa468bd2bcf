"""Wheels (and their metadata) from source distributions, in isolated build environments.

For each sdist: download it (hash-checked, into the download cache), unpack it with the one
sdist reader (:mod:`fitwheel.sdist.archive`), read its build system, make a fresh virtual
environment with the target interpreter, have fitwheel itself install the build requirements
there (``install_requirements``: the install workflow, with the same indexes, caches and hash
policy: no pip), ask the backend for its extra requirements, then prepare the metadata (what
resolution needs) or build the wheel (what installation needs).

What a build makes is kept in :attr:`fitwheel.paths.CacheLayout.built`, by the sdist's sha256:
``{sha[:2]}/{sha}/wheels/*.whl`` (any interpreter takes a wheel whose tags it supports) and
``{sha[:2]}/{sha}/metadata/{interpreter key}/METADATA`` (metadata may depend on the interpreter).
A second run neither unpacks nor builds again. Builds of one sdist by several processes at once
are serialised by a lock in its folder.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from packaging.tags import Tag

from fitwheel.errors import BuildError, FitwheelError
from fitwheel.fs import atomic_write, locked
from fitwheel.reporter import SILENT, Reporter
from fitwheel.sdist.backend import Backend, BuildSystem, read_build_system

#: ``install_requirements(python, requirements, why)``: install ``requirements`` into the
#: environment of interpreter ``python`` (a build environment); ``why`` names the build
InstallInto = Callable[[Path, Sequence[str], str], None]

DEFAULT_BUILD_TIMEOUT = 900.0


class _Prepared:
    """One sdist unpacked with its build environment ready (kept for the run)."""

    __slots__ = ("backend", "lock", "metadata_dir", "system", "tree")

    def __init__(self, tree: Path, system: BuildSystem, backend: Backend) -> None:
        self.tree = tree
        self.system = system
        self.backend = backend
        self.metadata_dir: Path | None = None
        self.lock = threading.Lock()


class SourceBuilder:
    """Builds for one target interpreter; :meth:`close` removes the build folders."""

    def __init__(
        self,
        built: Path,
        *,
        python: str,
        tags: Sequence[Tag],
        install_requirements: InstallInto,
        env: Mapping[str, str],
        timeout: float = DEFAULT_BUILD_TIMEOUT,
        reporter: Reporter = SILENT,
    ) -> None:
        self.built = built
        self.python = python
        self.tags = tuple(tags)
        self.install_requirements = install_requirements
        self.env = env
        self.timeout = timeout
        #: says when a wheel is built
        self.reporter = reporter
        self._work: Path | None = None
        self._prepared: dict[str, _Prepared] = {}
        self._lock = threading.Lock()
        self._gates: dict[str, threading.Lock] = {}
        #: the interpreter's cache key: metadata may differ between interpreters
        self._interpreter_key = hashlib.sha256(
            (python + "\0" + "\0".join(str(t) for t in self.tags[:3])).encode()
        ).hexdigest()[:16]

    # -- the cache -------------------------------------------------------------------------
    def _folder(self, sha256: str) -> Path:
        return self.built / sha256[:2] / sha256

    def cached_wheel(self, sha256: str) -> Path | None:
        """A wheel built earlier from the sdist ``sha256`` that this interpreter can install."""
        folder = self._folder(sha256) / "wheels"
        if not folder.is_dir():
            return None
        from fitwheel.variants.filenames import WheelFilename

        ranks = {tag: i for i, tag in enumerate(self.tags)}
        best: tuple[int, Path] | None = None
        for wheel in folder.glob("*.whl"):
            try:
                tags = WheelFilename.parse(wheel.name).tags
            except FitwheelError:
                continue
            found = [ranks[t] for t in tags if t in ranks]
            if found and (best is None or min(found) < best[0]):
                best = (min(found), wheel)
        return best[1] if best else None

    def cached_metadata(self, sha256: str) -> bytes | None:
        path = self._folder(sha256) / "metadata" / self._interpreter_key / "METADATA"
        try:
            return path.read_bytes()
        except OSError:
            return None

    # -- building --------------------------------------------------------------------------
    def _gate(self, sha256: str) -> threading.Lock:
        with self._lock:
            return self._gates.setdefault(sha256, threading.Lock())

    def metadata(self, sdist: Path, sha256: str, what: str) -> bytes:
        """The core metadata of the sdist at ``sdist`` (``prepare_metadata_for_build_wheel``,
        or the cached answer)."""
        with self._gate(sha256):
            known = self.cached_metadata(sha256)
            if known is not None:
                return known
            built = self.cached_wheel(sha256)
            if built is not None:
                from fitwheel.wheel.archive import WheelArchive

                with WheelArchive(built, lazy_headers=True) as archive:
                    return archive.read_member(f"{archive.dist_info}/METADATA")
            with locked(self._folder(sha256) / ".lock"):
                known = self.cached_metadata(sha256)
                if known is not None:
                    return known
                prepared = self._prepare(sdist, sha256, what)
                out = self._scratch(sha256) / "metadata"
                out.mkdir(parents=True, exist_ok=True)
                dist_info = prepared.backend.prepare_metadata(out)
                try:
                    data = (dist_info / "METADATA").read_bytes()
                except OSError:
                    raise BuildError(
                        f"building {what}: the backend prepared {dist_info.name} without a "
                        "METADATA file."
                    ) from None
                prepared.metadata_dir = dist_info
                target = self._folder(sha256) / "metadata" / self._interpreter_key / "METADATA"
                atomic_write(target, data)
                return data

    def wheel(self, sdist: Path, sha256: str, what: str) -> Path:
        """A wheel built from the sdist at ``sdist`` (or the cached one)."""
        with self._gate(sha256):
            found = self.cached_wheel(sha256)
            if found is not None:
                return found
            with locked(self._folder(sha256) / ".lock"):
                found = self.cached_wheel(sha256)
                if found is not None:
                    return found
                prepared = self._prepare(sdist, sha256, what)
                out = self._scratch(sha256) / "dist"
                out.mkdir(parents=True, exist_ok=True)
                self.reporter.notice(f"fitwheel: building a wheel for {what}")
                wheel = prepared.backend.build_wheel(out, metadata=prepared.metadata_dir)
                if not wheel.is_file() or not wheel.name.endswith(".whl"):
                    raise BuildError(
                        f"building {what}: the backend reported {wheel.name}, which it did "
                        "not write as a wheel."
                    )
                folder = self._folder(sha256) / "wheels"
                folder.mkdir(parents=True, exist_ok=True)
                final = folder / wheel.name
                tmp = folder / f".{wheel.name}.{threading.get_ident()}.tmp"
                shutil.copyfile(wheel, tmp)
                tmp.replace(final)
                if self.cached_wheel(sha256) != final:
                    raise BuildError(
                        f"building {what}: the backend built {wheel.name}, whose tags this "
                        f"interpreter ({self.python}) does not support."
                    )
                return final

    def editable(self, tree: Path, key: str, what: str) -> Path:
        """An editable wheel of the source tree ``tree`` (PEP 660's ``build_editable``); never
        cached, since it points at the tree as it is."""
        with self._gate(key + "-editable"):
            prepared = self._prepare(tree, key + "-editable", what, editable=True)
            out = self._scratch(key) / "editable"
            out.mkdir(parents=True, exist_ok=True)
            self.reporter.notice(f"fitwheel: building an editable wheel for {what}")
            wheel = prepared.backend.build_wheel(out, editable=True)
            if not wheel.is_file() or not wheel.name.endswith(".whl"):
                raise BuildError(
                    f"building {what}: the backend reported {wheel.name}, which it did not "
                    "write as a wheel."
                )
            return wheel

    def _scratch(self, sha256: str) -> Path:
        with self._lock:
            if self._work is None:
                self._work = Path(tempfile.mkdtemp(prefix="fitwheel-build-"))
        folder = self._work / sha256[:16]
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def _prepare(self, sdist: Path, sha256: str, what: str, *, editable: bool = False) -> _Prepared:
        known = self._prepared.get(sha256)
        if known is not None:
            return known
        from fitwheel.sdist.archive import unpack_sdist

        scratch = self._scratch(sha256)
        tree = sdist if sdist.is_dir() else unpack_sdist(sdist, scratch / "src")
        system = read_build_system(tree, what)
        python = self._make_environment(scratch / "env", what)
        if system.requires:
            self.install_requirements(python, system.requires, what)
        backend = Backend(tree, system, python, what=what, timeout=self.timeout, env=self.env)
        extra = backend.requires_for_wheel(editable=editable)
        if extra:
            self.install_requirements(python, extra, what)
        prepared = _Prepared(tree, system, backend)
        self._prepared[sha256] = prepared
        return prepared

    def _make_environment(self, folder: Path, what: str) -> Path:
        """A fresh virtual environment (no pip) of the target interpreter."""
        from fitwheel.proc import VenvError, make_venv

        try:
            return Path(make_venv(self.python, folder, timeout=min(self.timeout, 300)))
        except VenvError as exc:
            raise BuildError(
                f"building {what}: cannot create a build environment: {exc}."
            ) from None

    def close(self) -> None:
        work, self._work = self._work, None
        self._prepared.clear()
        if work is not None:
            with contextlib.suppress(OSError):
                shutil.rmtree(work)


def source_key(path: Path) -> str:
    """The cache key of a local source tree: its path and the stamps of its files (a tree that
    changes is built afresh)."""
    digest = hashlib.sha256(str(path.resolve()).encode())
    for item in sorted(path.rglob("*")):
        rel = item.relative_to(path).parts
        if any(
            part in (".git", "__pycache__", "build", "dist", ".venv", ".tox")
            or part.endswith(".egg-info")
            for part in rel
        ):
            continue
        if item.is_file():
            stat = item.stat()
            digest.update(f"{'/'.join(rel)}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()
