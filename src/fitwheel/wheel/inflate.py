"""Raw deflate for wheel members, with the one choice of implementation made once at import.

ISA-L's zlib interface is used when it is installed (it inflates about 2.5x faster than zlib, and
unpacking and verification are bound by inflating); zlib otherwise. Every inflate in fitwheel
goes through :func:`inflate_exact` or :func:`decompressobj`, which never produce more than the
size the caller allows: a member's declared size is a claim to check, never a buffer to trust.
"""

from __future__ import annotations

import importlib
import zlib
from typing import Any


def _load() -> tuple[Any, tuple[type[BaseException], ...]]:
    try:
        lib = importlib.import_module("isal.isal_zlib")
    except ImportError:
        return zlib, (zlib.error,)
    return lib, (zlib.error, lib.error)


IMPL, INFLATE_ERRORS = _load()


class InflateSizeError(Exception):
    """The stream inflates to more or fewer bytes than declared."""


def decompressobj() -> Any:
    """A raw-deflate decompressor with zlib's interface (``max_length``, ``unconsumed_tail``)."""
    return IMPL.decompressobj(-15)


def inflate_exact(raw: bytes, size: int) -> bytes:
    """``raw`` inflated, which must come to exactly ``size`` bytes; never more than ``size + 1``
    bytes are produced, whatever the stream holds. Raises :class:`InflateSizeError` when the
    size differs, one of :data:`INFLATE_ERRORS` when the stream is corrupt."""
    inflater = IMPL.decompressobj(-15)
    data: bytes = inflater.decompress(raw, size + 1)
    if len(data) != size or not inflater.eof:
        if len(data) == size and not inflater.unconsumed_tail:
            # the end-of-stream marker may still be pending in the decompressor
            data += inflater.decompress(b"", 1)
            if len(data) == size and inflater.eof:
                return data
        raise InflateSizeError(
            f"does not inflate to its declared {size} bytes (a zip bomb, or a damaged file)"
        )
    return data


def deflate(data: bytes) -> bytes:
    """``data`` as a raw deflate stream (for members fitwheel writes: RECORD, variant.json)."""
    if IMPL is not zlib:
        # ISA-L's fastest level compresses a 1.3 MB RECORD ten times faster than zlib, smaller.
        compressor = IMPL.compressobj(1, zlib.DEFLATED, -15)
    else:
        compressor = zlib.compressobj(zlib.Z_DEFAULT_COMPRESSION, zlib.DEFLATED, -15)
    return bytes(compressor.compress(data) + compressor.flush())
