"""The Simple Repository API: PEP 503 HTML and PEP 691 JSON project pages.

A page becomes a list of :class:`Link` (one per file, with hashes, ``requires-python``, yank state
and PEP 658/714 metadata availability). ``{name}-{version}-variants.json`` files are found among the
links by their filename, as PEP 825 asks.
"""

from __future__ import annotations

import html.parser
import json
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from fitwheel.errors import FitwheelError
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import VARIANTS_JSON_SUFFIX, VariantsJsonFilename
from fitwheel.variants.names import canonicalize_name

ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01"
)
_JSON_TYPE = "application/vnd.pypi.simple.v1+json"


class IndexPageError(FitwheelError):
    pass


@dataclass(frozen=True, slots=True)
class Link:
    """One file on an index page or in a find-links folder."""

    filename: str
    url: str
    hashes: Mapping[str, str] = field(default_factory=dict)
    requires_python: str | None = None
    #: None: not yanked; otherwise the reason ("" when none was given)
    yanked: str | None = None
    #: None: no PEP 658 metadata file; otherwise its hashes (possibly empty)
    metadata_hashes: Mapping[str, str] | None = None
    #: the page or folder this came from, for messages
    origin: str = ""
    #: the file's size in bytes where the page says (PEP 700 ``size``)
    size: int | None = None

    @property
    def is_wheel(self) -> bool:
        return self.filename.endswith(".whl")

    @property
    def is_file(self) -> bool:
        return self.url.startswith("file:")

    @property
    def sha256(self) -> str | None:
        return self.hashes.get("sha256")

    @property
    def metadata_url(self) -> str:
        return self.url.split("#", 1)[0] + ".metadata"


def variants_json_key(filename: str) -> tuple[str, str] | None:
    """``(canonical name, version)`` of a ``{name}-{version}-variants.json`` filename (None: not
    one)."""
    if not filename.endswith(VARIANTS_JSON_SUFFIX):
        return None
    try:
        parsed = VariantsJsonFilename.parse(filename)
    except VariantFormatError:
        return None
    return parsed.normalized_name, parsed.version


def project_url(index_url: str, name: str) -> str:
    return index_url.rstrip("/") + "/" + canonicalize_name(name) + "/"


def _split_fragment(url: str) -> tuple[str, dict[str, str]]:
    base, _, fragment = url.partition("#")
    hashes: dict[str, str] = {}
    if fragment:
        algo, sep, value = fragment.partition("=")
        if sep and algo.lower() in ("sha256", "sha384", "sha512", "sha224", "sha1", "md5"):
            hashes[algo.lower()] = value.lower()
    return base, hashes


def _filename_of(url: str) -> str:
    path = urllib.parse.urlsplit(url).path
    return urllib.parse.unquote(path.rsplit("/", 1)[-1])


def _metadata_attr(value: str | None) -> dict[str, str] | None:
    if value is None or value.lower() == "false":
        return None
    algo, sep, digest = value.partition("=")
    return {algo.lower(): digest.lower()} if sep else {}


class _AnchorParser(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.base: str | None = None
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "base" and self.base is None:
            self.base = dict(attrs).get("href")
        elif tag == "a":
            self.anchors.append(dict(attrs))


def parse_html(text: str, page_url: str) -> list[Link]:
    """Links of a PEP 503 page (with PEP 592 yank, PEP 658/714 metadata attributes)."""
    parser = _AnchorParser()
    parser.feed(text)
    base = urllib.parse.urljoin(page_url, parser.base) if parser.base else page_url
    links: list[Link] = []
    for attrs in parser.anchors:
        href = attrs.get("href")
        if not href:
            continue
        url, hashes = _split_fragment(urllib.parse.urljoin(base, href))
        metadata = attrs.get("data-core-metadata")
        if metadata is None:
            metadata = attrs.get("data-dist-info-metadata")
        yanked = attrs.get("data-yanked")
        links.append(
            Link(
                filename=_filename_of(url),
                url=url,
                hashes=hashes,
                requires_python=attrs.get("data-requires-python") or None,
                yanked=None if "data-yanked" not in attrs else (yanked or ""),
                metadata_hashes=_metadata_attr(metadata),
                origin=page_url,
            )
        )
    return links


def _json_metadata(value: Any) -> dict[str, str] | None:
    if value is True:
        return {}
    if isinstance(value, dict):
        return {str(k).lower(): str(v).lower() for k, v in value.items()}
    return None


def parse_json(data: Any, page_url: str) -> list[Link]:
    """Links of a PEP 691 project page (decoded JSON)."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise IndexPageError(f"{page_url}: not a PEP 691 project page (no 'files' list).")
    links: list[Link] = []
    for entry in data["files"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("url"), str):
            continue
        url, frag_hashes = _split_fragment(urllib.parse.urljoin(page_url, entry["url"]))
        hashes = {str(k).lower(): str(v).lower() for k, v in (entry.get("hashes") or {}).items()}
        yanked = entry.get("yanked", False)
        metadata = entry.get("core-metadata", entry.get("dist-info-metadata"))
        requires_python = entry.get("requires-python")
        size = entry.get("size")
        links.append(
            Link(
                filename=str(entry.get("filename") or _filename_of(url)),
                url=url,
                hashes=hashes or frag_hashes,
                requires_python=requires_python if isinstance(requires_python, str) else None,
                yanked=(yanked if isinstance(yanked, str) else "") if yanked else None,
                metadata_hashes=_json_metadata(metadata),
                origin=page_url,
                size=size if isinstance(size, int) and not isinstance(size, bool) else None,
            )
        )
    return links


def parse_page(body: bytes, content_type: str, page_url: str) -> list[Link]:
    if content_type == _JSON_TYPE or content_type == "application/json":
        try:
            data = json.loads(body)
        except ValueError as exc:
            raise IndexPageError(
                f"{page_url}: the JSON project page is not valid JSON: {exc}"
            ) from exc
        return parse_json(data, page_url)
    return parse_html(body.decode("utf-8", "replace"), page_url)
