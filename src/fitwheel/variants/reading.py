"""Read every published generation of wheel-variant metadata into :mod:`fitwheel.variants.model`.

Two entry points:

- :func:`loads_variant_info` takes the raw text or bytes of a ``variant.json`` or
  ``{name}-{version}-variants.json`` (decoded by :mod:`fitwheel.variants.jsoncheck`: size,
  nesting and encoding limits, duplicate keys detected);
- :func:`read_variant_info` takes already-decoded JSON.

Both raise only :class:`~fitwheel.variants.errors.VariantFormatError` (or a subclass) for bad data,
naming the source, the key path (``variants.cu126.nvidia.sm_arch[2]``) and the rule broken.

The generation is taken from ``$schema`` where the URL identifies one (see ``_schema``); otherwise
from the structure: no ``providers`` key means PEP 825, any 817-only key (``enable-if``,
``install-time``, ``plugin-use``, top-level ``static-properties``, feature or property priorities)
means PEP 817, anything else the current provider form. An unknown major version is refused; a
newer minor or patch is read with unknown keys ignored.

How 817-era data lands in the model:

- ``plugin-use: none`` or ``build`` (v0.0.2) and ``install-time: false`` (v0.0.3) make a static
  provider. Its values are the top-level ``static-properties`` entry when there is one (required
  for ``install-time: false``); otherwise the values of ``default-priorities.property`` in that
  order, then any further values the variants use, sorted. ``requires`` and ``plugin-api`` of such
  providers only ran at build time and are dropped.
- Property and feature priorities of a static namespace are folded into its value order and
  ``feature_order``; all priorities are also kept verbatim in ``feature_priorities`` and
  ``property_priorities``.
- The unversioned generation (torch 2.8) wrote its null variant as ``"00000000": {}``. It is read as
  the null variant; the mapping key stays ``00000000`` (the label in that release's wheel
  filenames) while the description's label is ``null`` unless the model accepts the legacy label.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType

from fitwheel.variants._schema import Generation, SchemaInfo, UnknownMajorVersion, classify_schema
from fitwheel.variants.abi import ABI_NAMESPACE
from fitwheel.variants.errors import InvalidLabelError, InvalidPropertyError, VariantFormatError
from fitwheel.variants.jsoncheck import JsonChecker, decode_json, key_path
from fitwheel.variants.markers import is_simple_environment_marker
from fitwheel.variants.model import (
    FEATURE_RE,
    LABEL_RE,
    NAMESPACE_RE,
    NULL_LABEL,
    VALUE_RE,
    Provider,
    VariantDescription,
    VariantInfo,
    VariantProperty,
)

# ``typing`` stays unimported at run time (it is not needed there, and this module is on the
# start-up path of ``fitwheel select``); type checkers treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    Kind = Literal["index", "wheel"]

__all__ = [
    "LEGACY_NULL_LABEL",
    "loads_variant_info",
    "read_variant_info",
]

#: How the unversioned (torch 2.8) generation labelled its null variant.
LEGACY_NULL_LABEL = "00000000"
#: 817 limited labels to 16 characters; 825 lifted the limit.
_LEGACY_LABEL_MAX = 16

_PLUGIN_API_RE = re.compile(r"[A-Za-z0-9_.]+(?:\s*:\s*[A-Za-z0-9_.]+)?")
#: ``name`` or ``name>=1.2,<3``: the requirement form published files use. Every string it
#: matches is a valid PEP 508 requirement, so only other forms need packaging's parser, whose
#: import (with ``subprocess``, ``logging`` and ``platform``) would dominate ``fitwheel select``.
_SIMPLE_REQUIREMENT_RE = re.compile(
    r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"
    r"(?:[ ]*(?:[<>]=?|[=!]=)[ ]*[0-9]+(?:\.[0-9]+)*"
    r"(?:[ ]*,[ ]*(?:[<>]=?|[=!]=)[ ]*[0-9]+(?:\.[0-9]+)*)*)?"
)

_LEGACY_PROVIDER_KEYS = frozenset(
    {"requires", "plugin-api", "optional", "enable-if", "install-time", "plugin-use"}
)
_CURRENT_PROVIDER_KEYS = frozenset(
    {"requires", "plugin-api", "optional", "static-properties", "feature-order", "builtin"}
)
_LEGACY_ONLY = frozenset({"enable-if", "install-time", "plugin-use"})
_CURRENT_ONLY = frozenset({"static-properties", "feature-order", "builtin"})


def loads_variant_info(
    text: str | bytes, source: str, kind: Kind = "index", *, expected_label: str | None = None
) -> VariantInfo:
    """Decode JSON text (``str`` or UTF-8 ``bytes``, within the limits of
    :func:`~fitwheel.variants.jsoncheck.decode_json`) and read it with :func:`read_variant_info`."""
    data = decode_json(text, source)
    return read_variant_info(data, source, kind=kind, expected_label=expected_label)


def read_variant_info(
    data: Any, source: str, *, kind: Kind = "index", expected_label: str | None = None
) -> VariantInfo:
    """Read decoded JSON (any generation) into a :class:`VariantInfo`.

    ``kind="wheel"``: the data is a wheel's ``variant.json`` and must describe exactly one variant
    (whose label must be ``expected_label`` when given).
    """
    if kind not in ("index", "wheel"):
        raise ValueError(f"kind must be 'index' or 'wheel', not {kind!r}")
    try:
        return _Reader(source).read(data, kind, expected_label)
    except VariantFormatError as exc:
        if exc.source is None:
            raise exc.with_source(source) from None
        raise


class _Dialect:
    """How the document at hand is read: its generation, whether unknown keys are ignored, what
    its ``$schema`` said, and which ``default-priorities`` keys it may use."""

    # Not a dataclass: defining one costs more start-up time than reading a whole file.
    __slots__ = ("generation", "lenient", "priority_keys", "schema")

    def __init__(
        self,
        generation: Generation,
        lenient: bool,
        schema: SchemaInfo,
        priority_keys: frozenset[str],
    ) -> None:
        self.generation = generation
        self.lenient = lenient
        self.schema = schema
        self.priority_keys = priority_keys


class _Reader(JsonChecker):
    dialect: _Dialect
    schema_url: str | None

    def check_keys(self, table: Mapping[str, Any], path: str, allowed: frozenset[str]) -> None:
        if self.dialect.lenient or self.dialect.generation is Generation.LEGACY:
            # 817: tools MUST ignore unknown keys; newer minors may add keys.
            return
        unknown = sorted(set(table) - allowed)
        if unknown:
            self.fail(
                key_path(path, unknown[0]),
                f"unexpected key {unknown[0]!r}; allowed here: {', '.join(sorted(allowed))}",
            )

    def token(
        self,
        value: Any,
        path: str,
        what: str,
        regex: re.Pattern[str],
        alphabet: str,
        cls: type[VariantFormatError] = InvalidPropertyError,
    ) -> str:
        text = self.string(value, path, f"{what} (a string)")
        if not regex.fullmatch(text):
            hint = " (upper case is not allowed, never folded)" if text.lower() != text else ""
            self.fail(path, f"{what} {text!r} must be non-empty and use only {alphabet}{hint}", cls)
        return text

    def namespace(self, value: Any, path: str) -> str:
        return self.token(value, path, "namespace", NAMESPACE_RE, "a-z, 0-9 and _")

    def feature(self, value: Any, path: str) -> str:
        return self.token(value, path, "feature name", FEATURE_RE, "a-z, 0-9 and _")

    def value(self, value: Any, path: str) -> str:
        return self.token(value, path, "feature value", VALUE_RE, "a-z, 0-9, _ and .")

    # -- the document --------------------------------------------------------------------------

    def read(self, data: Any, kind: Kind, expected_label: str | None) -> VariantInfo:
        top = self.obj(data, "", "a JSON object at the top level")
        schema_url = top.get("$schema")
        if schema_url is not None or "$schema" in top:
            schema_url = self.string(schema_url, "$schema", "a schema URL (a string)")
        self.schema_url = schema_url
        self.dialect = self.pick_dialect(top, schema_url)
        gen = self.dialect.generation

        if "default-priorities" not in top:
            self.fail("default-priorities", "required key 'default-priorities' is missing")
        if "variants" not in top:
            self.fail("variants", "required key 'variants' is missing")
        if gen is not Generation.PEP825 and "providers" not in top:
            self.fail("providers", "required key 'providers' is missing")
        if gen is Generation.PEP825:
            self.check_keys(
                top,
                "",
                frozenset({"$schema", "default-priorities", "variants", "providers"})
                | ({"static-properties"} if "providers" in top else set()),
            )

        namespaces, feature_prios, property_prios = self.priorities(top["default-priorities"])
        declared = set(namespaces)
        raw_variants = self.variant_tables(top["variants"], declared, kind, expected_label)
        used: dict[str, dict[str, set[str]]] = {}
        for props in raw_variants.values():
            for p in props:
                used.setdefault(p.namespace, {}).setdefault(p.feature, set()).add(p.value)

        providers: dict[str, Provider] = {}
        if "providers" in top:
            static_top = self.static_top(top, declared)
            providers = self.providers(
                top["providers"], namespaces, static_top, used, feature_prios, property_prios
            )

        variants = {label: self.description(label, props) for label, props in raw_variants.items()}
        return VariantInfo(
            namespace_priorities=namespaces,
            providers=MappingProxyType(providers),
            variants=MappingProxyType(variants),
            feature_priorities=MappingProxyType(feature_prios),
            property_priorities=MappingProxyType(
                {ns: MappingProxyType(v) for ns, v in property_prios.items()}
            ),
            schema=schema_url,
        )

    def pick_dialect(self, top: Mapping[str, Any], schema_url: str | None) -> _Dialect:
        info = SchemaInfo(None)
        if schema_url is not None:
            try:
                info = classify_schema(schema_url)
            except UnknownMajorVersion as exc:
                known = ", ".join(f"{m}.x" for m in exc.known)
                self.fail(
                    "$schema",
                    f"{schema_url!r} is major version {exc.major} of the {exc.family} schema; "
                    f"fitwheel reads version {known} only (a new major version is incompatible)",
                )
        gen = info.generation
        if gen is None:
            gen = self.guess_generation(top)
        if gen is Generation.LEGACY:
            prio = frozenset({"namespace", "feature", "property"})
        elif gen is Generation.PEP825 and (info.version is None or info.version < (0, 1, 1)):
            # v0.1.0 still had feature and property priorities; 10-Aug-2026 removed them.
            prio = frozenset({"namespace", "feature", "property"})
        else:
            prio = frozenset({"namespace"})
        return _Dialect(gen, info.lenient, info, prio)

    def guess_generation(self, top: Mapping[str, Any]) -> Generation:
        providers = top.get("providers")
        if "providers" not in top:
            return Generation.PEP825
        if "static-properties" in top:
            return Generation.LEGACY
        prios = top.get("default-priorities")
        if isinstance(prios, dict) and ({"feature", "property"} & set(prios)):
            return Generation.LEGACY
        if isinstance(providers, dict):
            for table in providers.values():
                if isinstance(table, dict) and _LEGACY_ONLY & set(table):
                    return Generation.LEGACY
        return Generation.CURRENT

    # -- default-priorities --------------------------------------------------------------------

    def priorities(
        self, raw: Any
    ) -> tuple[tuple[str, ...], dict[str, tuple[str, ...]], dict[str, dict[str, tuple[str, ...]]]]:
        path = "default-priorities"
        table = self.obj(raw, path)
        self.check_keys(table, path, self.dialect.priority_keys)
        if "namespace" not in table:
            self.fail(key_path(path, "namespace"), "required key 'namespace' is missing")
        ns_path = key_path(path, "namespace")
        namespaces = self.unique_list(
            table["namespace"], ns_path, "namespaces", self.namespace, non_empty=True
        )
        declared = set(namespaces)
        feature_prios: dict[str, tuple[str, ...]] = {}
        property_prios: dict[str, dict[str, tuple[str, ...]]] = {}
        if "feature" in self.dialect.priority_keys and "feature" in table:
            fpath = key_path(path, "feature")
            for ns, features in self.obj(table["feature"], fpath).items():
                p = key_path(fpath, ns)
                self.known_namespace(
                    self.namespace(ns, p), p, declared, "default-priorities.namespace"
                )
                feature_prios[ns] = self.unique_list(
                    features, p, "feature names", self.feature, non_empty=False
                )
        if "property" in self.dialect.priority_keys and "property" in table:
            ppath = key_path(path, "property")
            for ns, per_feature in self.obj(table["property"], ppath).items():
                p = key_path(ppath, ns)
                self.known_namespace(
                    self.namespace(ns, p), p, declared, "default-priorities.namespace"
                )
                inner: dict[str, tuple[str, ...]] = {}
                for feature, values in self.obj(per_feature, p).items():
                    fp = key_path(p, feature)
                    inner[self.feature(feature, fp)] = self.unique_list(
                        values, fp, "feature values", self.value, non_empty=False
                    )
                property_prios[ns] = inner
        return namespaces, feature_prios, property_prios

    def known_namespace(self, ns: str, path: str, declared: set[str], where: str) -> None:
        if ns not in declared:
            self.fail(path, f"namespace {ns!r} is not listed in {where}")

    # -- variants ------------------------------------------------------------------------------

    def variant_tables(
        self, raw: Any, declared: set[str], kind: Kind, expected_label: str | None
    ) -> dict[str, frozenset[VariantProperty]]:
        path = "variants"
        for label in getattr(raw, "duplicates", ()):
            self.fail(
                key_path(path, label),
                f"variant label {label!r} is given more than once; a label must map to exactly "
                "one property set",
                InvalidLabelError,
            )
        table = self.obj(raw, path)
        legacy = self.dialect.generation is Generation.LEGACY
        out: dict[str, frozenset[VariantProperty]] = {}
        for label, body in table.items():
            lpath = key_path(path, label)
            self.token(
                label, lpath, "variant label", LABEL_RE, "0-9, a-z, . and _", InvalidLabelError
            )
            if legacy and len(label) > _LEGACY_LABEL_MAX:
                self.fail(
                    lpath,
                    f"variant label {label!r} is {len(label)} characters; PEP 817 files allow at "
                    f"most {_LEGACY_LABEL_MAX}",
                    InvalidLabelError,
                )
            props: set[VariantProperty] = set()
            for ns, features in self.obj(body, lpath, "an object of namespaces").items():
                npath = key_path(lpath, ns)
                self.namespace(ns, npath)
                if ns != ABI_NAMESPACE:  # reserved: used with or without being listed
                    self.known_namespace(ns, npath, declared, "default-priorities.namespace")
                for feature, values in self.obj(features, npath, "an object of features").items():
                    fpath = key_path(npath, feature)
                    self.feature(feature, fpath)
                    for value in self.unique_list(
                        values, fpath, "feature values", self.value, non_empty=True
                    ):
                        props.add(VariantProperty(ns, feature, value))
            self.null_rule(label, props, lpath)
            out[label] = frozenset(props)
        if kind == "wheel":
            if len(out) != 1:
                self.fail(
                    path,
                    f"a wheel's variant.json must describe exactly one variant; found {len(out)}",
                )
            (label,) = out
            if expected_label is not None and label != expected_label:
                self.fail(
                    key_path(path, label),
                    f"variant.json describes variant {label!r} but the wheel filename says "
                    f"{expected_label!r}",
                    InvalidLabelError,
                )
        return out

    def null_rule(self, label: str, props: set[VariantProperty], path: str) -> None:
        if label == NULL_LABEL and props:
            self.fail(
                path,
                "the 'null' label is reserved for the null variant, which has no properties",
                InvalidLabelError,
            )
        if label != NULL_LABEL and not props:
            if label == LEGACY_NULL_LABEL and self.legacy_null_allowed():
                return
            self.fail(
                path,
                f"variant {label!r} has no properties: the null variant must use the 'null' label",
                InvalidLabelError,
            )

    def legacy_null_allowed(self) -> bool:
        """The all-zero null label belongs to the unversioned generation (and files that carry no
        ``$schema`` but 817 structure); every later generation requires ``null``."""
        if self.dialect.schema.unversioned:
            return True
        return self.schema_url is None and self.dialect.generation is Generation.LEGACY

    def description(self, label: str, props: frozenset[VariantProperty]) -> VariantDescription:
        if props or label == NULL_LABEL:
            return VariantDescription(label, props)
        # The legacy all-zero null label: keep it if the model accepts it, else use 'null'.
        try:
            return VariantDescription(label, props)
        except VariantFormatError:
            return VariantDescription(NULL_LABEL, props)

    # -- providers -----------------------------------------------------------------------------

    def static_top(
        self, top: Mapping[str, Any], declared: set[str]
    ) -> dict[str, dict[str, tuple[str, ...]]]:
        if "static-properties" not in top:
            return {}
        if self.dialect.generation is Generation.CURRENT:
            # variantlib 0.2 ignores a top-level static-properties; so do we.
            return {}
        path = "static-properties"
        out: dict[str, dict[str, tuple[str, ...]]] = {}
        for ns, per_feature in self.obj(top[path], path).items():
            npath = key_path(path, ns)
            self.namespace(ns, npath)
            self.reserved_namespace(ns, npath)
            self.known_namespace(ns, npath, declared, "default-priorities.namespace")
            inner: dict[str, tuple[str, ...]] = {}
            for feature, values in self.obj(per_feature, npath).items():
                fpath = key_path(npath, feature)
                inner[self.feature(feature, fpath)] = self.unique_list(
                    values, fpath, "feature values", self.value, non_empty=True
                )
            out[ns] = inner
        return out

    def providers(
        self,
        raw: Any,
        namespaces: tuple[str, ...],
        static_top: dict[str, dict[str, tuple[str, ...]]],
        used: dict[str, dict[str, set[str]]],
        feature_prios: dict[str, tuple[str, ...]],
        property_prios: dict[str, dict[str, tuple[str, ...]]],
    ) -> dict[str, Provider]:
        path = "providers"
        table = self.obj(raw, path)
        parsed: dict[str, Provider] = {}
        for ns, body in table.items():
            ppath = key_path(path, ns)
            self.namespace(ns, ppath)
            self.reserved_namespace(ns, ppath)
            parsed[ns] = self.provider(
                ns,
                self.obj(body, ppath),
                ppath,
                static_top,
                used.get(ns, {}),
                feature_prios.get(ns),
                property_prios.get(ns, {}),
            )
        missing = [ns for ns in namespaces if ns not in parsed and ns != ABI_NAMESPACE]
        extra = [ns for ns in parsed if ns not in set(namespaces)]
        if missing or extra:
            parts = []
            if missing:
                parts.append(f"no provider for {', '.join(missing)}")
            if extra:
                parts.append(f"providers {', '.join(extra)} not in the namespace list")
            self.fail(
                path,
                "default-priorities.namespace and the keys of providers must name the same "
                f"namespaces ({'; '.join(parts)})",
            )
        for ns in static_top:
            if not parsed[ns].is_static:
                self.fail(
                    key_path("static-properties", ns),
                    f"static-properties may list only providers with install-time false; "
                    f"{ns!r} is an install-time provider",
                )
        return {ns: parsed[ns] for ns in namespaces if ns in parsed}

    def reserved_namespace(self, ns: str, path: str) -> None:
        """PEP 817 and PEP 850: the installer answers ``abi_dependency`` itself, so no file may
        declare a provider (or static values) for it."""
        if ns == ABI_NAMESPACE:
            self.fail(
                path,
                f"{ABI_NAMESPACE!r} is a reserved namespace that must not be declared here: the "
                "installer matches its values against the dependency's version itself; remove "
                "this entry (list the namespace in default-priorities.namespace only)",
            )

    def provider(
        self,
        ns: str,
        table: dict[str, Any],
        path: str,
        static_top: dict[str, dict[str, tuple[str, ...]]],
        used: dict[str, set[str]],
        feature_prio: tuple[str, ...] | None,
        property_prio: dict[str, tuple[str, ...]],
    ) -> Provider:
        gen = self.dialect.generation
        if "build-requires" in table and gen is not Generation.LEGACY:
            self.fail(
                key_path(path, "build-requires"),
                "build-requires is allowed only in pyproject.toml, never in variant metadata",
            )
        if gen is Generation.LEGACY:
            allowed = _LEGACY_PROVIDER_KEYS
        elif gen is Generation.CURRENT:
            allowed = _CURRENT_PROVIDER_KEYS
        else:
            allowed = _LEGACY_PROVIDER_KEYS | _CURRENT_PROVIDER_KEYS
        self.check_keys(table, path, allowed)
        legacy_keys = sorted(_LEGACY_ONLY & set(table))
        current_keys = sorted(_CURRENT_ONLY & set(table))
        if gen is Generation.PEP825 and legacy_keys and current_keys:
            self.fail(
                path,
                f"a provider cannot mix PEP 817 keys ({', '.join(legacy_keys)}) with PEP 850 "
                f"keys ({', '.join(current_keys)})",
            )
        use_legacy = gen is Generation.LEGACY or (gen is Generation.PEP825 and not current_keys)

        requires: tuple[str, ...] = ()
        if "requires" in table:
            requires = self.unique_list(
                table["requires"],
                key_path(path, "requires"),
                "requirements",
                self.requirement,
                non_empty=not use_legacy,
            )
        plugin_api = None
        if "plugin-api" in table:
            plugin_api = self.string(table["plugin-api"], key_path(path, "plugin-api"))
            if not _PLUGIN_API_RE.fullmatch(plugin_api):
                self.fail(
                    key_path(path, "plugin-api"),
                    f"plugin-api {plugin_api!r} must be an object reference 'module' or "
                    "'module:attribute' (letters, digits, _ and .)",
                )
        optional = False
        if "optional" in table:
            optional = self.boolean(table["optional"], key_path(path, "optional"))

        if use_legacy:
            return self.legacy_provider(
                ns, table, path, requires, plugin_api, optional,
                static_top, used, feature_prio, property_prio,
            )  # fmt: skip
        return self.current_provider(ns, table, path, requires, plugin_api, optional)

    def requirement(self, value: Any, path: str) -> str:
        text = self.string(value, path, "a requirement (a string)")
        if _SIMPLE_REQUIREMENT_RE.fullmatch(text):
            return text
        from packaging.requirements import InvalidRequirement, Requirement

        try:
            Requirement(text)
        except InvalidRequirement as exc:
            first = str(exc).splitlines()[0] if str(exc) else "invalid"
            self.fail(path, f"{text!r} is not a valid dependency specifier (PEP 508): {first}")
        return text

    def environment_marker(self, text: str, path: str) -> None:
        if is_simple_environment_marker(text):
            return
        # Most enable-if markers are plain string comparisons that need no parser; packaging is
        # imported only for the others, keeping it off the start-up path of ``fitwheel select``.
        from packaging.markers import InvalidMarker, Marker

        try:
            Marker(text)
        except InvalidMarker as exc:
            first = str(exc).splitlines()[0] if str(exc) else "invalid"
            self.fail(path, f"{text!r} is not a valid environment marker: {first}")

    def current_provider(
        self,
        ns: str,
        table: dict[str, Any],
        path: str,
        requires: tuple[str, ...],
        plugin_api: str | None,
        optional: bool,
    ) -> Provider:
        static: dict[str, tuple[str, ...]] | None = None
        if "static-properties" in table:
            spath = key_path(path, "static-properties")
            raw = self.obj(table["static-properties"], spath)
            if not raw:
                self.fail(spath, "static-properties must list at least one feature")
            static = {}
            for feature, values in raw.items():
                fpath = key_path(spath, feature)
                static[self.feature(feature, fpath)] = self.unique_list(
                    values, fpath, "feature values", self.value, non_empty=True
                )
        order: tuple[str, ...] | None = None
        if "feature-order" in table:
            opath = key_path(path, "feature-order")
            order = self.unique_list(
                table["feature-order"], opath, "feature names", self.feature, non_empty=True
            )
        builtin = None
        if "builtin" in table:
            builtin = self.string(table["builtin"], key_path(path, "builtin"))
        kinds = [
            name
            for name, present in (
                ("requires", bool(requires)),
                ("static-properties", static is not None),
                ("builtin", builtin is not None),
            )
            if present
        ]
        if len(kinds) != 1:
            found = f"found {', '.join(kinds)}" if kinds else "found none"
            self.fail(
                path,
                "a provider must have exactly one of requires, static-properties or builtin "
                f"({found})",
            )
        if plugin_api is not None and not requires:
            self.fail(key_path(path, "plugin-api"), "plugin-api is valid only with requires")
        if order is not None and static is None:
            self.fail(
                key_path(path, "feature-order"),
                "feature-order is valid only with static-properties",
            )
        if (
            static is not None
            and (len(static) > 1 or order is not None)
            and (order is None or set(order) != set(static))
        ):
            given = ", ".join(order) if order else "nothing"
            self.fail(
                key_path(path, "feature-order"),
                "feature-order must list exactly the features of static-properties "
                f"({', '.join(sorted(static))}); given: {given}",
            )
        return Provider(
            ns,
            requires=requires,
            plugin_api=plugin_api,
            static_properties=None if static is None else MappingProxyType(static),
            feature_order=order,
            optional=optional,
            builtin=builtin,
        )

    def legacy_provider(
        self,
        ns: str,
        table: dict[str, Any],
        path: str,
        requires: tuple[str, ...],
        plugin_api: str | None,
        optional: bool,
        static_top: dict[str, dict[str, tuple[str, ...]]],
        used: dict[str, set[str]],
        feature_prio: tuple[str, ...] | None,
        property_prio: dict[str, tuple[str, ...]],
    ) -> Provider:
        enable_if = None
        if "enable-if" in table:
            epath = key_path(path, "enable-if")
            enable_if = self.string(table["enable-if"], epath, "an environment marker (a string)")
            self.environment_marker(enable_if, epath)
        install_time = True
        if "install-time" in table:
            install_time = self.boolean(table["install-time"], key_path(path, "install-time"))
        plugin_use = None
        if "plugin-use" in table:
            upath = key_path(path, "plugin-use")
            plugin_use = self.string(table["plugin-use"], upath)
            if plugin_use not in ("none", "build", "all"):
                self.fail(upath, f"plugin-use must be 'none', 'build' or 'all', not {plugin_use!r}")
        if "install-time" in table and plugin_use is not None:
            self.fail(
                path, "a provider cannot have both plugin-use (v0.0.2) and install-time (v0.0.3)"
            )

        static = not install_time or plugin_use in ("none", "build")
        if not static:
            if not requires:
                self.fail(
                    key_path(path, "requires"),
                    "an install-time provider needs a non-empty requires list",
                )
            return Provider(
                ns, requires=requires, plugin_api=plugin_api, optional=optional, enable_if=enable_if
            )

        if ns in static_top:
            values = dict(static_top[ns])
        elif "install-time" in table:
            self.fail(
                key_path("static-properties", ns),
                f"provider {ns!r} has install-time false, so static-properties must list its "
                "values",
            )
        else:
            values = {}
            for feature in list(property_prio) + sorted(set(used) - set(property_prio)):
                ordered = list(property_prio.get(feature, ()))
                ordered += sorted(used.get(feature, set()) - set(ordered))
                if ordered:
                    values[feature] = tuple(ordered)
        for feature, prio in property_prio.items():
            if feature in values:
                current = values[feature]
                values[feature] = tuple(v for v in prio if v in current) + tuple(
                    v for v in current if v not in prio
                )
        if "install-time" in table and len(values) >= 2:
            missing = sorted(set(values) - set(feature_prio or ()))
            if missing:
                self.fail(
                    key_path("default-priorities.feature", ns),
                    f"static provider {ns!r} has several features, so "
                    "default-priorities.feature must order all of them; missing: "
                    + ", ".join(missing),
                )
        order: tuple[str, ...] | None = None
        if len(values) >= 2:
            leading = [f for f in (feature_prio or ()) if f in values]
            order = tuple(leading + [f for f in values if f not in leading])
        return Provider(
            ns,
            static_properties=MappingProxyType(values),
            feature_order=order,
            optional=optional,
            enable_if=enable_if,
        )
