"""Running plugins in a child process: the look-alike answers through its own channel while it
prints; hostile plugins each end in one clear error naming them; the environment it sees."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from fitwheel.plugins.errors import PluginError
from fitwheel.plugins.runner import PluginEnv, ask, describe
from tests.kit import make_venv
from tests.plugins.kit import LOOKALIKE, hostile_wheel, lookalike_wheel, unpack_into

BUILTINS = ("nvidia", "amd", "intel", "x86_64", "aarch64", "libc")


@pytest.fixture(scope="module")
def plugin_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One environment holding the look-alike and every hostile plugin."""
    root = tmp_path_factory.mktemp("plugins")
    venv = make_venv(root / "venv")
    unpack_into(venv, lookalike_wheel(root / "wheels"))
    for kind in (
        "crash",
        "hang",
        "exit",
        "flood",
        "othernamespace",
        "builtinnamespace",
        "outofgrammar",
        "snoop",
    ):
        unpack_into(venv, hostile_wheel(root / "wheels", kind))
    return venv


def _env(**extra: str) -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **extra}


def _plugin(venv: Path, name: str) -> PluginEnv:
    python = venv / "bin" / "python"
    namespaces = describe(name, python, env=_env(), timeout=30)
    return PluginEnv(name, "0.0.2", python, {}, namespaces)


def test_lookalike_answers_empty_lists_without_the_device(plugin_venv: Path) -> None:
    plugin = _plugin(plugin_venv, LOOKALIKE)
    assert plugin.namespaces == {"ascend": "ascend_lookalike_provider.plugin:AscendVariantPlugin"}
    answer = ask(plugin, env=_env(), timeout=30, refused=BUILTINS)
    # it printed a log line to stdout, which is no part of the answer
    assert answer == {"ascend": {"npu_type": (), "driver_version": (), "cann_version": ()}}


def test_lookalike_honours_its_override(plugin_venv: Path) -> None:
    plugin = _plugin(plugin_venv, LOOKALIKE)
    env = _env(ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE="910b")
    answer = ask(plugin, env=env, timeout=30, refused=BUILTINS)
    assert answer["ascend"]["npu_type"] == ("910b",)


def test_a_refused_namespace_never_runs(plugin_venv: Path) -> None:
    plugin = _plugin(plugin_venv, "hostile-builtinnamespace")
    assert set(plugin.namespaces) == {"nvidia"}
    assert ask(plugin, env=_env(), timeout=30, refused=BUILTINS) == {}


@pytest.mark.parametrize(
    ("kind", "said"),
    [
        ("hang", "did not answer within 2 s"),
        ("exit", "exited with code 7 without an answer (it said: giving up)"),
        ("crash", "it failed: RuntimeError: no device driver loaded"),
        ("flood", "printed more than 8 MiB"),
        ("othernamespace", "answered for namespace 'x86_64', not its own 'ascend'"),
        ("outofgrammar", "out of grammar"),
    ],
)
def test_hostile_plugins_end_in_one_clear_error(plugin_venv: Path, kind: str, said: str) -> None:
    plugin = _plugin(plugin_venv, f"hostile-{kind}")
    started = time.monotonic()
    with pytest.raises(PluginError) as caught:
        ask(plugin, env=_env(), timeout=2, refused=BUILTINS)
    message = str(caught.value)
    assert message.startswith(f"variant provider plugin hostile-{kind}==0.0.2: ")
    assert said in message
    assert "nothing was installed" in message
    assert time.monotonic() - started < 60  # generous: a hang is stopped at the bound


def test_a_plugin_sees_no_credential_and_a_temporary_home(plugin_venv: Path) -> None:
    plugin = _plugin(plugin_venv, "hostile-snoop")
    env = _env(
        AWS_SECRET_ACCESS_KEY="hunter2",
        ASCEND_TOKEN="t",
        ASCEND_HOME_PATH="/opt/ascend",
        HOME=str(plugin_venv),
    )
    answer = ask(plugin, env=env, timeout=30, refused=BUILTINS)
    assert answer["ascend"]["secret_seen"] == ("no",)
    assert answer["ascend"]["home"] == ("temp",)
    assert answer["ascend"]["cwd"] == ("home",)
    assert answer["ascend"]["npu_type"] == ()


def test_the_environment_filter() -> None:
    from fitwheel.plugins.environ import plugin_environment

    env = {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "LD_LIBRARY_PATH": "/opt/lib",
        "ASCEND_HOME_PATH": "/opt/ascend",
        "ASCEND_API_KEY": "k",
        "ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE": "910b",
        "AWS_SECRET_ACCESS_KEY": "s",
        "AWS_REGION": "eu",
        "GITHUB_TOKEN": "t",
        "PIP_INDEX_URL": "https://u:p@example.invalid/simple",
        "ASCEND_INDEX": "https://u:p@example.invalid/simple",
        "HTTPS_PROXY": "http://proxy:3128",
        "NVIDIA_VISIBLE_DEVICES": "0",
        "PYTHONPATH": "/x",
    }
    seen = plugin_environment(env, ["ascend"], "ascend-variant-provider", "/tmp/h")
    assert seen == {
        "PATH": "/bin",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "LD_LIBRARY_PATH": "/opt/lib",
        "ASCEND_HOME_PATH": "/opt/ascend",
        "ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE": "910b",
        "HOME": "/tmp/h",
        "TMPDIR": "/tmp/h",
    }


def test_an_answer_is_kept_for_this_boot(plugin_venv: Path, tmp_path: Path) -> None:
    from fitwheel.plugins.answers import cached_ask

    plugin = _plugin(plugin_venv, LOOKALIKE)
    env = _env(ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE="910b")
    first = cached_ask(plugin, env=env, timeout=30, refused=BUILTINS, directory=tmp_path)
    assert first["ascend"]["npu_type"] == ("910b",)
    # the same plugin on the same boot with the same variables: answered without running it
    gone = PluginEnv(plugin.name, plugin.version, tmp_path / "no-python", {}, plugin.namespaces)
    again = cached_ask(gone, env=env, timeout=30, refused=BUILTINS, directory=tmp_path)
    assert again == first
    # a variable it sees changed: asked again (and this interpreter does not exist)
    other = _env(ASCEND_VARIANT_PROVIDER_FORCE_NPU_TYPE="310p")
    with pytest.raises(PluginError, match="cannot run"):
        cached_ask(gone, env=other, timeout=30, refused=BUILTINS, directory=tmp_path)
