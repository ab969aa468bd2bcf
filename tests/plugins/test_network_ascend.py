"""The real ``ascend-variant-provider`` 0.0.2, downloaded from the default package index at test
time (never kept in the repository) and served from a loopback index with ``npukern``, whose
Ascend build needs it (run with FITWHEEL_NETWORK_TESTS=1)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from fitwheel.publish.index_build import build_index
from tests.kit import clean_env, serve
from tests.plugins.site import build_of, has_module, npukern, run_fitwheel

pytestmark = [
    pytest.mark.network,
    pytest.mark.skipif(
        os.environ.get("FITWHEEL_NETWORK_TESTS") != "1",
        reason="needs the default package index: set FITWHEEL_NETWORK_TESTS=1",
    ),
]

PLUGIN = "ascend-variant-provider"
PROVIDERS = {
    "ascend": {
        "requires": [f"{PLUGIN}>=0.0.2"],
        "plugin-api": "ascend_variant_provider.plugin:AscendVariantPlugin",
    }
}
FORCE = {"ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE": "910b"}


def _download(folder: Path) -> Path:
    """The published wheel, fetched by pip from its default index (no configuration)."""
    subprocess.run(
        [
            sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
            "--dest", str(folder), f"{PLUGIN}==0.0.2",
        ],
        check=True, capture_output=True, env=clean_env(), timeout=300,
    )  # fmt: skip
    (wheel,) = folder.glob("ascend_variant_provider-0.0.2-*.whl")
    return wheel


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """Two loopback indexes: one with the plugin and ``npukern``, one with ``npukern`` only."""
    root = tmp_path_factory.mktemp("ascend")
    full, bare = root / "full", root / "bare"
    _download(full)
    npukern(full, PROVIDERS)
    npukern(bare, PROVIDERS)
    build_index(full, root / "full-out")
    build_index(bare, root / "bare-out")
    with serve(root / "full-out") as (with_plugin, _a), serve(root / "bare-out") as (without, _b):
        yield f"{with_plugin}/simple/", f"{without}/simple/"


def _install(
    tmp_path: Path, index: str, venv: Path, *args: str, **env: str
) -> subprocess.CompletedProcess[str]:
    config = tmp_path / "config.toml"
    config.touch()
    return run_fitwheel(
        tmp_path, "install", "npukern", "--index-url", index, "--python", str(venv), *args,
        config=config, **env,
    )  # fmt: skip


def test_not_allowed_null_build_and_the_notice(
    tmp_path: Path, indexes: tuple[str, str], venv: Path
) -> None:
    done = _install(tmp_path, indexes[0], venv, **FORCE)
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "null"
    assert "ascend" in done.stderr and PLUGIN in done.stderr
    assert "--allow-plugin" in done.stderr
    assert not (tmp_path / "cache" / "plugins").exists()


def test_allowed_with_its_override_the_ascend_build(
    tmp_path: Path, indexes: tuple[str, str], venv: Path
) -> None:
    done = _install(tmp_path, indexes[0], venv, "--allow-plugin", f"{PLUGIN}==0.0.2", **FORCE)
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "910b"
    assert not has_module(venv, "ascend_variant_provider")


def test_a_static_answer_needs_no_plugin(
    tmp_path: Path, indexes: tuple[str, str], venv: Path
) -> None:
    done = _install(tmp_path, indexes[1], venv, "--variant-property", "ascend :: npu_type :: 910b")
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "910b"
    assert not (tmp_path / "cache" / "plugins").exists()
