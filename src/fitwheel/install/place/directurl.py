"""PEP 610 ``direct_url.json`` records: how a distribution installed from a path (or URL)
rather than found on an index says where it came from."""

from __future__ import annotations

from pathlib import Path


def direct_url_record(
    path: Path, *, sha256: str | None = None, editable: bool = False
) -> dict[str, object]:
    """The record of a distribution installed from ``path``: a folder (a source tree, installed
    in editable mode or not) has ``dir_info``, a file (a wheel or an sdist) ``archive_info``
    with its ``sha256`` when known."""
    url = path.as_uri()
    if editable:
        return {"url": url, "dir_info": {"editable": True}}
    if path.is_dir():
        return {"url": url, "dir_info": {}}
    hashes = {"hashes": {"sha256": sha256}} if sha256 is not None else {}
    return {"url": url, "archive_info": hashes}
