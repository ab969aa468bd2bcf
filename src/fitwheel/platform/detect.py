"""Run every built-in provider for a target and turn the answers into a profile.

Each provider runs in its own daemon thread under one time bound (``FITWHEEL_DETECT_TIMEOUT``
seconds, default 3): a provider that raises, answers garbage or does not answer in time makes its
namespace ``unknown`` with the reason, and detection goes on. On this machine the answers are
cached per boot (:mod:`fitwheel.platform.cache`); overrides (:mod:`fitwheel.platform.overrides`)
apply last, so changing one never needs the cache cleared.

Providers are found through :data:`PROVIDER_MODULES`; a module that cannot be imported is
skipped (missing) or reported (broken).
"""

from __future__ import annotations

import importlib
import os
import time
from collections.abc import Callable, Mapping

from fitwheel.platform.cache import summary
from fitwheel.platform.environment import machine, target_environment
from fitwheel.platform.overrides import Overrides, load_overrides
from fitwheel.platform.profile import Device, Profile
from fitwheel.platform.result import ProviderResult
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.names import check_feature, check_value

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from fitwheel.platform.probe import Probe

ProviderFunc = Callable[["Probe"], ProviderResult]

#: namespace -> module with ``detect(probe) -> ProviderResult``; the order is the profile's
#: namespace order.
PROVIDER_MODULES: dict[str, str] = {
    "nvidia": "fitwheel.platform.nvidia",
    "amd": "fitwheel.platform.amd",
    "intel": "fitwheel.platform.intel",
    "x86_64": "fitwheel.platform.x86_64",
    "aarch64": "fitwheel.platform.aarch64",
    "libc": "fitwheel.platform.libc",
}
ENV_TIMEOUT = "FITWHEEL_DETECT_TIMEOUT"
DEFAULT_TIMEOUT_S = 3.0


def _import_failure(module: str, exc: BaseException) -> ProviderFunc:
    message = f"provider {module} cannot be imported: {type(exc).__name__}: {exc}"

    def failed(probe: Probe) -> ProviderResult:
        raise RuntimeError(message)

    return failed


def available_namespaces(modules: Mapping[str, str] = PROVIDER_MODULES) -> list[str]:
    """The namespaces of the built-in providers, without importing them (a cache hit needs
    none). Every one ships with fitwheel, so none is looked up on disk at each run."""
    return list(modules)


def registered_providers(
    modules: Mapping[str, str] = PROVIDER_MODULES,
) -> dict[str, ProviderFunc]:
    """namespace -> detect function of every provider module that exists."""
    out: dict[str, ProviderFunc] = {}
    for ns, module_name in modules.items():
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue
            out[ns] = _import_failure(module_name, exc)
            continue
        except Exception as exc:  # a broken provider must not break detection
            out[ns] = _import_failure(module_name, exc)
            continue
        func = getattr(module, "detect", None)
        if callable(func):
            out[ns] = func
    return out


def _checked(ns: str, result: object) -> ProviderResult:
    """The provider's answer, or an ``unknown`` result saying what is wrong with it."""
    if not isinstance(result, ProviderResult):
        return unknown(ns, f"provider returned {type(result).__name__}, not a ProviderResult")
    if result.namespace != ns:
        return unknown(ns, f"provider answered for namespace {result.namespace!r}")
    if result.status not in ("ok", "absent", "unknown"):
        return unknown(ns, f"provider returned status {result.status!r}")
    try:
        for feature, values in result.properties.items():
            check_feature(feature)
            if not isinstance(values, tuple):
                raise VariantFormatError(f"values of {feature!r} are not a tuple")
            for value in values:
                check_value(value)
        for dev in result.devices:
            if not isinstance(dev, Device):
                raise VariantFormatError("a device is not a Device")
            for feats in dev.properties.values():
                for feature, values in feats.items():
                    check_feature(feature)
                    for value in values:
                        check_value(value)
    except (VariantFormatError, TypeError, AttributeError) as exc:
        return unknown(ns, f"provider returned malformed properties: {exc}")
    # An absent or unknown namespace supports nothing, whatever properties came with it; its
    # devices stay listed (a GPU without a usable driver is still worth showing).
    return result


def unknown(ns: str, reason: str) -> ProviderResult:
    return ProviderResult(ns, "unknown", reason=reason)


def run_providers(
    funcs: Mapping[str, ProviderFunc], probe: Probe, timeout: float
) -> dict[str, ProviderResult]:
    """Run providers concurrently; each has until ``timeout`` seconds after the start."""
    import threading

    answers: dict[str, ProviderResult] = {}

    def call(ns: str, func: ProviderFunc) -> None:
        try:
            answers[ns] = _checked(ns, func(probe))
        except Exception as exc:
            answers[ns] = unknown(ns, f"provider failed: {type(exc).__name__}: {exc}")

    from fitwheel.platform.pci import shared_scan

    threads = []
    with shared_scan(probe):
        for ns, func in funcs.items():
            thread = threading.Thread(
                target=call, args=(ns, func), name=f"detect-{ns}", daemon=True
            )
            thread.start()
            threads.append((ns, thread))
        deadline = time.monotonic() + timeout
        for _, thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))
    out: dict[str, ProviderResult] = {}
    for ns, _ in threads:
        result = answers.get(ns)
        out[ns] = result if result is not None else unknown(ns, f"no answer within {timeout:g} s")
    return out


def _timeout(env: Mapping[str, str]) -> float:
    raw = env.get(ENV_TIMEOUT, "")
    try:
        value = float(raw) if raw else DEFAULT_TIMEOUT_S
    except ValueError:
        return DEFAULT_TIMEOUT_S
    return value if value > 0 else DEFAULT_TIMEOUT_S


class Detection:
    """What detection found: one result per namespace (in provider order), the target's marker
    values and how the cache was used (``hit``, ``miss`` or ``off``)."""

    __slots__ = ("cache", "elapsed_s", "environment", "results")

    def __init__(
        self,
        results: dict[str, ProviderResult],
        environment: dict[str, str] | None = None,
        cache: str = "off",
        elapsed_s: float = 0.0,
    ) -> None:
        self.results = results
        self.environment = dict(environment or {})
        self.cache = cache
        self.elapsed_s = elapsed_s

    def __repr__(self) -> str:
        return f"Detection(results={self.results!r}, cache={self.cache!r})"

    def profile(self) -> Profile:
        properties = {
            ns: dict(r.properties)
            for ns, r in self.results.items()
            if r.status == "ok" and r.properties
        }
        devices = tuple(d for r in self.results.values() for d in r.devices)
        return Profile(properties, devices, dict(self.environment), self.sources())

    def sources(self) -> dict[str, str]:
        """namespace -> where its answer came from (only namespaces with something to say)."""
        out: dict[str, str] = {}
        for ns, r in self.results.items():
            summary_ = summary(r.status, r.sources, r.reason)
            if summary_ is not None:
                out[ns] = summary_
        return out

    def capabilities(self) -> dict[str, dict[str, Any]]:
        return {ns: dict(r.capabilities) for ns, r in self.results.items() if r.capabilities}


def detect(
    probe: Probe,
    *,
    use_cache: bool = True,
    providers: Mapping[str, ProviderFunc] | None = None,
    overrides: Overrides | None = None,
    timeout: float | None = None,
    cache_dir: os.PathLike[str] | str | None = None,
) -> Detection:
    """Detect what ``probe``'s machine supports. Never raises for a provider's sake.

    ``providers`` replaces the registry (namespace -> function); ``overrides`` replaces the ones
    read from the environment and config file; ``cache_dir`` the cache directory."""
    start = time.perf_counter()
    env = os.environ
    # Provider modules are imported only when something has to run: a cache hit needs none.
    loaded: dict[str, ProviderFunc] | None = None if providers is None else dict(providers)
    namespaces = available_namespaces() if loaded is None else list(loaded)

    def funcs_for(names: list[str]) -> dict[str, ProviderFunc]:
        nonlocal loaded
        if loaded is None:
            loaded = registered_providers()
        return {ns: loaded[ns] for ns in names if ns in loaded}

    if overrides is None:
        overrides = load_overrides(env, known=[*PROVIDER_MODULES, *namespaces])
    bound = _timeout(env) if timeout is None else timeout

    results: dict[str, ProviderResult] = {}
    to_run: list[str] = []
    for ns in namespaces:
        why = overrides.skip_reason(ns)
        if why:
            results[ns] = ProviderResult(
                ns, "absent", sources={"*": f"override:{why}"}, reason=f"not detected: {why}"
            )
        else:
            to_run.append(ns)

    cache_state = "off"
    if use_cache and probe.is_host and to_run:
        from fitwheel.platform.cache import DetectionCache, cache_key, default_dir

        key = cache_key(probe, namespaces)
        if key is not None:
            store = DetectionCache(cache_dir if cache_dir else default_dir(env))
            cached = store.load(key) or {}
            missing = [ns for ns in to_run if ns not in cached]
            fresh = run_providers(funcs_for(missing), probe, bound) if missing else {}
            cache_state = "miss" if missing else "hit"
            if missing:
                store.store(key, {**cached, **fresh})
            results.update({ns: r for ns in to_run if (r := cached.get(ns) or fresh.get(ns))})
            to_run = []
    if to_run:
        results.update(run_providers(funcs_for(to_run), probe, bound))

    ordered = {ns: results[ns] for ns in namespaces if ns in results}
    final = overrides.apply(ordered) if overrides else ordered
    arch = None if probe.is_host else machine(probe)
    environment = target_environment(probe, arch)
    return Detection(final, environment, cache_state, time.perf_counter() - start)


def detect_profile(probe: Probe, **kwargs: Any) -> Profile:
    return detect(probe, **kwargs).profile()
