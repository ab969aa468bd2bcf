"""``fitwheel variant make|show|strip`` from the command line: shapes, exit codes, messages."""

from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from fitwheel.cli.main import main
from fitwheel.variants.model import VariantProperty, default_label

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "publish"))
from tests.kit import make_wheel, members

CONFIG = """
[variant.default-priorities]
namespace = ["x86_64", "blas"]
[variant.providers.x86_64]
requires = ["x86-64-variant-provider"]
[variant.providers.blas]
static-properties = { provider = ["mkl", "openblas"] }
"""


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Path]:
    config = tmp_path / "variants.toml"
    config.write_text(CONFIG)
    return make_wheel(tmp_path / "in"), config


def test_make_show_strip_round_trip(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel, config = setup
    out = tmp_path / "out"
    code = main(
        [
            "variant",
            "make",
            str(wheel),
            "--property",
            "x86_64 :: level :: v3",
            "-p",
            "blas::provider::mkl",
            "--label",
            "v3mkl",
            "--variants-config",
            str(config),
            "-o",
            str(out),
            "--json",
        ]
    )
    assert code == 0
    made = Path(json.loads(capsys.readouterr().out)["wheel"])
    assert made == out / "demo_pkg-1.0-py3-none-any-v3mkl.whl"

    assert main(["variant", "show", str(made), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["variant_label"] == "v3mkl"
    assert shown["variant_properties"] == {
        "blas": {"provider": ["mkl"]},
        "x86_64": {"level": ["v3"]},
    }
    assert main(["variant", "show", str(made)]) == 0
    text = capsys.readouterr().out
    assert "x86_64 :: level :: v3" in text and "blas: static" in text

    assert main(["variant", "strip", str(made), "-o", str(tmp_path / "back")]) == 0
    assert members(tmp_path / "back" / wheel.name) == members(wheel)


def test_pyproject_table_is_used(setup: tuple[Path, Path], tmp_path: Path) -> None:
    wheel, _ = setup
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[project]\nname = "demo_pkg"\n' + CONFIG)
    code = main(
        [
            "variant",
            "make",
            str(wheel),
            "-p",
            "blas :: provider :: openblas",
            "--pyproject",
            str(pyproject),
            "-o",
            str(tmp_path / "o"),
        ]
    )
    assert code == 0
    (made,) = (tmp_path / "o").iterdir()
    label = default_label([VariantProperty.parse("blas :: provider :: openblas")])
    assert made.name == f"demo_pkg-1.0-py3-none-any-{label}.whl"
    with zipfile.ZipFile(made) as zf:
        doc = json.loads(zf.read("demo_pkg-1.0.dist-info/variant.json"))
    assert doc["default-priorities"]["namespace"] == ["x86_64", "blas"]
    assert list(doc["variants"]) == [made.name.rsplit("-", 1)[1][:-4]]


def test_missing_provider_is_one_paragraph_exit_1(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel, config = setup
    code = main(
        [
            "variant",
            "make",
            str(wheel),
            "-p",
            "nvidia :: sm_arch :: 90_real",
            "--variants-config",
            str(config),
            "-o",
            str(tmp_path / "o"),
        ]
    )
    assert code == 1
    err = capsys.readouterr().err
    assert err.startswith("fitwheel: error: ") and "nvidia" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists() or list((tmp_path / "o").iterdir()) == []


def test_bad_property_and_hostile_wheel(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel, config = setup
    assert (
        main(
            [
                "variant",
                "make",
                str(wheel),
                "-p",
                "X86::level::v3",
                "--variants-config",
                str(config),
            ]
        )
        == 1
    )
    assert "namespace" in capsys.readouterr().err
    bogus = tmp_path / "bogus-1.0-py3-none-any.whl"
    bogus.write_text("not a zip")
    assert main(["variant", "show", str(bogus)]) == 1
    err = capsys.readouterr().err
    assert str(bogus) in err and "not a valid zip" in err


def test_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["variant", "make"])
    assert info.value.code == 2


def test_no_config_found_is_explained(
    setup: tuple[Path, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    wheel, _ = setup
    monkeypatch.chdir(tmp_path)
    assert main(["variant", "make", str(wheel), "-p", "blas :: provider :: mkl"]) == 1
    assert "--variants-config" in capsys.readouterr().err


def test_console_script_runs_without_traceback(setup: tuple[Path, Path], tmp_path: Path) -> None:
    wheel, config = setup
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "fitwheel",
            "variant",
            "make",
            str(wheel),
            "-p",
            "blas :: provider :: atlas",
            "--variants-config",
            str(config),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert "can never be installed" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.parametrize("problem", ["provider", "no wheel", "not a zip"])
def test_failed_make_leaves_the_existing_output_folder_empty(
    setup: tuple[Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str], problem: str
) -> None:
    # The copy into the output folder starts before the wheel, config and properties are checked.
    wheel, config = setup
    prop = "nvidia :: sm_arch :: 90_real" if problem == "provider" else "blas :: provider :: mkl"
    if problem == "no wheel":
        wheel = tmp_path / "absent-1.0-py3-none-any.whl"
    elif problem == "not a zip":
        wheel.write_bytes(b"not a zip archive\n" * 1000)
    out = tmp_path / "o"
    out.mkdir()
    argv = ["variant", "make", str(wheel), "-p", prop, "--variants-config", str(config)]
    assert main([*argv, "-o", str(out)]) == 1
    err = capsys.readouterr().err
    assert err.startswith("fitwheel: error: ") and "Traceback" not in err
    assert list(out.iterdir()) == []


def test_make_into_the_wheel_folder(
    setup: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    wheel, config = setup
    argv = ["variant", "make", str(wheel), "-p", "blas :: provider :: mkl", "--label", "mkl"]
    assert main([*argv, "--variants-config", str(config)]) == 0
    made = wheel.with_name(wheel.name[: -len(".whl")] + "-mkl.whl")
    assert capsys.readouterr().out == f"wrote {made} (label mkl)\n"
    assert sorted(p.name for p in wheel.parent.iterdir()) == sorted([wheel.name, made.name])
    assert {
        k: v for k, v in members(made).items() if not k.endswith(("RECORD", "variant.json"))
    } == {k: v for k, v in members(wheel).items() if not k.endswith("RECORD")}
