"""Real source distributions for the build tests, and the build backends' wheels they need.

``make_sdist`` writes a tiny sdist with a real backend: ``setuptools`` (a ``[project]`` table),
``flit`` (``flit_core.buildapi``) or ``legacy`` (``setup.py`` only, as docopt is).
``backend_wheels`` is a folder with pinned setuptools and flit_core wheels, downloaded once
from the index pip is configured with into the test cache (``$FITWHEEL_TEST_MIRROR_CACHE``,
else the user cache) and checked by sha256 each time; :class:`BackendsUnavailable` says it
could not be had (no network on first use), the one reason a caller may skip.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path

#: the build backends the tests install from a loopback index
BACKEND_PINS = ("setuptools==80.9.0", "flit_core==3.12.0")


class BackendsUnavailable(Exception):
    pass


def _cache_root() -> Path:
    configured = os.environ.get("FITWHEEL_TEST_MIRROR_CACHE")
    if configured:
        return Path(configured)
    import platformdirs

    return Path(platformdirs.user_cache_dir("fitwheel-tests"))


def backend_wheels(root: Path | None = None) -> Path:
    """A folder holding exactly the :data:`BACKEND_PINS` wheels."""
    root = (_cache_root() if root is None else root) / "backends"
    root.mkdir(parents=True, exist_ok=True)
    key = hashlib.sha256("\n".join(BACKEND_PINS).encode()).hexdigest()[:12]
    folder = root / key
    manifest = folder / "manifest.json"
    with (root / f"{key}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            files = json.loads(manifest.read_text())
            if all(
                hashlib.sha256((folder / n).read_bytes()).hexdigest() == d for n, d in files.items()
            ) and len(list(folder.glob("*.whl"))) == len(BACKEND_PINS):
                return folder
        except (OSError, ValueError):
            pass
        folder.mkdir(exist_ok=True)
        for stale in folder.glob("*.whl"):
            stale.unlink()
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--no-deps",
                "--only-binary=:all:",
                "--disable-pip-version-check",
                "--timeout",
                "20",
                "--retries",
                "1",
                "-d",
                str(folder),
                *BACKEND_PINS,
            ],
            capture_output=True,
            text=True,
            check=False,
        )
        wheels = sorted(folder.glob("*.whl"))
        if proc.returncode != 0 or len(wheels) != len(BACKEND_PINS):
            raise BackendsUnavailable(
                "cannot download the build backends' wheels: "
                + (proc.stdout + proc.stderr).strip()[-600:]
            )
        manifest.write_text(
            json.dumps({w.name: hashlib.sha256(w.read_bytes()).hexdigest() for w in wheels})
        )
        return folder


def _pyproject(name: str, version: str, backend: str, requires: Sequence[str]) -> str:
    deps = ", ".join(json.dumps(r) for r in requires)
    module = name.replace("-", "_")
    if backend == "flit":
        return (
            '[build-system]\nrequires = ["flit_core>=3.4"]\nbuild-backend = "flit_core.buildapi"\n'
            f'\n[project]\nname = "{name}"\nversion = "{version}"\n'
            f'description = "a test package"\ndependencies = [{deps}]\n'
            f'\n[tool.flit.module]\nname = "{module}"\n'
        )
    return (
        '[build-system]\nrequires = ["setuptools>=70"]\nbuild-backend = "setuptools.build_meta"\n'
        f'\n[project]\nname = "{name}"\nversion = "{version}"\ndependencies = [{deps}]\n'
        f'\n[tool.setuptools]\npy-modules = ["{module}"]\n'
    )


def sdist_files(
    name: str,
    version: str,
    *,
    backend: str = "setuptools",
    requires: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The files of a source tree (relative path -> text)."""
    module = name.replace("-", "_")
    out: dict[str, str] = {}
    if backend == "legacy":
        out["setup.py"] = (
            "from setuptools import setup\n"
            f"setup(name={name!r}, version={version!r}, py_modules=[{module!r}], "
            f"install_requires={list(requires)!r})\n"
        )
    else:
        out["pyproject.toml"] = _pyproject(name, version, backend, requires)
    if backend == "flit":
        out[f"{module}.py"] = f'"""{name}, a test package."""\n\n__version__ = {version!r}\n'
    else:
        out[f"{module}.py"] = f"__version__ = {version!r}\n"
    out.update(files or {})
    return out


def make_source_tree(folder: Path, name: str, version: str, **options: object) -> Path:
    """A source tree (a project folder) at ``folder``; returns it."""
    for rel, text in sdist_files(name, version, **options).items():  # type: ignore[arg-type]
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return folder


def make_sdist(
    folder: Path,
    name: str,
    version: str,
    *,
    backend: str = "setuptools",
    requires: Sequence[str] = (),
    files: Mapping[str, str] | None = None,
    fmt: str = "tar.gz",
) -> Path:
    """Write ``{name}-{version}.{fmt}`` (PEP 625 name) into ``folder``; returns its path."""
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{name.replace('-', '_')}-{version}"
    content = sdist_files(name, version, backend=backend, requires=requires, files=files)
    content["PKG-INFO"] = "".join(
        [f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n"]
        + [f"Requires-Dist: {r}\n" for r in requires]
    )
    path = folder / f"{stem}.{fmt}"
    if fmt == "zip":
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
            for rel, text in content.items():
                zf.writestr(f"{stem}/{rel}", text)
        return path
    with tarfile.open(path, "w:gz") as tf:
        for rel, text in content.items():
            data = text.encode()
            info = tarfile.TarInfo(f"{stem}/{rel}")
            info.size = len(data)
            info.mode = 0o644
            tf.addfile(info, io.BytesIO(data))
    return path
