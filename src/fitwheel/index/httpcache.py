"""The cache of index pages on disk: one file per URL, revalidated by ETag / Last-Modified."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from fitwheel.threads import CANCEL


class HttpCache:
    """A small cache of index pages keyed by URL: the body plus ETag / Last-Modified / max-age.

    Entries are revalidated with conditional requests once stale; ``no-store`` answers are not
    kept. Wheels do not go here (the installer has its own content-addressed cache).

    One file per entry (a line of JSON, then the body), written in place: creating files is
    what costs on most filesystems, and the body's sha256 in the JSON line turns a torn or
    half-written entry into a miss."""

    __slots__ = ("_folders", "root")

    def __init__(self, root: Path) -> None:
        self.root = root
        self._folders: set[str] = set()

    def __repr__(self) -> str:
        return f"HttpCache(root={self.root!r})"

    def _path(self, url: str) -> tuple[str, str]:
        key = hashlib.sha256(url.encode()).hexdigest()
        folder = os.path.join(self.root, key[:2])
        return folder, os.path.join(folder, key)

    def load(self, url: str) -> tuple[dict[str, Any], bytes] | None:
        try:
            with open(self._path(url)[1], "rb") as handle:
                data = handle.read()
        except OSError:
            return None
        head, sep, body = data.partition(b"\n")
        try:
            meta = json.loads(head) if sep else None
        except ValueError:
            return None
        if (
            not isinstance(meta, dict)
            or meta.get("url") != url
            or hashlib.sha256(body).hexdigest() != meta.get("sha256")
        ):
            return None
        return meta, body

    def fresh_sha256(self, url: str, now: float) -> str | None:
        """The sha256 of the body kept for ``url`` while the entry is fresh (its ``max-age`` not
        past at ``now``), else None; only the entry's first line is read (a torn body is
        found when the entry is loaded)."""
        try:
            with open(self._path(url)[1], "rb") as handle:
                head = handle.readline(1 << 16)
        except OSError:
            return None
        try:
            meta = json.loads(head)
            expires = float(meta.get("expires_at", 0))
        except (ValueError, TypeError, AttributeError):
            return None
        sha256 = meta.get("sha256")
        if meta.get("url") != url or not isinstance(sha256, str) or not expires > now:
            return None
        return sha256

    def store(
        self,
        url: str,
        headers: Mapping[str, str],
        body: bytes,
        previous: Mapping[str, Any] | None = None,
    ) -> None:
        """Keep ``body``; ``previous`` (the entry a 304 confirmed) is not written again when
        nothing in it would change."""
        control = _cache_control(headers.get("cache-control", ""))
        if "no-store" in control:
            return
        max_age = 0
        if not {"no-cache", "private"} & control.keys():
            try:
                max_age = int(control.get("max-age", "0"))
            except ValueError:
                max_age = 0
        meta = {
            "url": url,
            "etag": headers.get("etag"),
            "last_modified": headers.get("last-modified"),
            "content_type": headers.get("content-type", ""),
            "expires_at": time.time() + max_age,
            "sha256": hashlib.sha256(body).hexdigest(),
        }
        if previous is not None and max_age == 0:
            same = ("etag", "last_modified", "content_type", "sha256")
            if all(previous.get(k) == meta[k] for k in same):
                return
        if CANCEL.cancelled:
            return  # the command is stopping; its temporary cache may be going away
        folder, path = self._path(url)
        try:
            if folder not in self._folders:
                self._make_folder(folder)
            # a new file rather than truncating the old one: ext4 flushes a truncated file
            # to the disk on close
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
            try:
                os.write(fd, json.dumps(meta).encode() + b"\n" + body)
            finally:
                os.close(fd)
        except OSError:
            pass  # a cache that cannot be written only costs speed

    def _make_folder(self, folder: str) -> None:
        """Make one of the cache's folders. The root is made once; a folder is then made only
        inside it, so a request that ends after the root was removed (a command's temporary
        cache, removed when it ends) cannot bring it back: its write fails, and is dropped."""
        if not self._folders:
            os.makedirs(self.root, exist_ok=True)
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder)
        self._folders.add(folder)


def _cache_control(value: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in value.split(","):
        key, _, val = item.strip().partition("=")
        if key:
            out[key.lower()] = val.strip('"')
    return out
