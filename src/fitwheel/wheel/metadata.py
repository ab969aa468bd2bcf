"""A wheel's ``METADATA`` (core metadata) and ``WHEEL``, parsed through ``packaging.metadata``.

Both are RFC 822 style header blocks. Only the header block is handed to
:func:`packaging.metadata.parse_email`: the body is the long description, which nothing here
needs and which is most of the bytes (37 kB of a torch wheel's 38 kB). Fields are kept as
written, without validation, so that wheels found in the wild stay readable; Requires-Dist
values stay text because variant markers are beyond what ``packaging`` parses (see
:mod:`fitwheel.variants.markers`). A field the callers need that cannot be read (not UTF-8, given
twice where once is allowed) and a header line that is not a header are errors naming the file.
A wheel about to be installed is held to more (:func:`parse_installable_metadata`): UTF-8
throughout, a valid Name and Version.
"""

from __future__ import annotations

from fitwheel._values import Frozen
from fitwheel.errors import InvalidWheelError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from packaging.requirements import Requirement

__all__ = [
    "CoreMetadata",
    "InvalidMetadataError",
    "WheelInfo",
    "metadata_fields",
    "parse_installable_metadata",
    "parse_metadata",
    "parse_wheel_info",
    "requires_dist_parts",
    "split_requires_dist",
]


class InvalidMetadataError(InvalidWheelError):
    """A METADATA or WHEEL file that cannot be read; ``path`` names the file."""


class CoreMetadata(Frozen):
    """The core metadata fields that resolving, installing and publishing use."""

    __slots__ = (
        "metadata_version",
        "name",
        "provides_extra",
        "requires_dist",
        "requires_python",
        "summary",
        "version",
    )
    name: str | None
    version: str | None
    requires_dist: tuple[str, ...]
    requires_python: str | None
    provides_extra: tuple[str, ...]
    summary: str | None
    metadata_version: str | None

    def __init__(
        self,
        name: str | None,
        version: str | None,
        requires_dist: tuple[str, ...] = (),
        requires_python: str | None = None,
        provides_extra: tuple[str, ...] = (),
        summary: str | None = None,
        metadata_version: str | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "name", name)
        _set(self, "version", version)
        _set(self, "requires_dist", requires_dist)
        _set(self, "requires_python", requires_python)
        _set(self, "provides_extra", provides_extra)
        _set(self, "summary", summary)
        _set(self, "metadata_version", metadata_version)


class WheelInfo(Frozen):
    """A ``WHEEL`` file: ``wheel_version`` None when the file does not say."""

    __slots__ = ("generator", "root_is_purelib", "tags", "wheel_version")
    wheel_version: str | None
    root_is_purelib: bool
    tags: tuple[str, ...]
    generator: str | None

    def __init__(
        self,
        wheel_version: str | None,
        root_is_purelib: bool,
        tags: tuple[str, ...] = (),
        generator: str | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "wheel_version", wheel_version)
        _set(self, "root_is_purelib", root_is_purelib)
        _set(self, "tags", tags)
        _set(self, "generator", generator)

    def check_installable(self, source: str) -> None:
        """Refuse a wheel whose format version this installer does not know (only 1.x)."""
        version = self.wheel_version
        if version is None or version.split(".", 1)[0] != "1":
            raise InvalidMetadataError(
                source,
                f"its WHEEL file says Wheel-Version {version or '(none)'}; only version 1.x "
                "wheels can be installed.",
            )


def _header_block(data: bytes, source: str, keep: frozenset[bytes] | None) -> bytes:
    """The header lines of ``data`` (up to the first empty line) of the fields in ``keep`` (lower
    case; None: all), each line checked to be a header field or a continuation line: the email
    parser would silently take the rest as the body. Leaving out the fields nobody reads
    (classifiers, license files, project URLs) makes parsing several times faster."""
    end = data.find(b"\n\n")
    crlf = data.find(b"\r\n\r\n")
    if crlf != -1 and (end == -1 or crlf < end):
        end = crlf
    head = data if end == -1 else data[:end]
    kept: list[bytes] = []
    keeping = False
    for number, line in enumerate(head.splitlines(), 1):
        if line[:1] in (b" ", b"\t"):
            if keeping:
                kept.append(line)
            continue
        key, sep, _ = line.partition(b":")
        if not sep or not key or key != key.strip() or b" " in key or b"\t" in key:
            raise InvalidMetadataError(
                source, f"line {number} is not a 'Field: value' header: {line[:80]!r}"
            )
        keeping = keep is None or key.lower() in keep
        if keeping:
            kept.append(line)
    kept.append(b"")
    return b"\n".join(kept)


#: the fields the fast path knows, by their header name: core metadata's names in ``packaging``'s
#: raw form, and whether a field may be given more than once
_FIELDS = {
    b"metadata-version": ("metadata_version", False),
    b"name": ("name", False),
    b"version": ("version", False),
    b"summary": ("summary", False),
    b"requires-python": ("requires_python", False),
    b"requires-dist": ("requires_dist", True),
    b"provides-extra": ("provides_extra", True),
}


def _parse_plain(block: bytes) -> tuple[dict[str, object], dict[str, list[str]]] | None:
    """What ``packaging.metadata.parse_email`` makes of ``block`` when every line is a plain
    ASCII ``Field: value`` (no continuation lines, no encoded words, no trailing white space,
    no field it would map that this table lacks), else None. Real METADATA and WHEEL files are
    like that; importing the ``email`` package's header machinery costs more than a small
    install, so they skip it. A test holds the two to the same answers."""
    if not block.isascii() or b"=?" in block:
        return None
    values: dict[bytes, list[str]] = {}
    for line in block.split(b"\n"):
        if not line:
            continue
        if line[:1] in (b" ", b"\t") or line[-1:] in (b" ", b"\t", b"\r"):
            return None
        key, _, value = line.partition(b":")
        values.setdefault(key.lower(), []).append(value.lstrip(b" \t").decode("ascii"))
    raw: dict[str, object] = {}
    unparsed: dict[str, list[str]] = {}
    for key, found in values.items():
        known = _FIELDS.get(key)
        if known is None:
            if key in _MAPPED_ELSEWHERE:
                return None
            unparsed[key.decode("ascii")] = found
        elif known[1]:
            raw[known[0]] = found
        elif len(found) == 1:
            raw[known[0]] = found[0]
        else:
            unparsed[key.decode("ascii")] = found
    return raw, unparsed


#: core metadata fields ``packaging`` maps that the fast path does not: a block holding one is
#: left to ``packaging`` (only the WHEEL parser keeps every field)
_MAPPED_ELSEWHERE = frozenset(
    (
        b"author", b"author-email", b"classifier", b"description", b"description-content-type",
        b"download-url", b"dynamic", b"home-page", b"import-name", b"import-namespace",
        b"keywords", b"license", b"license-expression", b"license-file", b"maintainer",
        b"maintainer-email", b"obsoletes", b"obsoletes-dist", b"platform", b"project-url",
        b"provides", b"provides-dist", b"requires", b"requires-external",
        b"supported-platform",
    )
)  # fmt: skip


def _parse(
    data: bytes, source: str, keep: frozenset[bytes] | None
) -> tuple[dict[str, object], dict[str, list[str]]]:
    if not isinstance(data, bytes):
        raise TypeError(f"expected bytes, not {type(data).__name__}")
    block = _header_block(data, source, keep)
    plain = _parse_plain(block)
    if plain is not None:
        return plain
    from packaging.metadata import parse_email

    raw, unparsed = parse_email(block)
    return dict(raw), unparsed


def _refuse_unreadable(
    unparsed: dict[str, list[str]], fields: tuple[str, ...], source: str
) -> None:
    for key in fields:
        if key in unparsed:
            raise InvalidMetadataError(
                source,
                f"its {key.replace('_', '-').title()} field cannot be read (given more than once, "
                "or not UTF-8)",
            )


_NEEDED = ("name", "version", "requires_dist", "requires_python", "metadata_version")
_KEEP = frozenset(
    (*(key.replace("_", "-").encode() for key in _NEEDED), b"provides-extra", b"summary")
)


def parse_metadata(data: bytes, source: str) -> CoreMetadata:
    """Parse a core metadata file; ``source`` names it in errors (a wheel path, a URL)."""
    raw, unparsed = _parse(data, source, _KEEP)
    _refuse_unreadable(unparsed, _NEEDED, source)

    def text(key: str) -> str | None:
        value = raw.get(key)
        return value if isinstance(value, str) else None

    def texts(key: str) -> tuple[str, ...]:
        value = raw.get(key)
        return tuple(value) if isinstance(value, list) else ()

    return CoreMetadata(
        name=text("name"),
        version=text("version"),
        requires_dist=texts("requires_dist"),
        requires_python=text("requires_python") or None,
        provides_extra=texts("provides_extra"),
        summary=text("summary"),
        metadata_version=text("metadata_version"),
    )


def metadata_fields(data: bytes, source: str) -> dict[str, object]:
    """Every readable field of a core metadata file, by ``packaging``'s raw names (``summary``,
    ``home_page``, ``author_email``, ``project_urls``, ...): what ``fitwheel show`` prints.
    A field that cannot be read is left out."""
    raw, _unparsed = _parse(data, source, None)
    return raw


def parse_wheel_info(data: bytes | str, source: str) -> WheelInfo:
    """Parse a ``WHEEL`` file; ``source`` names it in errors."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    _raw, unparsed = _parse(data, source, None)
    # packaging knows none of WHEEL's fields: each lands in ``unparsed`` under its lower-cased name
    fields = {key.lower(): values for key, values in unparsed.items()}
    for key in ("wheel-version", "root-is-purelib", "generator"):
        if len(fields.get(key, ())) > 1:
            raise InvalidMetadataError(source, f"its WHEEL file gives {key.title()} more than once")
    version = fields.get("wheel-version", [None])[0]
    purelib = fields.get("root-is-purelib", ["false"])[0].strip().lower() == "true"
    generator = fields.get("generator", [None])[0]
    return WheelInfo(
        wheel_version=version.strip() if version else None,
        root_is_purelib=purelib,
        tags=tuple(tag.strip() for tag in fields.get("tag", [])),
        generator=generator,
    )


def parse_installable_metadata(data: bytes, source: str) -> CoreMetadata:
    """A METADATA file about to be installed: all of it UTF-8, with a valid Name and a PEP 440
    Version, so that nothing reading the environment later (fitwheel, pip, importlib.metadata)
    trips on it. ``source`` names the wheel in errors."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        around = data[max(0, exc.start - 24) : exc.start + 8]
        raise InvalidMetadataError(
            source,
            f"its METADATA is not UTF-8 (line {line}, byte {exc.start}: {around!r}); core "
            "metadata must be UTF-8, and every tool reading the environment would fail on it",
        ) from None
    meta = parse_metadata(data, source)
    from packaging.utils import InvalidName, canonicalize_name
    from packaging.version import InvalidVersion, Version

    if not meta.name:
        raise InvalidMetadataError(source, "its METADATA has no Name field")
    try:
        canonicalize_name(meta.name, validate=True)
    except InvalidName:
        raise InvalidMetadataError(
            source, f"its METADATA gives the Name {meta.name!r}, which is not a valid project name"
        ) from None
    if not meta.version:
        raise InvalidMetadataError(source, "its METADATA has no Version field")
    try:
        Version(meta.version)
    except InvalidVersion:
        raise InvalidMetadataError(
            source,
            f"its METADATA gives the Version {meta.version!r}, which is not a valid version "
            "(PEP 440)",
        ) from None
    return meta


def split_requires_dist(value: str) -> tuple[Requirement, str | None]:
    """A ``Requires-Dist`` value as (requirement without marker, marker text or None).

    The marker stays text: variant markers are beyond what ``packaging`` parses, so it is
    evaluated by :func:`fitwheel.variants.markers.evaluate_marker`. Raises
    ``packaging.requirements.InvalidRequirement`` for a requirement that cannot be parsed."""
    from packaging.requirements import Requirement

    spec, sep, marker = value.partition(";")
    return Requirement(spec.strip()), (marker.strip() or None) if sep else None


_SIMPLE_REQUIREMENT = None


def requires_dist_parts(value: str) -> tuple[str, str, str | None]:
    """A ``Requires-Dist`` value as (name, specifier text, marker text or None), without
    building a :class:`~packaging.requirements.Requirement` for the common shapes (``name``,
    ``name>=1,<2``, ``name (>=1)``, ``name[extra]==1``); anything else goes through
    :func:`split_requires_dist`. Raises ``ValueError`` for a requirement that cannot be parsed."""
    global _SIMPLE_REQUIREMENT
    if _SIMPLE_REQUIREMENT is None:
        import re

        _SIMPLE_REQUIREMENT = re.compile(
            r"\s*([A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?)\s*(?:\[[A-Za-z0-9._,\s-]*\])?\s*"
            r"\(?\s*((?:(?:===|==|!=|~=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+\s*,?\s*)*)\)?\s*"
        )
    spec, sep, marker = value.partition(";")
    match = _SIMPLE_REQUIREMENT.fullmatch(spec)
    if match is None or match[2].rstrip().endswith(","):
        req, marker_text = split_requires_dist(value)
        return req.name, str(req.specifier), marker_text
    return match[1], "".join(match[2].split()), (marker.strip() or None) if sep else None
