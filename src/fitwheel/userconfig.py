"""fitwheel's own configuration file: the ``[install]`` settings and ``fitwheel config``.

The file is TOML, the one detection overrides live in (``[detect]``, see
:mod:`fitwheel.platform.overrides`), at two levels, the later winning key by key:

- site: ``<site config dir>/fitwheel/config.toml`` (platformdirs; ``/etc/xdg/fitwheel`` on
  Linux, or the first folder of ``XDG_CONFIG_DIRS``);
- user: ``FITWHEEL_CONFIG`` when set, else ``<user config dir>/fitwheel/config.toml``.

``FITWHEEL_CONFIG=/dev/null`` turns both off (the test kit's hermetic environment does).

Settings (under ``[install]``), each also an environment variable that wins over the files, and
a command-line flag that wins over both:

=====================  ============================  ===========================
key                    environment                   flag
=====================  ============================  ===========================
``torch-backend``      ``FITWHEEL_TORCH_BACKEND``    ``--torch-backend``
``torch-index-url``    ``FITWHEEL_TORCH_INDEX_URL``  ``--torch-index-url``
``variant-index-url``  ``FITWHEEL_VARIANT_INDEX_URL``  ``--variant-index-url``
``torch-projects``     ``FITWHEEL_TORCH_PROJECTS``   (none)
``index-strategy``     ``FITWHEEL_INDEX_STRATEGY``   ``--index-strategy``
``unreachable-index``  ``FITWHEEL_UNREACHABLE_INDEX``  ``--unreachable-index``
=====================  ============================  ===========================

``variant-index-url`` and ``torch-projects`` are lists (whitespace-separated in the environment).

``[variant-properties]`` adds static answers to what detection says, one key per feature, its
values most preferred first (:func:`variant_properties`; used as ``--variant-property`` is)::

    [variant-properties]
    "ascend :: npu_type" = ["910b"]

Writing the file keeps every other table and key, but not comments.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from fitwheel._values import Frozen
from fitwheel.errors import InputError

SECTION = "install"
#: key -> (environment variable, is a list)
KEYS: dict[str, tuple[str, bool]] = {
    "torch-backend": ("FITWHEEL_TORCH_BACKEND", False),
    "torch-index-url": ("FITWHEEL_TORCH_INDEX_URL", False),
    "variant-index-url": ("FITWHEEL_VARIANT_INDEX_URL", True),
    "torch-projects": ("FITWHEEL_TORCH_PROJECTS", True),
    "index-strategy": ("FITWHEEL_INDEX_STRATEGY", False),
    "unreachable-index": ("FITWHEEL_UNREACHABLE_INDEX", False),
}
LEVELS = ("site", "user")


class ConfigFileError(InputError):
    pass


def config_paths(env: Mapping[str, str]) -> dict[str, str]:
    """level -> file path. ``FITWHEEL_CONFIG=/dev/null`` means no file at all, site included
    (as ``PIP_CONFIG_FILE=/dev/null`` does for pip)."""
    from fitwheel.paths import config_path, site_config_path

    user = config_path(env)
    if user == os.devnull:
        return {"site": os.devnull, "user": os.devnull}
    return {"site": site_config_path(env), "user": user}


#: the files read in this process, by path, modification time and size: a command asks for
#: its settings more than once (the torch settings, the index strategy)
_READ: dict[tuple[str, int, int], dict[str, Any]] = {}


def _read(path: str, required: bool = False) -> dict[str, Any]:
    """The file's contents (read-only: the same table may be handed out again)."""
    from fitwheel.platform.overrides import OverrideError, load_config

    if path == os.devnull or (not required and not os.path.lexists(path)):
        return {}  # no file: the TOML parser is not loaded
    try:
        stat = os.stat(path)
        key = (path, stat.st_mtime_ns, stat.st_size)
    except OSError:
        key = None
    if key is not None and key in _READ:
        return _READ[key]
    try:
        data = load_config(path, required=required)
    except OverrideError as exc:
        raise ConfigFileError(str(exc)) from None
    if key is not None:
        _READ[key] = data
    return data


def check_key(key: str) -> str:
    """``key`` if fitwheel knows it (an unknown key fails as in ``pip config``: exit 1)."""
    if key not in KEYS:
        raise ConfigFileError(f"unknown setting {key!r}: fitwheel config knows {', '.join(KEYS)}.")
    return key


def _normalise(key: str, value: Any, origin: str) -> str | list[str]:
    is_list = KEYS[key][1]
    if is_list:
        items = value.split() if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(v, str) for v in items):
            raise ConfigFileError(f"{origin}: {key} must be a list of strings")
        return list(items)
    if not isinstance(value, str):
        raise ConfigFileError(f"{origin}: {key} must be a string")
    if key == "torch-backend":
        from fitwheel.torchbackend.table import check_backend_name

        return check_backend_name(value, f"{key} in {origin}")
    if key in ("index-strategy", "unreachable-index"):
        from fitwheel.options import INDEX_STRATEGIES, UNREACHABLE_INDEX

        choices = INDEX_STRATEGIES if key == "index-strategy" else UNREACHABLE_INDEX
        if value not in choices:
            raise ConfigFileError(
                f"{origin}: {key} must be one of {', '.join(choices)}, not {value!r}"
            )
    return value


#: the table of static answers (namespace :: feature -> values)
PROPERTIES_TABLE = "variant-properties"


def variant_properties(env: Mapping[str, str]) -> dict[str, dict[str, dict[str, list[str]]]]:
    """The ``[variant-properties]`` table of each file that has one (site, then user), by
    path: namespace -> feature -> values. A key or value off the variant grammar raises
    :class:`ConfigFileError` naming the file, the table and the key."""
    out: dict[str, dict[str, dict[str, list[str]]]] = {}
    for level, path in config_paths(env).items():
        data = _read(path, required=level == "user" and bool(env.get("FITWHEEL_CONFIG")))
        table = data.get(PROPERTIES_TABLE)
        if table is None:
            continue
        if not isinstance(table, dict):
            raise ConfigFileError(
                f'{path}: [{PROPERTIES_TABLE}] must be a table of "NAMESPACE :: FEATURE" = '
                "[VALUE, ...]"
            )
        if table:
            out[path] = _property_table(table, path)
    return out


def _property_table(table: Mapping[str, Any], path: str) -> dict[str, dict[str, list[str]]]:
    from fitwheel.variants.errors import InvalidPropertyError
    from fitwheel.variants.model import VariantFeature
    from fitwheel.variants.names import check_value

    out: dict[str, dict[str, list[str]]] = {}
    for key, values in table.items():
        where = f"{path}: [{PROPERTIES_TABLE}] {key!r}"
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ConfigFileError(f'{where} must be a list of value strings, e.g. ["910b"]')
        try:
            feature = VariantFeature.parse(key)
            checked = [check_value(v) for v in values]
        except InvalidPropertyError as exc:
            raise ConfigFileError(
                f'{where}: {exc.rule}; keys are "NAMESPACE :: FEATURE", values lists of values'
            ) from None
        listed = out.setdefault(feature.namespace, {}).setdefault(feature.feature, [])
        listed += [v for v in dict.fromkeys(checked) if v not in listed]
    return out


class Setting(Frozen):
    """One setting in force: its key, value and where it was set (a file's table, or a
    variable). A plain value class: a named tuple costs a millisecond at every start-up."""

    __slots__ = ("key", "origin", "value")
    key: str
    value: str | list[str]
    origin: str

    def __init__(self, key: str, value: str | list[str], origin: str) -> None:
        object.__setattr__(self, "key", key)
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "origin", origin)


def file_settings(env: Mapping[str, str]) -> dict[str, Setting]:
    """The settings of the files (site, then user on top)."""
    out: dict[str, Setting] = {}
    for level, path in config_paths(env).items():
        data = _read(path, required=level == "user" and bool(env.get("FITWHEEL_CONFIG")))
        section = data.get(SECTION, {})
        if not isinstance(section, dict):
            raise ConfigFileError(f"{path}: [{SECTION}] must be a table")
        for key, value in section.items():
            if key in KEYS:
                origin = f"{path} [{SECTION}]"
                out[key] = Setting(key, _normalise(key, value, origin), origin)
    return out


def settings_in_force(env: Mapping[str, str]) -> dict[str, Setting]:
    """Files, then the environment on top (flags are the caller's to apply)."""
    out = file_settings(env)
    for key, (var, _is_list) in KEYS.items():
        if env.get(var, "").strip():
            out[key] = Setting(key, _normalise(key, env[var].strip(), var), var)
    return out


def torch_settings(
    env: Mapping[str, str],
    *,
    backend: str | None = None,
    index_url: str | None = None,
    variant_index_urls: Sequence[str] = (),
) -> Any:
    """The :class:`~fitwheel.torchbackend.settings.TorchSettings` in force: flags over the
    environment over the files."""
    from fitwheel.torchbackend.settings import DEFAULT_INDEX_URL, TorchSettings

    found = settings_in_force(env)

    def pick(key: str, flag: object, flag_name: str) -> tuple[Any, str | None]:
        if flag:
            return flag, flag_name
        if key in found:
            return found[key].value, found[key].origin
        return None, None

    chosen, backend_origin = pick("torch-backend", backend, "--torch-backend")
    if chosen is not None and backend_origin == "--torch-backend":
        from fitwheel.torchbackend.table import check_backend_name

        chosen = check_backend_name(str(chosen))
    root, root_origin = pick("torch-index-url", index_url, "--torch-index-url")
    variants, variants_origin = pick(
        "variant-index-url", list(variant_index_urls), "--variant-index-url"
    )
    extra = found["torch-projects"].value if "torch-projects" in found else []
    return TorchSettings(
        backend=chosen,
        backend_origin=backend_origin or "",
        index_url=str(root or DEFAULT_INDEX_URL),
        index_url_origin=root_origin or "the default",
        variant_index_urls=tuple(variants or ()),
        variant_index_origin=variants_origin or "",
        extra_projects=tuple(extra) if isinstance(extra, list) else (),
    )


# -- writing ---------------------------------------------------------------------------------


def dumps_toml(data: Mapping[str, Any]) -> str:
    """The file's TOML (through the one TOML writer, :mod:`fitwheel.toml`)."""
    from fitwheel.toml import TomlWriteError, dumps

    try:
        return dumps(data)
    except TomlWriteError as exc:
        raise ConfigFileError(f"cannot write the configuration file: {exc}") from None


def write_setting(env: Mapping[str, str], level: str, key: str, value: str | None) -> str:
    """Set (``value``) or remove (None) ``key`` in the file of ``level``; returns the path."""
    from fitwheel.fs import atomic_write

    path = config_paths(env)[level]
    if path == os.devnull:
        raise ConfigFileError(
            f"FITWHEEL_CONFIG is {os.devnull}, so there is no configuration file to change: "
            "unset it, or point it at a file."
        )
    import copy

    data = copy.deepcopy(_read(path))  # the table read may be handed out again: not changed
    section = data.setdefault(SECTION, {})
    if value is None:
        section.pop(key, None)
        if not section:
            data.pop(SECTION)
    else:
        section[key] = _normalise(key, value, "the value given")
    from pathlib import Path

    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, dumps_toml(data).encode("utf-8"))
    except OSError as exc:
        raise ConfigFileError(
            f"cannot write {path}: {exc.strerror or exc}"
            + (" (the site level usually needs root; use --user)" if level == "site" else "")
        ) from None
    return path


# -- [plugins]: the third-party variant provider plugins allowed to run ----------------------
#
# [plugins]
# timeout = 30                                  # seconds (FITWHEEL_PLUGIN_TIMEOUT wins)
# [plugins.allow.ascend-variant-provider]
# version = "==0.0.2"                           # a version specifier (optional)
# hashes = { "ascend_variant_provider-0.0.2-py3-none-any.whl" = "sha256:<hex>" }

PLUGINS = "plugins"
ENV_PLUGIN_TIMEOUT = "FITWHEEL_PLUGIN_TIMEOUT"
DEFAULT_PLUGIN_TIMEOUT = 30.0


class PluginAllowance(Frozen):
    """One plugin allowed in a configuration file: its project name (normalised), version
    specifier ("" for any), pinned files (``sha256``: file name -> sha256 hex digest) and the
    table that says so."""

    __slots__ = ("name", "origin", "sha256", "version")
    name: str
    version: str
    sha256: Mapping[str, str]
    origin: str

    def __init__(self, name: str, version: str, sha256: Mapping[str, str], origin: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "sha256", dict(sha256))
        object.__setattr__(self, "origin", origin)


def _plugins_table(data: Mapping[str, Any], path: str) -> dict[str, Any]:
    table = data.get(PLUGINS, {})
    if not isinstance(table, dict):
        raise ConfigFileError(f"{path}: [{PLUGINS}] must be a table")
    return table


def _allowance(name: str, raw: Any, path: str) -> PluginAllowance:
    from fitwheel.variants.names import canonicalize_name

    origin = f"{path} [{PLUGINS}.allow.{name}]"
    if not isinstance(raw, dict):
        raise ConfigFileError(f"{origin} must be a table")
    unknown = sorted(set(raw) - {"version", "hashes"})
    if unknown:
        raise ConfigFileError(f"{origin}: unknown key {unknown[0]!r} (known: version, hashes)")
    version = raw.get("version", "")
    pins = raw.get("hashes", {})
    if not isinstance(version, str):
        raise ConfigFileError(f"{origin}: version must be a string such as '==0.0.2'")
    digests = {}
    for filename, value in pins.items() if isinstance(pins, dict) else [("", None)]:
        digest = value.removeprefix("sha256:").lower() if isinstance(value, str) else ""
        if not filename or len(digest) != 64 or not all(c in "0123456789abcdef" for c in digest):
            raise ConfigFileError(
                f'{origin}: hashes must be a table of file name = "sha256:<64 hex digits>"'
            )
        digests[filename] = digest
    return PluginAllowance(canonicalize_name(name), version.strip(), digests, origin)


def plugin_allowances(env: Mapping[str, str]) -> dict[str, PluginAllowance]:
    """The plugins the files allow, by normalised name (site, then user on top)."""
    out: dict[str, PluginAllowance] = {}
    for path in config_paths(env).values():
        allow = _plugins_table(_read(path), path).get("allow", {})
        if not isinstance(allow, dict):
            raise ConfigFileError(f"{path}: [{PLUGINS}.allow] must be a table")
        for name, raw in allow.items():
            found = _allowance(str(name), raw, path)
            out[found.name] = found
    return out


def plugin_timeout(env: Mapping[str, str]) -> float:
    """How long one plugin run may take: ``FITWHEEL_PLUGIN_TIMEOUT``, else ``[plugins]
    timeout``, else 30 seconds."""
    given: Any = env.get(ENV_PLUGIN_TIMEOUT, "").strip()
    origin = ENV_PLUGIN_TIMEOUT
    if not given:
        for path in config_paths(env).values():
            table = _plugins_table(_read(path), path)
            if "timeout" in table:
                given, origin = table["timeout"], f"{path} [{PLUGINS}] timeout"
    if given == "" or given is None:
        return DEFAULT_PLUGIN_TIMEOUT
    try:
        value = float(given)
    except (TypeError, ValueError):
        value = -1.0
    if not value > 0:
        raise ConfigFileError(
            f"{origin}: the plugin time bound must be a positive number of seconds"
        )
    return value


def record_plugin_pins(
    env: Mapping[str, str], name: str, version: str, sha256: Mapping[str, str]
) -> str | None:
    """Write ``[plugins.allow.NAME]`` with ``version`` and the pinned files into the user file
    (trust on first use); returns the path (None: ``FITWHEEL_CONFIG`` is the null device, so
    there is no file to record them in)."""
    import copy

    from fitwheel.fs import atomic_write

    path = config_paths(env)["user"]
    if path == os.devnull:
        return None
    data = copy.deepcopy(_read(path))
    allow = data.setdefault(PLUGINS, {}).setdefault("allow", {})
    entry = {"version": version} if version else {}
    entry["hashes"] = {k: f"sha256:{v}" for k, v in sorted(sha256.items())}  # type: ignore[assignment]
    allow[name] = entry
    from pathlib import Path

    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(target, dumps_toml(data).encode("utf-8"))
    except OSError as exc:
        raise ConfigFileError(f"cannot write {path}: {exc.strerror or exc}") from None
    return path
