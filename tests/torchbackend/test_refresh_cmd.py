"""``fitwheel torch refresh``: the cached backend table, read from the index, and what it changes;
a broken index or a broken cached copy leaves the bundled table in force."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from fitwheel.cli.main import main
from fitwheel.platform.policy import target_from_profile
from fitwheel.torchbackend.choose import Choice, choose_backend
from fitwheel.torchbackend.table import BackendTable, load_backend_table
from tests.kit import serve
from tests.kit.torch_mirror import TorchMirror, build_published_mirror
from tests.torchbackend.machines import machine_profile


@pytest.fixture(scope="module")
def mirror(tmp_path_factory: pytest.TempPathFactory) -> TorchMirror:
    return build_published_mirror(tmp_path_factory.mktemp("mirror"))


@pytest.fixture(scope="module")
def url(mirror: TorchMirror) -> Iterator[str]:
    with serve(mirror.root) as (base, _state):
        yield base


@pytest.fixture
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key in list(os.environ):
        if key.startswith(("PIP_", "UV_", "FITWHEEL_")):
            monkeypatch.delenv(key)
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("FITWHEEL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def refresh(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main(["torch", "refresh", *args])
    out = capsys.readouterr()
    return rc, out.out, out.err


def a100_on_535(table: BackendTable) -> Choice:
    """The table-only choice (``fitwheel doctor`` and lock previews make it) for an A100 on a
    535 driver."""
    profile = machine_profile("gpu-a100-legacy@535")
    return choose_backend(
        table,
        target_from_profile(profile, "all"),
        profile.devices,
        system="Linux",
        machine="x86_64",
        python_version="3.11",
    )


def test_a_refresh_changes_a_choice_the_bundled_table_got_wrong(
    cache: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = a100_on_535(load_backend_table())
    assert (before.backend, before.series) == ("cu128", "2.10")  # torch 2.15 is unknown to it
    rc, out, err = refresh(capsys, "--torch-index-url", f"{url}/whl")
    assert rc == 0, err
    assert f"torch backend table refreshed from {url}/whl" in out
    assert "torch 2.15 (newest 2.15.0): cu132, cu130, cu126, rocm7.2, xpu, cpu" in out
    assert "cu132 from cu130 2.10" in out and "rocm7.2 from rocm7.1 2.10" in out
    table = load_backend_table()
    assert str(cache / "torch_backends.json") in table.origin and "refreshed" in table.origin
    after = a100_on_535(table)
    assert (after.backend, after.series, after.shown) == ("cu126", "2.15", "2.15.0")


def test_the_refreshed_table_is_exact_where_variants_files_say_and_marked_elsewhere(
    cache: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = refresh(capsys, "--torch-index-url", f"{url}/whl", "--json")
    assert rc == 0, err
    summary = json.loads(out)
    releases = summary["releases"]
    # 2.10 has a variants file: its builds are exact, none extrapolated
    assert releases["2.10"]["extrapolated"] == {}
    assert releases["2.15"]["extrapolated"]["cu132"] == "cu130 2.10"
    assert releases["2.11"]["backends"] == ["cu130", "cu128", "cu126", "rocm7.1", "xpu", "cpu"]
    assert summary["backends_extrapolated"] == {"rocm7.2": "rocm7.1"}
    data = json.loads(Path(summary["path"]).read_text())
    assert data["refreshed_from"] == f"{url}/whl"
    assert data["backends"]["rocm7.2"]["platforms"] == ["Linux-x86_64"]
    table = load_backend_table()
    release = table.release_of(Version("2.10"))
    assert release is not None and "120_real" in release.builds["cu130"]["nvidia"]["sm_arch"]


@pytest.mark.parametrize("broken", ["empty", "garbage", "500"])
def test_a_broken_mirror_leaves_the_table_in_force(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], broken: str
) -> None:
    root = tmp_path / "broken"
    (root / "whl").mkdir(parents=True)
    options: dict[str, Any] = {"fail": {"/whl/cpu/torch/": 500}} if broken == "500" else {}
    if broken == "garbage":
        (root / "whl" / "cpu" / "torch").mkdir(parents=True)
        (root / "whl" / "cpu" / "torch" / "index.json").write_text("{not json")
        (root / "whl" / "cpu" / "torch" / "index.html").write_text("\x00\x01 garbage")
    with serve(root, **options) as (base, _state):
        rc, _out, err = refresh(capsys, "--torch-index-url", f"{base}/whl")
    assert rc == 1
    assert f"{base}/whl" in err and "the backend table in force is unchanged" in err
    assert "Traceback" not in err
    assert not (cache / "torch_backends.json").exists()
    assert load_backend_table().origin == "the bundled table"


def test_a_broken_cached_copy_falls_back_to_the_bundled_table(cache: Path) -> None:
    cache.mkdir(parents=True)
    (cache / "torch_backends.json").write_text('{"format": 1, "releases": [')
    table = load_backend_table()
    assert table.origin == "the bundled table"
    assert table.warnings and "cannot be read" in table.warnings[0]
    assert str(cache / "torch_backends.json") in table.warnings[0]


def test_a_cached_copy_older_than_the_bundled_table_is_not_used(
    cache: Path, url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, out, err = refresh(capsys, "--torch-index-url", f"{url}/whl", "--json")
    assert rc == 0, err
    path = Path(json.loads(out)["path"])
    data = json.loads(path.read_text())
    data["refreshed"] = "2020-01-01T00:00:00Z"
    path.write_text(json.dumps(data))
    assert load_backend_table().origin == "the bundled table"


def test_a_backend_found_by_refresh_is_a_candidate_where_the_index_lists_none(
    cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.kit import make_venv

    published = {"cu134": ("2.16.0",), "cu128": ("2.11.0",), "cpu": ("2.16.0",)}
    mirror = build_published_mirror(tmp_path / "m", published, variant_versions=())
    listing = mirror.root / "whl" / "index.html"
    hidden = mirror.root / "whl" / "listing.html"
    listing.rename(hidden)  # a mirror without a root listing
    profile = tmp_path / "h100.json"
    profile.write_text(machine_profile("gpu-h100-open@580").dumps())
    venv = make_venv(tmp_path / "venv")

    def install(base: str) -> str:
        capsys.readouterr()
        rc = main(
            [
                *("install", "torch", "--torch-backend", "auto"),
                *("--torch-index-url", f"{base}/whl", "--index-url", f"{base}/pypi/simple/"),
                *("--profile", str(profile), "--python", str(venv), "--dry-run"),
                *("--report", "-"),
            ]
        )
        out = capsys.readouterr()
        assert rc == 0, out.err
        entry = next(e for e in json.loads(out.out)["install"] if e["name"] == "torch")
        return str(entry["version"])

    with serve(mirror.root) as (base, _state):
        assert install(base) == "2.11.0+cu128"  # cu134 is in neither the table nor a listing
        hidden.rename(listing)
        rc, out, err = refresh(capsys, "--torch-index-url", f"{base}/whl")
        assert rc == 0, err
        assert "backend cu134: not in the bundled table" in out
        listing.rename(hidden)
        assert install(base) == "2.16.0+cu134"
