"""--no-binary / --only-binary as pip reads them."""

from __future__ import annotations

import pytest

from fitwheel.errors import UsageError
from fitwheel.resolve.formats import FormatControl


def test_defaults_allow_both() -> None:
    formats = FormatControl()
    assert formats.wheels_allowed("x") and formats.sdists_allowed("x")
    assert not formats


def test_only_binary_all_and_names() -> None:
    formats = FormatControl(only_binary=[":all:"])
    assert formats.wheels_allowed("x") and not formats.sdists_allowed("x")
    assert formats.refusal("X") == "--only-binary :all:"
    formats = FormatControl(only_binary=["Docopt_Like,other"])
    assert not formats.sdists_allowed("docopt-like") and formats.sdists_allowed("third")
    assert formats.refusal("docopt.like") == "--only-binary docopt-like"


def test_no_binary_all_and_names() -> None:
    formats = FormatControl(no_binary=[":all:"])
    assert not formats.wheels_allowed("x") and formats.sdists_allowed("x")
    formats = FormatControl(no_binary=["a"])
    assert not formats.wheels_allowed("A") and formats.wheels_allowed("b")


def test_a_name_beats_all_and_none_clears() -> None:
    # --no-binary :all: --only-binary setuptools: setuptools from a wheel, the rest built
    formats = FormatControl(no_binary=[":all:"], only_binary=["setuptools"])
    assert formats.wheels_allowed("setuptools") and not formats.sdists_allowed("setuptools")
    assert not formats.wheels_allowed("other")
    formats = FormatControl(only_binary=[":all:,:none:"])
    assert formats.sdists_allowed("x")
    # :all: in one option clears the other
    formats = FormatControl(no_binary=["a"], only_binary=[":all:"])
    assert formats.wheels_allowed("a") and not formats.sdists_allowed("a")


def test_an_option_as_a_value_is_bad_usage() -> None:
    with pytest.raises(UsageError):
        FormatControl(only_binary=["--pre"])


def test_build_advice_names_the_users_option_or_the_commands_reason() -> None:
    from fitwheel.resolve.formats import FormatControl

    mine = FormatControl(only_binary=["Some_Project"])
    assert mine.build_advice("some-project") == (
        "drop --only-binary some-project for some-project to let fitwheel build it, or add an "
        "index that has its wheels"
    )
    assert "drop --only-binary :all:" in FormatControl(only_binary=[":all:"]).build_advice("x")
    implied = FormatControl(only_binary=[":all:"], implied_by="this command saves wheels only")
    assert implied.build_advice("x") == "this command saves wheels only"
