"""The shared option records and their merge rule with pip's configuration: a yes/no setting
is on when the configuration or the flag says so, lists are the configuration's and then the
flags', a value given as a flag wins."""

from __future__ import annotations

import pytest

from fitwheel.index.config import PipSettings
from fitwheel.options import PlacementOptions, ResolutionOptions, SourceOptions, key_of

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
