"""Reading every published generation of variant metadata into the model."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement

from fitwheel.variants.errors import InvalidLabelError, InvalidPropertyError, VariantFormatError
from fitwheel.variants.jsoncheck import MAX_DEPTH, MAX_SIZE
from fitwheel.variants.model import NULL_LABEL, VariantProperty
from fitwheel.variants.reading import loads_variant_info, read_variant_info

SOURCE = "demo-1.0-variants.json"
WHEELNEXT = "https://variants-schema.wheelnext.dev"


def props(ns: str, **features: list[str]) -> frozenset[VariantProperty]:
    return frozenset(VariantProperty(ns, f, v) for f, values in features.items() for v in values)


def load(doc: dict[str, Any], **kwargs: Any) -> Any:
    return loads_variant_info(json.dumps(doc), SOURCE, **kwargs)


def load_error(doc: dict[str, Any] | str | bytes, **kwargs: Any) -> VariantFormatError:
    text = doc if isinstance(doc, (str, bytes)) else json.dumps(doc)
    with pytest.raises(VariantFormatError) as info:
        loads_variant_info(text, SOURCE, **kwargs)
    return info.value


# -- the published files ---------------------------------------------------------------------

SM_126 = ["50_real", "60_real", "70_real", "75_real", "80_real", "86_real", "90_real"]
GFX_63 = [
    "gfx1030",
    "gfx1100",
    "gfx1101",
    "gfx1102",
    "gfx1200",
    "gfx1201",
    "gfx900",
    "gfx906",
    "gfx908",
    "gfx90a",
    "gfx942",
]


@pytest.mark.parametrize("name", ["torch-2.8.0-variants.json", "torchvision-0.23.0-variants.json"])
def test_torch_28_unversioned_generation(
    name: str, published_bytes: Callable[[str], bytes]
) -> None:
    info = loads_variant_info(published_bytes(name), name)

    assert info.schema == "https://variants-schema.wheelnext.dev/"
    assert info.namespace_priorities == ("nvidia",)
    assert list(info.variants) == ["00000000", "cu126", "cu128", "cu129"]
    # That generation's null variant: no properties, kept under the label its wheels carry.
    assert info.variants["00000000"].is_null
    assert info.variants["00000000"].label in ("00000000", NULL_LABEL)
    assert info.variants["cu126"].properties == props(
        "nvidia", cuda_version_lower_bound=["12.0"], sm_arch=SM_126
    )
    assert info.variants["cu129"].properties == props(
        "nvidia",
        cuda_version_lower_bound=["12.9"],
        sm_arch=[
            "100_real",
            "120_real",
            "120_virtual",
            "70_real",
            "75_real",
            "80_real",
            "86_real",
            "90_real",
        ],
    )
    nvidia = info.providers["nvidia"]
    assert nvidia.requires == ("nvidia-variant-provider>=0.0.1,<1.0.0",)
    assert nvidia.plugin_api == "nvidia_variant_provider.plugin:NvidiaVariantPlugin"
    assert nvidia.enable_if == "platform_system == 'Linux' or platform_system == 'Windows'"
    assert not nvidia.is_static
    assert not nvidia.optional


@pytest.mark.parametrize("name", ["torch-2.9.0-variants.json", "torchvision-0.24.0-variants.json"])
def test_torch_29_v002(name: str, published_bytes: Callable[[str], bytes]) -> None:
    info = loads_variant_info(published_bytes(name), name)

    assert info.schema == f"{WHEELNEXT}/v0.0.2.json"
    assert info.namespace_priorities == ("nvidia", "intel", "amd", "priority")
    assert list(info.variants) == [
        "null",
        "cuda12.6",
        "cuda12.8",
        "cuda13.0",
        "xpu",
        "rocm6.3",
        "rocm6.4",
    ]
    assert info.variants["null"].is_null
    assert info.variants["cuda12.6"].properties == props(
        "nvidia", cuda_version_lower_bound=["12.0"], sm_arch=SM_126
    ) | props("priority", order=["3"])
    assert info.variants["cuda13.0"].properties == props(
        "nvidia",
        cuda_version_lower_bound=["13.0"],
        sm_arch=["75_real", "80_real", "86_real", "90_real", "100_real", "120_real", "120_virtual"],
    ) | props("priority", order=["1"])
    assert info.variants["xpu"].properties == props(
        "intel", device_ip=["12.55.8", "12.60.7", "12.71.4", "12.74.4", "20.1.0", "20.4.4"]
    )
    assert info.variants["rocm6.3"].properties == props(
        "amd", gfx_arch=GFX_63, rocm_version=["6.3"]
    )

    # `plugin-use: none` with no requirements: a static provider whose values come from the
    # property priorities (and the variants).
    priority = info.providers["priority"]
    assert priority.is_static
    assert priority.static_properties == {"order": ("1", "2", "3")}
    assert priority.requires == ()
    assert priority.feature_order is None
    assert info.static_namespaces() == ("priority",)
    assert info.property_priorities == {"priority": {"order": ("1", "2", "3")}}
    assert info.feature_priorities == {}
    assert info.providers["amd"].enable_if == "platform_system == 'Linux'"
    assert info.providers["intel"].requires == ("intel-variant-provider>=0.0.2,<1.0.0",)


@pytest.mark.parametrize("name", ["torch-2.10.0-variants.json", "torchvision-0.25.0-variants.json"])
def test_torch_210_v003(name: str, published_bytes: Callable[[str], bytes]) -> None:
    info = loads_variant_info(published_bytes(name), name)

    assert info.schema == f"{WHEELNEXT}/v0.0.3.json"
    assert list(info.variants) == [
        "null",
        "cuda12.6",
        "cuda12.8",
        "cuda13.0",
        "xpu",
        "rocm7.0",
        "rocm7.1",
    ]
    assert info.variants["cuda12.8"].properties == props(
        "nvidia",
        cuda_version_lower_bound=["12.0"],
        sm_arch=["70_real", "75_real", "80_real", "86_real", "90_real", "100_real", "120_real"],
    ) | props("priority", order=["2"])
    assert len(info.variants["xpu"].properties) == 8
    assert props("intel", device_ip=["30.0.4", "30.1.0"]) <= info.variants["xpu"].properties
    assert props("amd", rocm_version=["7.1"], gfx_arch=["gfx950", "gfx1151"]) <= (
        info.variants["rocm7.1"].properties
    )
    # `install-time: false` plus a top-level static-properties entry.
    assert info.providers["priority"].static_properties == {"order": ("1", "2", "3")}
    assert info.static_namespaces() == ("priority",)
    assert info.property_priorities == {}
    assert [p.namespace for p in info.providers.values() if p.enable_if] == [
        "nvidia",
        "intel",
        "amd",
    ]


def test_str_and_bytes_read_alike(published_bytes: Callable[[str], bytes]) -> None:
    raw = published_bytes("torch-2.9.0-variants.json")
    assert loads_variant_info(raw, "a") == loads_variant_info(raw.decode(), "a")
    assert read_variant_info(json.loads(raw), "a") == loads_variant_info(raw, "a")


# -- hand-written files of each generation ---------------------------------------------------


def test_v002_plugin_use_build_and_priorities() -> None:
    info = load(
        {
            "$schema": f"{WHEELNEXT}/v0.0.2.json",
            "default-priorities": {
                "namespace": ["gpu", "blas"],
                "feature": {"blas": ["vendor", "ilp"]},
                "property": {"blas": {"vendor": ["openblas", "mkl"]}, "gpu": {"arch": ["b", "a"]}},
            },
            "providers": {
                "gpu": {"requires": ["gpu-provider>=1"], "plugin-use": "all", "optional": True},
                "blas": {"requires": ["blas-aot>=1"], "plugin-use": "build"},
            },
            "variants": {
                "mkl": {"blas": {"vendor": ["mkl"], "ilp": ["64"]}},
                "ob": {"blas": {"vendor": ["openblas"], "ilp": ["32"]}},
                "g": {"gpu": {"arch": ["a"]}},
                "null": {},
            },
        }
    )
    blas = info.providers["blas"]
    # An ahead-of-time provider: static at install time; its build-time plugin is not kept.
    assert blas.requires == ()
    assert blas.static_properties == {"vendor": ("openblas", "mkl"), "ilp": ("32", "64")}
    assert blas.feature_order == ("vendor", "ilp")
    gpu = info.providers["gpu"]
    assert gpu.requires == ("gpu-provider>=1",) and gpu.optional and not gpu.is_static
    assert info.feature_priorities == {"blas": ("vendor", "ilp")}
    assert info.property_priorities == {
        "blas": {"vendor": ("openblas", "mkl")},
        "gpu": {"arch": ("b", "a")},
    }


def test_v003_static_properties_are_ordered_by_priorities() -> None:
    info = load(
        {
            "$schema": f"{WHEELNEXT}/v0.0.3.json",
            "default-priorities": {
                "namespace": ["cpu", "blas"],
                "feature": {"blas": ["ilp", "vendor"]},
                "property": {"blas": {"vendor": ["openblas"]}},
            },
            "providers": {
                "cpu": {"requires": ["cpu-provider"], "enable-if": "platform_machine == 'x86_64'"},
                "blas": {"install-time": False, "optional": True},
            },
            "static-properties": {"blas": {"vendor": ["mkl", "openblas", "blis"], "ilp": ["64"]}},
            "variants": {"ob": {"blas": {"vendor": ["openblas"]}}},
            "x-unknown-top-level": {"ignored": True},
        }
    )
    blas = info.providers["blas"]
    assert blas.static_properties == {"vendor": ("openblas", "mkl", "blis"), "ilp": ("64",)}
    assert blas.feature_order == ("ilp", "vendor")
    assert blas.optional
    assert info.providers["cpu"].enable_if == "platform_machine == 'x86_64'"


def test_v003_rules() -> None:
    base: dict[str, Any] = {
        "$schema": f"{WHEELNEXT}/v0.0.3.json",
        "default-priorities": {"namespace": ["blas"]},
        "providers": {"blas": {"install-time": False}},
        "static-properties": {"blas": {"vendor": ["mkl"], "ilp": ["64"]}},
        "variants": {},
    }
    err = load_error(base)
    assert err.path == "default-priorities.feature.blas"
    assert "must order all of them" in err.rule

    missing = dict(base, **{"static-properties": {}})
    err = load_error(missing)
    assert err.path == "static-properties.blas"

    install_time = dict(base, providers={"blas": {"requires": []}})
    err = load_error(install_time)
    assert err.path == "providers.blas.requires"
    assert "non-empty requires" in err.rule

    long_label = dict(
        base,
        **{"static-properties": {"blas": {"vendor": ["mkl"]}}},
        variants={"a" * 17: {"blas": {"vendor": ["mkl"]}}},
    )
    err = load_error(long_label)
    assert isinstance(err, InvalidLabelError)
    assert "at most 16" in err.rule


def test_817_ignores_unknown_keys() -> None:
    info = load(
        {
            "$schema": f"{WHEELNEXT}/v0.0.3.json",
            "default-priorities": {"namespace": ["a"], "future": 1},
            "providers": {"a": {"requires": ["a-provider"], "new-key": [1, 2]}},
            "variants": {"x": {"a": {"f": ["v"]}}},
        }
    )
    assert info.variants["x"].properties == props("a", f=["v"])


def test_variantlib_020_file_written_by_variantlib() -> None:
    from variantlib.variants_json import VariantsJson

    doc = {
        "default-priorities": {"namespace": ["demo_cpu", "blas", "demo_gpu", "hw"]},
        "providers": {
            "demo_cpu": {"requires": ["demo-variant-provider >=0.1.1"], "plugin-api": "m:Cpu"},
            "blas": {
                "static-properties": {"provider": ["openblas", "mkl"], "abi": ["a1"]},
                "feature-order": ["provider", "abi"],
            },
            "demo_gpu": {"requires": ["demo-variant-provider"], "optional": True},
            "hw": {"builtin": "hw"},
        },
        "variants": {
            "null": {},
            "41f146e5": {"blas": {"provider": ["mkl"]}},
            "gpu": {"demo_gpu": {"arch": ["b", "a"]}, "demo_cpu": {"level": ["v2"]}},
        },
    }
    text = VariantsJson(doc).to_str()
    assert json.loads(text)["$schema"] == f"{WHEELNEXT}/v0.2.0.json"

    info = loads_variant_info(text, SOURCE)
    assert info.namespace_priorities == ("demo_cpu", "blas", "demo_gpu", "hw")
    blas = info.providers["blas"]
    assert blas.static_properties == {"provider": ("openblas", "mkl"), "abi": ("a1",)}
    assert blas.feature_order == ("provider", "abi")
    assert info.providers["demo_cpu"].plugin_api == "m:Cpu"
    assert info.providers["demo_gpu"].optional
    assert info.providers["hw"].builtin == "hw"
    assert info.variants["gpu"].properties == props("demo_gpu", arch=["a", "b"]) | props(
        "demo_cpu", level=["v2"]
    )
    assert set(info.variants) == {"null", "41f146e5", "gpu"}


def test_pep825_v010_has_priorities_and_no_providers() -> None:
    info = load(
        {
            "$schema": f"{WHEELNEXT}/peps/825/v0.1.0.json",
            "default-priorities": {
                "namespace": ["gpu", "cpu"],
                "feature": {"gpu": ["cuda"]},
                "property": {"cpu": {"level": ["v3", "v2"]}},
            },
            "variants": {"fast": {"gpu": {"cuda": ["13.0", "12.0"]}}, "null": {}},
        }
    )
    assert info.providers == {}
    assert info.variants["fast"].properties == props("gpu", cuda=["12.0", "13.0"])
    assert info.feature_priorities == {"gpu": ("cuda",)}
    assert info.property_priorities == {"cpu": {"level": ("v3", "v2")}}


def test_pep825_v011_is_strict() -> None:
    doc: dict[str, Any] = {
        "$schema": f"{WHEELNEXT}/peps/825/v0.1.1.json",
        "default-priorities": {"namespace": ["gpu", "cpu"]},
        "variants": {"fast": {"gpu": {"cuda": ["12.0"]}}, "null": {}},
    }
    assert set(load(doc).variants) == {"fast", "null"}

    with_feature = dict(doc, **{"default-priorities": {"namespace": ["gpu"], "feature": {}}})
    err = load_error(with_feature)
    assert err.path == "default-priorities.feature"
    assert "unexpected key" in err.rule

    undeclared = dict(doc, variants={"x": {"tpu": {"gen": ["v5"]}}})
    err = load_error(undeclared)
    assert err.path == "variants.x.tpu"
    assert "not listed in default-priorities.namespace" in err.rule

    unknown_top = dict(doc, extra=1)
    assert load_error(unknown_top).path == "extra"


def test_pep850_v020_current_form() -> None:
    info = load(
        {
            "$schema": f"{WHEELNEXT}/peps/850/v0.2.0.json",
            "default-priorities": {"namespace": ["nvidia", "x86_64", "blas"]},
            "providers": {
                "nvidia": {"builtin": "nvidia", "optional": True},
                "x86_64": {"requires": ["x86-64-provider"], "plugin-api": "x86_64_provider"},
                "blas": {"static-properties": {"vendor": ["mkl"]}},
            },
            "variants": {"cu12": {"nvidia": {"cuda_version_lower_bound": ["12.0"]}}},
            "static-properties": {"ignored": {"like": ["variantlib"]}},
        }
    )
    assert info.providers["nvidia"].builtin == "nvidia"
    assert info.providers["nvidia"].optional
    assert info.providers["blas"].static_properties == {"vendor": ("mkl",)}
    assert info.providers["blas"].feature_order is None
    assert info.providers["x86_64"].plugin_api == "x86_64_provider"


def test_newer_minor_is_read_leniently_and_unknown_major_refused() -> None:
    doc: dict[str, Any] = {
        "default-priorities": {"namespace": ["a"], "later": []},
        "providers": {"a": {"requires": ["a-provider"], "added-in-0-3": True}},
        "variants": {"x": {"a": {"f": ["v"]}}},
    }
    err = load_error(dict(doc, **{"$schema": f"{WHEELNEXT}/peps/850/v0.2.0.json"}))
    assert err.path == "default-priorities.later"

    newer = load(dict(doc, **{"$schema": f"{WHEELNEXT}/peps/850/v0.3.0.json"}))
    assert newer.providers["a"].requires == ("a-provider",)

    for url, major in (
        (f"{WHEELNEXT}/peps/850/v1.0.0.json", "major version 1"),
        (f"{WHEELNEXT}/peps/825/v2.1.0.json", "major version 2"),
        (f"{WHEELNEXT}/v1.0.0.json", "major version 1"),
    ):
        err = load_error(dict(doc, **{"$schema": url}))
        assert err.path == "$schema"
        assert major in err.rule and "0.x" in err.rule


def test_structure_decides_without_a_recognised_schema() -> None:
    current = {
        "default-priorities": {"namespace": ["a"]},
        "providers": {"a": {"static-properties": {"f": ["v"]}}},
        "variants": {},
    }
    assert load(current).providers["a"].static_properties == {"f": ("v",)}
    # A versioned URL of another schema family says nothing about this format's versions.
    other = dict(current, **{"$schema": "https://example.invalid/schemas/v7.0.0.json"})
    assert load(other).providers["a"].static_properties == {"f": ("v",)}
    legacy = {
        "$schema": "https://example.invalid/my-schema.json",
        "default-priorities": {"namespace": ["a"]},
        "providers": {"a": {"requires": [], "plugin-use": "none"}},
        "variants": {"x": {"a": {"f": ["v"]}}},
    }
    assert load(legacy).providers["a"].static_properties == {"f": ("v",)}
    pep825 = {"default-priorities": {"namespace": ["a"]}, "variants": {"x": {"a": {"f": ["v"]}}}}
    assert load(pep825).providers == {}


def test_legacy_null_label_only_in_the_unversioned_generation() -> None:
    doc: dict[str, Any] = {
        "default-priorities": {"namespace": ["a"]},
        "providers": {"a": {"requires": ["p"], "enable-if": "os_name == 'posix'"}},
        "variants": {"00000000": {}},
    }
    unversioned = load(dict(doc, **{"$schema": f"{WHEELNEXT}/"}))
    assert unversioned.variants["00000000"].is_null
    err = load_error(dict(doc, **{"$schema": f"{WHEELNEXT}/v0.0.2.json"}))
    assert isinstance(err, InvalidLabelError)
    assert err.path == "variants.00000000"
    assert "must use the 'null' label" in err.rule


def test_legacy_null_label_is_kept_and_reported_as_lossy_on_writing(
    published_bytes: Callable[[str], bytes],
) -> None:
    from fitwheel.variants.writing import LossyConversionError, to_json_dict

    info = loads_variant_info(published_bytes("torch-2.8.0-variants.json"), "t")
    null = info.variants["00000000"]
    assert null.label == "00000000" and null.is_null
    with pytest.raises(LossyConversionError) as lossy:
        to_json_dict(info)
    assert "variants.00000000" in [path for path, _ in lossy.value.items]
    assert to_json_dict(info, allow_lossy=True)["variants"]["null"] == {}


def test_wheel_kind_needs_exactly_one_variant() -> None:
    doc: dict[str, Any] = {
        "$schema": f"{WHEELNEXT}/peps/850/v0.2.0.json",
        "default-priorities": {"namespace": ["a"]},
        "providers": {"a": {"requires": ["p"]}},
        "variants": {"x": {"a": {"f": ["v"]}}},
    }
    assert list(load(doc, kind="wheel", expected_label="x").variants) == ["x"]
    err = load_error(doc, kind="wheel", expected_label="y")
    assert err.path == "variants.x" and "'y'" in err.rule
    two = dict(doc, variants={"x": {"a": {"f": ["v"]}}, "null": {}})
    err = load_error(two, kind="wheel")
    assert err.path == "variants" and "exactly one variant; found 2" in err.rule
    assert "exactly one" in load_error(dict(doc, variants={}), kind="wheel").rule


# -- malformed input -------------------------------------------------------------------------


def _doc(**changes: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "$schema": f"{WHEELNEXT}/peps/850/v0.2.0.json",
        "default-priorities": {"namespace": ["nvidia", "blas"]},
        "providers": {
            "nvidia": {"requires": ["nvidia-provider>=1"]},
            "blas": {"static-properties": {"vendor": ["mkl"]}},
        },
        "variants": {
            "cu126": {"nvidia": {"sm_arch": ["80_real", "90_real"]}},
            "null": {},
        },
    }
    doc.update(changes)
    return doc


def _text(**changes: Any) -> str:
    return json.dumps(_doc(**changes))


def _nested(depth: int) -> str:
    return '{"variants": ' * depth + "{}" + "}" * depth


_DUPLICATE_LABEL = _text().replace(
    '"null": {}', '"null": {}, "cu126": {"nvidia": {"sm_arch": ["70_real"]}}'
)

MALFORMED: list[tuple[str, str | bytes, str, str]] = [
    ("invalid-json", '{"variants": ', "", "invalid JSON"),
    ("trailing-garbage", _text() + " x", "", "invalid JSON"),
    ("nan", _text().replace('"cu126": {', '"cu126": {"x": NaN, ', 1), "", "invalid JSON"),
    ("huge-int", '{"a": ' + "1" * 5000 + "}", "", "invalid JSON"),
    ("not-an-object", "[1, 2]", "", "expected a JSON object at the top level"),
    ("invalid-utf8", b'{"variants": "\xff\xfe"}', "", "not valid UTF-8"),
    ("too-large", b" " * (10 * 1024 * 1024) + b"{}", "", f"limited to {MAX_SIZE} bytes"),
    ("too-deep", _nested(5000), "", f"deeper than {MAX_DEPTH} levels"),
    ("moderately-deep", "[" * 100 + "]" * 100, "", f"deeper than {MAX_DEPTH} levels"),
    (
        "unknown-major",
        _text(**{"$schema": f"{WHEELNEXT}/peps/850/v3.0.0.json"}),
        "$schema",
        "major version 3",
    ),
    ("schema-not-string", _text(**{"$schema": 2}), "$schema", "expected a schema URL"),
    (
        "label-to-two-sets",
        _DUPLICATE_LABEL,
        "variants.cu126",
        "given more than once; a label must map to exactly one property set",
    ),
    (
        "duplicate-provider-key",
        _text().replace('"blas": {"static', '"blas": {"requires": ["p"], "static'),
        "providers.blas",
        "exactly one of requires",
    ),
    (
        "duplicate-key-elsewhere",
        _text().replace('"sm_arch": [', '"sm_arch": ["1"], "sm_arch": ['),
        "variants.cu126.nvidia.sm_arch",
        "appears more than once",
    ),
    (
        "namespace-list-type",
        _text(**{"default-priorities": {"namespace": "nvidia"}}),
        "default-priorities.namespace",
        "expected an array of namespaces, got a string",
    ),
    (
        "namespace-list-empty",
        _text(**{"default-priorities": {"namespace": []}}),
        "default-priorities.namespace",
        "must not be empty",
    ),
    (
        "namespace-listed-twice",
        _text(**{"default-priorities": {"namespace": ["nvidia", "blas", "nvidia"]}}),
        "default-priorities.namespace[2]",
        "listed twice",
    ),
    (
        "upper-case-namespace",
        _text(**{"default-priorities": {"namespace": ["NVIDIA", "blas"]}}),
        "default-priorities.namespace[0]",
        "upper case is not allowed",
    ),
    (
        "upper-case-label",
        _text(variants={"CU126": {"nvidia": {"sm_arch": ["80_real"]}}}),
        "variants.CU126",
        "upper case is not allowed",
    ),
    (
        "upper-case-feature",
        _text(variants={"cu126": {"nvidia": {"SM_arch": ["80_real"]}}}),
        "variants.cu126.nvidia.SM_arch",
        "upper case is not allowed",
    ),
    (
        "upper-case-value",
        _text(variants={"cu126": {"nvidia": {"sm_arch": ["80_real", "90_REAL"]}}}),
        "variants.cu126.nvidia.sm_arch[1]",
        "upper case is not allowed",
    ),
    (
        "value-not-a-string",
        _text(variants={"cu126": {"nvidia": {"sm_arch": ["80_real", 90]}}}),
        "variants.cu126.nvidia.sm_arch[1]",
        "expected feature value (a string), got a number",
    ),
    (
        "values-not-a-list",
        _text(variants={"cu126": {"nvidia": {"sm_arch": "80_real"}}}),
        "variants.cu126.nvidia.sm_arch",
        "expected an array of feature values",
    ),
    (
        "duplicate-value",
        _text(variants={"cu126": {"nvidia": {"sm_arch": ["80_real", "80_real"]}}}),
        "variants.cu126.nvidia.sm_arch[1]",
        "listed twice",
    ),
    (
        "empty-values",
        _text(variants={"cu126": {"nvidia": {"sm_arch": []}}}),
        "variants.cu126.nvidia.sm_arch",
        "must not be empty",
    ),
    (
        "null-with-properties",
        _text(variants={"null": {"nvidia": {"sm_arch": ["80_real"]}}}),
        "variants.null",
        "reserved for the null variant",
    ),
    (
        "empty-properties-not-null",
        _text(variants={"cpu": {}}),
        "variants.cpu",
        "must use the 'null' label",
    ),
    (
        "undeclared-namespace",
        _text(variants={"tpu": {"tpu": {"gen": ["v5"]}}}),
        "variants.tpu.tpu",
        "not listed in default-priorities.namespace",
    ),
    (
        "provider-missing",
        _text(providers={"nvidia": {"requires": ["nvidia-provider"]}}),
        "providers",
        "must name the same namespaces (no provider for blas)",
    ),
    (
        "provider-two-kinds",
        _text(
            providers={
                "nvidia": {"requires": ["p"], "builtin": "nvidia"},
                "blas": {"static-properties": {"vendor": ["mkl"]}},
            }
        ),
        "providers.nvidia",
        "exactly one of requires, static-properties or builtin (found requires, builtin)",
    ),
    (
        "build-requires",
        _text(
            providers={
                "nvidia": {"build-requires": ["p"]},
                "blas": {"static-properties": {"vendor": ["mkl"]}},
            }
        ),
        "providers.nvidia.build-requires",
        "only in pyproject.toml",
    ),
    (
        "enable-if-in-current-form",
        _text(
            providers={
                "nvidia": {"requires": ["p"], "enable-if": "os_name == 'nt'"},
                "blas": {"static-properties": {"vendor": ["mkl"]}},
            }
        ),
        "providers.nvidia.enable-if",
        "unexpected key 'enable-if'",
    ),
    (
        "feature-order-missing",
        _text(
            providers={
                "nvidia": {"requires": ["p"]},
                "blas": {"static-properties": {"vendor": ["mkl"], "ilp": ["64"]}},
            }
        ),
        "providers.blas.feature-order",
        "must list exactly the features",
    ),
    (
        "plugin-api-on-static",
        _text(
            providers={
                "nvidia": {"requires": ["p"]},
                "blas": {"static-properties": {"vendor": ["mkl"]}, "plugin-api": "x"},
            }
        ),
        "providers.blas.plugin-api",
        "valid only with requires",
    ),
    (
        "bad-requirement",
        _text(
            providers={
                "nvidia": {"requires": ["nvidia provider >= 1 !!"]},
                "blas": {"static-properties": {"vendor": ["mkl"]}},
            }
        ),
        "providers.nvidia.requires[0]",
        "not a valid dependency specifier",
    ),
    (
        "optional-not-bool",
        _text(
            providers={
                "nvidia": {"requires": ["p"], "optional": "yes"},
                "blas": {"static-properties": {"vendor": ["mkl"]}},
            }
        ),
        "providers.nvidia.optional",
        "expected true or false, got a string",
    ),
    (
        "bad-enable-if",
        json.dumps(
            {
                "$schema": f"{WHEELNEXT}/v0.0.3.json",
                "default-priorities": {"namespace": ["a"]},
                "providers": {"a": {"requires": ["p"], "enable-if": "os_name =="}},
                "variants": {},
            }
        ),
        "providers.a.enable-if",
        "not a valid environment marker",
    ),
    ("variants-missing", _text().replace('"variants"', '"variant"'), "variants", "required key"),
    (
        "variants-not-object",
        _text(variants=["cu126"]),
        "variants",
        "expected an object, got an array",
    ),
]


@pytest.mark.parametrize(
    ("raw", "path", "rule"),
    [pytest.param(raw, path, rule, id=name) for name, raw, path, rule in MALFORMED],
)
def test_malformed_input_names_file_path_and_rule(raw: str | bytes, path: str, rule: str) -> None:
    err = load_error(raw)
    assert err.source == SOURCE
    assert err.path == path
    assert rule in err.rule
    message = str(err)
    assert message.startswith(SOURCE)
    assert f"at {path}:" in message if path else ": at " not in message
    assert rule in message


def test_grammar_errors_use_the_grammar_error_types() -> None:
    err = load_error(_text(variants={"Cu": {"nvidia": {"sm_arch": ["80_real"]}}}))
    assert isinstance(err, InvalidLabelError)
    err = load_error(_text(variants={"cu": {"nvidia": {"sm-arch": ["80_real"]}}}))
    assert isinstance(err, InvalidPropertyError)


def test_read_variant_info_rejects_non_json_values_cleanly() -> None:
    with pytest.raises(VariantFormatError) as info:
        read_variant_info({"default-priorities": {"namespace": [("a",)]}, "variants": {}}, SOURCE)
    assert info.value.path == "default-priorities.namespace[0]"
    with pytest.raises(VariantFormatError):
        read_variant_info(None, SOURCE)
    with pytest.raises(VariantFormatError):
        loads_variant_info(123, SOURCE)  # type: ignore[arg-type]


def test_byte_order_mark_is_ignored() -> None:
    text = "\ufeff" + _text()
    assert set(loads_variant_info(text.encode(), SOURCE).variants) == {"cu126", "null"}


# --- requires and enable-if: the same verdict as packaging, whichever way it is reached -------

_NAMES = ["p", "nvidia-variant-provider", "a.b_c", "-x", "x-", "Pkg", "p[x]", "p q"]
_OPERATORS = [">=", "<", "<=", ">", "==", "!=", "~=", "===", "=", ""]
_VERSIONS = ["0", "0.0.2", "1.0.0", "1.*", "01", "1.0.dev0", "1.0+local", "", "x"]
_MARKER_NAMES = [
    "platform_system",
    "os_name",
    "sys_platform",
    "platform_machine",
    "python_version",
    "variant_label",
    "extra",
    "platform_systemx",
    "'Linux'",
]
_MARKER_OPERATORS = ["==", "!=", "in", "not in", "not", "<", "~=", "===", "="]
_LITERALS = ["'Linux'", '"Windows"', "''", "'a\\\\b'", "'it\"s'", "'x", "Linux", "os_name"]
_GAPS = st.sampled_from(["", " ", "  ", "\t"])


@st.composite
def _joined(draw: st.DrawFn, parts: list[str], joiners: list[str]) -> str:
    text = draw(_GAPS)
    for i, part in enumerate(parts):
        if i:
            text += draw(st.sampled_from(joiners)) + draw(_GAPS)
        text += part + draw(_GAPS)
    return text


@st.composite
def _requirements(draw: st.DrawFn) -> str:
    specs = [
        draw(st.sampled_from(_OPERATORS)) + draw(_GAPS) + draw(st.sampled_from(_VERSIONS))
        for _ in range(draw(st.integers(0, 3)))
    ]
    text = draw(st.sampled_from(_NAMES)) + draw(_GAPS) + draw(_joined(specs, [",", ", ", ";"]))
    if draw(st.integers(0, 5)) == 0:
        text += draw(st.sampled_from(["; os_name == 'posix'", " @ https://example.invalid/p"]))
    return text


@st.composite
def _markers(draw: st.DrawFn) -> str:
    clauses = []
    for _ in range(draw(st.integers(1, 3))):
        left = draw(st.sampled_from(_MARKER_NAMES))
        gap = draw(_GAPS)
        op = draw(st.sampled_from(_MARKER_OPERATORS))
        right = draw(st.sampled_from(_LITERALS))
        clause = f"{left}{gap}{op}{gap}{right}"
        if draw(st.integers(0, 4)) == 0:
            clause = f"{right}{gap}{op}{gap}{left}"
        clauses.append(clause)
    text = draw(_joined(clauses, ["and", "or", "and ", "or ", " or ", "&&"]))
    if draw(st.integers(0, 6)) == 0:
        text = f"({text})"
    return text


def _provider_doc(provider: dict[str, Any]) -> dict[str, Any]:
    return {
        "$schema": f"{WHEELNEXT}/v0.0.3.json",
        "default-priorities": {"namespace": ["a"]},
        "providers": {"a": provider},
        "variants": {},
    }


def _packaging_accepts(parse: Callable[[str], object], text: str) -> bool:
    try:
        parse(text)
    except (InvalidRequirement, InvalidMarker):
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(_requirements())
def test_requires_are_judged_as_packaging_judges_them(text: str) -> None:
    try:
        read_variant_info(_provider_doc({"requires": [text]}), SOURCE)
    except VariantFormatError as exc:
        assert exc.path == "providers.a.requires[0]"
        assert not _packaging_accepts(Requirement, text), exc
    else:
        assert _packaging_accepts(Requirement, text)


@settings(max_examples=300, deadline=None)
@given(_markers())
def test_enable_if_is_judged_as_packaging_judges_it(text: str) -> None:
    try:
        read_variant_info(_provider_doc({"requires": ["p"], "enable-if": text}), SOURCE)
    except VariantFormatError as exc:
        assert exc.path == "providers.a.enable-if"
        assert not _packaging_accepts(Marker, text), exc
    else:
        assert _packaging_accepts(Marker, text)


@pytest.mark.parametrize(
    ("requirement", "valid"),
    [
        ("nvidia-variant-provider>=0.0.2,<1.0.0", True),
        ("p >= 1 , < 2", True),
        ("p[extra]>=1; python_version >= '3.8'", True),
        ("p @ https://example.invalid/p-1-py3-none-any.whl", True),
        ("p~=1.0", True),
        ("p>=1.*", False),
        ("p~=1", False),
        ("p>=", False),
        ("p,<1", False),
        ("-p", False),
    ],
)
def test_requires_beyond_the_common_form_still_follow_pep_508(
    requirement: str, valid: bool
) -> None:
    doc = _provider_doc({"requires": [requirement]})
    if valid:
        info = read_variant_info(doc, SOURCE)
        assert info.providers["a"].requires == (requirement,)
    else:
        with pytest.raises(VariantFormatError, match="not a valid dependency specifier"):
            read_variant_info(doc, SOURCE)
