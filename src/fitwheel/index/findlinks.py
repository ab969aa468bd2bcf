"""Find-links: local folders, ``file://`` URLs to folders, and HTML pages of links.

A folder contributes every wheel, source distribution (``.tar.gz``, ``.zip``) and
``*-variants.json`` file in it (not recursively, as pip does).
A remote find-links URL is a page of anchors, parsed like a PEP 503 page but filtered by project.
"""

from __future__ import annotations

import os
import urllib.parse
from pathlib import Path

from fitwheel.errors import InputError
from fitwheel.index.simple import Link
from fitwheel.variants.filenames import VARIANTS_JSON_SUFFIX, is_sdist_filename


class FindLinksError(InputError):
    pass


def local_path(location: str) -> Path | None:
    """The folder or file a find-links entry names, or None for a remote URL."""
    parts = urllib.parse.urlsplit(location)
    if parts.scheme == "file":
        if os.name == "nt":  # pragma: no cover - drive letters and UNC paths
            from urllib.request import url2pathname

            return Path(url2pathname(parts.path))
        return Path(urllib.parse.unquote(parts.path))
    if parts.scheme in ("http", "https"):
        return None
    return Path(location).expanduser()


def folder_links(folder: Path) -> list[Link]:
    """Wheels, sdists and variants.json files of ``folder`` (a missing folder is an error, not
    empty)."""
    if folder.is_file():
        return [_file_link(folder, str(folder.parent))]
    if not folder.is_dir():
        raise FindLinksError(
            f"the find-links location {folder} does not exist: fix --find-links or PIP_FIND_LINKS."
        )
    links = []
    for entry in sorted(folder.iterdir()):
        if entry.is_file() and (
            entry.name.endswith(".whl")
            or entry.name.endswith(VARIANTS_JSON_SUFFIX)
            or is_sdist_filename(entry.name)
        ):
            links.append(_file_link(entry, str(folder)))
    return links


def _file_link(path: Path, origin: str) -> Link:
    return Link(filename=path.name, url=path.resolve().as_uri(), origin=origin)
