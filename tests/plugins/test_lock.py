"""Locks record plugins: ``lock`` writes the plugin (name, version, files' hashes) and where each
target's answer came from; ``sync`` runs a locked plugin only where this host allows it, with
the lock's files; ``bundle`` carries the plugin's files, so that an offline ``sync`` runs it."""

from __future__ import annotations

import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit import serve, snapshot
from tests.plugins.kit import LOOKALIKE
from tests.plugins.site import build_of, build_site, run_fitwheel

FORCE = {"ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE": "910b"}
PLUGIN_FILE = "ascend_lookalike_provider-0.0.2-py3-none-any.whl"


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    """A lock of ``npukern`` for a profile the look-alike plugin answered; yields its folder
    and the index URL."""
    root = tmp_path_factory.mktemp("locked")
    site = build_site(root / "site", hostile=False)
    config = root / "config.toml"
    config.touch()
    with serve(site) as (url, _state):
        index = f"{url}/simple/"
        profile = root / "ascend.json"
        detect = run_fitwheel(
            root, "detect", "--allow-plugin", LOOKALIKE, "-o", str(profile), "--json",
            config=config, PIP_INDEX_URL=index, **FORCE,
        )  # fmt: skip
        assert detect.returncode == 0, detect.stderr
        lock = run_fitwheel(
            root, "lock", "npukern", "--profile", str(profile), "--index-url", index,
            "-o", str(root / "pylock.toml"), config=config,
        )  # fmt: skip
        assert lock.returncode == 0, lock.stderr
        yield root, index


def test_the_lock_records_the_plugin_and_the_answer(locked: tuple[Path, str]) -> None:
    root, _index = locked
    data = tomllib.loads((root / "pylock.toml").read_text())
    (plugin,) = data["tool"]["fitwheel"]["plugins"]
    assert plugin["name"] == LOOKALIKE and plugin["version"] == "0.0.2"
    assert plugin["namespaces"] == ["ascend"]
    (wheel,) = plugin["wheels"]
    pinned = tomllib.loads((root / "config.toml").read_text())["plugins"]["allow"][LOOKALIKE]
    assert wheel["name"] == PLUGIN_FILE
    assert f"sha256:{wheel['hashes']['sha256']}" == pinned["hashes"][PLUGIN_FILE]
    (target,) = data["tool"]["fitwheel"]["targets"]
    assert target["answers"] == {"ascend": f"plugin {LOOKALIKE}==0.0.2"}
    (package,) = [p for p in data["packages"] if p["name"] == "npukern"]
    assert [w["name"] for w in package["wheels"]] == ["npukern-1.0-py3-none-any-910b.whl"]
    # a lock checked against the same inputs is up to date
    check = run_fitwheel(
        root, "lock", "npukern", "--profile", str(root / "ascend.json"), "--index-url",
        _index, "-o", str(root / "pylock.toml"), "--check", config=root / "config.toml",
    )  # fmt: skip
    assert check.returncode == 0, check.stderr + check.stdout


def test_sync_runs_the_locked_plugin_where_allowed(
    locked: tuple[Path, str], tmp_path: Path, venv: Path
) -> None:
    root, index = locked
    done = run_fitwheel(
        tmp_path, "sync", str(root / "pylock.toml"), "--python", str(venv),
        "--allow-plugin", LOOKALIKE, "--index-url", index, **FORCE,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "910b"
    assert not any(venv.glob("lib/python*/site-packages/ascend_lookalike_provider"))


def test_sync_does_not_run_a_plugin_this_host_does_not_allow(
    locked: tuple[Path, str], tmp_path: Path, venv: Path
) -> None:
    root, index = locked
    before = snapshot(venv)
    done = run_fitwheel(
        tmp_path, "sync", str(root / "pylock.toml"), "--python", str(venv),
        "--index-url", index, **FORCE,
    )  # fmt: skip
    assert done.returncode != 0
    assert f"plugin {LOOKALIKE}==0.0.2, which this host does not allow" in done.stderr
    assert not (tmp_path / "cache" / "plugins").exists()
    assert snapshot(venv) == before


def test_sync_refuses_a_host_pinning_other_files(
    locked: tuple[Path, str], tmp_path: Path, venv: Path
) -> None:
    root, index = locked
    config = tmp_path / "config.toml"
    config.write_text(
        f'[plugins.allow.{LOOKALIKE}]\nhashes = {{ "{PLUGIN_FILE}" = "sha256:{"0" * 64}" }}\n'
    )
    before = snapshot(venv)
    done = run_fitwheel(
        tmp_path, "sync", str(root / "pylock.toml"), "--python", str(venv),
        "--index-url", index, config=config, **FORCE,
    )  # fmt: skip
    assert done.returncode == 1
    assert f"variant provider plugin {LOOKALIKE}==0.0.2: " in done.stderr
    assert "pins other files for it than" in done.stderr
    assert snapshot(venv) == before


def test_a_bundle_carries_the_plugin_for_an_offline_sync(
    locked: tuple[Path, str], tmp_path: Path, venv: Path
) -> None:
    root, _index = locked
    bundle = tmp_path / "bundle"
    made = run_fitwheel(
        tmp_path / "b", "bundle", str(root / "pylock.toml"), "-o", str(bundle),
        "--profile", str(root / "ascend.json"),
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert list(bundle.glob(f"files/*/{PLUGIN_FILE}"))
    data = tomllib.loads((bundle / "pylock.toml").read_text())
    assert data["tool"]["fitwheel"]["plugins"][0]["wheels"][0]["path"].endswith(PLUGIN_FILE)
    # no index at all now: the bundle alone, and a fresh cache
    done = run_fitwheel(
        tmp_path / "offline", "sync", str(bundle), "--python", str(venv),
        "--allow-plugin", LOOKALIKE, "--offline", **FORCE,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "910b"


def test_a_static_answer_decides_a_target_and_is_recorded(
    locked: tuple[Path, str], tmp_path: Path
) -> None:
    """``lock --variant-property`` answers for every target without running anything; the
    lock says so per target."""
    _root, index = locked
    profile = Path(__file__).resolve().parents[1] / "data" / "profiles" / "no-gpu.json"
    config = tmp_path / "config.toml"
    config.touch()
    done = run_fitwheel(
        tmp_path, "lock", "npukern", "--profile", str(profile), "--index-url", index,
        "--variant-property", "ascend :: npu_type :: 910b", "-o", str(tmp_path / "pylock.toml"),
        config=config,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = tomllib.loads((tmp_path / "pylock.toml").read_text())
    (target,) = data["tool"]["fitwheel"]["targets"]
    assert target["answers"] == {"ascend": "variant-property"}
    assert "plugins" not in data["tool"]["fitwheel"]
    (package,) = [p for p in data["packages"] if p["name"] == "npukern"]
    assert [w["name"] for w in package["wheels"]] == ["npukern-1.0-py3-none-any-910b.whl"]
    assert not (tmp_path / "cache" / "plugins").exists()
