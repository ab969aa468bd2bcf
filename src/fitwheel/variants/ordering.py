"""Filter and order the variants of one package version for a target (PEP 825's algorithm).

Public API (stable; other layers call only these):

- :class:`DeviceConstraint`, :class:`Target`, :class:`Ordering`
- :func:`order_variants(info, target) -> Ordering`
- :func:`ranked_properties(info, target, variant)` and :func:`explain_choice(info, target,
  ordering)`: what the order was decided on, for ``--explain`` style output.
- :func:`effective_supported(info, target)`: the supported lists the selection used (static
  providers answered from the file), for evaluating variant markers.
- :func:`unanswered_plugins(info, target)`: the provider plugins the variants would need and the
  target has no answer from (:mod:`fitwheel.variants.plugin_need` words the notice).

Where the supported values come from, per provider kind:

- install-time plugin and ``builtin`` providers: ``target.supported[namespace]``; a plugin
  provider's namespace that ``target.answered`` leaves out has no answer at all (its plugin did
  not run), and the variants that use it are rejected saying which plugin would answer;
- static providers: the file's own ``static_properties`` (the target's values are ignored);
- a provider marked ``optional`` takes part only when ``target.enabled_optional`` enables it, static
  ones included (PEP 817: an optional provider "should not be used unless the user opts in to it,
  effectively rendering the variants using its properties incompatible");
- an 817-era ``enable-if`` marker that is false for ``target.environment`` disables the provider.

Ordering is PEP 825's: per variant, each declared feature contributes the index triple (namespace,
feature, best supported value); the sorted triples compare lexicographically, a variant whose
triples extend another's wins, and equal triples fall back to the label. The null variant sorts
last because it has no triples; it is never added when the file does not list it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache

from fitwheel._values import Frozen
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.model import (
    Provider,
    SupportedProperties,
    VariantDescription,
    VariantInfo,
    VariantProperty,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.variants.plugin_need import PluginNeed

__all__ = [
    "DeviceConstraint",
    "Ordering",
    "Target",
    "effective_supported",
    "explain_choice",
    "order_variants",
    "ranked_properties",
    "unanswered_plugins",
]


_set = object.__setattr__


class DeviceConstraint(Frozen):
    """One device that a GPU variant must run on (the multi-GPU policy ``all``).

    A variant that uses ``namespace`` is compatible only if, for every feature in ``supported``
    that the variant declares, at least one of the variant's values is in the device's list.
    """

    __slots__ = ("device", "namespace", "supported")
    namespace: str
    device: str
    supported: Mapping[str, tuple[str, ...]]

    def __init__(
        self, namespace: str, device: str, supported: Mapping[str, tuple[str, ...]]
    ) -> None:
        _set(self, "namespace", namespace)
        _set(self, "device", device)
        _set(self, "supported", supported)


class Target(Frozen):
    """What a target supports.

    ``supported``: namespace -> feature -> values, most preferred first, as providers answer.
    ``device_constraints``: per-device checks on top of ``supported`` (empty: none).
    ``enabled_optional``: optional providers the user enabled (True: all of them).
    ``environment``: PEP 508 marker values of the target (for 817-era ``enable-if``); None: any.
    ``answered``: the namespaces the target has an answer for (fitwheel's own providers, static
    answers, allowed plugins), whatever it is, sorted (a tuple: the target's ``repr`` is part of
    a remembered install's key, and a set's order changes between runs); a plugin provider's
    namespace outside it has no answer. None: every namespace counts as answered by
    ``supported``.
    ``other_machine``: the target is not the machine fitwheel runs on (a profile, a sysroot),
    where no plugin ever runs.
    """

    __slots__ = (
        "answered",
        "device_constraints",
        "enabled_optional",
        "environment",
        "other_machine",
        "supported",
    )
    supported: SupportedProperties
    device_constraints: tuple[DeviceConstraint, ...]
    enabled_optional: frozenset[str] | bool
    environment: Mapping[str, str] | None
    answered: tuple[str, ...] | None
    other_machine: bool

    def __init__(
        self,
        supported: SupportedProperties,
        device_constraints: tuple[DeviceConstraint, ...] = (),
        enabled_optional: frozenset[str] | bool = False,
        environment: Mapping[str, str] | None = None,
        answered: tuple[str, ...] | None = None,
        other_machine: bool = False,
    ) -> None:
        _set(self, "supported", supported)
        _set(self, "device_constraints", device_constraints)
        _set(self, "enabled_optional", enabled_optional)
        _set(self, "environment", environment)
        _set(self, "answered", answered)
        _set(self, "other_machine", other_machine)


class Ordering(Frozen):
    """``ordered``: the compatible variants best first (null last, only when the file has it).
    ``rejected``: label -> one-line reason, for every incompatible label, in file order."""

    __slots__ = ("ordered", "rejected")
    ordered: tuple[VariantDescription, ...]
    rejected: Mapping[str, str]

    def __init__(
        self, ordered: tuple[VariantDescription, ...], rejected: Mapping[str, str] | None = None
    ) -> None:
        _set(self, "ordered", ordered)
        _set(self, "rejected", {} if rejected is None else rejected)

    @property
    def labels(self) -> list[str]:
        return [v.label for v in self.ordered]


# A key that compares greater than every (namespace, feature, value) triple. Appended to each
# variant's sorted triples, it makes the variant that runs out of triples first lose, which is
# the standard's "the variant with more properties is sorted earlier".
_EXHAUSTED: tuple[float] = (math.inf,)
_SHOWN_VALUES = 2

#: (sort key, namespace, feature, best supported value) for one feature of a variant
_Keyed = tuple[tuple[int, int, int], str, str, str]


class _Feature:
    # Plain slotted classes: these are built per call and cost nothing to define at import.
    __slots__ = ("index", "ranks")

    def __init__(self, index: int, ranks: Mapping[str, int]) -> None:
        self.index = index
        #: supported value -> preference index (0 is best)
        self.ranks = ranks


class _Namespace:
    __slots__ = ("features", "index", "static")

    def __init__(self, index: int, features: Mapping[str, _Feature], static: bool) -> None:
        self.index = index
        self.features = features
        #: answered from the file (static provider), so device constraints do not apply
        self.static = static


class _Resolver:
    """Answers for one (info, target) pair, each namespace computed once on first use."""

    __slots__ = ("_answers", "_constraints", "_extra_ns", "info", "target")

    def __init__(self, info: VariantInfo, target: Target) -> None:
        self.info = info
        self.target = target
        self._answers: dict[str, _Namespace | str] = {}
        self._extra_ns: dict[str, int] | None = None
        self._constraints: dict[str, list[tuple[str, Mapping[str, frozenset[str]]]]] | None = None

    def namespace(self, ns: str) -> _Namespace | str:
        """The supported features of ``ns``, or a one-line reason why it has none."""
        answer = self._answers.get(ns)
        if answer is None:
            answer = self._answers[ns] = self._compute(ns)
        return answer

    def _namespace_index(self, ns: str) -> int:
        prios = self.info.namespace_priorities
        try:
            return prios.index(ns)
        except ValueError:
            pass
        # A namespace outside the priority list breaks the format's rules; rank such namespaces
        # after every listed one, by name, rather than fail the whole selection.
        if self._extra_ns is None:
            listed = set(prios)
            used = {p.namespace for d in self.info.variants.values() for p in d.properties} - listed
            self._extra_ns = {name: len(prios) + i for i, name in enumerate(sorted(used))}
        return self._extra_ns.get(ns, len(prios) + len(self._extra_ns))

    def _enabled_optional(self, ns: str) -> bool:
        enabled = self.target.enabled_optional
        if isinstance(enabled, bool):
            return enabled
        return ns in enabled

    def _compute(self, ns: str) -> _Namespace | str:
        provider = self.info.providers.get(ns)
        if provider is None:
            return f"{ns}: the file declares no provider for this namespace"
        if provider.optional and not self._enabled_optional(ns):
            return f"{ns}: provider is optional and not enabled"
        env = self.target.environment
        if provider.enable_if and env is not None and not _enable_if(provider, env):
            return f"{ns}: provider is disabled here by its enable-if ({provider.enable_if})"
        static = provider.static_properties is not None
        supported: Mapping[str, tuple[str, ...]]
        if provider.static_properties is not None:
            supported = provider.static_properties
        else:
            unanswered = self._unanswered(provider)
            if unanswered is not None:
                return unanswered
            supported = self.target.supported.get(ns) or {}

        # dict.fromkeys keeps the first occurrence of each name, in order, at C speed.
        feature_order = dict.fromkeys(
            (
                *self.info.feature_priorities.get(ns, ()),
                *(provider.feature_order or ()),
                *supported,
            )
        )
        feature_index = dict(zip(feature_order, range(len(feature_order)), strict=True))

        value_prios = self.info.property_priorities.get(ns) or {}
        features: dict[str, _Feature] = {}
        for name, values in supported.items():
            if not values:
                continue
            prio = value_prios.get(name)
            if prio:
                # Priorities reorder supported values; they never make a value supported.
                available = set(values)
                ordered = dict.fromkeys((*(v for v in prio if v in available), *values))
            else:
                ordered = dict.fromkeys(values)
            ranks = dict(zip(ordered, range(len(ordered)), strict=True))
            features[name] = _Feature(feature_index[name], ranks)
        return _Namespace(self._namespace_index(ns), features, static)

    def _unanswered(self, provider: Provider) -> str | None:
        """Why ``provider``'s namespace has no answer (its plugin did not run), or None."""
        answered = self.target.answered
        ns = provider.namespace
        if answered is None or ns in answered or ns in self.target.supported:
            return None
        from fitwheel.variants.plugin_need import plugin_need, rejection

        need = plugin_need(provider)
        if need is None:
            return None
        return rejection(need, other_machine=self.target.other_machine)

    def constraints(self, ns: str) -> list[tuple[str, Mapping[str, frozenset[str]]]]:
        if self._constraints is None:
            self._constraints = {}
            for c in self.target.device_constraints:
                self._constraints.setdefault(c.namespace, []).append(
                    (c.device, {f: frozenset(vs) for f, vs in c.supported.items()})
                )
        return self._constraints.get(ns, [])

    def rank(self, variant: VariantDescription) -> list[_Keyed] | str:
        """Per declared feature, its sort key and best supported value, sorted; or why the
        variant is rejected."""
        groups: dict[tuple[str, str], list[str]] = {}
        for prop in variant.properties:
            key = (prop.namespace, prop.feature)
            values = groups.get(key)
            if values is None:
                groups[key] = [prop.value]
            else:
                values.append(prop.value)

        keyed: list[_Keyed] = []
        failure: tuple[tuple[int, str], str] | None = None
        for (ns, feature), values in groups.items():
            answer = self.namespace(ns)
            if isinstance(answer, str):
                failure = _earliest(failure, (self._namespace_index(ns), feature), answer)
                continue
            supported = answer.features.get(feature)
            best = -1
            best_value = ""
            if supported is not None:
                ranks = supported.ranks
                for value in values:
                    r = ranks.get(value)
                    if r is not None and (best < 0 or r < best):
                        best = r
                        best_value = value
            if best < 0:
                failure = _earliest(
                    failure,
                    (answer.index, feature),
                    f"{ns} :: {feature}: {_none_supported(values)}",
                )
                continue
            assert supported is not None
            keyed.append(((answer.index, supported.index, best), ns, feature, best_value))
        if failure is not None:
            return failure[1]

        if self.target.device_constraints:
            reason = self._device_check(groups)
            if reason is not None:
                return reason
        keyed.sort()
        return keyed

    def _device_check(self, groups: Mapping[tuple[str, str], list[str]]) -> str | None:
        for ns in sorted({ns for ns, _ in groups}, key=self._namespace_index):
            answer = self.namespace(ns)
            if isinstance(answer, str) or answer.static:
                continue
            for device, per_feature in self.constraints(ns):
                for feature, allowed in per_feature.items():
                    values = groups.get((ns, feature))
                    if values is not None and allowed.isdisjoint(values):
                        return f"{ns} :: {feature}: no value runs on {device}"
        return None


def _earliest(
    current: tuple[tuple[int, str], str] | None, where: tuple[int, str], reason: str
) -> tuple[tuple[int, str], str]:
    # Report the most significant failing feature, so the reason does not depend on set order.
    if current is None or where < current[0]:
        return (where, reason)
    return current


def _none_supported(values: list[str]) -> str:
    ordered = sorted(values)
    if len(ordered) == 1:
        return f"{ordered[0]} is not supported here"
    if len(ordered) > _SHOWN_VALUES + 1:
        shown = ", ".join(ordered[:_SHOWN_VALUES]) + ", ..."
    else:
        shown = ", ".join(ordered)
    return f"none of {shown} is supported here"


@lru_cache(maxsize=256)
def _marker_true(text: str, env: tuple[tuple[str, str], ...]) -> bool:
    from fitwheel.variants.markers import evaluate_environment_marker

    return evaluate_environment_marker(text, dict(env))


def _enable_if(provider: Provider, env: Mapping[str, str]) -> bool:
    assert provider.enable_if is not None
    try:
        return _marker_true(provider.enable_if, tuple(sorted(env.items())))
    except VariantFormatError as exc:
        raise VariantFormatError(
            f"enable-if: {exc.rule}", path=f"providers.{provider.namespace}.enable-if"
        ) from None


def order_variants(info: VariantInfo, target: Target) -> Ordering:
    """Filter ``info.variants`` to those ``target`` supports and order them best first."""
    resolver = _Resolver(info, target)
    ranked: list[tuple[tuple[object, ...], str, VariantDescription]] = []
    rejected: dict[str, str] = {}
    for label, variant in info.variants.items():
        result = resolver.rank(variant)
        if isinstance(result, str):
            rejected[label] = result
            continue
        ranked.append(((*(item[0] for item in result), _EXHAUSTED), variant.label, variant))
    ranked.sort(key=lambda item: (item[0], item[1]))
    return Ordering(tuple(item[2] for item in ranked), rejected)


def effective_supported(info: VariantInfo, target: Target) -> dict[str, dict[str, tuple[str, ...]]]:
    """What the selection treats as supported, per namespace of ``info``, in preference order:
    static providers' lists from the file, the target's answers for the others; namespaces that
    are disabled (optional, enable-if) are left out. This is the ``supported`` that variant
    markers filter ``variant_properties`` with."""
    resolver = _Resolver(info, target)
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for ns in info.providers:
        answer = resolver.namespace(ns)
        if isinstance(answer, str):
            continue
        out[ns] = {
            name: tuple(sorted(feature.ranks, key=feature.ranks.__getitem__))
            for name, feature in sorted(answer.features.items(), key=lambda kv: kv[1].index)
        }
    return out


def unanswered_plugins(info: VariantInfo, target: Target) -> list[PluginNeed]:
    """The plugins that would answer for namespaces ``info``'s variants use and ``target`` has
    no answer for, in the file's namespace order (optional or disabled providers excluded)."""
    if target.answered is None:
        return []
    from fitwheel.variants.plugin_need import plugin_need

    used = {p.namespace for d in info.variants.values() for p in d.properties}
    resolver = _Resolver(info, target)
    out: list[PluginNeed] = []
    for ns in sorted(used, key=resolver._namespace_index):
        provider = info.providers.get(ns)
        answer = resolver.namespace(ns)
        # only a namespace rejected for want of an answer (not an optional or disabled one)
        if provider is None or not isinstance(answer, str):
            continue
        if answer != resolver._unanswered(provider):
            continue
        need = plugin_need(provider)
        if need is not None:
            out.append(need)
    return out


def ranked_properties(
    info: VariantInfo, target: Target, variant: VariantDescription
) -> tuple[VariantProperty, ...] | None:
    """The property that counts for each feature ``variant`` declares (its best supported value),
    most significant first; None when ``target`` cannot use the variant."""
    result = _Resolver(info, target).rank(variant)
    if isinstance(result, str):
        return None
    return tuple(VariantProperty(ns, feature, value) for _, ns, feature, value in result)


def explain_choice(info: VariantInfo, target: Target, ordering: Ordering) -> str:
    """One line saying why ``ordering.ordered[0]`` comes first: the property that decided against
    the runner-up, or why there was no contest."""
    if not ordering.ordered:
        return "no variant is compatible with this target"
    first = ordering.ordered[0]
    if first.is_null:
        return "no other variant is compatible; null is the fallback"
    if len(ordering.ordered) == 1:
        return "the only compatible variant"
    second = ordering.ordered[1]
    resolver = _Resolver(info, target)
    a = resolver.rank(first)
    b = resolver.rank(second)
    if isinstance(a, str) or isinstance(b, str):
        raise ValueError("the ordering was not made for this info and target")
    if second.is_null:
        return "the only compatible variant besides null"
    for (ka, ns_a, f_a, v_a), (kb, ns_b, f_b, v_b) in zip(a, b, strict=False):
        if ka == kb:
            continue
        if ka[:2] == kb[:2]:
            return f"{ns_a} :: {f_a} :: {v_a} is preferred to {v_b} ({second.label})"
        return f"{ns_a} :: {f_a} :: {v_a} outranks {ns_b} :: {f_b} :: {v_b} ({second.label})"
    if len(a) > len(b):
        _, ns, feature, value = a[len(b)]
        return f"matches everything {second.label} matches, and {ns} :: {feature} :: {value} too"
    return f"same properties as {second.label}; the label decides"
