"""Giving freed memory back: glibc's malloc_trim where the C library is glibc, else nothing."""

from __future__ import annotations

import os

from fitwheel import memory


def _glibc() -> bool:
    try:
        return bool(os.confstr("CS_GNU_LIBC_VERSION"))
    except (ValueError, OSError, AttributeError):
        return False


def test_give_back_trims_with_glibc_and_does_nothing_elsewhere() -> None:
    assert (memory._trim() is not None) == _glibc()
    big = [bytes(1 << 20) for _ in range(32)]
    del big
    memory.give_back()  # never raises, whatever the C library
