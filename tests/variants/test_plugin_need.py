"""Variants whose namespace only a provider plugin answers, when the target has no answer."""

from __future__ import annotations

from types import MappingProxyType

from fitwheel.variants.model import Provider, VariantDescription, VariantInfo, VariantProperty
from fitwheel.variants.ordering import Target, order_variants, unanswered_plugins
from fitwheel.variants.plugin_need import notice_text, plugin_need, rejection

ASCEND = Provider("ascend", requires=("ascend-variant-provider >=0.0.2, <1",))
NVIDIA = Provider(
    "nvidia",
    requires=("nvidia-variant-provider",),
    plugin_api="nvidia_variant_provider.plugin:NvidiaVariantPlugin",
)
BLAS = Provider("blas", static_properties=MappingProxyType({"provider": ("openblas",)}))
DEBUG = Provider("debug", requires=("debug-provider",), optional=True)


def desc(label: str, *props: str) -> VariantDescription:
    return VariantDescription(label, frozenset(VariantProperty.parse(p) for p in props))


INFO = VariantInfo(
    namespace_priorities=("nvidia", "ascend", "blas", "debug"),
    providers={p.namespace: p for p in (NVIDIA, ASCEND, BLAS, DEBUG)},
    variants={
        v.label: v
        for v in (
            desc("npu", "ascend :: npu_type :: 910b"),
            desc("cu12", "nvidia :: cuda_version_lower_bound :: 12.0"),
            desc("openblas", "blas :: provider :: openblas"),
            desc("dbg", "debug :: level :: on"),
            desc("null"),
        )
    },
)
BUILTIN = ("aarch64", "amd", "intel", "libc", "nvidia", "x86_64")


def test_a_namespace_without_an_answer_rejects_its_variants_naming_the_plugin() -> None:
    target = Target({}, answered=BUILTIN)
    ordering = order_variants(INFO, target)
    assert ordering.labels == ["openblas", "null"]
    assert ordering.rejected["npu"] == rejection(plugin_need(ASCEND))  # type: ignore[arg-type]
    assert "ascend-variant-provider >=0.0.2, <1" in ordering.rejected["npu"]
    assert "--allow-plugin ascend-variant-provider " in ordering.rejected["npu"]
    # a built-in namespace that supports nothing here is simply not supported
    assert "not supported here" in ordering.rejected["cu12"]
    assert "optional" in ordering.rejected["dbg"]
    assert [n.namespace for n in unanswered_plugins(INFO, target)] == ["ascend"]


def test_built_ins_answer_even_when_the_file_names_a_plugin() -> None:
    target = Target({"nvidia": {"cuda_version_lower_bound": ("12.8", "12.0")}}, answered=BUILTIN)
    assert order_variants(INFO, target).labels[0] == "cu12"
    assert "nvidia" not in [n.namespace for n in unanswered_plugins(INFO, target)]


def test_a_static_or_empty_answer_counts_as_answered() -> None:
    answered = Target({"ascend": {"npu_type": ("910b",)}}, answered=BUILTIN)
    assert order_variants(INFO, answered).labels[0] == "npu"
    assert unanswered_plugins(INFO, answered) == []
    empty = Target({}, answered=(*BUILTIN, "ascend"))
    assert "not supported here" in order_variants(INFO, empty).rejected["npu"]
    assert unanswered_plugins(INFO, empty) == []


def test_without_answered_namespaces_the_target_answers_every_namespace() -> None:
    target = Target({})
    assert "not supported here" in order_variants(INFO, target).rejected["npu"]
    assert unanswered_plugins(INFO, target) == []


def test_another_machine_is_told_no_plugin_runs_there() -> None:
    target = Target({}, answered=BUILTIN, other_machine=True)
    reason = order_variants(INFO, target).rejected["npu"]
    assert "never runs for another machine" in reason
    (need,) = unanswered_plugins(INFO, target)
    text = notice_text(need, ["npu-pkg 1.0"], "http://127.0.0.1:1/simple/", other_machine=True)
    assert "never runs for another machine" in text and "--allow-plugin" not in text


def test_plugin_need_names_the_project_to_allow() -> None:
    need = plugin_need(ASCEND)
    assert need is not None
    assert (need.namespace, need.project) == ("ascend", "ascend-variant-provider")
    assert need.wanted == "ascend-variant-provider >=0.0.2, <1"
    only_api = plugin_need(Provider("npu", plugin_api="npu_plugin.api:Plugin"))
    assert only_api is not None and only_api.project == "npu_plugin"
    assert plugin_need(BLAS) is None
    text = notice_text(need, ["a 1.0", "b 2.0"], "http://127.0.0.1:1/simple/")
    for part in (
        "a 1.0, b 2.0",
        "namespace 'ascend'",
        "ascend-variant-provider >=0.0.2, <1 from http://127.0.0.1:1/simple/",
        "--allow-plugin ascend-variant-provider",
        "[plugins.allow.ascend-variant-provider]",
        '--variant-property "ascend :: FEATURE :: VALUE"',
    ):
        assert part in text
