"""PEP 610 ``direct_url.json`` records: how a distribution installed from a path, a URL or a
version-control repository rather than found on an index says where it came from.

A record's ``url`` never holds credentials: ``user:password@`` is dropped, as PEP 610 asks,
except the well-known ``git@`` user of a git URL (``ssh://git@host/repo``) and a
``${VARIABLE}`` placeholder, which hold no secret.
"""

from __future__ import annotations

import re
import urllib.parse
from pathlib import Path

_PLACEHOLDER_RE = re.compile(r"^\$\{[A-Za-z0-9_-]+\}(:\$\{[A-Za-z0-9_-]+\})?$")


def record_url(url: str, *, vcs: str | None = None) -> str:
    """``url`` as a record may hold it: without its user info, but for ``git@`` on a git URL
    and ``${VAR}`` placeholders."""
    parts = urllib.parse.urlsplit(url)
    if "@" not in parts.netloc:
        return url
    userinfo, host = parts.netloc.rsplit("@", 1)
    if (vcs == "git" and userinfo == "git") or _PLACEHOLDER_RE.match(userinfo):
        return url
    return urllib.parse.urlunsplit(parts._replace(netloc=host))


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
    return archive_record(url, sha256)


def archive_record(url: str, sha256: str | None) -> dict[str, object]:
    """The record of an archive (a wheel or an sdist) at ``url``, with its sha256 when known
    (written as pip writes it: ``hash`` and ``hashes``)."""
    info: dict[str, object] = {}
    if sha256 is not None:
        info = {"hash": f"sha256={sha256}", "hashes": {"sha256": sha256}}
    return {"url": record_url(url), "archive_info": info}


def folder_record(url: str, *, subdirectory: str | None = None) -> dict[str, object]:
    """The record of a project folder named by a ``file:`` URL."""
    out: dict[str, object] = {"url": record_url(url), "dir_info": {}}
    if subdirectory:
        out["subdirectory"] = subdirectory
    return out


def vcs_record(
    vcs: str,
    repository: str,
    commit: str,
    requested: str | None,
    subdirectory: str | None,
) -> dict[str, object]:
    """The record of a project built from a checkout of ``repository`` at ``commit``."""
    info: dict[str, object] = {"vcs": vcs, "commit_id": commit}
    if requested is not None:
        info["requested_revision"] = requested
    out: dict[str, object] = {"url": record_url(repository, vcs=vcs), "vcs_info": info}
    if subdirectory:
        out["subdirectory"] = subdirectory
    return out


def as_requirement(name: str, record: object) -> str | None:
    """A record as pip's ``freeze`` writes it: ``name @ URL`` (``git+URL@commit`` for a
    checkout, the archive's ``#sha256=``, ``#subdirectory=``); None for an editable install or
    a record that is not one."""
    if not isinstance(record, dict) or not isinstance(record.get("url"), str):
        return None
    url: str = record["url"]
    fragments: list[str] = []
    vcs_info, archive, folder = (record.get(k) for k in ("vcs_info", "archive_info", "dir_info"))
    if isinstance(vcs_info, dict):
        vcs, commit = vcs_info.get("vcs"), vcs_info.get("commit_id")
        if not isinstance(vcs, str) or not isinstance(commit, str):
            return None
        url = f"{vcs}+{url}@{commit}"
    elif isinstance(archive, dict):
        legacy = archive.get("hash")
        if isinstance(legacy, str) and "=" in legacy:
            fragments.append(legacy)
    elif isinstance(folder, dict):
        if folder.get("editable"):
            return None
    else:
        return None
    subdirectory = record.get("subdirectory")
    if isinstance(subdirectory, str) and subdirectory:
        fragments.append(f"subdirectory={subdirectory}")
    if fragments:
        url += "#" + "&".join(fragments)
    return f"{name} @ {url}"
