"""What is installed is what was resolved: a downloaded wheel checked against the decisions made
before it arrived.

The resolver reads a wheel's dependencies from metadata that may not come from the wheel itself
(a PEP 658 ``.metadata`` file, range requests) and picks a variant by the index's variants file.
Before the wheel is installed its own ``METADATA`` must be installable (UTF-8 throughout, a
valid Name and Version; see :func:`fitwheel.wheel.metadata.parse_installable_metadata`), name
the distribution and version being installed, and, where the resolver read metadata, agree with
it on Name, Version, Requires-Dist and Requires-Python; a variant wheel's own ``variant.json``
must describe its label with the properties the resolver chose it for. Any difference is
refused, naming both sides: an index that serves one thing to the resolver and another to the
installer is not trusted with the environment.
"""

from __future__ import annotations

import collections
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel._values import Frozen
from fitwheel.errors import IntegrityError
from fitwheel.variants.errors import VariantError
from fitwheel.variants.names import canonicalize_name

if TYPE_CHECKING:
    # loaded where a wheel is checked: an install that checks none does without them
    from fitwheel.install.cache.unpacked import UnpackedWheel
    from fitwheel.variants.model import VariantDescription
    from fitwheel.wheel.archive import WheelArchive
    from fitwheel.wheel.metadata import CoreMetadata


class NotAsResolvedError(IntegrityError):
    """A wheel whose own metadata or variant description differs from what it was chosen by."""


class Resolved(Frozen):
    """What the resolver took a wheel to be."""

    __slots__ = ("metadata", "metadata_source", "variant", "variants_source")
    #: the core metadata it read, and where from (a ``.metadata`` URL, the wheel's URL)
    metadata: CoreMetadata | None
    metadata_source: str
    #: the variant it chose the wheel as, and the variants file that described it
    variant: VariantDescription | None
    variants_source: str | None

    def __init__(
        self,
        metadata: CoreMetadata | None = None,
        metadata_source: str = "",
        variant: VariantDescription | None = None,
        variants_source: str | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "metadata", metadata)
        _set(self, "metadata_source", metadata_source)
        _set(self, "variant", variant)
        _set(self, "variants_source", variants_source)


def check_wheel(
    path: Path, filename: str, name: str, version: str, resolved: Resolved | None
) -> None:
    """Refuse the wheel at ``path`` (``filename`` in messages) unless its METADATA is
    installable and it is ``name`` ``version`` as ``resolved`` describes it."""
    from fitwheel.wheel.archive import WheelArchive  # the one reader, loaded when needed

    wants_variant = resolved is not None and resolved.variant is not None
    with WheelArchive(path, lazy_headers=True) as archive:
        raw = _member(archive, "METADATA")
        variant_json = _member(archive, "variant.json") if wants_variant else None
    check_metadata(raw, variant_json, filename, name, version, resolved)


def check_unpacked(
    unpacked: UnpackedWheel,
    path: Path,
    filename: str,
    name: str,
    version: str,
    resolved: Resolved | None,
) -> None:
    """:func:`check_wheel` for the wheel at ``path`` unpacked in the cache as ``unpacked``,
    from the files the cache checked against their hashes when the entry was taken: the archive
    is not read again, unless one of them is too large to read that way (then the wheel
    reader refuses it, as it refuses it in an archive)."""
    wants_variant = resolved is not None and resolved.variant is not None
    checked = unpacked.checked
    raw = checked.get("METADATA")
    variant_json = checked.get("variant.json") if wants_variant else None
    if raw is None or (variant_json is None and wants_variant and "variant.json" in checked):
        check_wheel(path, filename, name, version, resolved)
        return
    check_metadata(raw, variant_json, filename, name, version, resolved)


def check_metadata(
    raw: bytes | None,
    variant_json: bytes | None,
    filename: str,
    name: str,
    version: str,
    resolved: Resolved | None,
) -> None:
    """Refuse a wheel (``filename``) whose METADATA is ``raw`` (None: it has none) and whose
    ``variant.json`` is ``variant_json`` unless it is ``name`` ``version`` as ``resolved``
    describes it."""
    from packaging.version import Version

    from fitwheel.wheel.metadata import parse_installable_metadata

    if raw is None:
        raise NotAsResolvedError(
            f"{filename}: the wheel has no METADATA file; nothing was installed."
        )
    own = parse_installable_metadata(raw, filename)
    assert own.name is not None and own.version is not None
    if resolved is not None and resolved.metadata is not None:
        differences = _differences(resolved.metadata, own)
        if differences:
            raise NotAsResolvedError(
                f"{filename}: the wheel's own METADATA and the metadata the resolver used "
                f"({resolved.metadata_source}) disagree: {'; '.join(differences)}. The index "
                "serves metadata that is not this wheel's; nothing was installed. Report it to "
                "the index's maintainers."
            )
    if canonicalize_name(own.name) != canonicalize_name(name) or (
        own.version != version and Version(own.version) != Version(version)
    ):
        raise NotAsResolvedError(
            f"{filename}: the wheel's METADATA says {own.name} {own.version}, but it was chosen "
            f"as {name} {version}: refusing to install it under the wrong name. Nothing was "
            "installed; report the wheel to its publisher."
        )
    if resolved is None:
        return
    if resolved.variant is not None and variant_json is not None:
        _check_variant(filename, variant_json, resolved.variant, resolved.variants_source)


def _member(archive: WheelArchive, member: str) -> bytes | None:
    full = f"{archive.dist_info}/{member}"
    return archive.read_member(full) if full in archive.by_name else None


def _squeeze(text: str) -> str:
    return "".join(text.split())


def _differences(index: CoreMetadata, wheel: CoreMetadata) -> list[str]:
    """Name, Version, Requires-Dist and Requires-Python, where they differ, each side named."""
    out = []
    if canonicalize_name(index.name or "") != canonicalize_name(wheel.name or ""):
        out.append(f"Name {index.name!r} (resolver) but {wheel.name!r} (wheel)")
    if not _same_version(index.version, wheel.version):
        out.append(f"Version {index.version!r} (resolver) but {wheel.version!r} (wheel)")
    # the same text (as nearly always: the index's metadata file is the wheel's METADATA) is the
    # same answer without counting
    if index.requires_dist != wheel.requires_dist:
        ours = collections.Counter(_squeeze(r) for r in index.requires_dist)
        theirs = collections.Counter(_squeeze(r) for r in wheel.requires_dist)
        if ours != theirs:
            only_wheel = sorted((theirs - ours).elements())
            only_index = sorted((ours - theirs).elements())
            parts = []
            if only_wheel:
                parts.append(f"the wheel also requires {', '.join(only_wheel)}")
            if only_index:
                parts.append(f"the resolver's metadata also requires {', '.join(only_index)}")
            out.append("Requires-Dist differs: " + " and ".join(parts))
    if not _same_specifier(index.requires_python, wheel.requires_python):
        out.append(
            f"Requires-Python {index.requires_python!r} (resolver) but "
            f"{wheel.requires_python!r} (wheel)"
        )
    return out


def _same_version(a: str | None, b: str | None) -> bool:
    if a == b:
        return True
    from packaging.version import InvalidVersion, Version

    try:
        return (Version(a) if a else None) == (Version(b) if b else None)
    except InvalidVersion:
        return a == b


def _same_specifier(a: str | None, b: str | None) -> bool:
    if a == b:
        return True
    from packaging.specifiers import InvalidSpecifier, SpecifierSet

    try:
        return SpecifierSet(a or "") == SpecifierSet(b or "")
    except InvalidSpecifier:
        return _squeeze(a or "") == _squeeze(b or "")


def _check_variant(
    filename: str, data: bytes, chosen: VariantDescription, source: str | None
) -> None:
    from fitwheel.variants.reading import loads_variant_info

    label = chosen.label
    try:
        own = loads_variant_info(data, f"{filename} (variant.json)", "wheel", expected_label=label)
    except VariantError as exc:
        raise NotAsResolvedError(
            f"{filename}: its variant.json cannot be read as the {label} variant: {exc}. "
            "Nothing was installed; report the wheel to its publisher."
        ) from exc
    described = own.variants.get(label)
    if described is None or described.properties != chosen.properties:

        def show(desc: VariantDescription | None) -> str:
            if desc is None:
                return "nothing"
            return ", ".join(sorted(str(p) for p in desc.properties)) or "no properties"

        raise NotAsResolvedError(
            f"{filename}: its own variant.json describes {label} as {show(described)}, but the "
            f"variant metadata it was chosen by ({source or 'the index'}) says {show(chosen)}. "
            "The wheel is not the build the index describes; nothing was installed. Report it "
            "to the index's maintainers."
        )
