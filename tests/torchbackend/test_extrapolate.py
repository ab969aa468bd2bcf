"""Releases and backends the table lacks, from what the indexes publish (pure)."""

from __future__ import annotations

from packaging.version import Version

from fitwheel.torchbackend.extrapolate import (
    extend_table,
    extrapolated_backend,
    minimum_driver,
)
from fitwheel.torchbackend.table import load_backend_table

TABLE = load_backend_table(cached=False)


def test_a_cuda_backend_takes_the_driver_of_its_major_from_the_driver_table() -> None:
    assert minimum_driver("13.2") == "580.65.06"
    assert minimum_driver("12.8") == "525.60.13"
    cu132 = extrapolated_backend(TABLE, "cu132")
    assert cu132.drivers["Linux"] == "580.65.06" and cu132.extrapolated == "cu130"
    # CUDA 14: no driver known yet; it still needs a driver for CUDA 14.0 (cuda_floor)
    cu140 = extrapolated_backend(TABLE, "cu140")
    assert cu140.drivers == {} and cu140.cuda_floor == "14.0"
    assert cu140.extrapolated == "cu130"  # the nearest known line with builds


def test_a_new_rocm_takes_the_nearest_known_line() -> None:
    rocm = extrapolated_backend(TABLE, "rocm7.2")
    assert (rocm.vendor, rocm.version, rocm.extrapolated) == ("amd", "7.2", "rocm7.1")
    assert rocm.platforms == ("Linux-x86_64",)


def test_the_published_releases_become_the_table() -> None:
    published = {
        "cu132": (Version("2.15.0"),),
        "cu128": (Version("2.11.0"), Version("2.10.0")),
        "rocm7.2": (Version("2.15.1"), Version("2.15.0")),
        "cpu": (Version("2.15.1"),),
    }
    table = extend_table(TABLE, published)
    assert [r.series for r in table.releases] == ["2.15", "2.11", "2.10"]
    newest = table.releases[0]
    assert set(newest.builds) == {"cu132", "rocm7.2", "cpu"} and newest.latest == "2.15.1"
    assert newest.extrapolated == {"cu132": "cu130 2.10", "rocm7.2": "rocm7.1 2.10"}
    assert newest.builds["cu132"] == TABLE.releases[0].builds["cu130"]
    # a release the table has keeps its data, restricted to the backends that publish it
    assert set(table.releases[2].builds) == {"cu128"} and not table.releases[2].extrapolated
    # the new backends sit in preference order
    names = [b.name for b in table.backends]
    assert names.index("cu132") < names.index("cu130") and names[-1] == "cpu"
    assert names.index("rocm7.2") < names.index("rocm7.1")
    assert extend_table(TABLE, {}) is TABLE
