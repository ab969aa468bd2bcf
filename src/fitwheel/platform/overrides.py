"""Forcing or hiding what detection reports: one scheme, from the environment and a config file.

Environment (wins over the file, key by key):

- ``FITWHEEL_FORCE_<NS>=off`` (or empty): hide namespace ``<ns>`` entirely; its provider does not
  even run. ``detect`` undoes a config-file entry for the namespace.
- ``FITWHEEL_FORCE_<NS>_<FEATURE>=v1,v2``: the feature's values, most preferred first (commas
  or spaces); empty hides the feature. A namespace that detection did not find is created.
  ``FITWHEEL_FORCE_<NS>__<FEATURE>`` (two underscores) is the same and always unambiguous; the
  single-underscore form splits after the longest namespace fitwheel knows (``X86_64_LEVEL`` is
  ``x86_64`` / ``level``), else after the first word.
- ``FITWHEEL_DETECT=off``: run no provider; only forced features are reported.

Config file: ``FITWHEEL_CONFIG`` (``/dev/null``: none), else
``<user config dir>/fitwheel/config.toml``::

    [detect]
    detection = "off"                 # like FITWHEEL_DETECT=off (optional)

    [detect.override]
    nvidia = "off"                    # hide a namespace
    x86_64.level = ["v3", "v2", "v1"] # force a feature (a list, or one comma-separated string)
    aarch64.sve = []                  # hide a feature

A namespace hidden with ``off`` stays hidden even if one of its features is also forced.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping

from fitwheel.errors import InputError
from fitwheel.paths import ENV_CONFIG, config_path

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from fitwheel.platform.result import ProviderResult

# The result and model modules are imported where they are used: ``fitwheel detect --json``
# answered from the cache needs neither.

ENV_PREFIX = "FITWHEEL_FORCE_"
ENV_DETECT = "FITWHEEL_DETECT"
_OFF = ("off", "")
_DETECT = "detect"


class OverrideError(InputError):
    pass


class _Record:
    """A small immutable record. (Not a dataclass or NamedTuple: this module is on the start-up
    path of ``fitwheel detect``, where generating one costs more than the rest of the module.)"""

    __slots__: tuple[str, ...] = ()

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, _Record)
            and type(other) is type(self)
            and self._fields() == other._fields()
        )

    def __hash__(self) -> int:
        return hash(self._fields())

    def __repr__(self) -> str:
        args = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({args})"


class NamespaceOverride(_Record):
    __slots__ = ("hidden", "namespace", "origin")

    def __init__(self, namespace: str, hidden: bool, origin: str) -> None:
        self.namespace = namespace
        self.hidden = hidden
        self.origin = origin


class FeatureOverride(_Record):
    __slots__ = ("feature", "namespace", "origin", "values")

    def __init__(self, namespace: str, feature: str, values: tuple[str, ...], origin: str) -> None:
        self.namespace = namespace
        self.feature = feature
        #: the forced values, most preferred first; empty: the feature is hidden.
        self.values = values
        self.origin = origin


class Overrides:
    """The overrides in force."""

    __slots__ = ("detection_off", "features", "namespaces")

    def __init__(
        self,
        namespaces: Mapping[str, NamespaceOverride] | None = None,
        features: Mapping[tuple[str, str], FeatureOverride] | None = None,
        detection_off: str = "",
    ) -> None:
        self.namespaces: Mapping[str, NamespaceOverride] = dict(namespaces or {})
        self.features: Mapping[tuple[str, str], FeatureOverride] = dict(features or {})
        #: where ``detection off`` came from, or "" when detection runs.
        self.detection_off = detection_off

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Overrides) and (
            self.namespaces,
            self.features,
            self.detection_off,
        ) == (other.namespaces, other.features, other.detection_off)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (
            f"Overrides(namespaces={self.namespaces!r}, features={self.features!r}, "
            f"detection_off={self.detection_off!r})"
        )

    def __bool__(self) -> bool:
        return bool(self.namespaces or self.features or self.detection_off)

    def skip_reason(self, namespace: str) -> str:
        """Why the provider of ``namespace`` need not run at all ("" when it must run)."""
        ns = self.namespaces.get(namespace)
        if ns is not None and ns.hidden:
            return ns.origin
        return self.detection_off

    def apply(self, results: Mapping[str, ProviderResult]) -> dict[str, ProviderResult]:
        """The results with every override applied (namespaces in order, forced ones last)."""
        from fitwheel.platform.result import ProviderResult

        out: dict[str, ProviderResult] = {}
        forced_ns = dict.fromkeys(ns for ns, _ in self.features)
        for ns in [*results, *(n for n in forced_ns if n not in results)]:
            result = results.get(ns) or ProviderResult(ns, "absent", reason="not detected")
            out[ns] = self._apply_one(result)
        return out

    def _apply_one(self, result: ProviderResult) -> ProviderResult:
        from fitwheel.platform.result import ProviderResult

        ns = result.namespace
        ns_override = self.namespaces.get(ns)
        if ns_override is not None and ns_override.hidden:
            return ProviderResult(
                ns,
                "absent",
                sources={"*": f"override:{ns_override.origin}"},
                reason=f"hidden by {ns_override.origin}",
            )
        forced = [f for (n, _), f in self.features.items() if n == ns]
        if not forced:
            return result
        props = dict(result.properties)
        sources = dict(result.sources)
        for override in forced:
            if override.values:
                props[override.feature] = override.values
            else:
                props.pop(override.feature, None)
            sources[override.feature] = f"override:{override.origin}"
        overridden = {f.feature for f in forced}
        devices = [
            dev.replace(
                properties={
                    n: {k: v for k, v in feats.items() if not (n == ns and k in overridden)}
                    for n, feats in dev.properties.items()
                },
            )
            for dev in result.devices
        ]
        status = "ok" if props else result.status
        reason = result.reason
        if result.status != "ok" and props:
            reason = f"forced ({result.reason})" if result.reason else "forced"
        return result.replace(
            status=status,
            properties=props,
            sources=sources,
            devices=devices,
            reason=reason,
        )


def _split_values(raw: str) -> list[str]:
    return [v for v in raw.replace(",", " ").split() if v]


def _checked_values(values: Iterable[Any], origin: str) -> tuple[str, ...]:
    from fitwheel.variants.errors import VariantFormatError
    from fitwheel.variants.names import check_value

    out: list[str] = []
    for value in values:
        if not isinstance(value, str):
            raise OverrideError(f"{origin}: value {value!r} is not a string")
        try:
            check_value(value)
        except VariantFormatError as exc:
            raise OverrideError(f"{origin}: {exc.rule}") from None
        out.append(value)
    return tuple(dict.fromkeys(out))


def _checked_names(ns: str, feature: str | None, origin: str) -> None:
    from fitwheel.variants.errors import VariantFormatError
    from fitwheel.variants.names import check_feature, check_namespace

    try:
        check_namespace(ns)
        if feature is not None:
            check_feature(feature)
    except VariantFormatError as exc:
        raise OverrideError(f"{origin}: {exc.rule}") from None


def split_env_name(suffix: str, known: Iterable[str]) -> tuple[str, str | None]:
    """``X86_64_LEVEL`` -> (``x86_64``, ``level``); ``NVIDIA`` -> (``nvidia``, None)."""
    name = suffix.lower()
    if "__" in name:
        ns, _, feature = name.partition("__")
        return ns, feature
    for ns in sorted(known, key=len, reverse=True):
        if name == ns:
            return ns, None
        if name.startswith(ns + "_"):
            return ns, name[len(ns) + 1 :]
    ns, _, feature = name.partition("_")
    return ns, feature or None


def _namespace_value(raw: str, origin: str) -> NamespaceOverride | None:
    value = raw.strip().lower()
    if value in _OFF:
        return NamespaceOverride("", True, origin)
    if value == _DETECT:
        return NamespaceOverride("", False, origin)
    raise OverrideError(
        f"{origin}: expected 'off' (hide the namespace), 'detect' or nothing, got {raw!r}; "
        "to force a feature use FITWHEEL_FORCE_<NAMESPACE>_<FEATURE>=value,value"
    )


def from_env(env: Mapping[str, str], known: Iterable[str]) -> Overrides:
    known = list(known)
    namespaces: dict[str, NamespaceOverride] = {}
    features: dict[tuple[str, str], FeatureOverride] = {}
    for key in sorted(env):
        if not key.startswith(ENV_PREFIX) or key == ENV_PREFIX:
            continue
        raw = env[key]
        ns, feature = split_env_name(key[len(ENV_PREFIX) :], known)
        _checked_names(ns, feature, key)
        if feature is None:
            parsed = _namespace_value(raw, key)
            if parsed is not None:
                namespaces[ns] = NamespaceOverride(ns, parsed.hidden, parsed.origin)
        else:
            values = _checked_values(_split_values(raw), key)
            features[(ns, feature)] = FeatureOverride(ns, feature, values, key)
    off = ""
    detect_value = env.get(ENV_DETECT, "").strip().lower()
    if detect_value in ("off", "0", "no", "false"):
        off = ENV_DETECT
    elif detect_value not in ("", "on", "1", "yes", "true"):
        raise OverrideError(f"{ENV_DETECT}: expected 'off' or 'on', got {env[ENV_DETECT]!r}")
    return Overrides(namespaces, features, off)


def from_config(data: Mapping[str, Any], path: str) -> Overrides:
    """Overrides from a decoded config file (its ``[detect]`` table)."""
    detect_table = data.get("detect", {})
    if not isinstance(detect_table, dict):
        raise OverrideError(f"{path}: [detect] must be a table")
    off = ""
    detection = detect_table.get("detection", "on")
    if detection == "off" or detection is False:
        off = f"{path} [detect] detection"
    elif detection not in ("on", True):
        raise OverrideError(f"{path}: [detect] detection must be 'on' or 'off'")
    table = detect_table.get("override", {})
    if not isinstance(table, dict):
        raise OverrideError(f"{path}: [detect.override] must be a table")
    namespaces: dict[str, NamespaceOverride] = {}
    features: dict[tuple[str, str], FeatureOverride] = {}
    for ns, entry in table.items():
        origin = f"{path} [detect.override] {ns}"
        _checked_names(ns, None, origin)
        if isinstance(entry, str):
            parsed = _namespace_value(entry, origin)
            if parsed is not None:
                namespaces[ns] = NamespaceOverride(ns, parsed.hidden, parsed.origin)
            continue
        if not isinstance(entry, dict):
            raise OverrideError(
                f"{origin}: expected 'off' or a table of feature = [values], got {entry!r}"
            )
        for feature, raw in entry.items():
            forigin = f"{origin}.{feature}"
            _checked_names(ns, feature, forigin)
            if isinstance(raw, str):
                values = _checked_values(_split_values(raw), forigin)
            elif isinstance(raw, list):
                values = _checked_values(raw, forigin)
            else:
                raise OverrideError(f"{forigin}: expected a list of values or a string")
            features[(ns, feature)] = FeatureOverride(ns, feature, values, forigin)
    return Overrides(namespaces, features, off)


def merge(file: Overrides, env: Overrides) -> Overrides:
    """``env`` wins over ``file`` for every namespace and feature it names."""
    namespaces = {**file.namespaces, **env.namespaces}
    features = {**file.features, **env.features}
    return Overrides(namespaces, features, env.detection_off or file.detection_off)


def load_config(path: str, *, required: bool) -> dict[str, Any]:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        if required:
            raise OverrideError(f"config file {path} (from {ENV_CONFIG}) does not exist") from None
        return {}
    except OSError as exc:
        raise OverrideError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    if not data.strip():
        return {}  # an empty file (or /dev/null) says nothing: no parser needed
    from fitwheel.toml import TomlReadError, loads  # only when a config file is read

    try:
        return loads(data, f"config file {path}")
    except TomlReadError as exc:
        raise OverrideError(str(exc)) from None


def may_override(env: Mapping[str, str]) -> bool:
    """Whether any override could be in force (an override variable, or a config file)."""
    if ENV_DETECT in env or any(k.startswith(ENV_PREFIX) for k in env):
        return True
    path = config_path(env)
    return path != os.devnull and os.path.exists(path)


def load_overrides(env: Mapping[str, str] | None = None, known: Iterable[str] = ()) -> Overrides:
    """The overrides in force: the config file, then the environment on top."""
    env = os.environ if env is None else env
    known = list(known)
    path = config_path(env)
    data = load_config(path, required=bool(env.get(ENV_CONFIG)))
    file_overrides = from_config(data, path) if data else Overrides()
    return merge(file_overrides, from_env(env, known))
