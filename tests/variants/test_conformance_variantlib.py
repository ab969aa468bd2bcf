"""fitwheel's filter-and-order against variantlib 0.2.2, the reference implementation, as a peer.

variantlib's resolver (``resolver.lib.sort_and_filter_supported_variants``) gets exactly what its
own ``api.get_variants_by_priority`` would give it: the descriptions of the file, the supported
properties (static providers from the file, every other provider's answer from the target, an
optional plugin only when enabled), the namespace list, feature priorities aggregated from
817-era ``default-priorities.feature`` and the static providers' ``feature-order``, and value
priorities, with ``filter_values=True``. Orders must be identical, except where fitwheel follows
the standard on purpose; those differences have tests of their own below, which quote the text.

The real torch and torchvision files are converted to variantlib's form with fitwheel's writer and
parsed by variantlib itself; the target profiles in ``tests/data/profiles`` are realistic machines
(an H100 on a CUDA 13.0 driver, an RTX 5090 on 12.8, an MI300X with ROCm 6.4, an Intel Data Center
GPU Max 1550, and a machine with no GPU), with values in the form the reference providers report.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.markers import Marker
from variantlib.api import get_variants_by_priority
from variantlib.models.variant import VariantDescription as VLDescription
from variantlib.models.variant import VariantProperty as VLProperty
from variantlib.resolver.lib import sort_and_filter_supported_variants
from variantlib.utils import aggregate_feature_priorities, aggregate_property_priorities
from variantlib.variants_json import VariantsJson

from fitwheel.platform.profile import load_profile
from fitwheel.variants.model import NULL_LABEL, VariantInfo
from fitwheel.variants.ordering import Target, order_variants
from fitwheel.variants.reading import loads_variant_info
from fitwheel.variants.writing import dump_variant_info
from tests.variants.strategies import supported_properties, variant_infos

#: the default run stays quick; the slow suite (make fuzz) sets FITWHEEL_FUZZ_EXAMPLES
EXAMPLES = 150
FUZZ_EXAMPLES = int(os.environ.get("FITWHEEL_FUZZ_EXAMPLES", "2000"))
FIXTURES = Path(__file__).resolve().parents[1] / "variants" / "data" / "published"
PROFILES = Path(__file__).resolve().parent.parent / "data" / "profiles"

LINUX = {"platform_system": "Linux", "sys_platform": "linux"}
MACOS = {"platform_system": "Darwin", "sys_platform": "darwin"}


def _enabled(target: Target, ns: str) -> bool:
    flag = target.enabled_optional
    return flag if isinstance(flag, bool) else ns in flag


def variantlib_order(info: VariantInfo, target: Target) -> list[str]:
    """What variantlib 0.2.2's resolver answers for ``info`` on ``target``."""
    vdescs = [
        VLDescription(
            [VLProperty(p.namespace, p.feature, p.value) for p in desc.properties],
            # variantlib knows only 'null' for the null variant (torch 2.8 used 00000000)
            label=NULL_LABEL if desc.is_null else desc.label,
        )
        for desc in info.variants.values()
    ]
    supported: list[VLProperty] = []
    # As variantlib's plugin loader does: static providers first, always, then plugin answers.
    for ns, provider in info.providers.items():
        if provider.static_properties is not None:
            for feature, values in provider.static_properties.items():
                supported += [VLProperty(ns, feature, v) for v in values]
    for ns, provider in info.providers.items():
        if provider.static_properties is not None:
            continue
        if provider.optional and not _enabled(target, ns):
            continue
        # An 817-era enable-if is applied the way an 817 installer would before asking plugins.
        env = target.environment
        if provider.enable_if and env is not None and not Marker(provider.enable_if).evaluate(env):
            continue
        for feature, values in (target.supported.get(ns) or {}).items():
            supported += [VLProperty(ns, feature, v) for v in values]
    result = sort_and_filter_supported_variants(
        vdescs,
        supported,
        namespace_priorities=list(info.namespace_priorities),
        feature_priorities=aggregate_feature_priorities(
            {ns: list(fs) for ns, fs in info.feature_priorities.items()},
            {ns: list(p.feature_order or ()) for ns, p in info.providers.items()},
        ),
        property_priorities=aggregate_property_priorities(
            {
                ns: {f: list(vs) for f, vs in fs.items()}
                for ns, fs in info.property_priorities.items()
            }
        ),
        filter_values=True,
    )
    return _with_file_null(info, [d.label for d in result])


def _with_file_null(info: VariantInfo, labels: list[str]) -> list[str]:
    """variantlib's answer with its null entry named as the file names it, or dropped: variantlib
    always appends a null description of its own, and fitwheel never invents one."""
    null = next((d.label for d in info.variants.values() if d.is_null), None)
    if null is None:
        return [label for label in labels if label != NULL_LABEL]
    return [null if label == NULL_LABEL else label for label in labels]


def _disabled_optional_static(info: VariantInfo, target: Target) -> set[str]:
    return {
        ns
        for ns, p in info.providers.items()
        if p.static_properties is not None and p.optional and not _enabled(target, ns)
    }


@st.composite
def generous_support(draw: st.DrawFn, info: VariantInfo) -> dict[str, dict[str, tuple[str, ...]]]:
    """Most of the values the variants use, in a random order: many variants stay compatible,
    so the order itself gets tested, not only the filter."""
    used: dict[str, dict[str, set[str]]] = {}
    for desc in info.variants.values():
        for p in desc.properties:
            used.setdefault(p.namespace, {}).setdefault(p.feature, set()).add(p.value)
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for ns, features in used.items():
        answer: dict[str, tuple[str, ...]] = {}
        for feature in draw(st.permutations(sorted(features))):
            values = draw(st.permutations(sorted(features[feature])))
            keep = draw(st.integers(1, len(values)))
            answer[feature] = tuple(values[:keep])
        out[ns] = answer
    return out


@st.composite
def cases(draw: st.DrawFn) -> tuple[VariantInfo, Target]:
    legacy = draw(st.booleans())
    from_static = draw(st.integers(0, 3)) > 0
    info = draw(variant_infos(legacy=legacy, values_from_static=from_static, max_variants=8))
    everything = st.just(True)
    some = st.frozensets(st.sampled_from(list(info.namespace_priorities)))
    enabled = draw(st.one_of(everything, st.booleans(), some))
    environment = draw(st.sampled_from([LINUX, MACOS, None])) if legacy else None
    supported = draw(st.one_of(supported_properties(info), generous_support(info)))
    return info, Target(supported, enabled_optional=enabled, environment=environment)


def check_same_order(case: tuple[VariantInfo, Target]) -> None:
    info, target = case
    ours = order_variants(info, target)
    theirs = variantlib_order(info, target)
    # The one deliberate difference (see test_optional_static_provider_differs_from_variantlib):
    # variants that use an optional static provider the user did not enable.
    blocked_ns = _disabled_optional_static(info, target)
    blocked = {label for label, d in info.variants.items() if d.namespaces & blocked_ns}
    assert ours.labels == [label for label in theirs if label not in blocked]
    assert blocked <= set(ours.rejected)


@settings(max_examples=EXAMPLES, deadline=None)
@given(cases())
def test_same_order_as_variantlib(case: tuple[VariantInfo, Target]) -> None:
    check_same_order(case)


@pytest.mark.slow
@settings(max_examples=FUZZ_EXAMPLES, deadline=None)
@given(cases())
def test_same_order_as_variantlib_at_length(case: tuple[VariantInfo, Target]) -> None:
    check_same_order(case)


def test_optional_static_provider_differs_from_variantlib():
    # Deliberate difference. PEP 817, provider information, ``optional``: "If it is ``true``, the
    # provider is considered optional and should not be used unless the user opts in to it,
    # effectively rendering the variants using its properties incompatible." Its debug-build
    # example uses exactly this: "an optional ahead-of-time provider can be used (``install-time
    # = false`` with ``optional = true``) [...] Since the provider is disabled by default, users
    # normally install the non-variant wheel providing the release build."
    # variantlib 0.2.2 never applies ``optional`` to static-properties providers.
    data = {
        "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
        "default-priorities": {"namespace": ["debug"]},
        "providers": {"debug": {"static-properties": {"build": ["on"]}, "optional": True}},
        "variants": {"dbg": {"debug": {"build": ["on"]}}, "null": {}},
    }
    assert [d.label for d in get_variants_by_priority(variants_json=data)] == ["dbg", "null"]

    info = loads_variant_info(json.dumps(data), "debug-1.0-variants.json", kind="index")
    ours = order_variants(info, Target({}))
    assert ours.labels == ["null"]
    assert ours.rejected == {"dbg": "debug: provider is optional and not enabled"}
    enabled = order_variants(info, Target({}, enabled_optional=frozenset({"debug"})))
    assert enabled.labels == ["dbg", "null"]


def test_null_is_not_invented_unlike_variantlib():
    # Deliberate difference. PEP 825's ordering sorts the null variant among the variants a
    # version has; the CLI contract: "the null label only where the file has it". variantlib
    # 0.2.2 appends a null description to every answer, so an installer using it must check that
    # a null wheel exists before picking it.
    data = {
        "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
        "default-priorities": {"namespace": ["blas"]},
        "providers": {"blas": {"static-properties": {"provider": ["openblas", "mkl"]}}},
        "variants": {"mkl": {"blas": {"provider": ["mkl"]}}},
    }
    assert [d.label for d in get_variants_by_priority(variants_json=data)] == ["mkl", "null"]
    info = loads_variant_info(json.dumps(data), "blas-1.0-variants.json", kind="index")
    assert order_variants(info, Target({})).labels == ["mkl"]


def test_builtin_provider_is_answered_by_the_target_unlike_variantlib():
    # Deliberate difference. A ``builtin`` provider names a provider implemented inside the
    # installer, so its answer is the target's, like a plugin's. variantlib 0.2.2 implements no
    # builtin provider and refuses any file whose variants use one.
    data = {
        "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
        "default-priorities": {"namespace": ["x86_64"]},
        "providers": {"x86_64": {"builtin": "x86_64"}},
        "variants": {"v3": {"x86_64": {"level": ["v3"]}}, "v4": {"x86_64": {"level": ["v4"]}}},
    }
    with pytest.raises(RuntimeError, match="Builtin providers are not supported"):
        get_variants_by_priority(variants_json=data)
    info = loads_variant_info(json.dumps(data), "cpu-1.0-variants.json", kind="index")
    target = Target({"x86_64": {"level": ("v3", "v2", "v1")}})
    assert order_variants(info, target).labels == ["v3"]
    # Given the same supported list, variantlib's resolver agrees.
    assert variantlib_order(info, target) == ["v3"]


# --- the published torch and torchvision files on realistic machines ---------------------------

EXPECTED_FIRST = {
    # (file stem, profile) -> the label an installer should pick
    ("torch-2.8.0", "h100"): "cu129",
    ("torch-2.8.0", "rtx5090"): "cu128",
    ("torch-2.8.0", "mi300x"): "null",  # (2.8 labels its null variant 00000000)
    ("torch-2.8.0", "max1550"): "null",
    ("torch-2.8.0", "no-gpu"): "null",
    ("torch-2.9.0", "h100"): "cuda13.0",
    ("torch-2.9.0", "rtx5090"): "cuda12.8",
    ("torch-2.9.0", "mi300x"): "rocm6.4",
    ("torch-2.9.0", "max1550"): "xpu",
    ("torch-2.9.0", "no-gpu"): "null",
    ("torch-2.10.0", "h100"): "cuda13.0",
    ("torch-2.10.0", "rtx5090"): "cuda12.8",
    ("torch-2.10.0", "mi300x"): "null",  # 2.10 ships ROCm 7.0 and 7.1 builds only
    ("torch-2.10.0", "max1550"): "xpu",
    ("torch-2.10.0", "no-gpu"): "null",
}
TORCHVISION = {"torch-2.8.0": "torchvision-0.23.0", "torch-2.9.0": "torchvision-0.24.0"}
TORCHVISION["torch-2.10.0"] = "torchvision-0.25.0"


def _load(stem: str) -> VariantInfo:
    path = FIXTURES / f"{stem}-variants.json"
    return loads_variant_info(path.read_bytes(), str(path), kind="index")


def _target(profile_name: str) -> Target:
    profile = load_profile(PROFILES / f"{profile_name}.json")
    return Target(profile.properties, environment=dict(profile.environment))


def variantlib_order_from_its_own_parse(info: VariantInfo, target: Target) -> list[str]:
    """variantlib reads fitwheel's current-form output and orders with its own provider data."""
    vj = VariantsJson(json.loads(dump_variant_info(info, allow_lossy=True)))
    supported: list[VLProperty] = []
    for ns, provider in vj.providers.items():
        if provider.static_properties:
            for feature, values in provider.static_properties.items():
                supported += [VLProperty(ns, feature, v) for v in values]
        elif not provider.optional or _enabled(target, ns):
            for feature, values in (target.supported.get(ns) or {}).items():
                supported += [VLProperty(ns, feature, v) for v in values]
    result = sort_and_filter_supported_variants(
        list(vj.variants.values()),
        supported,
        namespace_priorities=list(vj.namespace_priorities),
        feature_priorities=aggregate_feature_priorities(
            {ns: p.feature_order for ns, p in vj.providers.items()}
        ),
        property_priorities=None,
        filter_values=True,
    )
    return _with_file_null(info, [d.label for d in result])


@pytest.mark.parametrize(("stem", "profile"), sorted(EXPECTED_FIRST))
def test_published_files_on_real_machines(stem: str, profile: str) -> None:
    target = _target(profile)
    for name in (stem, TORCHVISION[stem]):
        info = _load(name)
        ours = order_variants(info, target)
        expected = EXPECTED_FIRST[(stem, profile)]
        if expected == NULL_LABEL:
            assert ours.ordered[0].is_null, name
        else:
            assert ours.labels[0] == expected, name
        assert ours.ordered[-1].is_null
        assert set(ours.labels) | set(ours.rejected) == {d.label for d in info.variants.values()}
        assert ours.labels == variantlib_order(info, target), name
        assert ours.labels == variantlib_order_from_its_own_parse(info, target), name


def test_h100_keeps_every_cuda_build_in_preference_order():
    info = _load("torch-2.9.0")
    ours = order_variants(info, _target("h100"))
    # cuda12.8 and cuda12.6 tie on the nvidia keys (both need 12.0 and run 90_real); the
    # package's priority namespace puts 12.8 first.
    assert ours.labels == ["cuda13.0", "cuda12.8", "cuda12.6", "null"]
    assert ours.rejected["xpu"] == (
        "intel :: device_ip: none of 12.55.8, 12.60.7, ... is supported here"
    )


def test_rtx5090_rejects_builds_without_blackwell_kernels():
    ours = order_variants(_load("torch-2.9.0"), _target("rtx5090"))
    assert ours.labels == ["cuda12.8", "null"]
    assert ours.rejected["cuda13.0"] == (
        "nvidia :: cuda_version_lower_bound: 13.0 is not supported here"
    )
    assert ours.rejected["cuda12.6"].startswith("nvidia :: sm_arch: none of ")


def test_enable_if_of_published_files_follows_the_target_environment():
    info = _load("torch-2.9.0")
    mi300x = _target("mi300x")
    on_windows = Target(mi300x.supported, environment={**dict(mi300x.environment or {}), **WINDOWS})
    # The amd provider is Linux-only ("enable-if": "platform_system == 'Linux'").
    assert order_variants(info, on_windows).labels == ["null"]
    assert variantlib_order(info, on_windows) == ["null"]


WINDOWS: Mapping[str, str] = {"platform_system": "Windows", "sys_platform": "win32"}
