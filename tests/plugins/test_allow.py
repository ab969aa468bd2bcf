"""``--allow-plugin`` end to end: the look-alike Ascend plugin from a loopback index, installed
into an isolated environment (never the target's), decides the build; hostile plugins, each
allowed, end in one clear error and leave the target unchanged; a plugin file that changed after
its hash was pinned is refused."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit import serve, snapshot
from tests.plugins.kit import LOOKALIKE, lookalike_wheel
from tests.plugins.site import build_of, build_site, config_of, has_module, run_fitwheel


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    site = build_site(tmp_path_factory.mktemp("site"))
    with serve(site) as (url, _state):
        yield f"{url}/simple/"


def install(
    tmp_path: Path, index: str, venv: Path, *args: str, config: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    config = config or tmp_path / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.touch()
    return run_fitwheel(
        tmp_path,
        "install",
        "npukern",
        "--index-url",
        index,
        "--python",
        str(venv),
        *args,
        config=config,
        **env,
    )


def test_not_allowed_gives_the_null_build(tmp_path: Path, index: str, venv: Path) -> None:
    done = install(tmp_path, index, venv, ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE="910b")
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "null"
    assert not (tmp_path / "cache" / "plugins").exists()  # nothing was installed or run


def test_allowed_with_its_override_gives_the_ascend_build(
    tmp_path: Path, index: str, venv: Path
) -> None:
    done = install(
        tmp_path,
        index,
        venv,
        "--allow-plugin",
        LOOKALIKE,
        ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE="910b",
    )
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "910b"
    assert not has_module(venv, "ascend_lookalike_provider")  # the plugin stays isolated
    # trust on first use: the hashes of its files are recorded
    table = config_of(tmp_path / "config.toml")["plugins"]["allow"][LOOKALIKE]
    assert table["version"] == "==0.0.2"
    ((filename, digest),) = table["hashes"].items()
    assert filename == "ascend_lookalike_provider-0.0.2-py3-none-any.whl"
    assert digest.startswith("sha256:") and len(digest) == 7 + 64
    assert "trusted from now on" in done.stderr


def test_allowed_without_the_device_gives_the_null_build(
    tmp_path: Path, index: str, venv: Path
) -> None:
    done = install(tmp_path, index, venv, "--allow-plugin", f"{LOOKALIKE}==0.0.2")
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "null"


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("hang", "did not answer within 2 s"),
        ("exit", "exited with code 7 without an answer"),
        ("flood", "printed more than 8 MiB"),
        ("othernamespace", "answered for namespace 'x86_64', not its own 'ascend'"),
    ],
)
def test_a_hostile_plugin_leaves_the_target_unchanged(
    tmp_path: Path, index: str, venv: Path, kind: str, said: str
) -> None:
    before = snapshot(venv)
    done = install(
        tmp_path, index, venv, "--allow-plugin", f"hostile-{kind}", FITWHEEL_PLUGIN_TIMEOUT="2"
    )
    assert done.returncode == 1
    assert f"variant provider plugin hostile-{kind}==0.0.2: " in done.stderr
    assert said in done.stderr
    assert "Traceback" not in done.stderr
    assert snapshot(venv) == before


def test_a_plugin_does_not_see_credentials(tmp_path: Path, index: str, venv: Path) -> None:
    # the snoop answers for the Ascend build only when it can read the secret
    done = install(
        tmp_path, index, venv, "--allow-plugin", "hostile-snoop", AWS_SECRET_ACCESS_KEY="hunter2"
    )
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "null"


def test_a_changed_plugin_file_is_refused(tmp_path: Path, venv: Path) -> None:
    site = build_site(tmp_path / "site", hostile=False)
    config = tmp_path / "config.toml"
    with serve(site) as (url, _state):
        first = install(
            tmp_path / "first",
            f"{url}/simple/",
            venv,
            "--allow-plugin",
            LOOKALIKE,
            config=config,
        )
        assert first.returncode == 0, first.stderr
        pinned = config_of(config)["plugins"]["allow"][LOOKALIKE]["hashes"]
        # the index now serves another file under the same name
        lookalike_wheel(tmp_path / "site" / "wheels", extra="\n# changed\n")
        from fitwheel.publish.index_build import build_index

        build_index(tmp_path / "site" / "wheels", site)
        before = snapshot(venv)
        again = install(
            tmp_path / "second",
            f"{url}/simple/",
            venv,
            "--allow-plugin",
            LOOKALIKE,
            "--force-reinstall",
            config=config,
        )
    assert again.returncode == 1
    ((filename, digest),) = pinned.items()
    digest = digest.removeprefix("sha256:")
    assert f"variant provider plugin {LOOKALIKE}: " in again.stderr
    assert filename in again.stderr and digest in again.stderr, again.stderr
    # the file and both hashes, from the refusal's own fields
    assert f"its file {filename} has sha256 " in again.stderr, again.stderr
    assert f"pins sha256 {digest}" in again.stderr, again.stderr
    assert snapshot(venv) == before


def test_detect_writes_the_plugin_answer_into_a_profile(
    tmp_path: Path, index: str, venv: Path
) -> None:
    config = tmp_path / "config.toml"
    config.touch()
    out = tmp_path / "profile.json"
    done = run_fitwheel(
        tmp_path,
        "detect",
        "--allow-plugin",
        LOOKALIKE,
        "-o",
        str(out),
        "--json",
        config=config,
        PIP_INDEX_URL=index,
        ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE="910b",
    )
    assert done.returncode == 0, done.stderr
    saved = json.loads(out.read_text())
    assert saved["properties"]["ascend"] == {"npu_type": ["910b"]}
    assert saved["sources"]["ascend"] == f"plugin {LOOKALIKE}==0.0.2"
    # the profile answers for the namespace elsewhere: no plugin runs with --profile
    elsewhere = tmp_path / "elsewhere"
    used = install(elsewhere, index, venv, "--profile", str(out), "--allow-plugin", LOOKALIKE)
    assert used.returncode == 0, used.stderr
    assert build_of(venv) == "910b"
    assert not (elsewhere / "cache" / "plugins").exists()


def test_no_plugin_runs_for_a_sysroot(tmp_path: Path, index: str, venv: Path) -> None:
    sysroot = tmp_path / "sysroot"
    sysroot.mkdir()
    done = install(
        tmp_path, index, venv, "--sysroot", str(sysroot), "--allow-plugin", LOOKALIKE,
        ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE="910b",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert build_of(venv) == "null"
    assert not (tmp_path / "cache" / "plugins").exists()


def test_a_plugin_no_index_has_is_named_as_the_plugin(
    tmp_path: Path, index: str, venv: Path
) -> None:
    before = snapshot(venv)
    done = install(tmp_path, index, venv, "--allow-plugin", "no-such-provider")
    assert done.returncode == 1
    assert "variant provider plugin no-such-provider: cannot be installed into its isolated" in (
        done.stderr
    )
    assert "not on any index searched" in done.stderr
    assert "Traceback" not in done.stderr
    assert snapshot(venv) == before
