"""variant make / strip / show, against variantlib 0.2.2 as the peer reader and writer."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import io
import json
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from variantlib.variant_dist_info import VariantDistInfo

from fitwheel.publish.config import VariantConfig, VariantConfigError
from fitwheel.publish.make import make_variant, strip_variant
from fitwheel.publish.show import read_wheel_variant, show_json
from fitwheel.variants.model import VariantProperty, default_label
from tests.kit import make_wheel, members, record_hash

VARIANTLIB = Path(sys.executable).parent / "variantlib"

# variantlib's make-variant imports 'build' (its [cli] extra) even with --skip-plugin-validation.
needs_variantlib_cli = pytest.mark.skipif(
    importlib.util.find_spec("build") is None,
    reason="variantlib make-variant needs the 'build' package (pip install 'build>=1.2,<1.3')",
)

CUDA = [
    VariantProperty.parse("nvidia :: cuda_version_lower_bound :: 12.0"),
    VariantProperty.parse("nvidia :: sm_arch :: 90_real"),
    VariantProperty.parse("nvidia :: sm_arch :: 80_real"),
]


def _plain(tmp_path: Path) -> Path:
    files = {
        "demo_pkg/__init__.py": b"BUILD = 'plain'\n",
        "demo_pkg/data.bin": bytes(range(256)) * 400,
        "demo_pkg/stored.txt": b"stored member\n" * 50,
        "demo_pkg/empty.py": b"",
    }
    return make_wheel(tmp_path / "in", files=files)


def _raw_members(path: Path) -> dict[str, tuple[int, int, bytes]]:
    """name -> (compress_type, CRC, compressed bytes) for every member."""
    result = {}
    data = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        for info in zf.infolist():
            name_len, extra_len = struct.unpack_from("<HH", data, info.header_offset + 26)
            start = info.header_offset + 30 + name_len + extra_len
            raw = data[start : start + info.compress_size]
            result[info.filename] = (info.compress_type, info.CRC, raw)
    return result


def test_make_writes_variant_json_label_and_record(
    tmp_path: Path, config: VariantConfig, out: Path
) -> None:
    wheel = _plain(tmp_path)
    result = make_variant(wheel, CUDA, config, out_dir=out)
    label = default_label(CUDA)
    assert result.label == label
    assert result.path == out / f"demo_pkg-1.0-py3-none-any-{label}.whl"

    contents = members(result.path)
    vj = contents["demo_pkg-1.0.dist-info/variant.json"]
    # variantlib's own reader accepts it, with the label the filename carries.
    peer = VariantDistInfo(vj, expected_label=label)
    assert {p.to_str() for p in peer.variant_desc.properties} == {
        "nvidia :: cuda_version_lower_bound :: 12.0",
        "nvidia :: sm_arch :: 80_real",
        "nvidia :: sm_arch :: 90_real",
    }
    assert peer.namespace_priorities == ["nvidia", "x86_64", "blas"]
    assert set(peer.providers) == {"nvidia", "x86_64", "blas"}

    rows = list(csv.reader(io.StringIO(contents["demo_pkg-1.0.dist-info/RECORD"].decode())))
    by_path = {row[0]: row for row in rows}
    assert by_path["demo_pkg-1.0.dist-info/variant.json"][1:] == [record_hash(vj), str(len(vj))]
    for name, data in contents.items():
        if not name.endswith("/RECORD"):
            assert by_path[name][1] == record_hash(data)


def test_make_copies_other_members_raw(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = _plain(tmp_path)
    result = make_variant(wheel, CUDA, config, out_dir=out)
    before = _raw_members(wheel)
    after = _raw_members(result.path)
    for name, raw in before.items():
        if name.endswith("/RECORD"):
            continue
        assert after[name] == raw, name
    names = list(after)
    assert names.index("demo_pkg-1.0.dist-info/variant.json") + 1 == names.index(
        "demo_pkg-1.0.dist-info/RECORD"
    )
    with zipfile.ZipFile(result.path) as zf:
        assert zf.testzip() is None


def test_strip_of_make_restores_contents(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = _plain(tmp_path)
    made = make_variant(wheel, CUDA, config, label="cuda12", out_dir=out)
    back = strip_variant(made.path, out_dir=tmp_path / "back")
    assert back.name == wheel.name
    assert members(back) == members(wheel)
    assert list(members(back)) == list(members(wheel))


def test_remake_replaces_variant_json(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    wheel = _plain(tmp_path)
    first = make_variant(wheel, CUDA, config, label="cuda12", out_dir=out)
    second = make_variant(
        first.path,
        [VariantProperty.parse("blas :: provider :: mkl")],
        config,
        out_dir=tmp_path / "again",
    )
    assert second.path.name == "demo_pkg-1.0-py3-none-any-41f146e5.whl"
    contents = members(second.path)
    assert sum(name.endswith("variant.json") for name in contents) == 1
    record = contents["demo_pkg-1.0.dist-info/RECORD"].decode()
    assert record.count("variant.json") == 1
    assert VariantDistInfo(contents["demo_pkg-1.0.dist-info/variant.json"]).variant_label == (
        "41f146e5"
    )


def test_null_variant(tmp_path: Path, config: VariantConfig, out: Path) -> None:
    made = make_variant(_plain(tmp_path), [], config, null=True, out_dir=out)
    assert made.path.name.endswith("-null.whl")
    peer = VariantDistInfo(members(made.path)["demo_pkg-1.0.dist-info/variant.json"], "null")
    assert peer.variant_desc.properties == []


def test_namespace_without_provider_is_an_error(
    tmp_path: Path, config: VariantConfig, out: Path
) -> None:
    prop = VariantProperty.parse("amd :: gfx_arch :: gfx942")
    with pytest.raises(VariantConfigError, match=r"no provider is declared for namespace.*amd"):
        make_variant(_plain(tmp_path), [prop], config, out_dir=out)
    assert list(out.iterdir()) == []


def test_static_value_not_listed_is_an_error(
    tmp_path: Path, config: VariantConfig, out: Path
) -> None:
    prop = VariantProperty.parse("blas :: provider :: atlas")
    with pytest.raises(VariantConfigError, match="can never be installed"):
        make_variant(_plain(tmp_path), [prop], config, out_dir=out)


def test_show_reports_label_and_properties(
    tmp_path: Path, config: VariantConfig, out: Path
) -> None:
    made = make_variant(_plain(tmp_path), CUDA, config, label="cu12", out_dir=out)
    doc = show_json(read_wheel_variant(made.path))
    assert doc["variant_label"] == "cu12"
    assert doc["variant_properties"] == {
        "nvidia": {"cuda_version_lower_bound": ["12.0"], "sm_arch": ["80_real", "90_real"]}
    }
    assert doc["namespace_priorities"] == ["nvidia", "x86_64", "blas"]
    assert doc["providers"]["blas"]["static-properties"] == {"provider": ["mkl", "openblas"]}
    plain = show_json(read_wheel_variant(_plain(tmp_path / "p")))
    assert plain["variant_label"] is None and plain["variant_properties"] == {}


STATIC_PYPROJECT = """
[variant.default-priorities]
namespace = ["blas", "x86_64"]
[variant.providers.blas]
static-properties = { provider = ["openblas", "mkl"] }
[variant.providers.x86_64]
requires = ["x86-64-variant-provider"]
"""


def _variantlib_make(wheel: Path, out: Path, pyproject: Path, *args: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(
        [
            str(VARIANTLIB),
            "make-variant",
            "-f",
            str(wheel),
            "-o",
            str(out),
            "--pyproject-toml",
            str(pyproject),
            "--skip-plugin-validation",
            *args,
        ],
        check=True,
        capture_output=True,
    )
    made = [p for p in out.iterdir() if p.suffix == ".whl"]
    assert len(made) == 1
    return made[0]


@needs_variantlib_cli
def test_fitwheel_reads_variantlib_wheels(tmp_path: Path) -> None:
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(STATIC_PYPROJECT)
    wheel = _plain(tmp_path)
    made = _variantlib_make(
        wheel,
        tmp_path / "vl",
        pyproject,
        "-p",
        "blas :: provider :: mkl",
        "-p",
        "x86_64 :: level :: v3",
    )
    wv = read_wheel_variant(made)
    assert wv.label == made.name.rsplit("-", 1)[1][:-4]
    assert wv.label == default_label(
        [VariantProperty.parse("blas::provider::mkl"), VariantProperty.parse("x86_64::level::v3")]
    )
    assert wv.description is not None
    assert {str(p) for p in wv.description.properties} == {
        "blas :: provider :: mkl",
        "x86_64 :: level :: v3",
    }
    assert wv.info is not None and wv.info.namespace_priorities == ("blas", "x86_64")
    blas = wv.info.providers["blas"].static_properties
    assert blas is not None and tuple(blas["provider"]) == ("openblas", "mkl")
    # And fitwheel's strip gives back the wheel variantlib started from.
    back = strip_variant(made, out_dir=tmp_path / "back")
    assert members(back) == members(wheel)


@needs_variantlib_cli
def test_fitwheel_make_matches_variantlib_make(tmp_path: Path) -> None:
    """Same input, same properties, same config: the same filename and variant.json content."""
    from fitwheel.publish.config import load_config

    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text(STATIC_PYPROJECT)
    wheel = _plain(tmp_path)
    props = ["blas :: provider :: openblas"]
    theirs = _variantlib_make(wheel, tmp_path / "vl", pyproject, "-p", *props)
    ours = make_variant(
        wheel,
        [VariantProperty.parse(p) for p in props],
        load_config(pyproject, pyproject=True),
        out_dir=tmp_path / "fw",
    )
    assert ours.path.name == theirs.name
    name = "demo_pkg-1.0.dist-info/variant.json"
    ours_doc = json.loads(members(ours.path)[name])
    theirs_doc = json.loads(members(theirs)[name])
    # The two tools name the v0.2 schema differently (uv and fitwheel use the PEP 850 URL).
    assert ours_doc.pop("$schema").endswith("v0.2.0.json")
    assert theirs_doc.pop("$schema").endswith("v0.2.0.json")
    assert ours_doc == theirs_doc
    ours_members = members(ours.path)
    theirs_members = members(theirs)
    assert set(ours_members) == set(theirs_members)
    for member, data in ours_members.items():
        if not member.endswith(("RECORD", "variant.json")):
            assert hashlib.sha256(data).digest() == hashlib.sha256(theirs_members[member]).digest()


def test_variantlib_unmakes_fitwheel_wheels(
    tmp_path: Path, config: VariantConfig, out: Path
) -> None:
    wheel = _plain(tmp_path)
    made = make_variant(wheel, CUDA, config, out_dir=out)
    back = tmp_path / "vl-back"
    back.mkdir()
    subprocess.run(
        [str(VARIANTLIB), "unmake-variant", "-f", str(made.path), "-o", str(back)],
        check=True,
        capture_output=True,
    )
    assert members(back / wheel.name) == members(wheel)


@pytest.mark.slow
def test_two_gigabyte_wheel_in_bounded_memory(tmp_path: Path) -> None:
    """A wheel with a 2.1 GB member is rewritten with a peak RSS far below its size."""
    script = tmp_path / "big.py"
    script.write_text(
        f"""
import base64, hashlib, resource, sys, zipfile
from pathlib import Path
from fitwheel.publish.config import parse_config
from fitwheel.publish.make import make_variant
from fitwheel.variants.model import VariantProperty
base = Path({str(tmp_path)!r})
(base / "in").mkdir()
wheel = base / "in" / "big-1.0-py3-none-any.whl"
chunk = b"\\x5a" * (1 << 20)
digest = hashlib.sha256()
record = []
def b64(d):
    return base64.urlsafe_b64encode(d).rstrip(b"=").decode()
with zipfile.ZipFile(wheel, "w", zipfile.ZIP_STORED, allowZip64=True) as zf:
    for name, data in [("big/__init__.py", b""),
                       ("big-1.0.dist-info/METADATA", b"Name: big\\nVersion: 1.0\\n"),
                       ("big-1.0.dist-info/WHEEL", b"Wheel-Version: 1.0\\n")]:
        zf.writestr(name, data)
        record.append(f"{{name}},sha256={{b64(hashlib.sha256(data).digest())}},{{len(data)}}")
    with zf.open(zipfile.ZipInfo("big/big.bin"), "w", force_zip64=True) as handle:
        for _ in range(2100):
            handle.write(chunk)
            digest.update(chunk)
    record.append(f"big/big.bin,sha256={{b64(digest.digest())}},{{2100 << 20}}")
    record.append("big-1.0.dist-info/RECORD,,")
    zf.writestr("big-1.0.dist-info/RECORD", "\\n".join(record) + "\\n")
config = parse_config({{"default-priorities": {{"namespace": ["x"]}},
    "providers": {{"x": {{"static-properties": {{"f": ["v"]}}}}}}}}, source="t")
result = make_variant(wheel, [VariantProperty.parse("x :: f :: v")], config,
                      out_dir=base / "out")
wheel.unlink()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(result.path.stat().st_size, peak)
"""
    )
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    size, peak_kib = map(int, proc.stdout.split())
    assert size > 2100 << 20
    assert peak_kib < 300 * 1024


def _record_in_the_middle(tmp_path: Path) -> Path:
    """A wheel whose RECORD is followed by more members, so that making a variant moves them."""
    dist_info = "demo_pkg-1.0.dist-info"
    body = {
        "demo_pkg/__init__.py": b"BUILD = 'plain'\n",
        f"{dist_info}/METADATA": b"Metadata-Version: 2.1\nName: demo_pkg\nVersion: 1.0\n",
        f"{dist_info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    tail = {"demo_pkg/late.bin": bytes(range(256)) * 300, "demo_pkg/late.py": b"x = 2\n"}
    lines = [f"{k},{record_hash(v)},{len(v)}" for k, v in {**body, **tail}.items()]
    record = ("\n".join([*lines, f"{dist_info}/RECORD,,"]) + "\n").encode()
    wheel = tmp_path / "in" / "demo_pkg-1.0-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    with zipfile.ZipFile(wheel, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in body.items():
            zf.writestr(name, data)
        zf.writestr(f"{dist_info}/RECORD", record)
        zf.writestr("demo_pkg/late.bin", tail["demo_pkg/late.bin"], zipfile.ZIP_STORED)
        zf.writestr("demo_pkg/late.py", tail["demo_pkg/late.py"])
    return wheel


def test_members_after_record_are_moved_intact(
    tmp_path: Path, config: VariantConfig, out: Path
) -> None:
    wheel = _record_in_the_middle(tmp_path)
    made = make_variant(wheel, CUDA, config, label="cuda12", out_dir=out)
    with zipfile.ZipFile(made.path) as zf:
        assert zf.testzip() is None
    before, after = members(wheel), members(made.path)
    for name in ("demo_pkg/late.bin", "demo_pkg/late.py", "demo_pkg/__init__.py"):
        assert after[name] == before[name]
    back = strip_variant(made.path, out_dir=tmp_path / "back")
    assert members(back) == before
    assert list(members(back)) == list(before)


@pytest.mark.parametrize("plain", [True, False])
def test_output_does_not_depend_on_the_output_folder_existing(
    tmp_path: Path, config: VariantConfig, out: Path, plain: bool
) -> None:
    # With the folder in place the bulk is copied before the archive is checked; without it the
    # archive is checked first. Both must write the same bytes.
    wheel = _plain(tmp_path) if plain else _record_in_the_middle(tmp_path)
    early = make_variant(wheel, CUDA, config, label="cuda12", out_dir=out)
    late = make_variant(wheel, CUDA, config, label="cuda12", out_dir=tmp_path / "new" / "dir")
    assert late.path.read_bytes() == early.path.read_bytes()
    (out / "back").mkdir()
    early_back = strip_variant(early.path, out_dir=out / "back")
    late_back = strip_variant(late.path, out_dir=tmp_path / "new" / "back")
    assert early_back.read_bytes() == late_back.read_bytes()


def test_early_copy_of_a_replaced_file_is_not_used(
    tmp_path: Path, config: VariantConfig, out: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fitwheel.publish import output

    wheel = _plain(tmp_path)
    expected = make_variant(wheel, CUDA, config, label="cuda12", out_dir=tmp_path / "ref").path
    other = make_wheel(
        tmp_path / "other",
        files={"demo_pkg/other.bin": bytes(range(256)) * 1000},
        compression=zipfile.ZIP_STORED,
    )
    real_init = output.EarlyCopy.__init__

    def swapped(self: output.EarlyCopy, source: Path, fd: int) -> None:
        # As if the path named another file when the early copy opened it.
        real_init(self, other, fd)

    monkeypatch.setattr(output.EarlyCopy, "__init__", swapped)
    made = make_variant(wheel, CUDA, config, label="cuda12", out_dir=out)
    assert made.path.read_bytes() == expected.read_bytes()
    assert [p.name for p in out.iterdir()] == [made.path.name]
