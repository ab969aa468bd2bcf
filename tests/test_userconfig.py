"""The configuration file's ``[variant-properties]`` table: static answers, site then user."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.userconfig import ConfigFileError, variant_properties


def env_for(tmp_path: Path, user: str | None, site: str | None = None) -> dict[str, str]:
    env = {"XDG_CONFIG_HOME": str(tmp_path / "user"), "XDG_CONFIG_DIRS": str(tmp_path / "site")}
    for level, text in (("user", user), ("site", site)):
        if text is not None:
            path = tmp_path / level / "fitwheel" / "config.toml"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
    return env


def test_each_file_s_table_by_path_site_first(tmp_path: Path) -> None:
    env = env_for(
        tmp_path,
        '[install]\ntorch-backend = "cpu"\n\n[variant-properties]\n'
        '"ascend :: npu_type" = ["910b", "310p", "910b"]\n"x86_64::level" = ["v2"]\n',
        site='[variant-properties]\n"ascend :: npu_type" = ["910"]\n',
    )
    tables = variant_properties(env)
    site, user = (str(tmp_path / level / "fitwheel" / "config.toml") for level in ("site", "user"))
    assert list(tables) == [site, user]
    assert tables[site] == {"ascend": {"npu_type": ["910"]}}
    assert tables[user] == {"ascend": {"npu_type": ["910b", "310p"]}, "x86_64": {"level": ["v2"]}}


def test_no_file_no_table_no_answers(tmp_path: Path) -> None:
    assert variant_properties(env_for(tmp_path, None)) == {}
    assert variant_properties(env_for(tmp_path, '[install]\ntorch-backend = "cpu"\n')) == {}
    assert variant_properties({"FITWHEEL_CONFIG": "/dev/null"}) == {}


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ('"ascend :: npu_type" = "910b"', ["'ascend :: npu_type'", "list of value strings"]),
        ('"ascend :: npu_type" = [910]', ["'ascend :: npu_type'", "list of value strings"]),
        ('"ascend npu_type" = ["910b"]', ["'ascend npu_type'", "namespace :: feature"]),
        ('"Ascend :: npu_type" = ["910b"]', ["'Ascend :: npu_type'", "namespace"]),
        ('"ascend :: npu_type" = ["910 b"]', ["'ascend :: npu_type'", "value"]),
    ],
)
def test_a_bad_entry_names_the_file_and_key(tmp_path: Path, body: str, words: list[str]) -> None:
    env = env_for(tmp_path, f"[variant-properties]\n{body}\n")
    with pytest.raises(ConfigFileError) as err:
        variant_properties(env)
    message = str(err.value)
    assert str(tmp_path / "user" / "fitwheel" / "config.toml") in message
    assert "[variant-properties]" in message
    for word in words:
        assert word in message


def test_a_table_that_is_not_one(tmp_path: Path) -> None:
    env = env_for(tmp_path, 'variant-properties = ["ascend :: npu_type :: 910b"]\n')
    with pytest.raises(ConfigFileError, match=r"\[variant-properties\] must be a table"):
        variant_properties(env)
