"""The Simple Repository API: PEP 503 HTML and PEP 691 JSON project pages.

A page becomes a list of :class:`Link` (one per file, with hashes, ``requires-python``, yank state
and PEP 658/714 metadata availability). ``{name}-{version}-variants.json`` files are found among the
links by their filename, as PEP 825 asks.
"""

from __future__ import annotations

import functools
import json
import re
import urllib.parse
from collections.abc import Mapping
from typing import Any

from fitwheel._values import Frozen
from fitwheel.errors import NetworkError
from fitwheel.index.urlnames import url_filename
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import VARIANTS_JSON_SUFFIX, VariantsJsonFilename
from fitwheel.variants.names import canonicalize_name

ACCEPT = (
    "application/vnd.pypi.simple.v1+json, application/vnd.pypi.simple.v1+html;q=0.2, "
    "text/html;q=0.01"
)
_JSON_TYPE = "application/vnd.pypi.simple.v1+json"
_HEX = re.compile(r"[0-9a-fA-F]+")


class IndexPageError(NetworkError):
    pass


class Link(Frozen):
    """One file on an index page or in a find-links folder."""

    __slots__ = (
        "filename",
        "hashes",
        "metadata_hashes",
        "origin",
        "requires_python",
        "size",
        "url",
        "yanked",
    )
    filename: str
    url: str
    hashes: Mapping[str, str]
    requires_python: str | None
    #: None: not yanked; otherwise the reason ("" when none was given)
    yanked: str | None
    #: None: no PEP 658 metadata file; otherwise its hashes (possibly empty)
    metadata_hashes: Mapping[str, str] | None
    #: the page or folder this came from, for messages
    origin: str
    #: the file's size in bytes where the page says (PEP 700 ``size``)
    size: int | None

    def __init__(
        self,
        filename: str,
        url: str,
        hashes: Mapping[str, str] | None = None,
        requires_python: str | None = None,
        yanked: str | None = None,
        metadata_hashes: Mapping[str, str] | None = None,
        origin: str = "",
        size: int | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "filename", filename)
        _set(self, "url", url)
        _set(self, "hashes", {} if hashes is None else hashes)
        _set(self, "requires_python", requires_python)
        _set(self, "yanked", yanked)
        _set(self, "metadata_hashes", metadata_hashes)
        _set(self, "origin", origin)
        _set(self, "size", size)

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


#: the hash names a URL's fragment may carry (the weak ones too: what is checked is chosen later)
FRAGMENT_HASHES = ("sha256", "sha384", "sha512", "sha224", "sha1", "md5")


def split_fragment(url: str) -> tuple[str, dict[str, str]]:
    """``url`` without its fragment, and the hashes the fragment names (``#sha256=HEX``, also
    among other ``&``-separated parts such as ``egg=`` or ``subdirectory=``, as pip reads them):
    algorithm (lower case) -> digest (lower case). The one reader of hashes in URLs, for index
    pages and for the URLs users write."""
    base, _, fragment = url.partition("#")
    hashes: dict[str, str] = {}
    for part in fragment.split("&") if fragment else ():
        algo, sep, value = part.partition("=")
        if sep and algo.lower() in FRAGMENT_HASHES:
            hashes[algo.lower()] = value.lower()
    return base, hashes


def _metadata_attr(value: str | None) -> dict[str, str] | None:
    if value is None or value.lower() == "false":
        return None
    algo, sep, digest = value.partition("=")
    return {algo.lower(): digest.lower()} if sep else {}


@functools.cache
def _anchor_parser() -> type[Any]:
    """The HTML parser class, made on first use: JSON pages (PEP 691) never load html.parser."""
    import html.parser

    class AnchorParser(html.parser.HTMLParser):
        def __init__(self) -> None:
            super().__init__(convert_charrefs=True)
            self.base: str | None = None
            self.anchors: list[dict[str, str | None]] = []

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag == "base" and self.base is None:
                self.base = dict(attrs).get("href")
            elif tag == "a":
                self.anchors.append(dict(attrs))

    return AnchorParser


def parse_html(text: str, page_url: str) -> list[Link]:
    """Links of a PEP 503 page (with PEP 592 yank, PEP 658/714 metadata attributes)."""
    parser = _anchor_parser()()
    parser.feed(text)
    base = urllib.parse.urljoin(page_url, parser.base) if parser.base else page_url
    links: list[Link] = []
    for attrs in parser.anchors:
        href = attrs.get("href")
        if not href:
            continue
        url, hashes = split_fragment(urllib.parse.urljoin(base, href))
        filename = url_filename(url)
        if filename is None:
            continue  # a folder or a name that is no plain file: no distribution
        metadata = attrs.get("data-core-metadata")
        if metadata is None:
            metadata = attrs.get("data-dist-info-metadata")
        metadata_hashes = _metadata_attr(metadata)
        for digest in (*hashes.values(), *(metadata_hashes or {}).values()):
            if not _HEX.fullmatch(digest):
                raise IndexPageError(
                    f"{page_url}: the link to {filename!r} on the project page gives "
                    f"the hash {digest[:80]!r}, which is not a hex digest. The index serves a "
                    "malformed page: report it to the index's maintainers."
                )
        yanked = attrs.get("data-yanked")
        links.append(
            Link(
                filename=filename,
                url=url,
                hashes=hashes,
                requires_python=attrs.get("data-requires-python") or None,
                yanked=None if "data-yanked" not in attrs else (yanked or ""),
                metadata_hashes=metadata_hashes,
                origin=page_url,
            )
        )
    return links


def _bad_entry(page_url: str, index: int, entry: Mapping[str, Any], problem: str) -> IndexPageError:
    name = entry.get("filename")
    which = f"file {index + 1}" + (f" ({name!r})" if isinstance(name, str) else "")
    return IndexPageError(
        f"{page_url}: {which} on the PEP 691 project page: {problem}. The index serves a "
        "malformed page: report it to the index's maintainers."
    )


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean"}.get(
        type(value), "null" if value is None else f"a {type(value).__name__}"
    )


def _digests(value: Any, field_name: str) -> tuple[dict[str, str] | None, str | None]:
    """A PEP 691 hashes object (algorithm -> hex digest), or the problem with it."""
    if not isinstance(value, dict):
        return (
            None,
            f"{field_name!r} must be an object of algorithm names to digests, not {_kind(value)}",
        )
    out: dict[str, str] = {}
    for algo, digest in value.items():
        if not isinstance(digest, str) or not _HEX.fullmatch(digest):
            return None, f"{field_name!r} gives {algo!r} as {_kind(digest)}, not a hex digest"
        out[str(algo).lower()] = digest.lower()
    return out, None


def parse_json(data: Any, page_url: str) -> list[Link]:
    """Links of a PEP 691 project page (decoded JSON), every field fitwheel reads checked for
    its type: a page of another shape is an error naming the page and the entry."""
    if not isinstance(data, dict) or not isinstance(data.get("files"), list):
        raise IndexPageError(f"{page_url}: not a PEP 691 project page (no 'files' list).")
    links: list[Link] = []
    for index, entry in enumerate(data["files"]):
        if not isinstance(entry, dict):
            raise IndexPageError(
                f"{page_url}: file {index + 1} on the PEP 691 project page is {_kind(entry)}, "
                "not an object. The index serves a malformed page: report it to the index's "
                "maintainers."
            )
        for key in ("url", "filename"):
            if not isinstance(entry.get(key), str) or not entry[key]:
                raise _bad_entry(page_url, index, entry, f"{key!r} must be a non-empty string")
        url, frag_hashes = split_fragment(urllib.parse.urljoin(page_url, entry["url"]))
        hashes, problem = _digests(entry.get("hashes", {}), "hashes")
        if problem is not None:
            raise _bad_entry(page_url, index, entry, problem)
        yanked = entry.get("yanked", False)
        if not isinstance(yanked, (bool, str)):
            raise _bad_entry(
                page_url,
                index,
                entry,
                f"'yanked' must be a boolean or a reason, not {_kind(yanked)}",
            )
        requires_python = entry.get("requires-python")
        size = entry.get("size")
        if requires_python is not None and not isinstance(requires_python, str):
            raise _bad_entry(
                page_url,
                index,
                entry,
                f"'requires-python' must be a string, not {_kind(requires_python)}",
            )
        key = "core-metadata" if "core-metadata" in entry else "dist-info-metadata"
        metadata = entry.get(key, False)
        metadata_hashes: dict[str, str] | None = None
        if metadata is True:
            metadata_hashes = {}
        elif metadata is not False and metadata is not None:
            metadata_hashes, problem = _digests(metadata, key)
            if problem is not None:
                raise _bad_entry(page_url, index, entry, f"{problem} (or true, or false)")
        links.append(
            Link(
                filename=entry["filename"],
                url=url,
                hashes=hashes or frag_hashes,
                requires_python=requires_python or None,
                yanked=(yanked if isinstance(yanked, str) else "") if yanked else None,
                metadata_hashes=metadata_hashes,
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
        except RecursionError:
            raise IndexPageError(
                f"{page_url}: the JSON project page is nested too deeply to be a PEP 691 page "
                "(which needs 4 levels). The index serves a malformed page: report it to the "
                "index's maintainers."
            ) from None
        return parse_json(data, page_url)
    return parse_html(body.decode("utf-8", "replace"), page_url)
