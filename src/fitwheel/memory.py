"""Giving memory freed inside the process back to the system.

The C library's allocator keeps what Python frees for its own later use, and glibc grows what it
keeps after large buffers are freed (its threshold for serving them from the heap rises up to
32 MiB). Streaming a large wheel frees hundreds of megabyte-sized buffers; what the allocator
keeps of them then adds to the peak of the work that follows (checking the archive, building
its tables). :func:`give_back` returns it (glibc's ``malloc_trim``); with another C library it
does nothing. Fixing the threshold instead costs a fresh mapping and page faults for every
buffer: a quarter of the time of a torch install (``docs/performance.md``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable


@functools.cache
def _trim() -> Callable[[int], int] | None:
    try:
        import ctypes

        trim: Callable[[int], int] = ctypes.CDLL(None).malloc_trim
    except (ImportError, OSError, AttributeError, TypeError):  # not glibc (musl, macOS, ...)
        return None
    return trim


def give_back() -> None:
    """Return the memory the allocator keeps unused to the system, where it can."""
    trim = _trim()
    if trim is not None:
        trim(0)
