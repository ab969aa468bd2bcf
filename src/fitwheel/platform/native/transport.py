"""The seam between a query sequence and a native library."""

from __future__ import annotations

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


class Transport(Protocol):
    """Calls library functions by name. ``call`` returns the function's outputs (already decoded
    into ints, strings, lists and dicts) or raises :class:`NativeError` with the return code."""

    #: identifies the underlying library instance; a hung call blocks further calls with this key
    key: str

    def has(self, function: str) -> bool: ...

    def call(self, function: str, *args: Any) -> Any: ...

    def close(self) -> None: ...
