"""Provider declarations from a variants config file or a pyproject ``[variant]`` table."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.publish.config import VariantConfigError, load_config, parse_config

GOOD = """
[variant.default-priorities]
namespace = ["nvidia", "blas"]
[variant.providers.nvidia]
requires = ["nvidia-variant-provider"]
plugin-api = "nvidia_variant_provider.plugin:NvidiaVariantPlugin"
optional = true
[variant.providers.blas]
static-properties = { provider = ["mkl", "openblas"], threads = ["omp", "seq"] }
feature-order = ["threads", "provider"]
"""


def test_pyproject_table(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n' + GOOD)
    config = load_config(path, pyproject=True)
    assert config.namespace_priorities == ("nvidia", "blas")
    nvidia = config.providers["nvidia"]
    assert nvidia.requires == ("nvidia-variant-provider",) and nvidia.optional
    assert nvidia.plugin_api == "nvidia_variant_provider.plugin:NvidiaVariantPlugin"
    blas = config.providers["blas"]
    assert blas.static_properties is not None
    assert tuple(blas.static_properties["provider"]) == ("mkl", "openblas")
    assert blas.feature_order == ("threads", "provider")


def test_variants_config_may_be_top_level(tmp_path: Path) -> None:
    path = tmp_path / "variants.toml"
    path.write_text(GOOD.replace("[variant.", "["))
    assert load_config(path).namespace_priorities == ("nvidia", "blas")


def test_pyproject_without_table(tmp_path: Path) -> None:
    path = tmp_path / "pyproject.toml"
    path.write_text('[project]\nname = "x"\n')
    with pytest.raises(VariantConfigError, match=r"no \[variant\] table"):
        load_config(path, pyproject=True)


@pytest.mark.parametrize(
    ("table", "words"),
    [
        ({"providers": {"a": {"builtin": "a"}}}, "namespace' list is required"),
        (
            {
                "default-priorities": {"namespace": ["a"], "feature": {}},
                "providers": {"a": {"builtin": "a"}},
            },
            "unsupported key(s) feature",
        ),
        (
            {"default-priorities": {"namespace": ["a", "b"]}, "providers": {"a": {"builtin": "a"}}},
            "exactly the namespaces",
        ),
        (
            {"default-priorities": {"namespace": ["a"]}, "providers": {"a": {}}},
            "exactly one of requires, static-properties and builtin",
        ),
        (
            {
                "default-priorities": {"namespace": ["a"]},
                "providers": {"a": {"builtin": "a", "requires": ["x"]}},
            },
            "found: requires, builtin",
        ),
        (
            {
                "default-priorities": {"namespace": ["a"]},
                "providers": {"a": {"build-requires": ["x"]}},
            },
            "build-time plugins are not run",
        ),
        (
            {
                "default-priorities": {"namespace": ["a"]},
                "providers": {"a": {"static-properties": {"f": ["v"], "g": ["w"]}}},
            },
            "required when static-properties has 2+ features",
        ),
        (
            {
                "default-priorities": {"namespace": ["a"]},
                "providers": {"a": {"builtin": "a", "enable-if": "x"}},
            },
            "unknown key(s) enable-if",
        ),
        (
            {
                "default-priorities": {"namespace": ["a"]},
                "providers": {"a": {"builtin": "a", "plugin-api": "m:C"}},
            },
            "valid only with requires",
        ),
        (
            {"default-priorities": {"namespace": ["A"]}, "providers": {"A": {"builtin": "a"}}},
            "namespace 'A'",
        ),
        (
            {
                "default-priorities": {"namespace": ["a"]},
                "providers": {"a": {"static-properties": {"f": ["V!"]}}},
            },
            "feature value 'V!'",
        ),
    ],
)
def test_invalid_tables_are_explained(table: dict[str, object], words: str) -> None:
    with pytest.raises(VariantConfigError) as info:
        parse_config(table, source="cfg.toml")
    assert words in str(info.value)
    assert "cfg.toml" in str(info.value)


def test_invalid_toml(tmp_path: Path) -> None:
    path = tmp_path / "v.toml"
    path.write_text("[variant\n")
    with pytest.raises(VariantConfigError, match="not valid TOML"):
        load_config(path)
