"""``variant show``: what a wheel's filename and ``variant.json`` say about its variant."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fitwheel.variants.abi import ABI_NAMESPACE
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.model import VariantDescription, VariantInfo
from fitwheel.variants.reading import loads_variant_info
from fitwheel.wheel.archive import DEFAULT_LIMITS, Limits, WheelArchive, WheelError


@dataclass(frozen=True)
class WheelVariant:
    path: Path
    filename: WheelFilename
    dist_info: str
    info: VariantInfo | None
    variant_json: bytes | None

    @property
    def label(self) -> str | None:
        return self.filename.variant_label

    @property
    def description(self) -> VariantDescription | None:
        if self.info is None or self.label is None:
            return None
        return self.info.variants.get(self.label)


def read_wheel_variant(
    wheel: str | os.PathLike[str], *, limits: Limits = DEFAULT_LIMITS
) -> WheelVariant:
    """Read (and cross-check) the variant metadata of one wheel."""
    path = Path(wheel)
    filename = WheelFilename.parse(path.name)
    with WheelArchive(path, limits=limits) as archive:
        name = archive.variant_json_name
        data = archive.read_member(name) if name else None
        dist_info = archive.dist_info
    info = None
    if data is not None:
        source = f"{path}!{name}"
        try:
            info = loads_variant_info(data, source, kind="wheel")
        except VariantFormatError as exc:
            raise WheelError(path, f"invalid variant.json: {exc}") from None
    label = filename.variant_label
    if label is not None and info is None:
        raise WheelError(path, f"the filename carries label {label!r} but there is no variant.json")
    if label is None and info is not None:
        raise WheelError(path, "has a variant.json but no variant label in its filename")
    if info is not None and label not in info.variants:
        raise WheelError(
            path,
            f"variant.json describes {', '.join(sorted(info.variants))}, "
            f"but the filename says {label!r}",
        )
    return WheelVariant(path, filename, dist_info, info, data)


def _provider_json(info: VariantInfo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for ns, p in info.providers.items():
        entry: dict[str, Any] = {}
        if p.requires:
            entry["requires"] = list(p.requires)
        if p.plugin_api:
            entry["plugin-api"] = p.plugin_api
        if p.static_properties is not None:
            entry["static-properties"] = {f: list(v) for f, v in p.static_properties.items()}
        if p.feature_order:
            entry["feature-order"] = list(p.feature_order)
        if p.builtin:
            entry["builtin"] = p.builtin
        if p.optional:
            entry["optional"] = True
        out[ns] = entry
    return out


def show_json(wv: WheelVariant) -> dict[str, Any]:
    desc = wv.description
    return {
        "filename": wv.path.name,
        "dist_info": wv.dist_info,
        "variant_label": wv.label,
        "null": bool(desc is not None and desc.is_null),
        "variant_properties": desc.as_dict() if desc is not None else {},
        "namespace_priorities": list(wv.info.namespace_priorities) if wv.info else [],
        "providers": _provider_json(wv.info) if wv.info else {},
    }


def show_text(wv: WheelVariant) -> str:
    if wv.info is None:
        return f"{wv.path.name}: not a variant wheel (no label, no variant.json)"
    desc = wv.description
    lines = [f"{wv.path.name}", f"  label:      {wv.label}"]
    if desc is None or desc.is_null:
        lines.append("  properties: none (the null variant)")
    else:
        lines.append("  properties:")
        lines += [f"    {prop}" for prop in sorted(desc.properties)]
    lines.append("  providers (namespace priority order):")
    for ns in wv.info.namespace_priorities:
        p = wv.info.providers.get(ns)
        if p is None:
            if ns == ABI_NAMESPACE:
                lines.append(f"    {ns}: reserved, matched against the dependency's version")
            continue
        if p.static_properties is not None:
            kind = "static " + ", ".join(f"{f}={list(v)}" for f, v in p.static_properties.items())
        elif p.builtin:
            kind = f"builtin {p.builtin}"
        else:
            kind = "requires " + ", ".join(p.requires)
            if p.plugin_api:
                kind += f" (plugin-api {p.plugin_api})"
        lines.append(f"    {ns}: {kind}{' [optional]' if p.optional else ''}")
    return "\n".join(lines)
