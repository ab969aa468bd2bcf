"""Static answers added to a profile: what the user says the target supports.

Detection answers for the namespaces fitwheel has providers for. Any other namespace (or a
feature detection does not know) can be answered without running code, by the user:

- ``--variant-property "NS :: FEATURE :: VALUE"`` on the command line (repeatable);
- a ``[variant-properties]`` table in the configuration file (``"NS :: FEATURE" = [VALUE, ...]``,
  read by :func:`fitwheel.userconfig.variant_properties`);
- a profile's own ``properties`` (any namespace);
- an allowed provider plugin's answer, which its runner adds the same way.

:func:`supplement` is the one way such an answer joins a profile: a feature's added values come
after the values already there, and the profile's ``sources`` says where each namespace's answer
came from. A namespace answered this way is answered (:func:`answered_namespaces`): no plugin
runs for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from fitwheel.errors import UsageError
from fitwheel.platform.profile import Profile
from fitwheel.variants.errors import InvalidPropertyError
from fitwheel.variants.names import check_feature, check_namespace, check_value

__all__ = ["ARGUMENT", "answered_namespaces", "parse_property_arguments", "supplement"]

#: the command-line option the static answers come from (messages name it)
ARGUMENT = "--variant-property"


def supplement(
    profile: Profile, extra: Mapping[str, Mapping[str, Sequence[str]]], source: str
) -> Profile:
    """``profile`` with the properties of ``extra`` added, and ``source`` recorded for every
    namespace ``extra`` names.

    For a feature the profile already has, the added values come after its own (the detected
    ones stay preferred), less those already listed; new features and namespaces come after the
    existing ones, in ``extra``'s order. A namespace in ``extra`` with no features is recorded
    as answered (its source says by what) and supports nothing. Names and values are checked
    by the variant grammar; the profile given is not changed."""
    if not extra:
        return profile
    properties: dict[str, dict[str, tuple[str, ...]]] = {
        ns: dict(features) for ns, features in profile.properties.items()
    }
    sources = dict(profile.sources)
    for ns, features in extra.items():
        try:
            check_namespace(ns)
            checked = {
                check_feature(f): [check_value(v) for v in values] for f, values in features.items()
            }
        except InvalidPropertyError as exc:
            raise exc.with_source(source) from None
        merged = properties.setdefault(ns, {})
        for feature, added in checked.items():
            merged[feature] = tuple(dict.fromkeys((*merged.get(feature, ()), *added)))
        before = sources.get(ns)
        if before is None or before == source:
            sources[ns] = source
        elif source not in before.split(" + "):
            sources[ns] = f"{before} + {source}"
    return Profile(properties, profile.devices, profile.environment, sources)


def answered_namespaces(profile: Profile) -> tuple[str, ...]:
    """The namespaces ``profile`` answers, sorted: fitwheel's own providers' (whatever they
    found), and every namespace it has properties or a recorded source for. No plugin runs for
    these; a variant's namespace outside them has no answer."""
    from fitwheel.platform.detect import available_namespaces

    return tuple(sorted({*available_namespaces(), *profile.properties, *profile.sources}))


def parse_property_arguments(
    texts: Iterable[str], *, argument: str = ARGUMENT
) -> dict[str, dict[str, list[str]]]:
    """``"NS :: FEATURE :: VALUE"`` strings as namespace -> feature -> values, in the order
    given (a repeated value counts once). A malformed one raises :class:`UsageError` naming
    ``argument`` and the text."""
    from fitwheel.variants.model import VariantProperty

    out: dict[str, dict[str, list[str]]] = {}
    for text in texts:
        try:
            prop = VariantProperty.parse(text)
        except InvalidPropertyError as exc:
            raise UsageError(
                f"{argument} {text!r}: {exc.rule}; write it as "
                '"NAMESPACE :: FEATURE :: VALUE", e.g. "ascend :: npu_type :: 910b"'
            ) from None
        values = out.setdefault(prop.namespace, {}).setdefault(prop.feature, [])
        if prop.value not in values:
            values.append(prop.value)
    return out
