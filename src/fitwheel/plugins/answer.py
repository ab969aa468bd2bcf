"""Checking what a plugin answered: its own namespace only, every name and value by the
grammar of :mod:`fitwheel.variants.names`. A feature with no values means "not supported"."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from fitwheel.plugins.errors import PluginError
from fitwheel.variants.errors import InvalidPropertyError
from fitwheel.variants.names import check_feature, check_namespace, check_value

#: namespace -> feature -> values, most preferred first
Answer = dict[str, dict[str, tuple[str, ...]]]


def described(plugin: str, data: Any) -> dict[str, str]:
    """namespace -> plugin reference, from a ``--describe`` answer."""
    out: dict[str, str] = {}
    for item in _plugins(plugin, data):
        namespace = _namespace(plugin, item.get("namespace"))
        ref = item.get("ref")
        if not isinstance(ref, str) or not ref:
            raise PluginError(plugin, f"its answer names no plugin reference for {namespace!r}")
        if namespace in out:
            raise PluginError(plugin, f"two of its plugins answer for namespace {namespace!r}")
        out[namespace] = ref
    return out


def checked(
    plugin: str, data: Any, expected: Mapping[str, str], refused: Collection[str]
) -> Answer:
    """The answer in ``data`` (the driver's JSON) for the namespaces in ``expected``
    (namespace -> reference); a namespace in ``refused`` (fitwheel's own, or answered
    statically) is an error, as is any other namespace."""
    out: Answer = {}
    for item in _plugins(plugin, data):
        namespace = _namespace(plugin, item.get("namespace"))
        if namespace in refused or namespace not in expected:
            raise PluginError(plugin, f"it answered for namespace {namespace!r}, not its own")
        out[namespace] = _features(plugin, namespace, item.get("configs"))
    missing = sorted(set(expected) - set(out))
    if missing:
        raise PluginError(plugin, f"it gave no answer for namespace {', '.join(missing)}")
    return out


def _plugins(plugin: str, data: Any) -> list[dict[str, Any]]:
    if not isinstance(data, dict):
        raise PluginError(plugin, "its answer is not a JSON object")
    if "error" in data:
        raise PluginError(plugin, f"it failed: {str(data['error'])[:500]}")
    items = data.get("plugins")
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise PluginError(plugin, "its answer has no list of plugins")
    return items


def _namespace(plugin: str, value: Any) -> str:
    try:
        return check_namespace(value)
    except InvalidPropertyError as exc:
        raise PluginError(plugin, f"its namespace is out of grammar: {exc}") from None


def _features(plugin: str, namespace: str, configs: Any) -> dict[str, tuple[str, ...]]:
    if not isinstance(configs, list):
        raise PluginError(plugin, f"get_supported_configs() for {namespace!r} gave no list")
    out: dict[str, tuple[str, ...]] = {}
    for config in configs:
        if not isinstance(config, dict):
            raise PluginError(plugin, f"a config of {namespace!r} is not an object")
        own = config.get("namespace", namespace)
        if own != namespace:
            raise PluginError(
                plugin, f"it answered for namespace {own!r}, not its own {namespace!r}"
            )
        name, values = str(config.get("name")), config.get("values")
        try:
            check_feature(config.get("name"))  # type: ignore[arg-type]
            if not isinstance(values, list):
                raise InvalidPropertyError(f"the values of {name!r} are not a list")
            checked_values = tuple(check_value(v) for v in _unique(values))
        except InvalidPropertyError as exc:
            raise PluginError(
                plugin, f"its answer for {namespace!r} is out of grammar: {exc}"
            ) from None
        if name in out:
            raise PluginError(plugin, f"it answered feature {namespace} :: {name} twice")
        out[name] = checked_values
    return out


def _unique(values: Sequence[Any]) -> list[Any]:
    seen: list[Any] = []
    for value in values:
        if value not in seen:
            seen.append(value)
    return seen


def supported(answer: Answer) -> Answer:
    """The answer without its unsupported features (those with no values)."""
    return {ns: {f: v for f, v in fs.items() if v} for ns, fs in answer.items()}
