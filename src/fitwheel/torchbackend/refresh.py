"""Rebuild the torch backend table from what an index publishes.

PyTorch's variant index publishes a ``torch-{version}-variants.json`` for some releases,
describing the same builds as the per-backend indexes (label ``cuda12.8`` is the build on
``BASE/cu128/``). Each variant's per-device properties (``nvidia :: sm_arch``,
``amd :: gfx_arch``, ``intel :: device_ip``) become the architectures that backend ships for
that release series; the null variant is the cpu build.

:func:`refresh_from_index` (``fitwheel torch refresh``) also reads which releases each backend
index carries (:mod:`.published`): a release or backend without a variants file is
extrapolated (:mod:`.extrapolate`) and marked so. The result is written as the cached copy of
the table (:func:`write_cached_table`), which :func:`.table.load_backend_table` then prefers
over the bundled one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from fitwheel.errors import FitwheelError
from fitwheel.torchbackend.table import BackendTable, TableError, backend_from_name


class RefreshError(FitwheelError):
    """The index could not be read as a mirror of PyTorch's per-backend indexes."""


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


def variants_files_from_index(
    base: str, session: Any = None, missing_ok: bool = False
) -> list[tuple[str, bytes]]:
    """Every torch variants file on the variant index under ``base`` (``BASE/variant/``), read
    through the one HTTP session (``missing_ok``: none when that index does not exist)."""
    from fitwheel.index.config import IndexConfig
    from fitwheel.index.finder import Finder
    from fitwheel.index.http import HttpError

    url = base.rstrip("/") + "/variant/"
    finder = Finder(IndexConfig(url), session)
    try:
        links = finder.page(url, "torch") or []
    except HttpError as exc:
        if missing_ok and exc.status == 404:
            return []
        raise
    out = []
    for link in links:
        if _FILE.search(link.filename):
            out.append((link.filename, finder.read(link, link.filename)))
    return out


def published_on_index(base: str, names: list[str], session: Any) -> dict[str, tuple[Any, ...]]:
    """Which torch versions each backend's index under ``base`` carries (the backends the root
    page lists, else ``names``). A backend index that does not exist is left out; any other
    failure is a :class:`RefreshError` naming the URL."""
    from fitwheel.index.config import IndexConfig
    from fitwheel.index.finder import Finder
    from fitwheel.index.http import HttpError
    from fitwheel.torchbackend.published import listed_backends, torch_versions

    listed = listed_backends(session, base)
    published: dict[str, tuple[Any, ...]] = {}
    read = []
    for name in listed or names:
        url = f"{base.rstrip('/')}/{name}/"
        read.append(url)
        try:
            page = Finder(IndexConfig(url), session).page(url, "torch") or []
        except HttpError as exc:
            if exc.status == 404:
                continue
            raise RefreshError(_broken(base, url, exc)) from None
        except FitwheelError as exc:
            raise RefreshError(_broken(base, url, exc)) from None
        versions = torch_versions(page)
        if versions:
            published[name] = versions
    if not published:
        raise RefreshError(
            f"no torch wheels under {base}: none of {', '.join(read)} lists any. Point "
            "--torch-index-url at a mirror of PyTorch's per-backend indexes (BASE/<backend>/); "
            "the backend table in force is unchanged."
        )
    return published


def _broken(base: str, url: str, exc: Exception) -> str:
    return (
        f"{url} cannot be read as a torch backend index ({str(exc).rstrip('.')}). Check "
        f"--torch-index-url ({base}); the backend table in force is unchanged."
    )


def table_data(table: BackendTable) -> dict[str, Any]:
    """``table`` as the JSON the table file holds (:func:`.table.parse_table` reads it back)."""
    from fitwheel.torchbackend.table import TABLE_FORMAT

    backends: dict[str, Any] = {}
    for b in table.backends:
        entry: dict[str, Any] = {"platforms": list(b.platforms)}
        if b.drivers:
            entry = {"drivers": dict(b.drivers), **entry}
        if b.extrapolated:
            entry["extrapolated"] = b.extrapolated
        backends[b.name] = entry
    releases: dict[str, Any] = {}
    for r in table.releases:
        entry = {"source": r.source}
        if r.requires_python:
            entry["requires_python"] = r.requires_python
        if r.latest:
            entry["latest"] = r.latest
        if r.extrapolated:
            entry["extrapolated"] = dict(r.extrapolated)
        entry["builds"] = {
            name: {ns: {f: list(v) for f, v in fs.items()} for ns, fs in props.items()}
            for name, props in r.builds.items()
        }
        releases[r.series] = entry
    return {
        "description": table.description,
        "format": TABLE_FORMAT,
        "updated": table.updated,
        "projects": list(table.projects),
        "backends": backends,
        "releases": releases,
    }


def refresh_from_index(base: str, bundled: Mapping[str, Any], session: Any) -> dict[str, Any]:
    """The table data ``bundled`` (decoded JSON) brought up to date from the index under
    ``base``: exact builds from its variants files, the releases each backend index carries,
    the rest extrapolated and marked. Raises :class:`RefreshError` when the index is broken."""
    from dataclasses import replace
    from datetime import UTC, datetime

    from packaging.version import Version

    from fitwheel.torchbackend.extrapolate import extend_table
    from fitwheel.torchbackend.table import parse_table

    start = parse_table(bundled)
    published = published_on_index(base, [b.name for b in start.backends], session)
    try:
        variants = variants_files_from_index(base, session, missing_ok=True)
        exact = releases_from_variants(variants)
    except FitwheelError as exc:
        raise RefreshError(_broken(base, base.rstrip("/") + "/variant/", exc)) from None
    known = parse_table(refreshed_table(bundled, exact))
    extended = extend_table(known, published)
    kept = [r for r in known.releases if r.series not in {x.series for x in extended.releases}]
    releases = sorted((*extended.releases, *kept), key=lambda r: Version(r.series), reverse=True)
    data = table_data(replace(extended, releases=tuple(releases)))
    data["refreshed"] = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    data["refreshed_from"] = base
    data.pop("updated", None)
    parse_table(data)  # the result must load
    return data


def write_cached_table(data: Mapping[str, Any], env: Mapping[str, str] | None = None) -> str:
    """Write ``data`` as the cached copy of the table (atomically); its path."""
    import json
    import os

    from fitwheel.torchbackend.table import cached_table_path

    path = cached_table_path(env)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.write("\n")
    os.replace(tmp, path)
    return path
