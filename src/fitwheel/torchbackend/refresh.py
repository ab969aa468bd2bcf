"""Rebuild the ``releases`` part of the torch backend table from published variants files.

PyTorch's variant index publishes one ``torch-{version}-variants.json`` per release, describing
the same builds as the per-backend indexes (label ``cuda12.8`` is the build on ``BASE/cu128/``).
Each variant's per-device properties (``nvidia :: sm_arch``, ``amd :: gfx_arch``,
``intel :: device_ip``) become the architectures that backend ships for that release series;
the null variant is the cpu build. The rest of the table (projects, backends, drivers,
platforms) is kept as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from fitwheel.torchbackend.table import TableError, backend_from_name

#: per-device features of each vendor namespace: what a build "ships"
SHIPPED = {"nvidia": ("sm_arch",), "amd": ("gfx_arch",), "intel": ("device_ip",)}
_FILE = re.compile(r"torch-(\d+\.\d+)(?:\.\d+)*-variants\.json$")
_CUDA_LABEL = re.compile(r"cuda(\d+)\.(\d+)$")


def backend_of_label(label: str) -> str | None:
    """The per-backend index name of a variant label: ``cuda12.8`` and ``cu128`` -> ``cu128``,
    ``rocm6.4``, ``xpu``; the null label (``null``, ``00000000``) -> ``cpu``."""
    if label in ("null", "00000000", ""):
        return "cpu"
    m = _CUDA_LABEL.fullmatch(label)
    if m:
        return f"cu{m.group(1)}{m.group(2)}"
    try:
        return backend_from_name(label).name
    except TableError:
        return None


def _sm_key(value: str) -> tuple[int, str]:
    number, _, kind = value.partition("_")
    return (int(number) if number.isdigit() else 0, kind)


def releases_from_variants(files: Iterable[tuple[str, bytes | str]]) -> dict[str, dict[str, Any]]:
    """``{series: {"source", "builds"}}`` from ``(file name, content)`` pairs of torch variants
    files (other names are skipped)."""
    from fitwheel.variants.reading import loads_variant_info

    out: dict[str, dict[str, Any]] = {}
    for name, text in sorted(files):
        m = _FILE.search(name)
        if m is None:
            continue
        info = loads_variant_info(text, name)
        builds: dict[str, dict[str, dict[str, list[str]]]] = {}
        for label, desc in info.variants.items():
            backend = backend_of_label(label)
            if backend is None:
                continue
            props: dict[str, dict[str, list[str]]] = {}
            for ns, features in desc.as_dict().items():
                for feature in SHIPPED.get(ns, ()):
                    if feature in features:
                        values = list(dict.fromkeys(features[feature]))
                        if feature == "sm_arch":
                            values.sort(key=_sm_key)
                        props.setdefault(ns, {})[feature] = values
            builds[backend] = props
        out[m.group(1)] = {"source": name.rsplit("/", 1)[-1], "builds": builds}
    return out


def refreshed_table(
    table: Mapping[str, Any], releases: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    """``table`` (decoded JSON) with the given release series replaced, the others kept; each
    release keeps its ``requires_python`` and ``supplement`` (builds taken from elsewhere, with a
    note saying where) when the new data has none. Newest first."""
    from packaging.version import Version

    merged = dict(table.get("releases", {}))
    for series, release in releases.items():
        entry = dict(release)
        old = merged.get(series, {})
        for key in ("requires_python", "supplement"):
            if key in old and key not in entry:
                entry[key] = old[key]
        merged[series] = entry
    out = dict(table)
    out["releases"] = {k: merged[k] for k in sorted(merged, key=Version, reverse=True)}
    return out


def variants_files_from_index(base: str, session: Any = None) -> list[tuple[str, bytes]]:
    """Every torch variants file on the variant index under ``base`` (``BASE/variant/``), read
    through the one HTTP session."""
    from fitwheel.index.config import IndexConfig
    from fitwheel.index.finder import Finder

    url = base.rstrip("/") + "/variant/"
    finder = Finder(IndexConfig(url), session)
    out = []
    for link in finder.links("torch"):
        if _FILE.search(link.filename):
            out.append((link.filename, finder.read(link, link.filename)))
    return out
