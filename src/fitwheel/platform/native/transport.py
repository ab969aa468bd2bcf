"""The seam between a query sequence and a native library."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol


class NativeError(Exception):
    """A library function answered with an error code (``code`` None: no code, e.g. no reply)."""

    def __init__(self, function: str, code: int | None, message: str = "") -> None:
        self.function = function
        self.code = code
        detail = message or (f"error {code}" if code is not None else "failed")
        super().__init__(f"{function}: {detail}")


class LibraryUnavailable(Exception):
    """The library could not be loaded at all."""


def load_first(paths: Sequence[str]) -> tuple[Any, str]:
    """The first of ``paths`` (fixed sonames or absolute paths, never a library search) that
    loads, and which one it was."""
    import ctypes

    errors = []
    for path in paths:
        try:
            return ctypes.CDLL(path), path
        except OSError as exc:
            errors.append(f"{path}: {exc}")
    raise LibraryUnavailable("; ".join(errors) or "no library path")


class Transport(Protocol):
    """Calls library functions by name. ``call`` returns the function's outputs (already decoded
    into ints, strings, lists and dicts) or raises :class:`NativeError` with the return code."""

    #: identifies the underlying library instance; a hung call blocks further calls with this key
    key: str

    def has(self, function: str) -> bool: ...

    def call(self, function: str, *args: Any) -> Any: ...

    def close(self) -> None: ...
