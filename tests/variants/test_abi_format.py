"""The reserved abi_dependency namespace in variant metadata: read, merged, written and published
without a provider entry, and refused as a provider (PEP 817, PEP 850)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from fitwheel.publish.config import VariantConfigError, parse_config
from fitwheel.publish.make import make_variant
from fitwheel.variants._schema import CURRENT_SCHEMA_URL
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.merging import merge_variant_infos
from fitwheel.variants.reading import loads_variant_info
from fitwheel.variants.writing import dump_variant_info
from tests.kit import make_wheel, members


def _doc(namespaces: list[str], providers: dict[str, Any], **variants: Any) -> str:
    return json.dumps(
        {
            "$schema": CURRENT_SCHEMA_URL,
            "default-priorities": {"namespace": namespaces},
            "providers": providers,
            "variants": variants,
        }
    )


X86 = {"x86_64": {"builtin": "x86_64"}}
T29 = {"abi_dependency": {"torch": ["2.9"]}}


@pytest.mark.parametrize("listed", [["x86_64"], ["x86_64", "abi_dependency"]])
def test_read_with_or_without_being_listed(listed: list[str]) -> None:
    info = loads_variant_info(_doc(listed, X86, t29=T29, null={}), "flashkern-variants.json")
    assert {str(p) for p in info.variants["t29"].properties} == {"abi_dependency :: torch :: 2.9"}
    assert set(info.providers) == {"x86_64"}
    again = loads_variant_info(dump_variant_info(info), "again")
    assert again == info


def test_a_file_whose_only_namespace_is_abi_dependency() -> None:
    info = loads_variant_info(_doc(["abi_dependency"], {}, t29=T29, null={}), "only-abi")
    assert info.providers == {}
    written = json.loads(dump_variant_info(info))
    assert written["providers"] == {} and written["$schema"] == CURRENT_SCHEMA_URL
    assert loads_variant_info(json.dumps(written), "again") == info


def test_a_provider_for_the_reserved_namespace_is_refused() -> None:
    providers = {**X86, "abi_dependency": {"static-properties": {"torch": ["2.9"]}}}
    with pytest.raises(VariantFormatError) as caught:
        loads_variant_info(_doc(["x86_64", "abi_dependency"], providers, t29=T29), "bad.json")
    text = str(caught.value)
    assert "bad.json" in text and "providers.abi_dependency" in text
    assert "reserved namespace" in text and "remove this entry" in text


def test_merging_lists_it_last_whatever_the_inputs_say() -> None:
    a = loads_variant_info(_doc(["x86_64", "abi_dependency"], X86, t29=T29), "a")
    b = loads_variant_info(_doc(["x86_64"], X86, null={}), "b")
    merged = merge_variant_infos([b, a])
    assert merged.namespace_priorities == ("x86_64", "abi_dependency")
    assert set(merged.variants) == {"t29", "null"}


def test_publish_config_lists_it_without_a_provider(tmp_path: Path) -> None:
    config = parse_config({"default-priorities": {"namespace": ["abi_dependency"]}}, source="cfg")
    wheel = make_wheel(tmp_path / "src", "flashkern", "1.0")
    from fitwheel.variants.model import VariantProperty

    made = make_variant(
        wheel,
        [VariantProperty.parse("abi_dependency :: torch :: 2.9")],
        config,
        label="torch29",
        out_dir=tmp_path / "out",
    )
    assert made.path.name == "flashkern-1.0-py3-none-any-torch29.whl"
    inside = json.loads(members(made.path)["flashkern-1.0.dist-info/variant.json"])
    assert inside["default-priorities"]["namespace"] == ["abi_dependency"]
    assert "abi_dependency" not in inside["providers"]
    with pytest.raises(VariantConfigError, match="one to three release numbers"):
        make_variant(
            wheel,
            [VariantProperty.parse("abi_dependency :: torch :: cu128")],
            config,
            out_dir=tmp_path / "out",
        )


def test_publish_config_appends_it_when_a_variant_uses_it(tmp_path: Path) -> None:
    config = parse_config(
        {"default-priorities": {"namespace": ["x86_64"]}, "providers": X86}, source="cfg"
    )
    from fitwheel.variants.model import VariantProperty

    made = make_variant(
        make_wheel(tmp_path / "src", "flashkern", "1.0"),
        [
            VariantProperty.parse("abi_dependency :: torch :: 2.10"),
            VariantProperty.parse("x86_64 :: level :: v3"),
        ],
        config,
        label="t210v3",
        out_dir=tmp_path / "out",
    )
    inside = json.loads(made.variant_json)
    assert inside["default-priorities"]["namespace"] == ["x86_64", "abi_dependency"]


def test_publish_config_refuses_it_as_a_provider() -> None:
    table = {
        "default-priorities": {"namespace": ["abi_dependency"]},
        "providers": {"abi_dependency": {"static-properties": {"torch": ["2.9"]}}},
    }
    with pytest.raises(VariantConfigError) as caught:
        parse_config(table, source="pyproject.toml")
    text = str(caught.value)
    assert "pyproject.toml" in text and "providers.abi_dependency" in text
    assert "reserved namespace" in text
