"""``fitwheel config``: fitwheel's own settings file, user and site levels."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from fitwheel.cli.main import main
from fitwheel.torchbackend.table import DEFAULT_INDEX_URL
from fitwheel.userconfig import dumps_toml, settings_in_force, torch_settings


@pytest.fixture
def home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for key in list(os.environ):
        if key.startswith("FITWHEEL_"):
            monkeypatch.delenv(key)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "user"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "site"))
    return tmp_path


def test_set_get_unset_list(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user = home / "user" / "fitwheel" / "config.toml"
    assert main(["config", "set", "torch-backend", "auto"]) == 0
    assert capsys.readouterr().out == f"torch-backend = auto ({user})\n"
    assert main(["config", "get", "torch-backend"]) == 0
    assert capsys.readouterr().out == "auto\n"
    assert main(["config", "set", "variant-index-url", "http://a/ http://b/"]) == 0
    assert tomllib.loads(user.read_text()) == {
        "install": {"torch-backend": "auto", "variant-index-url": ["http://a/", "http://b/"]}
    }
    capsys.readouterr()
    assert main(["config", "list"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"torch-backend = auto  # {user} [install]",
        f"variant-index-url = http://a/ http://b/  # {user} [install]",
    ]
    assert main(["config", "unset", "torch-backend"]) == 0
    assert main(["config", "get", "torch-backend"]) == 1
    assert "torch-backend is not set" in capsys.readouterr().err


def test_the_file_keeps_its_other_tables(home: Path) -> None:
    user = home / "user" / "fitwheel" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text(
        '[detect]\ndetection = "off"\n\n[detect.override]\nnvidia = "off"\n'
        'x86_64.level = ["v3", "v2"]\n'
    )
    assert main(["config", "set", "torch-backend", "cu128"]) == 0
    assert tomllib.loads(user.read_text()) == {
        "detect": {
            "detection": "off",
            "override": {"nvidia": "off", "x86_64": {"level": ["v3", "v2"]}},
        },
        "install": {"torch-backend": "cu128"},
    }
    assert main(["config", "unset", "torch-backend"]) == 0
    assert "install" not in tomllib.loads(user.read_text())


def test_levels_environment_and_flags(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    site = home / "site" / "fitwheel" / "config.toml"
    assert main(["config", "set", "--site", "torch-backend", "cpu"]) == 0
    assert main(["config", "set", "--site", "torch-index-url", "http://mirror/whl"]) == 0
    found = settings_in_force(os.environ)
    assert found["torch-backend"].value == "cpu"
    assert found["torch-backend"].origin == f"{site} [install]"
    assert main(["config", "set", "torch-backend", "auto"]) == 0
    settings = torch_settings(os.environ)
    assert (settings.backend, settings.index_url) == ("auto", "http://mirror/whl")
    monkeypatch.setenv("FITWHEEL_TORCH_BACKEND", "cu126")
    assert torch_settings(os.environ).backend == "cu126"
    assert torch_settings(os.environ).backend_origin == "FITWHEEL_TORCH_BACKEND"
    flagged = torch_settings(os.environ, backend="xpu", index_url="http://other/")
    assert (flagged.backend, flagged.backend_origin) == ("xpu", "--torch-backend")
    assert flagged.index_url_origin == "--torch-index-url"
    monkeypatch.delenv("FITWHEEL_TORCH_BACKEND")
    monkeypatch.setenv("FITWHEEL_CONFIG", str(home / "elsewhere.toml"))
    with pytest.raises(Exception, match="does not exist"):
        settings_in_force(os.environ)


def test_nothing_set_means_the_users_indexes(home: Path) -> None:
    settings = torch_settings(os.environ)
    assert settings.backend is None and settings.variant_index_urls == ()
    assert settings.index_url == DEFAULT_INDEX_URL


@pytest.mark.parametrize(
    ("argv", "rc", "message"),
    [
        (["config", "set", "torch-backen", "auto"], 1, "unknown setting 'torch-backen'"),
        (["config", "get", "nope"], 1, "fitwheel config knows torch-backend"),
        (["config", "set", "torch-backend", "cuda12"], 2, "expected auto, cpu, cuXXX"),
    ],
)
def test_bad_keys_and_values(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], rc: int, message: str
) -> None:
    assert main(argv) == rc
    assert message in capsys.readouterr().err


def test_a_broken_file_is_named(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    user = home / "user" / "fitwheel" / "config.toml"
    user.parent.mkdir(parents=True)
    user.write_text('[install]\ntorch-backend = "gpu"\n')
    assert main(["config", "list"]) == 2
    assert f"torch-backend in {user} [install] 'gpu'" in capsys.readouterr().err
    user.write_text("[install\n")
    assert main(["config", "list"]) == 1
    assert f"config file {user} is not valid TOML" in capsys.readouterr().err


def test_a_site_file_that_cannot_be_written(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (home / "site").write_text("a file where a folder should be")
    assert main(["config", "set", "--site", "torch-backend", "auto"]) == 1
    assert "the site level usually needs root; use --user" in capsys.readouterr().err


def test_path(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "path"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"site: {home}/site/fitwheel/config.toml (missing)",
        f"user: {home}/user/fitwheel/config.toml (missing)",
    ]


def test_toml_writer() -> None:
    data = {"a": {"b": 'x"y', "n": 1, "t": True, "l": ["1", "2"], "c": {"d": "é"}}, "top": "v"}
    assert tomllib.loads(dumps_toml(data)) == data


def test_dev_null_means_no_file(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["config", "set", "--site", "torch-backend", "cpu"]) == 0
    monkeypatch.setenv("FITWHEEL_CONFIG", os.devnull)
    assert settings_in_force(os.environ) == {}
    assert main(["config", "set", "torch-backend", "auto"]) == 1
    assert "there is no configuration file to change" in capsys.readouterr().err
    assert Path(os.devnull).is_char_device()


def test_what_the_writer_cannot_write_is_an_error() -> None:
    from fitwheel.userconfig import ConfigFileError

    with pytest.raises(ConfigFileError, match="cannot write the configuration file"):
        dumps_toml({"detect": {"timeout": 1.5}})  # floats: the one TOML writer has none
