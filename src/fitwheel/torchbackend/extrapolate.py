"""The backend table widened to what the indexes publish: releases and backends it lacks.

The per-backend indexes say which torch releases each backend carries (:mod:`.published`);
the table says what each known build ships. :func:`extend_table` joins the two:

- a release series the indexes publish becomes a release whose builds are the backends that
  publish it (and only those: a backend whose index lacks the series has no build of it);
- a build the table lacks takes the architectures of the same backend's newest known build;
- a backend the table lacks (a newer ``cuXYZ``, ``rocmX.Y``) takes its requirements from its
  name (CUDA X.Y: the minimum NVIDIA driver of CUDA X.0, from ``nvidia_cuda_drivers.json``;
  ROCm X.Y), its platforms from the nearest known backend of its vendor, and its
  architectures from that backend's newest build.

Every value taken this way is marked (:attr:`Release.extrapolated`,
:attr:`Backend.extrapolated`), so that ``--explain`` can say so. Pure: no I/O beyond the
bundled driver table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from packaging.version import Version

from fitwheel.torchbackend.table import Backend, BackendTable, Release, backend_from_name

_VENDOR_RANK = {"nvidia": 0, "amd": 1, "intel": 2, None: 3}


def series_of(version: Version) -> str:
    return f"{version.major}.{version.minor}"


def _numbers(version: str | None) -> tuple[int, ...]:
    return tuple(int(p) for p in (version or "0").split(".") if p.isdigit())


def minimum_driver(cuda: str) -> str | None:
    """The oldest Linux driver for CUDA ``cuda``'s major (NVIDIA's minor-version compatibility:
    a 13.2 build runs on a driver for 13.0), from the bundled driver table."""
    from fitwheel.data import load_table

    major = cuda.split(".")[0]
    floor = None
    for minimum, version in load_table("nvidia_cuda_drivers.json")["drivers"]:
        if str(version).split(".")[0] == major:
            floor = str(minimum)  # the table is newest first: the last match is the .0
    return floor


def preference_key(backend: Backend) -> tuple[int, tuple[int, ...]]:
    """Newest CUDA first, then ROCm newest first, then XPU, CPU last."""
    return (_VENDOR_RANK.get(backend.vendor, 3), tuple(-n for n in _numbers(backend.version)))


def nearest_known(table: BackendTable, name: str) -> Backend | None:
    """The table's backend of ``name``'s vendor nearest to it in version that some release was
    built for (``cu132`` -> ``cu130``, ``rocm7.2`` -> ``rocm7.1``)."""
    wanted = backend_from_name(name)
    built = {b for r in table.releases for b in r.builds}
    candidates = [
        b
        for b in table.backends
        if b.vendor == wanted.vendor and b.name in built and b.name != name
    ]
    if not candidates:
        return None
    target = _numbers(wanted.version)

    def distance(b: Backend) -> tuple[int, ...]:
        have = _numbers(b.version) + (0,) * 3
        want = target + (0,) * 3
        return (abs(have[0] - want[0]), abs(have[1] - want[1]), int(have > want))

    return min(candidates, key=distance)


def extrapolated_backend(table: BackendTable, name: str) -> Backend:
    """A backend the table lacks, from its name and the nearest known one."""
    base = backend_from_name(name)
    near = nearest_known(table, name)
    drivers: dict[str, str] = {}
    if base.vendor == "nvidia" and base.version is not None:
        linux = minimum_driver(base.version)
        if linux is not None:
            drivers["Linux"] = linux
        if near is not None and _numbers(near.version)[:1] == _numbers(base.version)[:1]:
            drivers = {**near.drivers, **drivers}
    platforms = near.platforms if near is not None else ()
    return Backend(
        name, base.vendor, base.version, drivers, platforms, near.name if near else "(its name)"
    )


def _basis(table: BackendTable, name: str) -> tuple[str, Release] | None:
    """The known build whose architectures ``name``'s unknown builds take: the same backend's
    newest, else the nearest known backend's newest."""
    near = nearest_known(table, name) if name != "cpu" else None
    for candidate in (name, *((near.name,) if near is not None else ())):
        for release in table.releases:
            if candidate in release.builds:
                return candidate, release
    return None


def extend_table(table: BackendTable, published: Mapping[str, Sequence[Version]]) -> BackendTable:
    """``table`` as the indexes publish it (see the module docstring); ``table`` itself when
    ``published`` is empty (the indexes were not read)."""
    if not published:
        return table
    known = {b.name for b in table.backends}
    backends = [*table.backends]
    backends += [extrapolated_backend(table, n) for n in published if n not in known]
    backends.sort(key=preference_key)
    newest: dict[str, dict[str, Version]] = {}
    for name, versions in published.items():
        for version in versions:
            held = newest.setdefault(series_of(version), {})
            if name not in held or version > held[name]:
                held[name] = version
    fallback_python = table.releases[0].requires_python if table.releases else None
    releases = []
    for series in sorted(newest, key=Version, reverse=True):
        old = table.release_of(Version(series))
        builds = {}
        marks = dict(old.extrapolated) if old is not None else {}
        for name in newest[series]:
            if old is not None and name in old.builds:
                builds[name] = old.builds[name]
                continue
            basis = _basis(table, name)
            if basis is None:
                builds[name] = {}
                if name != "cpu":
                    marks[name] = "its name"
                continue
            builds[name] = basis[1].builds[basis[0]]
            if name != "cpu":
                marks[name] = f"{basis[0]} {basis[1].series}"
        latest = max(newest[series].values())
        releases.append(
            Release(
                series,
                builds,
                old.requires_python if old is not None else fallback_python,
                old.source if old is not None else "the backend indexes",
                {k: v for k, v in marks.items() if k in builds},
                str(latest),
            )
        )
    return BackendTable(
        table.projects,
        tuple(backends),
        tuple(releases),
        table.description,
        table.updated,
        table.origin,
        table.warnings,
    )
