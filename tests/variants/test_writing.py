"""Writing the current form, checked against variantlib 0.2.2 as a peer and by reading it back."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import subprocess
import sys
import zipfile
from collections.abc import Callable
from pathlib import Path
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fitwheel.variants.errors import InvalidLabelError, VariantFormatError
from fitwheel.variants.model import (
    NULL_LABEL,
    Provider,
    VariantDescription,
    VariantInfo,
    VariantProperty,
)
from fitwheel.variants.reading import loads_variant_info
from fitwheel.variants.writing import (
    CURRENT_SCHEMA_URL,
    PEP825_SCHEMA_URL,
    LossyConversionError,
    dump_variant_info,
    to_json_dict,
    variant_json_for_wheel,
)
from tests.variants.strategies import variant_infos

PUBLISHED = [
    "torch-2.8.0-variants.json",
    "torch-2.9.0-variants.json",
    "torch-2.10.0-variants.json",
    "torchvision-0.23.0-variants.json",
    "torchvision-0.24.0-variants.json",
    "torchvision-0.25.0-variants.json",
]


def prop(text: str) -> VariantProperty:
    return VariantProperty.parse(text)


def info_of(
    providers: dict[str, Provider],
    variants: dict[str, frozenset[VariantProperty]],
    **extra: Any,
) -> VariantInfo:
    return VariantInfo(
        namespace_priorities=tuple(providers),
        providers=MappingProxyType(providers),
        variants=MappingProxyType({k: VariantDescription(k, v) for k, v in variants.items()}),
        **extra,
    )


def without_817_data(info: VariantInfo) -> VariantInfo:
    """What survives a lossy write: no enable-if, no priorities, the null variant as ``null``."""
    providers = {ns: p.replace(enable_if=None) for ns, p in info.providers.items()}
    variants = {
        (NULL_LABEL if d.is_null else k): VariantDescription(
            NULL_LABEL if d.is_null else k, d.properties
        )
        for k, d in info.variants.items()
    }
    return VariantInfo(
        namespace_priorities=info.namespace_priorities,
        providers=providers,
        variants=variants,
        schema=CURRENT_SCHEMA_URL,
    )


def assert_variantlib_agrees(text: str, info: VariantInfo, variantlib_reader: Any) -> None:
    """variantlib 0.2.2 reads ``text`` to the same labels, properties and providers as ``info``."""
    vl = variantlib_reader(text)
    assert vl.namespace_priorities == list(info.namespace_priorities)
    assert set(vl.variants) == set(info.variants)
    for label, desc in info.variants.items():
        got = {(p.namespace, p.feature, p.value) for p in vl.variants[label].properties}
        assert got == {(p.namespace, p.feature, p.value) for p in desc.properties}
        assert vl.variants[label].label == label
    assert set(vl.providers) == set(info.providers)
    for ns, provider in info.providers.items():
        theirs = vl.providers[ns]
        assert theirs.requires == list(provider.requires)
        assert theirs.plugin_api == provider.plugin_api
        assert theirs.optional == provider.optional
        assert theirs.builtin == provider.builtin
        static = provider.static_properties or {}
        assert theirs.static_properties == {f: list(v) for f, v in static.items()}
        assert theirs.feature_order == list(provider.feature_order or ())


# -- current-form output ---------------------------------------------------------------------


def test_output_shape_matches_variantlib_conventions() -> None:
    info = info_of(
        {
            "nvidia": Provider("nvidia", requires=("nvidia-provider>=1",), plugin_api="nv:P"),
            "blas": Provider(
                "blas",
                static_properties={"vendor": ("openblas", "mkl"), "abi": ("a1",)},
                feature_order=("vendor", "abi"),
                optional=True,
            ),
            "hw": Provider("hw", builtin="hw"),
        },
        {
            "cu12": frozenset(
                {prop("nvidia :: sm_arch :: 90_real"), prop("nvidia::sm_arch::100_real")}
            ),
            "null": frozenset(),
        },
    )
    text = dump_variant_info(info)
    assert text.endswith("}\n")
    assert text.startswith('{\n    "$schema": ')
    data = json.loads(text)
    assert list(data) == sorted(data)
    assert data == {
        "$schema": CURRENT_SCHEMA_URL,
        "default-priorities": {"namespace": ["nvidia", "blas", "hw"]},
        "providers": {
            "nvidia": {"requires": ["nvidia-provider>=1"], "plugin-api": "nv:P"},
            "blas": {
                "static-properties": {"vendor": ["openblas", "mkl"], "abi": ["a1"]},
                "feature-order": ["vendor", "abi"],
                "optional": True,
            },
            "hw": {"builtin": "hw"},
        },
        "variants": {"cu12": {"nvidia": {"sm_arch": ["100_real", "90_real"]}}, "null": {}},
    }
    assert text == json.dumps(data, indent=4, sort_keys=True) + "\n"


def test_single_feature_static_provider_has_no_feature_order() -> None:
    info = info_of({"blas": Provider("blas", static_properties={"vendor": ("mkl",)})}, {})
    assert to_json_dict(info)["providers"]["blas"] == {"static-properties": {"vendor": ["mkl"]}}


def test_two_feature_static_provider_always_gets_feature_order() -> None:
    info = info_of(
        {"blas": Provider("blas", static_properties={"vendor": ("mkl",), "abi": ("a",)})}, {}
    )
    assert to_json_dict(info)["providers"]["blas"]["feature-order"] == ["vendor", "abi"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(variant_infos())
def test_generated_metadata_is_read_identically_by_variantlib_and_fitwheel(
    info: VariantInfo,
) -> None:
    from variantlib.variants_json import VariantsJson

    text = dump_variant_info(info)
    vl = VariantsJson(json.loads(text))
    assert_variantlib_agrees(text, info, lambda t: vl)
    # variantlib writes the very same document (bar the schema URL it knows).
    again = json.loads(vl.to_str())
    assert again.pop("$schema") != CURRENT_SCHEMA_URL
    expected = json.loads(text)
    expected.pop("$schema")
    assert again == expected

    back = loads_variant_info(text, "generated-variants.json")
    assert back == info.replace(schema=CURRENT_SCHEMA_URL)


@settings(max_examples=40, deadline=None)
@given(variant_infos(), st.data())
def test_wheel_variant_json_has_one_variant_and_every_provider(
    info: VariantInfo, data: st.DataObject
) -> None:
    from variantlib.variant_dist_info import VariantDistInfo

    if not info.variants:
        with pytest.raises(InvalidLabelError):
            variant_json_for_wheel(info, "absent")
        return
    label = data.draw(st.sampled_from(sorted(info.variants)))
    text = variant_json_for_wheel(info, label)
    theirs = VariantDistInfo(text, expected_label=label)
    assert theirs.variant_label == label
    assert set(theirs.providers) == set(info.providers)
    ours = loads_variant_info(text, "variant.json", kind="wheel", expected_label=label)
    assert ours.variants == {label: info.variants[label]}
    assert ours.providers == info.providers


# -- 817-era data --------------------------------------------------------------------------


@pytest.mark.parametrize("name", PUBLISHED)
def test_published_files_round_trip_through_the_current_form(
    name: str, published_bytes: Callable[[str], bytes], variantlib_reader: Any
) -> None:
    info = loads_variant_info(published_bytes(name), name)
    # Every torch file carries enable-if, which the current form cannot say.
    with pytest.raises(LossyConversionError) as lossy:
        dump_variant_info(info)
    lost_paths = [path for path, _ in lossy.value.items]
    assert "providers.nvidia.enable-if" in lost_paths
    assert "enable-if" in str(lossy.value)

    text = dump_variant_info(info, allow_lossy=True)
    expected = without_817_data(info)
    assert loads_variant_info(text, name) == expected
    assert_variantlib_agrees(text, expected, variantlib_reader)
    # Writing what was read back is a fixed point.
    assert dump_variant_info(loads_variant_info(text, name)) == text


def test_torch_28_null_variant_is_written_as_null(published_bytes: Callable[[str], bytes]) -> None:
    info = loads_variant_info(published_bytes("torch-2.8.0-variants.json"), "t")
    stripped = info.replace(
        providers={ns: p.replace(enable_if=None) for ns, p in info.providers.items()},
    )
    with pytest.raises(LossyConversionError) as lossy:
        to_json_dict(stripped)
    assert lossy.value.path == "variants.00000000"
    assert "legacy null label '00000000'" in lossy.value.rule
    data = to_json_dict(stripped, allow_lossy=True)
    assert set(data["variants"]) == {"null", "cu126", "cu128", "cu129"}
    assert data["variants"]["null"] == {}


def test_property_and_feature_priorities_of_static_providers_are_folded() -> None:
    info = info_of(
        {
            "blas": Provider(
                "blas",
                static_properties={"vendor": ("mkl", "openblas", "blis"), "ilp": ("32", "64")},
                feature_order=("vendor", "ilp"),
            )
        },
        {"ob": frozenset({prop("blas :: vendor :: openblas")})},
        feature_priorities={"blas": ("ilp",)},
        property_priorities={"blas": {"vendor": ("blis", "openblas", "unknown")}},
    )
    provider = to_json_dict(info)["providers"]["blas"]
    assert provider == {
        "static-properties": {"vendor": ["blis", "openblas", "mkl"], "ilp": ["32", "64"]},
        "feature-order": ["ilp", "vendor"],
    }


def test_lossy_items_are_all_listed_and_dropped_only_on_request() -> None:
    info = info_of(
        {
            "gpu": Provider("gpu", requires=("gpu-provider",), enable_if="os_name == 'posix'"),
            "cpu": Provider("cpu", requires=("cpu-provider",)),
        },
        {"g": frozenset({prop("gpu :: arch :: a")})},
        feature_priorities={"gpu": ("arch",)},
        property_priorities={"cpu": {"level": ("v3", "v2")}},
    )
    with pytest.raises(LossyConversionError) as lossy:
        to_json_dict(info)
    assert [p for p, _ in lossy.value.items] == [
        "providers.gpu.enable-if",
        "default-priorities.feature.gpu",
        "default-priorities.property.cpu",
    ]
    assert lossy.value.path == "providers.gpu.enable-if"
    assert "allow_lossy=True" in lossy.value.rule
    data = to_json_dict(info, allow_lossy=True)
    assert data["providers"] == {
        "gpu": {"requires": ["gpu-provider"]},
        "cpu": {"requires": ["cpu-provider"]},
    }
    assert data["default-priorities"] == {"namespace": ["gpu", "cpu"]}


@settings(max_examples=40, deadline=None)
@given(variant_infos(legacy=True))
def test_legacy_metadata_writes_losslessly_or_says_what_it_loses(info: VariantInfo) -> None:
    has_817_only = bool(info.feature_priorities or info.property_priorities) or any(
        p.enable_if for p in info.providers.values()
    )
    if has_817_only:
        with pytest.raises(LossyConversionError):
            dump_variant_info(info)
    text = dump_variant_info(info, allow_lossy=True)
    assert loads_variant_info(text, "x") == without_817_data(info)


def test_provider_less_metadata_is_written_in_the_pep825_form() -> None:
    text = (
        '{"$schema": "https://variants-schema.wheelnext.dev/peps/825/v0.1.1.json",'
        ' "default-priorities": {"namespace": ["gpu", "cpu"]},'
        ' "variants": {"fast": {"gpu": {"cuda": ["13.0", "12.0"]}}, "null": {}}}'
    )
    info = loads_variant_info(text, "x")
    data = to_json_dict(info)
    assert data == {
        "$schema": PEP825_SCHEMA_URL,
        "default-priorities": {"namespace": ["gpu", "cpu"]},
        "variants": {"fast": {"gpu": {"cuda": ["12.0", "13.0"]}}, "null": {}},
    }
    assert loads_variant_info(dump_variant_info(info), "x") == info


@pytest.mark.parametrize(
    ("info", "path", "rule"),
    [
        (
            info_of({"a": Provider("a")}, {}),
            "providers.a",
            "exactly one of a plugin (requires), static (static-properties) or built in",
        ),
        (
            info_of({"a": Provider("a", requires=("p",), builtin="a")}, {}),
            "providers.a",
            "found requires, builtin",
        ),
        (
            info_of({"a": Provider("a", static_properties={})}, {}),
            "providers.a.static-properties",
            "at least one value",
        ),
        (
            info_of(
                {"a": Provider("a", static_properties={"f": ("v",)}, feature_order=("g",))}, {}
            ),
            "providers.a.feature-order",
            "must list each feature",
        ),
        (
            info_of({"a": Provider("a", requires=("p",))}, {"x": frozenset({prop("b::f::v")})}),
            "variants.x.b",
            "does not list",
        ),
        (
            VariantInfo(("a", "b"), {"a": Provider("a", requires=("p",))}, {}),
            "providers",
            "must name the same namespaces",
        ),
        (VariantInfo((), {}, {}), "default-priorities", "at least one namespace"),
        (VariantInfo(("A",), {}, {}), "default-priorities.namespace[0]", "namespace 'A'"),
        (
            VariantInfo(("a",), {"a": Provider("b", requires=("p",))}, {}),
            "providers.a",
            "is for namespace 'b'",
        ),
        (
            info_of({"a": Provider("a", static_properties={"f": ("v", "V")})}, {}),
            "providers.a.static-properties.f[1]",
            "feature value 'V'",
        ),
        (
            info_of({"a": Provider("a", static_properties={"f": ("v", "v")})}, {}),
            "providers.a.static-properties.f",
            "listed twice",
        ),
    ],
)
def test_invalid_models_are_refused(info: VariantInfo, path: str, rule: str) -> None:
    with pytest.raises(VariantFormatError) as err:
        dump_variant_info(info, allow_lossy=True)
    assert not isinstance(err.value, LossyConversionError)
    assert err.value.path == path
    assert rule in err.value.rule


# -- every generation ------------------------------------------------------------------------

WHEELNEXT = "https://variants-schema.wheelnext.dev"
_V = {"g": {"gpu": {"arch": ["b", "a"]}}, "null": {}}
GENERATIONS: list[tuple[str, dict[str, Any]]] = [
    (
        "unversioned",
        {
            "$schema": f"{WHEELNEXT}/",
            "default-priorities": {"namespace": ["gpu"]},
            "providers": {"gpu": {"requires": ["gpu-provider"], "enable-if": "os_name == 'nt'"}},
            "variants": {"g": {"gpu": {"arch": ["a"]}}, "00000000": {}},
        },
    ),
    (
        "v0.0.2",
        {
            "$schema": f"{WHEELNEXT}/v0.0.2.json",
            "default-priorities": {
                "namespace": ["gpu", "prio"],
                "property": {"prio": {"order": ["2", "1"]}},
            },
            "providers": {
                "gpu": {"requires": ["gpu-provider"], "plugin-use": "all"},
                "prio": {"requires": [], "plugin-use": "none"},
            },
            "variants": {**_V, "p": {"prio": {"order": ["1"]}, "gpu": {"arch": ["a"]}}},
        },
    ),
    (
        "v0.0.3",
        {
            "$schema": f"{WHEELNEXT}/v0.0.3.json",
            "default-priorities": {"namespace": ["gpu", "blas"], "feature": {"blas": ["b", "a"]}},
            "providers": {
                "gpu": {"requires": ["gpu-provider"], "optional": True},
                "blas": {"install-time": False},
            },
            "static-properties": {"blas": {"a": ["x", "y"], "b": ["z"]}},
            "variants": {**_V, "s": {"blas": {"a": ["y"]}}},
        },
    ),
    (
        "825-v0.1.1",
        {
            "$schema": f"{WHEELNEXT}/peps/825/v0.1.1.json",
            "default-priorities": {"namespace": ["gpu"]},
            "variants": _V,
        },
    ),
    (
        "variantlib-v0.2.0",
        {
            "$schema": f"{WHEELNEXT}/v0.2.0.json",
            "default-priorities": {"namespace": ["gpu", "hw"]},
            "providers": {
                "gpu": {"requires": ["gpu-provider"], "plugin-api": "gpu_provider:Plugin"},
                "hw": {"builtin": "hw", "optional": True},
            },
            "variants": _V,
        },
    ),
    (
        "850-v0.2.0",
        {
            "$schema": f"{WHEELNEXT}/peps/850/v0.2.0.json",
            "default-priorities": {"namespace": ["gpu", "blas"]},
            "providers": {
                "gpu": {"requires": ["gpu-provider"]},
                "blas": {
                    "static-properties": {"a": ["x"], "b": ["z", "y"]},
                    "feature-order": ["b", "a"],
                },
            },
            "variants": {**_V, "s": {"blas": {"a": ["x"], "b": ["y"]}}},
        },
    ),
]


@pytest.mark.parametrize(("doc"), [pytest.param(doc, id=name) for name, doc in GENERATIONS])
def test_every_generation_round_trips(doc: dict[str, Any], variantlib_reader: Any) -> None:
    info = loads_variant_info(json.dumps(doc), "in")
    text = dump_variant_info(info, allow_lossy=True)
    back = loads_variant_info(text, "out")
    if info.providers:
        assert back == without_817_data(info)
        assert_variantlib_agrees(text, back, variantlib_reader)
    else:
        assert back == info.replace(schema=PEP825_SCHEMA_URL)
    assert dump_variant_info(back) == text


def test_folded_817_orders_survive_the_round_trip() -> None:
    v002 = loads_variant_info(json.dumps(dict(GENERATIONS)["v0.0.2"]), "in")
    text = dump_variant_info(v002, allow_lossy=True)
    assert json.loads(text)["providers"]["prio"] == {"static-properties": {"order": ["2", "1"]}}
    v003 = loads_variant_info(json.dumps(dict(GENERATIONS)["v0.0.3"]), "in")
    assert json.loads(dump_variant_info(v003))["providers"]["blas"] == {
        "static-properties": {"a": ["x", "y"], "b": ["z"]},
        "feature-order": ["b", "a"],
    }


# -- uv as a peer ----------------------------------------------------------------------------


def _wheel(directory: Path, info: VariantInfo, label: str | None) -> None:
    """A minimal installable wheel of ``demo`` 1.0 whose module records its label."""
    suffix = f"-{label}" if label else ""
    files = {
        "demo/__init__.py": f"LABEL = {label!r}\n".encode(),
        "demo-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n",
        "demo-1.0.dist-info/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        ),
    }
    if label:
        files["demo-1.0.dist-info/variant.json"] = variant_json_for_wheel(info, label).encode()
    record = ""
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{name},sha256={digest},{len(data)}\n"
    files["demo-1.0.dist-info/RECORD"] = (record + "demo-1.0.dist-info/RECORD,,\n").encode()
    with zipfile.ZipFile(directory / f"demo-1.0-py3-none-any{suffix}.whl", "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)


@pytest.mark.parametrize(("preferred", "expected"), [("openblas", "ob"), ("mkl", "mkl")])
def test_uv_reads_what_fitwheel_writes(tmp_path: Path, preferred: str, expected: str) -> None:
    uv = Path(sys.executable).with_name("uv")
    if not uv.exists():
        pytest.skip("uv is not installed next to the test interpreter")
    order = ("openblas", "mkl") if preferred == "openblas" else ("mkl", "openblas")
    info = info_of(
        {"blas": Provider("blas", static_properties={"vendor": order})},
        {
            "mkl": frozenset({prop("blas :: vendor :: mkl")}),
            "ob": frozenset({prop("blas :: vendor :: openblas")}),
            "null": frozenset(),
        },
    )
    links = tmp_path / "links"
    links.mkdir()
    (links / "demo-1.0-variants.json").write_text(dump_variant_info(info))
    for label in (None, "mkl", "ob", "null"):
        _wheel(links, info, label)
    target = tmp_path / "target"
    command = [str(uv), "pip", "install", "--python", sys.executable, "--target", str(target)]
    command += ["--cache-dir", str(tmp_path / "cache"), "--preview-features", "wheel-variants"]
    command += ["--no-index", "--offline", "--find-links", str(links), "demo"]
    result = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "UV_NO_CONFIG": "1"},
    )
    assert result.returncode == 0, result.stderr
    assert (target / "demo" / "__init__.py").read_text() == f"LABEL = {expected!r}\n"
