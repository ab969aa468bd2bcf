"""Which generation of the variant metadata format a ``$schema`` URL names.

Published generations, oldest first:

- ``https://variants-schema.wheelnext.dev/`` (no version; torch 2.8): the first PEP 817 files.
- ``…/v0.0.2.json`` and ``…/v0.0.3.json``: PEP 817 (``enable-if``, ``plugin-use`` or
  ``install-time``, three-level ``default-priorities``, top-level ``static-properties`` in v0.0.3).
- ``…/peps/825/v0.1.0.json`` and ``v0.1.1.json``: PEP 825, no ``providers`` key.
- ``…/v0.2.0.json`` (variantlib 0.2) and ``…/peps/850/v0.2.0.json`` (PEP 850): providers that are
  exactly one of a plugin (``requires``), static (``static-properties``) or built in (``builtin``).
"""

from __future__ import annotations

import enum
import re


class Generation(enum.Enum):
    LEGACY = "817"  # wheelnext v0.0.x and the unversioned URL
    PEP825 = "825"  # peps/825/v0.1.x
    CURRENT = "850"  # wheelnext v0.2.x, peps/850/v0.2.x


#: The URL fitwheel writes (what variantlib 0.2.2 and uv 0.13 read).
CURRENT_SCHEMA_URL = "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"
#: The URL of provider-less metadata (PEP 825 v0.1.1).
PEP825_SCHEMA_URL = "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json"

_VERSIONED_RE = re.compile(
    r"https?://(?P<host>[^/\s]+)(?P<dir>/[^\s]*?)??(?:/peps/(?P<pep>\d+))?"
    r"/v(?P<major>\d+)\.(?P<minor>\d+)\.(?P<patch>\d+)\.json"
)
_WHEELNEXT_HOST = "variants-schema.wheelnext.dev"
_UNVERSIONED_RE = re.compile(r"https?://variants-schema\.wheelnext\.dev/?")

# family (None: the wheelnext schema repository; else the PEP number) -> newest version known,
# per major version fitwheel reads.
_NEWEST_KNOWN: dict[int | None, dict[int, tuple[int, int, int]]] = {
    None: {0: (0, 2, 0)},
    825: {0: (0, 1, 1)},
    850: {0: (0, 2, 0)},
}


class SchemaInfo:
    """What a ``$schema`` value says.

    ``generation`` None: the URL does not identify a generation (the reader decides on structure).
    ``lenient``: the file is a newer minor or patch than fitwheel knows, so keys fitwheel does not
    know are ignored rather than rejected.
    ``version``: the semantic version in the URL, if any.
    """

    # Not a dataclass: defining one costs more start-up time than reading a whole file.
    __slots__ = ("generation", "lenient", "unversioned", "version")

    def __init__(
        self,
        generation: Generation | None,
        lenient: bool = False,
        version: tuple[int, int, int] | None = None,
        unversioned: bool = False,
    ) -> None:
        self.generation = generation
        self.lenient = lenient
        self.version = version
        self.unversioned = unversioned

    def __repr__(self) -> str:
        return (
            f"SchemaInfo(generation={self.generation!r}, lenient={self.lenient!r}, "
            f"version={self.version!r}, unversioned={self.unversioned!r})"
        )


class UnknownMajorVersion(Exception):
    """The URL names a major version of a known schema family that fitwheel cannot read."""

    def __init__(self, family: str, major: int, known: tuple[int, ...]) -> None:
        self.family = family
        self.major = major
        self.known = known
        super().__init__(family, major)


def classify_schema(url: str) -> SchemaInfo:
    if _UNVERSIONED_RE.fullmatch(url):
        return SchemaInfo(Generation.LEGACY, unversioned=True)
    match = _VERSIONED_RE.fullmatch(url)
    if match is None:
        return SchemaInfo(None)
    pep = int(match["pep"]) if match["pep"] else None
    version = (int(match["major"]), int(match["minor"]), int(match["patch"]))
    known = _NEWEST_KNOWN.get(pep)
    if pep is None and (match["host"] != _WHEELNEXT_HOST or match["dir"]):
        # A versioned URL of some other schema family: only the structure can tell.
        return SchemaInfo(None, version=version)
    if known is None:
        return SchemaInfo(None, version=version)
    family = f"PEP {pep}" if pep else "wheel-variant"
    if version[0] not in known:
        raise UnknownMajorVersion(family, version[0], tuple(sorted(known)))
    lenient = version > known[version[0]]
    if pep == 825:
        return SchemaInfo(Generation.PEP825, lenient, version)
    if pep == 850:
        generation = Generation.CURRENT if version[1] >= 2 else None
        return SchemaInfo(generation, lenient, version)
    # The wheelnext repository: 0.0.x is PEP 817, 0.2.x and later the provider form; 0.1.x was
    # only ever published under peps/825, so let the structure decide.
    if version[1] == 0:
        return SchemaInfo(Generation.LEGACY, False, version)
    if version[1] >= 2:
        return SchemaInfo(Generation.CURRENT, lenient, version)
    return SchemaInfo(None, version=version)
