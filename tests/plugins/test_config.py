"""The ``[plugins]`` tables of fitwheel's configuration: allowed plugins with their pins, the
time bound, and the hashes recorded on first use."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.userconfig import (
    ConfigFileError,
    plugin_allowances,
    plugin_timeout,
    record_plugin_pins,
)

FILE = "ascend_variant_provider-0.0.2-py3-none-any.whl"
DIGEST = "ab" * 32


def _env(config: Path, **extra: str) -> dict[str, str]:
    return {"FITWHEEL_CONFIG": str(config), "XDG_CONFIG_DIRS": str(config.parent / "none"), **extra}


def test_an_allowed_plugin_with_pins(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text(
        "[plugins.allow.Ascend_Variant_Provider]\n"
        'version = "==0.0.2"\n'
        f'hashes = {{ "{FILE}" = "sha256:{DIGEST.upper()}" }}\n'
    )
    (allowed,) = plugin_allowances(_env(config)).values()
    assert allowed.name == "ascend-variant-provider"
    assert allowed.version == "==0.0.2"
    assert allowed.sha256 == {FILE: DIGEST}
    assert allowed.origin.endswith("[plugins.allow.Ascend_Variant_Provider]")


@pytest.mark.parametrize(
    "table",
    [
        'hashes = { "f.whl" = "sha256:123" }',
        'hashes = ["sha256:' + DIGEST + '"]',
        'sha256 = { "f.whl" = "' + DIGEST + '" }',
        "version = 2",
    ],
)
def test_a_bad_table_names_the_file_and_the_table(tmp_path: Path, table: str) -> None:
    config = tmp_path / "config.toml"
    config.write_text(f"[plugins.allow.x]\n{table}\n")
    with pytest.raises(ConfigFileError, match=r"config\.toml \[plugins\.allow\.x\]"):
        plugin_allowances(_env(config))


def test_the_time_bound(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[plugins]\ntimeout = 5\n")
    assert plugin_timeout(_env(config)) == 5
    assert plugin_timeout(_env(config, FITWHEEL_PLUGIN_TIMEOUT="0.5")) == 0.5
    config.write_text("")
    assert plugin_timeout(_env(config)) == 30
    with pytest.raises(ConfigFileError, match="FITWHEEL_PLUGIN_TIMEOUT"):
        plugin_timeout(_env(config, FITWHEEL_PLUGIN_TIMEOUT="soon"))


def test_first_use_records_the_hashes_and_keeps_the_rest(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('[install]\ntorch-backend = "cpu"\n')
    env = _env(config)
    assert record_plugin_pins(env, "ascend-variant-provider", "==0.0.2", {FILE: DIGEST}) == str(
        config
    )
    (allowed,) = plugin_allowances(env).values()
    assert allowed.sha256 == {FILE: DIGEST}
    assert 'torch-backend = "cpu"' in config.read_text()
    assert record_plugin_pins({"FITWHEEL_CONFIG": "/dev/null"}, "x", "", {FILE: DIGEST}) is None


def test_pins_of_another_version_are_the_users_to_remove() -> None:
    from fitwheel.cli._plugins import _check_spec
    from fitwheel.plugins.errors import PluginError
    from fitwheel.userconfig import PluginAllowance

    pinned = PluginAllowance(
        "ascend-variant-provider", "==0.0.3", {FILE: DIGEST}, "config.toml [x]"
    )
    with pytest.raises(PluginError, match=r"pins the files of version 0\.0\.2, not ==0\.0\.3"):
        _check_spec(pinned)
    _check_spec(
        PluginAllowance("ascend-variant-provider", ">=0.0.2", {FILE: DIGEST}, "config.toml [x]")
    )
