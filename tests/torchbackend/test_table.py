"""The backend table: what it holds, that it is derived from the published variants files, and
that the maintainer's refresh rebuilds it from an index."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fitwheel.errors import UsageError
from fitwheel.torchbackend.refresh import (
    backend_of_label,
    refreshed_table,
    releases_from_variants,
)
from fitwheel.torchbackend.table import (
    TableError,
    backend_from_name,
    check_backend_name,
    load_backend_table,
    parse_table,
)
from tests.kit import FIXTURES, build_torch_mirror, serve

ROOT = Path(__file__).resolve().parents[2]
TABLE_FILE = ROOT / "src" / "fitwheel" / "data" / "torch_backends.json"
PUBLISHED = sorted(FIXTURES.glob("torch-*-variants.json"))


def test_the_table_holds_minimum_drivers_archs_and_platforms() -> None:
    table = load_backend_table(cached=False)
    names = [b.name for b in table.backends]
    assert (
        names.index("cu130")
        < names.index("cu128")
        < names.index("rocm7.0")
        < names.index("xpu")
        < names.index("cpu")
    )
    cu128 = table.backend("cu128")
    assert cu128.drivers == {"Linux": "525.60.13", "Windows": "528.33"}
    assert cu128.cuda_floor == "12.0" and table.backend("cu130").cuda_floor == "13.0"
    assert table.backend("rocm6.4").platforms == ("Linux-x86_64",)
    assert [r.series for r in table.releases] == ["2.10", "2.9", "2.8"]
    r29 = table.releases[1]
    assert set(r29.builds) == {"cpu", "cu126", "cu128", "cu130", "rocm6.3", "rocm6.4", "xpu"}
    assert r29.builds["cu126"]["nvidia"]["sm_arch"][:2] == ("50_real", "60_real")
    assert "gfx950" in table.releases[0].builds["rocm7.0"]["amd"]["gfx_arch"]
    assert "torch" in table.projects and "pytorch-triton-rocm" in table.projects


def test_the_releases_are_what_the_published_variants_files_say() -> None:
    derived = releases_from_variants((p.name, p.read_bytes()) for p in PUBLISHED)
    bundled = json.loads(TABLE_FILE.read_text())["releases"]
    assert set(derived) == {"2.8", "2.9", "2.10"}
    for series, release in derived.items():
        assert bundled[series]["builds"] == release["builds"], series
        assert bundled[series]["source"] == f"torch-{series}.0-variants.json"


def test_labels_name_backends() -> None:
    assert backend_of_label("cuda12.8") == "cu128"
    assert backend_of_label("cu129") == "cu129"
    assert backend_of_label("rocm6.4") == "rocm6.4"
    assert backend_of_label("xpu") == "xpu"
    assert backend_of_label("null") == backend_of_label("00000000") == "cpu"
    assert backend_of_label("x86_64_v3") is None


def test_backend_names() -> None:
    assert check_backend_name(" CU128 ") == "cu128"
    for good in ("auto", "cpu", "xpu", "rocm6.2.4", "cu92"):
        assert check_backend_name(good) == good
    with pytest.raises(UsageError, match="expected auto, cpu, cuXXX"):
        check_backend_name("cuda")
    assert backend_from_name("cu132").version == "13.2"
    with pytest.raises(TableError):
        backend_from_name("metal")


def test_a_refresh_keeps_the_rest_and_sorts_releases() -> None:
    table = json.loads(TABLE_FILE.read_text())
    fresh = {"2.11": {"source": "torch-2.11.0-variants.json", "builds": {"cpu": {}}}}
    out = refreshed_table(table, fresh)
    assert list(out["releases"])[:2] == ["2.11", "2.10"]
    assert out["backends"] == table["backends"]
    again = refreshed_table(table, {"2.8": {"source": "x", "builds": {"cpu": {}}}})
    assert again["releases"]["2.8"]["supplement"] == table["releases"]["2.8"]["supplement"]
    assert again["releases"]["2.8"]["requires_python"] == ">=3.9"
    parse_table(out)
    with pytest.raises(TableError):
        parse_table({"format": 99})


def test_the_maintainer_script_rebuilds_the_table_from_an_index(tmp_path: Path) -> None:
    mirror = build_torch_mirror(
        tmp_path / "mirror", ("2.10.0",), variant_versions=("2.9.0", "2.10.0")
    )
    start = json.loads(TABLE_FILE.read_text())
    start["releases"] = {}
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps(start))
    out = tmp_path / "table.json"
    with serve(mirror.root) as (url, _state):
        proc = subprocess.run(
            [
                sys.executable,
                str(ROOT / "tools" / "refresh_torch_backends.py"),
                *("--from", f"{url}/whl", "--table", str(seed), "-o", str(out)),
            ],
            capture_output=True,
            text=True,
            env={"PATH": "/usr/bin:/bin", "PIP_CONFIG_FILE": "/dev/null"},
            cwd=ROOT,
        )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "releases 2.10, 2.9 refreshed"
    rebuilt = json.loads(out.read_text())
    bundled = json.loads(TABLE_FILE.read_text())
    for series in ("2.9", "2.10"):
        assert rebuilt["releases"][series]["builds"] == bundled["releases"][series]["builds"]
