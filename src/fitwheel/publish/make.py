"""``variant make`` and ``variant strip``: turn a plain wheel into a variant wheel and back.

Both copy every other member byte for byte (raw, never recompressed) and touch only
``*.dist-info/variant.json``, the RECORD line that lists it, and the label in the filename, so
``strip(make(wheel))`` has exactly the members and contents of ``wheel``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from types import MappingProxyType
from typing import NamedTuple

from fitwheel.publish.config import VariantConfig, VariantConfigError
from fitwheel.publish.output import EarlyOutput
from fitwheel.publish.wheelfile import NewMember, RewritePlan, rewrite_wheel_file
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.model import (
    NULL_LABEL,
    VariantDescription,
    VariantInfo,
    VariantProperty,
    check_label,
    default_label,
)
from fitwheel.variants.writing import dump_variant_info
from fitwheel.wheel.archive import DEFAULT_LIMITS, Limits, WheelArchive, WheelError
from fitwheel.wheel.record import record_hash


class MakeResult(NamedTuple):
    path: Path
    label: str
    variant_json: str


def build_variant_info(
    config: VariantConfig, properties: Iterable[VariantProperty], label: str | None
) -> tuple[VariantInfo, str]:
    """The single-variant ``variant.json`` content for ``properties`` under ``config``."""
    props = frozenset(properties)
    namespaces = {p.namespace for p in props}
    config.require_namespaces(namespaces)
    config.check_abi_values(props)
    for prop in sorted(props):
        provider = config.providers.get(prop.namespace)
        if provider is None:
            continue  # abi_dependency: answered by the installer, no provider
        static = provider.static_properties
        if static is not None and prop.value not in static.get(prop.feature, ()):
            raise VariantConfigError(
                f"{config.source}: property '{prop}' can never be installed: the static "
                f"provider {prop.namespace!r} lists {prop.feature!r} values "
                f"{list(static.get(prop.feature, ()))}"
            )
    chosen = check_label(label) if label is not None else default_label(props)
    description = VariantDescription(chosen, props)
    info = VariantInfo(
        namespace_priorities=config.namespaces_for(namespaces),
        providers=config.providers,
        variants=MappingProxyType({chosen: description}),
    )
    return info, chosen


def _record_without(record: bytes, name: str) -> bytes:
    """RECORD bytes with the line for ``name`` removed; every other byte kept."""
    kept = [
        line
        for line in record.splitlines(keepends=True)
        if line.split(b",", 1)[0].strip(b'"') != name.encode()
    ]
    return b"".join(kept)


def _output_path(wheel: Path, out_dir: Path | None, name: str) -> Path:
    directory = out_dir if out_dir is not None else wheel.parent
    # ``name`` comes from WheelFilename.format(), which never yields a path separator; the check
    # is what guarantees that nothing is written outside ``directory``.
    if os.sep in name or (os.altsep and os.altsep in name) or name in ("", ".", ".."):
        raise WheelError(wheel, f"refusing output name {name!r}")
    return directory / name


def make_variant(
    wheel: str | os.PathLike[str],
    properties: Iterable[VariantProperty],
    config: VariantConfig,
    *,
    label: str | None = None,
    null: bool = False,
    out_dir: str | os.PathLike[str] | None = None,
    verify: bool = True,
    limits: Limits = DEFAULT_LIMITS,
    early: EarlyOutput | None = None,
) -> MakeResult:
    """Write a variant wheel for ``wheel`` into ``out_dir`` (default: beside it). ``early``, an
    :class:`EarlyOutput` of ``wheel`` into that folder, lets the copy start before this is
    called; the caller discards it should anything fail before."""
    path = Path(wheel)
    props = frozenset(properties)
    if null:
        if props:
            raise VariantConfigError("a null variant has no properties; drop --property or --null")
        if label not in (None, NULL_LABEL):
            raise VariantConfigError("the null variant always uses the label 'null'")
        label = NULL_LABEL
    elif not props:
        raise VariantConfigError("give at least one --property, or --null for the null variant")
    info, chosen = build_variant_info(config, props, label)
    text = dump_variant_info(info)
    data = text.encode("utf-8")
    filename = WheelFilename.parse(path.name)
    target = _output_path(
        path, Path(out_dir) if out_dir else None, filename.with_label(chosen).format()
    )

    def plan(archive: WheelArchive) -> RewritePlan:
        vj_name = f"{archive.dist_info}/variant.json"
        record = archive.read_member(archive.record_name)
        body = record
        if archive.variant_json_name is not None:
            body = _record_without(record, archive.variant_json_name)
        if body and not body.endswith(b"\n"):
            body += b"\n"
        line = f"{vj_name},{record_hash(data)},{len(data)}\n".encode()
        record_info = archive.member(archive.record_name)
        drop = {archive.variant_json_name} if archive.variant_json_name else set()
        return RewritePlan(drop, [NewMember(vj_name, data, record_info)], body + line)

    rewrite_wheel_file(path, target, plan, limits=limits, verify=verify, early=early)
    return MakeResult(target, chosen, text)


def strip_variant(
    wheel: str | os.PathLike[str],
    *,
    out_dir: str | os.PathLike[str] | None = None,
    verify: bool = True,
    limits: Limits = DEFAULT_LIMITS,
) -> Path:
    """Write the plain wheel that ``wheel`` was made from: no variant.json, no label."""
    path = Path(wheel)
    filename = WheelFilename.parse(path.name)
    target = _output_path(
        path, Path(out_dir) if out_dir else None, filename.without_label().format()
    )
    if target.resolve() == path.resolve():
        raise WheelError(path, "is not a variant wheel (its name has no variant label)")

    def plan(archive: WheelArchive) -> RewritePlan:
        vj_name = archive.variant_json_name
        if vj_name is None:
            raise WheelError(path, "has no *.dist-info/variant.json; it is not a variant wheel")
        record = archive.read_member(archive.record_name)
        return RewritePlan({vj_name}, [], _record_without(record, vj_name))

    rewrite_wheel_file(path, target, plan, limits=limits, verify=verify)
    return target
