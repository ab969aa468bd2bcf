"""A source tree's build system (PEP 518) and its backend's hooks (PEP 517/660), called through
``pyproject-hooks`` in a child process of the build environment's interpreter.

A tree without ``pyproject.toml``, or whose ``[build-system]`` names no backend, is built as pip
builds it: with ``setuptools.build_meta:__legacy__`` and ``setuptools>=40.8.0``. Each hook call
has a time bound (its whole process group is stopped when it is passed); its output is kept (the
last part of it) and shown when the hook fails, so the backend's own words reach the user.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from fitwheel.errors import BuildError

LEGACY_BACKEND = "setuptools.build_meta:__legacy__"
LEGACY_REQUIRES = ("setuptools>=40.8.0",)
#: how much of a failed hook's output is shown
_OUTPUT_TAIL = 6000


@dataclass(frozen=True, slots=True)
class BuildSystem:
    requires: tuple[str, ...]
    backend: str
    backend_path: tuple[str, ...] | None
    #: True: no ``[build-system]`` backend, so pip's legacy setuptools path
    legacy: bool = False


def read_build_system(tree: Path, what: str) -> BuildSystem:
    """The ``[build-system]`` of the source tree ``tree`` (``what`` names it in messages)."""
    from packaging.requirements import InvalidRequirement, Requirement

    from fitwheel.toml import TomlReadError, load

    pyproject = tree / "pyproject.toml"
    table: dict[str, object] = {}
    if pyproject.is_file():
        try:
            data = load(pyproject, f"{what}: pyproject.toml")
        except TomlReadError as exc:
            raise BuildError(f"{exc}.") from None
        found = data.get("build-system", {})
        if not isinstance(found, dict):
            raise BuildError(f"{what}: [build-system] in pyproject.toml is not a table.")
        table = found
    elif not (tree / "setup.py").is_file() and not (tree / "setup.cfg").is_file():
        raise BuildError(
            f"{what} has neither pyproject.toml nor setup.py, so it cannot be built: is it a "
            "Python source distribution?"
        )
    requires = table.get("requires")
    backend = table.get("build-backend")
    if requires is None and backend is None:
        return BuildSystem(LEGACY_REQUIRES, LEGACY_BACKEND, None, legacy=True)
    if requires is None:
        raise BuildError(
            f"{what}: pyproject.toml's [build-system] names a backend but no 'requires' (PEP 518 "
            "makes it mandatory); the project must list what its build needs."
        )
    if not isinstance(requires, list) or not all(isinstance(r, str) for r in requires):
        raise BuildError(f"{what}: [build-system] requires must be a list of strings.")
    for item in requires:
        try:
            Requirement(item)
        except InvalidRequirement as exc:
            raise BuildError(
                f"{what}: the build requirement {item!r} is not valid: {exc}."
            ) from None
    if backend is None:
        return BuildSystem(tuple(requires), LEGACY_BACKEND, None, legacy=True)
    if not isinstance(backend, str) or not backend.strip():
        raise BuildError(f"{what}: [build-system] build-backend must be a string.")
    path = table.get("backend-path")
    backend_path: tuple[str, ...] | None = None
    if path is not None:
        if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
            raise BuildError(f"{what}: [build-system] backend-path must be a list of strings.")
        backend_path = tuple(path)
    return BuildSystem(tuple(requires), backend.strip(), backend_path)


class _Runner:
    """pyproject-hooks' child-process runner: a time bound, a clean environment, output kept."""

    def __init__(self, python_env: Mapping[str, str], timeout: float) -> None:
        self.env = python_env
        self.timeout = timeout
        self.output = ""

    def __call__(
        self,
        cmd: Sequence[str],
        cwd: str | None = None,
        extra_environ: Mapping[str, str] | None = None,
    ) -> None:
        from fitwheel import proc

        env = {**self.env, **(extra_environ or {})}
        # a process group of its own: on timeout the whole group goes (compilers a build started)
        done = proc.run(
            cmd, timeout=self.timeout, env=env, cwd=cwd, merge_stderr=True, limit=_OUTPUT_TAIL
        )
        self.output = done.text()
        if done.returncode is None:
            raise _HookTimeout()
        if done.returncode != 0:
            raise _HookFailed(done.returncode)


class _HookTimeout(Exception):
    pass


class _HookFailed(Exception):
    def __init__(self, returncode: int) -> None:
        super().__init__(returncode)
        self.returncode = returncode


class Backend:
    """The hooks of one source tree's backend, run by the build environment's interpreter."""

    def __init__(
        self,
        tree: Path,
        system: BuildSystem,
        python: Path,
        *,
        what: str,
        timeout: float,
        env: Mapping[str, str],
    ) -> None:
        from pyproject_hooks import BuildBackendHookCaller

        self.what = what
        self.timeout = timeout
        clean = {
            k: v
            for k, v in env.items()
            if not k.startswith(("PYTHON", "PIP_", "VIRTUAL_ENV", "__PYVENV"))
        }
        bin_dir = str(python.parent)
        clean["PATH"] = bin_dir + os.pathsep + clean.get("PATH", os.defpath)
        clean["PYTHONNOUSERSITE"] = "1"
        clean["PYTHONDONTWRITEBYTECODE"] = "1"
        clean["VIRTUAL_ENV"] = str(python.parent.parent)
        self._runner = _Runner(clean, timeout)
        self._hooks = BuildBackendHookCaller(
            str(tree),
            system.backend,
            backend_path=list(system.backend_path) if system.backend_path else None,
            runner=self._runner,
            python_executable=str(python),
        )

    def _call(self, step: str, fn: object, *args: object, **kwargs: object) -> object:
        import pyproject_hooks

        try:
            return fn(*args, **kwargs)  # type: ignore[operator]
        except _HookTimeout:
            raise BuildError(
                f"building {self.what}: {step} did not finish within {self.timeout:g} s and was "
                f"stopped (raise --build-timeout for slow builds).{self._tail()}"
            ) from None
        except pyproject_hooks.BackendUnavailable as exc:
            raise BuildError(
                f"building {self.what}: the build backend {exc.backend_name!r} cannot be "
                f"imported in the build environment: its build requirements must provide it."
                f"{self._tail(exc.traceback)}"
            ) from None
        except pyproject_hooks.HookMissing as exc:
            raise BuildError(
                f"building {self.what}: the build backend has no {exc.hook_name} hook."
            ) from None
        except _HookFailed as exc:
            raise BuildError(
                f"building {self.what}: {step} failed (exit status {exc.returncode}); the "
                f"backend said:{self._tail()}"
            ) from None

    def _tail(self, text: str | None = None) -> str:
        out = (text or self._runner.output).strip()
        if not out:
            return ""
        lines = out.splitlines()[-60:]
        return "\n" + "\n".join(f"  | {line}" for line in lines)

    def requires_for_wheel(self, *, editable: bool = False) -> list[str]:
        hook = (
            self._hooks.get_requires_for_build_editable
            if editable
            else self._hooks.get_requires_for_build_wheel
        )
        step = "get_requires_for_build_" + ("editable" if editable else "wheel")
        found = self._call(step, hook)
        return [str(r) for r in found] if isinstance(found, list) else []

    def prepare_metadata(self, out: Path, *, editable: bool = False) -> Path:
        """The ``.dist-info`` folder the backend prepares (building the wheel when the backend
        has no metadata hook, as pyproject-hooks does)."""
        hook = (
            self._hooks.prepare_metadata_for_build_editable
            if editable
            else self._hooks.prepare_metadata_for_build_wheel
        )
        step = "prepare_metadata_for_build_" + ("editable" if editable else "wheel")
        name = self._call(step, hook, str(out), _allow_fallback=True)
        return out / str(name)

    def build_wheel(
        self, out: Path, *, editable: bool = False, metadata: Path | None = None
    ) -> Path:
        hook = self._hooks.build_editable if editable else self._hooks.build_wheel
        step = "build_" + ("editable" if editable else "wheel")
        name = self._call(
            step,
            hook,
            str(out),
            metadata_directory=str(metadata) if metadata is not None else None,
        )
        return out / str(name)
