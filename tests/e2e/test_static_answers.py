"""Variants whose namespace only a third-party provider plugin answers, installed from a loopback
index built with fitwheel's own publishing tools.

Nothing runs by default: the null build is taken and one notice per namespace says which plugin
would answer, where from, and how to allow it or answer without it. A static answer
(``--variant-property``, the ``[variant-properties]`` configuration table, a profile's
properties) makes the variants compatible without running anything. fitwheel's own providers
answer their namespaces even when the file names a plugin for them.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fitwheel.publish.config import parse_config
from fitwheel.publish.index_build import build_index
from fitwheel.publish.make import make_variant
from fitwheel.variants.model import VariantProperty
from tests.kit import H100, UV_NVIDIA, clean_env, installed_build, make_wheel, serve

ASCEND = {"requires": ["ascend-variant-provider>=0.0.2,<1"]}
RANGE = "ascend-variant-provider>=0.0.2,<1"
NPU_910B = "ascend :: npu_type :: 910b"


def _publish(
    base: Path,
    wheels: Path,
    name: str,
    providers: dict[str, Any],
    builds: dict[str, list[str]],
    *,
    null: bool = True,
) -> None:
    """``name`` 1.0 as one variant per label of ``builds``, and a null build unless ``null``
    is False."""
    config = parse_config(
        {"default-priorities": {"namespace": list(providers)}, "providers": providers},
        source=f"{name} test config",
    )
    module = name.replace("-", "_")
    for label, props in {**builds, **({"null": []} if null else {})}.items():
        src = make_wheel(
            base / name / label,
            name=name,
            version="1.0",
            files={f"{module}/__init__.py": f"BUILD = {label!r}\n".encode()},
        )
        make_variant(
            src,
            [VariantProperty.parse(p) for p in props],
            config,
            label=None if label == "null" else label,
            null=label == "null",
            out_dir=wheels,
        )


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("static-answers")
    wheels = base / "wheels"
    for name in ("npu_pkg", "npu_too"):
        _publish(base, wheels, name, {"ascend": ASCEND}, {"ascend910b": [NPU_910B]})
    # fitwheel's own nvidia provider answers, although the file names a plugin for it
    _publish(
        base,
        wheels,
        "gpu_pkg",
        {"nvidia": UV_NVIDIA},
        {"cu12": ["nvidia :: cuda_version_lower_bound :: 12.0"]},
    )
    _publish(base, wheels, "npu_only", {"ascend": ASCEND}, {"a910": [NPU_910B]}, null=False)
    build_index(wheels, base / "index")
    return base / "index"


@pytest.fixture(scope="module")
def index(site: Path) -> Iterator[str]:
    with serve(site) as (url, _state):
        yield f"{url}/simple/"


def fitwheel(
    tmp_path: Path, *args: str, config: Path | None = None
) -> subprocess.CompletedProcess[str]:
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"), FITWHEEL_DETECT_TIMEOUT="1")
    if config is not None:
        env["FITWHEEL_CONFIG"] = str(config)
    return subprocess.run(
        [sys.executable, "-m", "fitwheel", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def dry_run(
    tmp_path: Path, index: str, venv: Path, *args: str, config: Path | None = None
) -> tuple[dict[str, str | None], str]:
    """The label each package would get (None: no variant), and stderr."""
    proc = fitwheel(
        tmp_path,
        "install",
        *args,
        "--index-url",
        index,
        "--python",
        str(venv),
        "--dry-run",
        "--report",
        "-",
        config=config,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    return {e["name"]: e["variant_label"] for e in report["install"]}, proc.stderr


def write_profile(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_without_an_answer_the_null_build_and_one_notice_per_namespace(
    tmp_path: Path, index: str, base_venv: Path
) -> None:
    chosen, stderr = dry_run(tmp_path, index, base_venv, "npu_pkg", "npu_too")
    assert chosen == {"npu-pkg": "null", "npu-too": "null"}
    assert stderr.count("namespace 'ascend'") == 1, stderr
    (notice,) = [line for line in stderr.splitlines() if "namespace 'ascend'" in line]
    assert "npu-pkg 1.0, npu-too 1.0" in notice
    assert RANGE in notice
    assert f"from {index}" in notice
    assert "--allow-plugin ascend-variant-provider" in notice
    assert '--variant-property "ascend :: FEATURE :: VALUE"' in notice
    assert "[variant-properties]" in notice


def test_explain_says_the_same_per_variant(tmp_path: Path, index: str, base_venv: Path) -> None:
    proc = fitwheel(
        tmp_path, "install", "npu_pkg", "--index-url", index, "--python", str(base_venv),
        "--dry-run", "--explain",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (line,) = [row for row in proc.stdout.splitlines() if "rejected ascend910b" in row]
    assert f"provider plugin {RANGE}" in line
    assert "--allow-plugin ascend-variant-provider" in line
    assert '--variant-property "ascend :: FEATURE :: VALUE"' in line


def test_variant_property_installs_the_ascend_build(tmp_path: Path, index: str, venv: Path) -> None:
    proc = fitwheel(
        tmp_path, "install", "npu_pkg", "--index-url", index, "--python", str(venv),
        "--variant-property", NPU_910B,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert installed_build(venv / "bin" / "python", "npu_pkg") == "ascend910b"
    assert "namespace 'ascend'" not in proc.stderr


def test_the_configuration_table_answers_the_same(
    tmp_path: Path, index: str, base_venv: Path
) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[variant-properties]\n"ascend :: npu_type" = ["310p", "910b"]\n')
    chosen, stderr = dry_run(tmp_path, index, base_venv, "npu_pkg", config=config)
    assert chosen == {"npu-pkg": "ascend910b"}
    assert "namespace 'ascend'" not in stderr


def test_a_profile_that_carries_the_answer_needs_no_plugin(
    tmp_path: Path, index: str, base_venv: Path
) -> None:
    profile = write_profile(tmp_path, {"properties": {"ascend": {"npu_type": ["910b"]}}})
    chosen, stderr = dry_run(tmp_path, index, base_venv, "npu_pkg", "--profile", profile)
    assert chosen == {"npu-pkg": "ascend910b"}
    assert "namespace 'ascend'" not in stderr


def test_another_machine_without_the_answer_gets_null_and_the_notice(
    tmp_path: Path, index: str, base_venv: Path
) -> None:
    profile = write_profile(tmp_path, {"properties": {}})
    config = tmp_path / "config.toml"
    # the configuration file describes this machine, not the profile's
    config.write_text('[variant-properties]\n"ascend :: npu_type" = ["910b"]\n')
    chosen, stderr = dry_run(
        tmp_path, index, base_venv, "npu_pkg", "--profile", profile, config=config
    )
    assert chosen == {"npu-pkg": "null"}
    (notice,) = [line for line in stderr.splitlines() if "namespace 'ascend'" in line]
    assert RANGE in notice and f"from {index}" in notice
    assert "never runs for another machine" in notice
    assert '--variant-property "ascend :: FEATURE :: VALUE"' in notice
    # --variant-property answers for another machine too
    chosen, stderr = dry_run(
        tmp_path, index, base_venv, "npu_pkg", "--profile", profile, "--variant-property", NPU_910B
    )
    assert chosen == {"npu-pkg": "ascend910b"}
    assert "namespace 'ascend'" not in stderr


def test_builtin_providers_answer_even_when_the_file_names_a_plugin(
    tmp_path: Path, index: str, base_venv: Path
) -> None:
    chosen, stderr = dry_run(
        tmp_path, index, base_venv, "gpu_pkg", "--profile", write_profile(tmp_path, H100)
    )
    assert chosen == {"gpu-pkg": "cu12"}
    assert "nvidia-variant-provider" not in stderr
    # without a GPU the built-in provider's answer (nothing) holds: no notice about a plugin
    chosen, stderr = dry_run(
        tmp_path,
        index,
        base_venv,
        "gpu_pkg",
        "--profile",
        write_profile(tmp_path, {"properties": {}}),
    )
    assert chosen == {"gpu-pkg": "null"}
    assert "nvidia-variant-provider" not in stderr


def test_malformed_static_answers_are_refused_naming_where(
    tmp_path: Path, index: str, base_venv: Path
) -> None:
    proc = fitwheel(
        tmp_path, "install", "npu_pkg", "--index-url", index, "--python", str(base_venv),
        "--dry-run", "--variant-property", "ascend :: npu_type",
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--variant-property 'ascend :: npu_type'" in proc.stderr
    config = tmp_path / "config.toml"
    config.write_text('[variant-properties]\n"ascend :: NPU" = ["910b"]\n')
    proc = fitwheel(
        tmp_path, "install", "npu_pkg", "--index-url", index, "--python", str(base_venv),
        "--dry-run", config=config,
    )  # fmt: skip
    assert proc.returncode == 1
    assert str(config) in proc.stderr and "'ascend :: NPU'" in proc.stderr


def test_select_says_the_same_for_the_published_file(tmp_path: Path, site: Path) -> None:
    (variants,) = site.rglob("npu_pkg-1.0-variants.json")
    profile = write_profile(tmp_path, {"properties": {}})
    proc = fitwheel(tmp_path, "select", str(variants), "--profile", profile, "--json")
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["ordered"] == ["null"]
    assert RANGE in result["rejected"]["ascend910b"]
    assert proc.stderr.count("namespace 'ascend'") == 1
    proc = fitwheel(
        tmp_path, "select", str(variants), "--profile", profile, "--json",
        "--variant-property", NPU_910B,
    )  # fmt: skip
    assert json.loads(proc.stdout)["ordered"] == ["ascend910b", "null"]
    assert "namespace 'ascend'" not in proc.stderr


def test_without_a_build_to_fall_back_on_the_error_says_why(
    tmp_path: Path, index: str, base_venv: Path
) -> None:
    proc = fitwheel(
        tmp_path, "install", "npu_only", "--index-url", index, "--python", str(base_venv),
        "--dry-run",
    )  # fmt: skip
    assert proc.returncode == 1
    assert "no null or non-variant build" in proc.stderr
    assert f"a910: ascend: answered only by the provider plugin {RANGE}" in proc.stderr
    assert '--variant-property "ascend :: FEATURE :: VALUE"' in proc.stderr
    chosen, _ = dry_run(tmp_path, index, base_venv, "npu_only", "--variant-property", NPU_910B)
    assert chosen == {"npu-only": "a910"}


def test_download_for_this_machine_gives_the_same_notice(
    tmp_path: Path, index: str, base_venv: Path
) -> None:
    proc = fitwheel(
        tmp_path, "download", "npu_pkg", "--index-url", index, "-d", str(tmp_path / "out"),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert [p.name for p in (tmp_path / "out").iterdir()] == ["npu_pkg-1.0-py3-none-any-null.whl"]
    (notice,) = [line for line in proc.stderr.splitlines() if "namespace 'ascend'" in line]
    assert f"from {index}" in notice and "--allow-plugin ascend-variant-provider" in notice


def test_a_lock_target_without_the_answer_gets_null_and_the_notice(
    tmp_path: Path, index: str
) -> None:
    profile = Path(__file__).resolve().parents[1] / "data" / "profiles" / "no-gpu.json"
    out = tmp_path / "pylock.toml"
    proc = fitwheel(
        tmp_path, "lock", "npu_pkg", "--profile", str(profile), "--index-url", index,
        "-o", str(out),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (notice,) = [line for line in proc.stderr.splitlines() if "namespace 'ascend'" in line]
    assert "target no-gpu:" in notice and "never runs for another machine" in notice
    assert '--variant-property "ascend :: FEATURE :: VALUE"' in notice
    assert "npu_pkg-1.0-py3-none-any-null.whl" in out.read_text()
    assert "npu_pkg-1.0-py3-none-any-ascend910b.whl" not in out.read_text()
