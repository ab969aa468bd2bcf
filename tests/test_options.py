"""The shared option records and their merge rules: with pip's configuration (a yes/no
setting is on when the configuration or the flag says so, lists are the configuration's and
then the flags', a value given as a flag wins), and with what requirements files say (as
pip's finder takes it)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.index.config import PipSettings
from fitwheel.options import PlacementOptions, ResolutionOptions, SourceOptions, key_of
from fitwheel.resolve.reqfile import FileOptions, RequirementsReader

CONFIGURED = PipSettings(
    no_binary=("cfg-nb",),
    only_binary=(":all:",),
    pre=True,
    timeout=9.0,
    retries=5,
    trusted_hosts=("cfg.test",),
    require_hashes=True,
    no_deps=True,
)


def test_sources_take_pips_network_settings_under_the_flags() -> None:
    merged = SourceOptions(trusted_hosts=("flag.test",), retries=0).with_pip_settings(CONFIGURED)
    assert merged.trusted_hosts == ("cfg.test", "flag.test")
    assert merged.retries == 0  # the flag's 0 wins
    assert merged.timeout == 9.0  # no flag: pip's
    assert SourceOptions().with_pip_settings(PipSettings()) == SourceOptions()


def test_resolution_takes_pips_choices_under_the_flags() -> None:
    merged = ResolutionOptions(no_binary=("flag-nb",)).with_pip_settings(CONFIGURED)
    assert merged.no_binary == ("cfg-nb", "flag-nb")
    assert merged.only_binary == (":all:",)
    assert merged.pre and merged.no_deps and merged.require_hashes
    plain = ResolutionOptions(pre=True).with_pip_settings(PipSettings())
    assert plain.pre and not plain.no_deps


def test_placement_is_not_pips_concern() -> None:
    placement = PlacementOptions(link_mode="copy", jobs=2)
    assert placement.with_pip_settings(CONFIGURED) is placement


def test_records_are_immutable_values_with_their_fields_as_keys() -> None:
    sources = SourceOptions(index_url="https://index.test/simple/", find_links=["wheels"])
    assert sources.find_links == ("wheels",)  # lists are kept as tuples
    assert sources == SourceOptions(index_url="https://index.test/simple/", find_links=("wheels",))
    assert hash(sources) == hash(sources.replace())
    with pytest.raises(AttributeError):
        sources.timeout = 1.0
    key = key_of(ResolutionOptions(forced_variants=(("torch", "cu128"),)))
    assert key["forced_variants"] == (("torch", "cu128"),)
    assert set(key) == set(ResolutionOptions.__slots__)


def _file_options(text: str, tmp_path: Path) -> FileOptions:
    path = tmp_path / "req.txt"
    path.write_text(text)
    reader = RequirementsReader()
    reader.parse(str(path))
    return reader.options


def test_a_files_index_url_replaces_every_index_named_before_it(tmp_path: Path) -> None:
    flags = SourceOptions(
        index_url="http://cli.test/simple/", extra_index_urls=("http://cli-extra.test/",)
    )
    options = _file_options(
        "-i http://file.test/simple/\n--extra-index-url http://x.test/\n", tmp_path
    )
    merged = flags.with_file_options(options)
    # as pip's finder: the command line's -i and its extra indexes are gone
    assert merged.index_url == "http://file.test/simple/"
    assert merged.extra_index_urls == ("http://x.test/",)
    req = tmp_path / "req.txt"
    assert merged.index_url_origin == f"{req}:1"
    assert dict(merged.origins) == {
        "http://file.test/simple/": f"{req}:1",
        "http://x.test/": f"{req}:2",
    }


def test_file_lists_add_after_the_flags_and_yes_no_options_turn_on(tmp_path: Path) -> None:
    (tmp_path / "wheels").mkdir()
    options = _file_options(
        "--extra-index-url http://x.test/\n-f wheels\n--trusted-host x.test\n--no-index\n"
        "--pre\n--require-hashes\n--only-binary :all:\n--no-binary sdist-only\n",
        tmp_path,
    )
    flags = SourceOptions(
        extra_index_urls=("http://cli.test/",), find_links=("cli-wheels",), trusted_hosts=("t",)
    )
    merged = flags.with_file_options(options)
    assert merged.extra_index_urls == ("http://cli.test/", "http://x.test/")
    assert merged.find_links == ("cli-wheels", str(tmp_path / "wheels"))
    assert merged.trusted_hosts == ("t", "x.test")
    assert merged.no_index and merged.index_url is None and merged.index_url_origin is None
    assert dict(merged.origins)["--no-index"] == f"{tmp_path / 'req.txt'}:4"
    resolution = ResolutionOptions(no_binary=("a",)).with_file_options(options)
    assert resolution.pre and resolution.require_hashes
    assert resolution.no_binary == ("a",)  # the flags' stay as they are
    assert resolution.formats == (("--only-binary", ":all:"), ("--no-binary", "sdist-only"))


def test_no_file_options_change_nothing() -> None:
    empty = FileOptions()
    assert SourceOptions(index_url="http://i.test/").with_file_options(empty) == SourceOptions(
        index_url="http://i.test/"
    )
    assert ResolutionOptions(pre=True).with_file_options(empty) == ResolutionOptions(pre=True)
