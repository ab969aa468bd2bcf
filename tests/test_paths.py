"""fitwheel.paths: the configuration files, the cache root and its subfolders, the XDG rule."""

import os
import sys
from pathlib import Path

import platformdirs
import pytest

from fitwheel import paths


def test_cache_root_flag_wins_over_env_and_platformdirs(tmp_path: Path) -> None:
    env = {"FITWHEEL_CACHE_DIR": str(tmp_path / "env"), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert paths.cache_root(tmp_path / "flag", env) == tmp_path / "flag"
    assert paths.cache_root(None, env) == tmp_path / "env"
    assert paths.cache_root(None, {"XDG_CACHE_HOME": str(tmp_path / "xdg")}) == (
        tmp_path / "xdg" / "fitwheel"
    )
    # an empty variable is no setting
    assert paths.cache_root(None, {"FITWHEEL_CACHE_DIR": "", "XDG_CACHE_HOME": str(tmp_path)}) == (
        tmp_path / "fitwheel"
    )


def test_cache_root_default_is_platformdirs(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("FITWHEEL_CACHE_DIR", "XDG_CACHE_HOME"):
        monkeypatch.delenv(name, raising=False)
    # the folder existing caches were written to
    assert paths.cache_root(None, {}) == Path(platformdirs.user_cache_dir("fitwheel"))


def test_the_fixed_subfolders(tmp_path: Path) -> None:
    layout = paths.CacheLayout.locate(None, {"FITWHEEL_CACHE_DIR": str(tmp_path)})
    assert layout.root == tmp_path
    assert (layout.wheels, layout.unpacked, layout.http, layout.envs, layout.detect) == tuple(
        tmp_path / name for name in ("wheels", "unpacked", "http", "envs", "detect")
    )
    assert paths.detect_dir({"FITWHEEL_CACHE_DIR": str(tmp_path)}) == str(layout.detect)
    with pytest.raises(AttributeError):
        layout.root = tmp_path  # type: ignore[misc]


def test_config_files(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "home"), "XDG_CONFIG_DIRS": f"{tmp_path}/a:/b"}
    if sys.platform.startswith("linux"):
        assert paths.config_path(env) == str(tmp_path / "home" / "fitwheel" / "config.toml")
        assert paths.site_config_path(env) == str(tmp_path / "a" / "fitwheel" / "config.toml")
    assert paths.config_path({**env, "FITWHEEL_CONFIG": "/x.toml"}) == "/x.toml"


def test_xdg_rule_from_the_environment_given(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    assert paths.xdg_config_home(env) == str(tmp_path / ".config")
    assert paths.xdg_cache_home({**env, "XDG_CACHE_HOME": "  "}) == str(tmp_path / ".cache")
    assert paths.xdg_config_dirs(env) == ["/etc/xdg"]
    assert paths.xdg_config_dirs({"XDG_CONFIG_DIRS": "/a::/b"}) == ["/a", "/b"]


@pytest.mark.parametrize("kind", ["config", "cache"])
@pytest.mark.parametrize("xdg", [None, "/srv/xdg"])
def test_user_dirs_match_platformdirs(
    monkeypatch: pytest.MonkeyPatch, kind: str, xdg: str | None
) -> None:
    if not sys.platform.startswith("linux"):
        pytest.skip("the XDG rule applies on Linux")
    var = "XDG_CONFIG_HOME" if kind == "config" else "XDG_CACHE_HOME"
    if xdg is None:
        monkeypatch.delenv(var, raising=False)
    else:
        monkeypatch.setenv(var, xdg)
    expected = (
        platformdirs.user_config_dir("fitwheel", appauthor=False)
        if kind == "config"
        else platformdirs.user_cache_dir("fitwheel")
    )
    found = paths.user_config_dir if kind == "config" else paths.user_cache_dir
    assert found(os.environ) == expected
