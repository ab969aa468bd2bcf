"""The file a URL names: the one rule by which fitwheel compares a URL with a file name.

Indexes write file URLs percent-encoded: PyTorch's index writes a local version's ``+`` as
``%2B`` (``torch-2.9.0%2Bcpu-cp311-cp311-manylinux_2_28_x86_64.whl``), and ``index build`` and
``Path.as_uri`` do the same. The file such a URL names is the last segment of its path, decoded.
The URL itself is never rewritten from a file name: it is fetched, and written into a lock,
exactly as the index gave it (some servers read a literal ``+`` as a space).
"""

from __future__ import annotations

import urllib.parse

#: characters no file name holds: a decoded ``%2F`` or ``%5C`` would make the name a path
_NOT_IN_NAMES = ("/", "\\", "\0")


def url_filename(url: str) -> str | None:
    """The file name ``url`` names: the last segment of its path, percent-decoded (``%2B`` and
    ``%2b`` are both ``+``, a literal ``+`` stays ``+``); the query and fragment are no part of it.

    None where that segment names no plain file: empty (a folder's URL), ``.`` or ``..``, bytes
    that are not UTF-8, or a name that decodes to hold ``/``, ``\\`` or NUL (``a%2Fb.whl``
    is not the file ``b.whl``, nor a path to trust)."""
    segment = urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1]
    try:
        name = urllib.parse.unquote(segment, errors="strict")
    except UnicodeDecodeError:
        return None
    if name in ("", ".", "..") or any(c in name for c in _NOT_IN_NAMES):
        return None
    return name


def names_file(url: str, filename: str) -> bool:
    """Whether ``url`` names the file ``filename`` (see :func:`url_filename`)."""
    return url_filename(url) == filename
