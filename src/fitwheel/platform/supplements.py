"""Answers added to a profile from outside detection (a plugin's, a static list's).

:func:`supplement` puts extra supported values into a profile: each after the detected values
of the same feature, duplicates dropped, and names where the namespace's extra answer came
from in ``sources``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from fitwheel.platform.profile import Profile


def supplement(
    profile: Profile, extra: Mapping[str, Mapping[str, Sequence[str]]], source: str
) -> Profile:
    """``profile`` with ``extra`` (namespace -> feature -> values, most preferred first) added
    after the values already there; ``sources[ns]`` is ``source`` for every namespace given."""
    properties = {ns: dict(fs) for ns, fs in profile.properties.items()}
    sources = dict(profile.sources)
    for ns, features in extra.items():
        merged = properties.setdefault(ns, {})
        for feature, values in features.items():
            merged[feature] = tuple(dict.fromkeys([*merged.get(feature, ()), *values]))
        sources[ns] = source
    return Profile(properties, profile.devices, profile.environment, sources)
