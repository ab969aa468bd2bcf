"""The static index: page content, metadata files, variants.json merging, incremental rebuilds."""

from __future__ import annotations

import hashlib
import html.parser
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from variantlib.variants_json import VariantsJson

from fitwheel.errors import FitwheelError
from fitwheel.publish.index_build import IndexBuildError, build_index
from fitwheel.wheel.archive import UnsafeWheelError
from tests.kit import UV_NVIDIA, make_wheel, variant_doc

PROVIDERS = {"nvidia": UV_NVIDIA}
CU12 = {"nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["80_real", "90_real"]}}
CU13 = {"nvidia": {"cuda_version_lower_bound": ["13.0"], "sm_arch": ["90_real"]}}


class _Anchors(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.anchors: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self.anchors.append(dict(attrs))


def anchors(page: Path) -> dict[str, dict[str, str | None]]:
    parser = _Anchors()
    parser.feed(page.read_text())
    return {str(a["href"]).split("#")[0].rsplit("/", 1)[-1]: a for a in parser.anchors}


def _demo_wheels(folder: Path) -> None:
    make_wheel(folder, requires_python=">=3.8,<4")
    make_wheel(folder, label="cu12", variant_json=variant_doc("cu12", CU12, PROVIDERS))
    make_wheel(folder, label="cu13", variant_json=variant_doc("cu13", CU13, PROVIDERS))
    make_wheel(folder, label="null", variant_json=variant_doc("null", {}, PROVIDERS))
    make_wheel(folder, name="other.pkg", version="2.0")


def test_project_page_links_hashes_metadata(tmp_path: Path) -> None:
    _demo_wheels(tmp_path / "wheels")
    out = tmp_path / "index"
    build_index(tmp_path / "wheels", out)

    parser = _Anchors()
    parser.feed((out / "simple" / "index.html").read_text())
    assert [a["href"] for a in parser.anchors] == ["demo-pkg/", "other-pkg/"]
    root_json = json.loads((out / "simple" / "index.json").read_text())
    assert [p["name"] for p in root_json["projects"]] == ["demo-pkg", "other-pkg"]

    page = out / "simple" / "demo-pkg" / "index.html"
    links = anchors(page)
    assert set(links) == {
        "demo_pkg-1.0-py3-none-any.whl",
        "demo_pkg-1.0-py3-none-any-cu12.whl",
        "demo_pkg-1.0-py3-none-any-cu13.whl",
        "demo_pkg-1.0-py3-none-any-null.whl",
        "demo_pkg-1.0-variants.json",
    }
    for filename, attrs in links.items():
        target = (page.parent / str(attrs["href"]).split("#")[0]).resolve()
        assert target.is_file()
        assert str(attrs["href"]).endswith(
            "#sha256=" + hashlib.sha256(target.read_bytes()).hexdigest()
        )
        if filename.endswith(".whl"):
            meta = Path(f"{target}.metadata").read_bytes()
            with zipfile.ZipFile(target) as zf:
                assert meta == zf.read("demo_pkg-1.0.dist-info/METADATA")
            expected = "sha256=" + hashlib.sha256(meta).hexdigest()
            assert attrs["data-dist-info-metadata"] == expected
            assert attrs["data-core-metadata"] == expected
    plain = links["demo_pkg-1.0-py3-none-any.whl"]
    assert plain["data-requires-python"] == ">=3.8,<4"
    assert 'data-requires-python="&gt;=3.8,&lt;4"' in page.read_text()
    assert "data-requires-python" not in links["demo_pkg-1.0-variants.json"]

    doc = json.loads((page.parent / "index.json").read_text())
    assert doc["meta"]["api-version"] == "1.1"
    assert doc["name"] == "demo-pkg" and doc["versions"] == ["1.0"]
    files = {f["filename"]: f for f in doc["files"]}
    assert set(files) == set(links)
    assert files["demo_pkg-1.0-py3-none-any.whl"]["requires-python"] == ">=3.8,<4"
    for name, entry in files.items():
        assert entry["hashes"]["sha256"] == str(links[name]["href"]).split("#sha256=")[1]


def test_variants_json_is_merged_and_read_by_variantlib(tmp_path: Path) -> None:
    _demo_wheels(tmp_path / "wheels")
    out = tmp_path / "index"
    report = build_index(tmp_path / "wheels", out)
    assert report.variants_files == ["files/demo-pkg/demo_pkg-1.0-variants.json"]
    text = (out / "files" / "demo-pkg" / "demo_pkg-1.0-variants.json").read_text()
    peer = VariantsJson(json.loads(text))
    assert set(peer.variants) == {"cu12", "cu13", "null"}
    assert {p.to_str() for p in peer.variants["cu13"].properties} == {
        "nvidia :: cuda_version_lower_bound :: 13.0",
        "nvidia :: sm_arch :: 90_real",
    }
    assert not (out / "files" / "other-pkg").joinpath("other.pkg-2.0-variants.json").exists()


def test_inconsistent_labels_name_both_wheels(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, label="gpu", variant_json=variant_doc("gpu", CU12, PROVIDERS))
    make_wheel(
        wheels,
        label="gpu",
        tag="py3-none-manylinux_2_28_x86_64",
        variant_json=variant_doc("gpu", CU13, PROVIDERS),
    )
    with pytest.raises(IndexBuildError) as info:
        build_index(wheels, tmp_path / "index")
    message = str(info.value)
    assert "demo_pkg-1.0-py3-none-any-gpu.whl" in message
    assert "demo_pkg-1.0-py3-none-manylinux_2_28_x86_64-gpu.whl" in message
    assert "'gpu'" in message


def test_conflicting_providers_are_refused(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, label="cu12", variant_json=variant_doc("cu12", CU12, PROVIDERS))
    other = {"nvidia": {"requires": ["some-other-provider"]}}
    make_wheel(wheels, label="cu13", variant_json=variant_doc("cu13", CU13, other))
    with pytest.raises(IndexBuildError, match="cannot be merged"):
        build_index(wheels, tmp_path / "index")


def test_label_without_variant_json_is_refused(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, label="cu12")
    with pytest.raises(FitwheelError, match=r"carries label 'cu12' but there is no variant.json"):
        build_index(wheels, tmp_path / "index")


def test_hostile_wheel_stops_the_build_before_anything_is_written(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, name="good")
    bad = make_wheel(wheels, name="bad", files={"XX/evil.py": b"x = 1\n"})
    bad.write_bytes(bad.read_bytes().replace(b"XX/evil.py", b"../evil.py"))
    out = tmp_path / "index"
    with pytest.raises(UnsafeWheelError, match=r"bad-1.0-py3-none-any.whl"):
        build_index(wheels, out)
    assert not (out / "simple").exists() and not (out / "files").exists()
    assert not (tmp_path / "evil.py").exists()
    # a first build is staged beside the output folder; a failed one leaves nothing there
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wheels"]


def test_first_build_into_an_existing_empty_folder(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    out = tmp_path / "index"
    out.mkdir()
    report = build_index(wheels, out)
    assert (report.wheels, report.linked) == (1, 1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["index", "wheels"]
    assert "demo_pkg-1.0-py3-none-any.whl" in (out / "simple/demo-pkg/index.html").read_text()
    assert (
        (out / "files/demo-pkg/demo_pkg-1.0-py3-none-any.whl.metadata")
        .read_bytes()
        .startswith(b"Metadata-Version")
    )


def _mtimes(root: Path) -> dict[str, int]:
    return {
        p.relative_to(root).as_posix(): p.stat().st_mtime_ns
        for p in root.rglob("*")
        if p.is_file() and p.name != ".fitwheel-index.json"
    }


def test_incremental_rebuild_touches_only_the_changed_project(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _demo_wheels(wheels)
    out = tmp_path / "index"
    build_index(wheels, out, mode="copy")
    before = _mtimes(out)

    again = build_index(wheels, out, mode="copy")
    assert again.wheels_read == 0 and again.projects_written == []
    assert _mtimes(out) == before

    make_wheel(wheels, name="other.pkg", version="2.1")
    report = build_index(wheels, out, mode="copy")
    assert report.wheels_read == 1
    assert report.projects_written == ["other-pkg"]
    after = _mtimes(out)
    unchanged = {k: v for k, v in before.items() if "demo-pkg" in k or k.startswith("simple/index")}
    assert {k: after[k] for k in unchanged} == unchanged
    assert "other.pkg-2.1-py3-none-any.whl" in (out / "simple/other-pkg/index.html").read_text()
    assert json.loads((out / "simple/other-pkg/index.json").read_text())["versions"] == [
        "2.0",
        "2.1",
    ]
    # The wheel already published was not copied again.
    kept = "files/other-pkg/other.pkg-2.0-py3-none-any.whl"
    assert after[kept] == before[kept]


def test_changed_wheel_is_reread_and_removed_wheel_unpublished(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _demo_wheels(wheels)
    out = tmp_path / "index"
    build_index(wheels, out)
    cu13 = wheels / "demo_pkg-1.0-py3-none-any-cu13.whl"
    cu13.unlink()
    report = build_index(wheels, out)
    assert report.projects_written == ["demo-pkg"]
    assert not (out / "files/demo-pkg/demo_pkg-1.0-py3-none-any-cu13.whl").exists()
    assert not (out / "files/demo-pkg/demo_pkg-1.0-py3-none-any-cu13.whl.metadata").exists()
    text = (out / "files/demo-pkg/demo_pkg-1.0-variants.json").read_text()
    assert set(json.loads(text)["variants"]) == {"cu12", "null"}

    other = wheels / "other.pkg-2.0-py3-none-any.whl"
    other.unlink()
    report = build_index(wheels, out)
    assert report.projects_removed == ["other-pkg"]
    assert not (out / "simple/other-pkg").exists()
    assert "other-pkg" not in (out / "simple/index.html").read_text()

    # Same name, new content (and a new mtime): read again, new hash published.
    plain = wheels / "demo_pkg-1.0-py3-none-any.whl"
    old_hash = hashlib.sha256(plain.read_bytes()).hexdigest()
    make_wheel(wheels, files={"demo_pkg/__init__.py": b"BUILD = 'rebuilt'\n"})
    os.utime(plain, ns=(plain.stat().st_atime_ns, plain.stat().st_mtime_ns + 10**9))
    report = build_index(wheels, out)
    assert report.wheels_read == 1
    page = (out / "simple/demo-pkg/index.html").read_text()
    assert old_hash not in page
    assert hashlib.sha256(plain.read_bytes()).hexdigest() in page


def test_many_wheels_single_read_each(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    for i in range(150):
        make_wheel(wheels, name=f"pkg{i % 50}", version=f"1.{i // 50}")
    out = tmp_path / "index"
    first = build_index(wheels, out)
    assert (first.wheels, first.wheels_read, first.projects) == (150, 150, 50)
    second = build_index(wheels, out)
    assert (second.wheels_read, second.projects_written) == (0, [])
    assert len(json.loads((out / "simple/index.json").read_text())["projects"]) == 50


def test_output_inside_wheel_dir_is_not_indexed(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    build_index(wheels, wheels / "index")
    report = build_index(wheels, wheels / "index")
    assert report.wheels == 1


def test_variants_json_matches_variantlib_generate_index_json(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    _demo_wheels(wheels)
    build_index(wheels, tmp_path / "index")
    peer_dir = tmp_path / "peer"
    shutil.copytree(wheels, peer_dir)
    subprocess.run(
        [
            str(Path(sys.executable).parent / "variantlib"),
            "generate-index-json",
            "-d",
            str(peer_dir),
        ],
        check=True,
        capture_output=True,
    )
    theirs = json.loads((peer_dir / "demo_pkg-1.0-variants.json").read_text())
    ours = json.loads((tmp_path / "index/files/demo-pkg/demo_pkg-1.0-variants.json").read_text())
    theirs.pop("$schema")
    ours.pop("$schema")
    assert ours == theirs


def test_first_build_through_a_symlinked_output_folder(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels)
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "site"
    link.symlink_to(real)
    build_index(wheels, link)
    assert link.is_symlink()
    assert (real / "simple/demo-pkg/index.html").is_file()


def _torch_era_doc(label: str, props: dict[str, dict[str, list[str]]]) -> dict[str, object]:
    """A wheel's variant.json as PyTorch 2.10 published it (schema v0.0.3, with enable-if)."""
    return {
        "$schema": "https://variants-schema.wheelnext.dev/v0.0.3.json",
        "default-priorities": {"namespace": ["nvidia"]},
        "providers": {
            "nvidia": {
                "enable-if": "platform_system == 'Linux' or platform_system == 'Windows'",
                "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin",
                "requires": ["nvidia-variant-provider>=0.0.2,<1.0.0"],
            }
        },
        "variants": {label: props},
    }


def test_817_era_wheels_are_indexed_and_what_is_dropped_is_reported(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, label="cu12", variant_json=_torch_era_doc("cu12", CU12))
    make_wheel(wheels, label="cu13", variant_json=_torch_era_doc("cu13", CU13))
    report = build_index(wheels, tmp_path / "site")
    assert len(report.warnings) == 1
    assert "enable-if" in report.warnings[0] and "demo_pkg 1.0" in report.warnings[0]
    written = tmp_path / "site" / "files" / "demo-pkg" / "demo_pkg-1.0-variants.json"
    merged = VariantsJson(json.loads(written.read_text()))
    assert sorted(merged.variants) == ["cu12", "cu13"]


def test_wheels_with_the_legacy_null_label_are_refused_with_a_way_out(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, label="cu12", variant_json=_torch_era_doc("cu12", CU12))
    legacy = _torch_era_doc("00000000", {})
    legacy["$schema"] = "https://variants-schema.wheelnext.dev/"
    make_wheel(wheels, label="00000000", variant_json=legacy)
    with pytest.raises(IndexBuildError, match=r"legacy null label '00000000'.*variant make --null"):
        build_index(wheels, tmp_path / "site")
    assert not (tmp_path / "site").exists()
