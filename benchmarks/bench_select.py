"""Selection: fitwheel's filter-and-order vs variantlib 0.2.2's resolver, on the same input.

(a) In process, for every published torch/torchvision variants file on an H100 with a CUDA 13.0
    driver: ``fitwheel.variants.ordering.order_variants`` vs
    ``variantlib.resolver.lib.sort_and_filter_supported_variants`` given the same descriptions,
    supported properties and priorities (what ``variantlib.api.get_variants_by_priority`` would
    pass it once the plugins have answered).
(b) Whole process: ``fitwheel select torch-2.9.0-variants.json --profile h100.json --json`` vs a
    ``python -c`` script that reads the same file (converted by fitwheel's writer to the form
    variantlib 0.2.2 reads), the same profile, orders with variantlib and prints the labels.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.harness import Case, compare

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(
    os.environ.get("FITWHEEL_FIXTURES", ROOT / "tests" / "variants" / "data" / "published")
)
PROFILE = ROOT / "tests" / "data" / "profiles" / "h100.json"
FILES = [
    "torch-2.8.0",
    "torch-2.9.0",
    "torch-2.10.0",
    "torchvision-0.23.0",
    "torchvision-0.24.0",
    "torchvision-0.25.0",
]

# The variantlib peer of ``fitwheel select``: read the file and the profile, order, print JSON.
VARIANTLIB_SCRIPT = """
import json, sys
from variantlib.models.variant import VariantProperty
from variantlib.resolver.lib import sort_and_filter_supported_variants
from variantlib.utils import aggregate_feature_priorities
from variantlib.variants_json import VariantsJson

with open(sys.argv[1], encoding="utf-8") as fh:
    vj = VariantsJson(json.load(fh))
with open(sys.argv[2], encoding="utf-8") as fh:
    answers = json.load(fh)["properties"]
supported = []
for ns, provider in vj.providers.items():
    source = provider.static_properties or answers.get(ns, {})
    for feature, values in source.items():
        supported += [VariantProperty(ns, feature, v) for v in values]
ordered = sort_and_filter_supported_variants(
    list(vj.variants.values()),
    supported,
    namespace_priorities=list(vj.namespace_priorities),
    feature_priorities=aggregate_feature_priorities(
        {ns: p.feature_order for ns, p in vj.providers.items()}
    ),
    filter_values=True,
)
print(json.dumps({"ordered": [d.label for d in ordered]}))
"""


def _variantlib_inputs(info: Any, supported: Any) -> dict[str, Any]:
    from variantlib.models.variant import VariantDescription, VariantProperty
    from variantlib.utils import aggregate_feature_priorities, aggregate_property_priorities

    vdescs = [
        VariantDescription(
            [VariantProperty(p.namespace, p.feature, p.value) for p in d.properties],
            label="null" if d.is_null else d.label,
        )
        for d in info.variants.values()
    ]
    props: list[Any] = []
    for ns, provider in info.providers.items():
        source = (
            provider.static_properties
            if provider.static_properties is not None
            else supported.get(ns, {})
        )
        for feature, values in source.items():
            props += [VariantProperty(ns, feature, v) for v in values]
    return {
        "vdescs": vdescs,
        "supported_vprops": props,
        "namespace_priorities": list(info.namespace_priorities),
        "feature_priorities": aggregate_feature_priorities(
            {ns: list(fs) for ns, fs in info.feature_priorities.items()},
            {ns: list(p.feature_order or ()) for ns, p in info.providers.items()},
        ),
        "property_priorities": aggregate_property_priorities(
            {
                ns: {f: list(vs) for f, vs in fs.items()}
                for ns, fs in info.property_priorities.items()
            }
        ),
        "filter_values": True,
    }


def _no_abi_dependency(supported: list[Any], namespace_priorities: list[str]) -> None:
    namespace_priorities.append("abi_dependency")


def in_process() -> None:
    from variantlib.resolver import lib as vl_lib
    from variantlib.resolver.lib import sort_and_filter_supported_variants

    from fitwheel.platform.profile import load_profile
    from fitwheel.variants.ordering import Target, order_variants
    from fitwheel.variants.reading import loads_variant_info

    profile = load_profile(PROFILE)
    target = Target(profile.properties, environment=dict(profile.environment))
    for stem in FILES:
        path = FIXTURES / f"{stem}-variants.json"
        info = loads_variant_info(path.read_bytes(), str(path), kind="index")
        kwargs = _variantlib_inputs(info, profile.properties)
        ours = ["null" if d.is_null else d.label for d in order_variants(info, target).ordered]
        theirs = [d.label for d in sort_and_filter_supported_variants(**kwargs)]
        if ours != theirs:
            raise AssertionError(f"{stem}: fitwheel {ours} != variantlib {theirs}")

        def run_variantlib(kwargs: dict[str, Any] = kwargs) -> object:
            # The resolver extends its input list with a null description: give it a fresh one.
            return sort_and_filter_supported_variants(
                **{**kwargs, "vdescs": list(kwargs["vdescs"])}
            )

        def run_variantlib_core(kwargs: dict[str, Any] = kwargs) -> object:
            # Most of variantlib's time goes to its abi_dependency injection, which lists every
            # distribution installed in the running interpreter. This peer skips that step, to
            # show the ratio of the filter-and-order algorithm alone.
            original = vl_lib.inject_abi_dependency
            vl_lib.inject_abi_dependency = _no_abi_dependency
            try:
                return run_variantlib(kwargs)
            finally:
                vl_lib.inject_abi_dependency = original

        compare(
            f"select {stem} on an H100 (in process)",
            [
                Case.func("fitwheel order_variants", lambda i=info: order_variants(i, target)),
                Case.func("variantlib resolver", run_variantlib),
                Case.func("variantlib, no abi scan", run_variantlib_core),
            ],
            repeat=40,
        )


def whole_process() -> None:
    from fitwheel.variants.reading import loads_variant_info
    from fitwheel.variants.writing import dump_variant_info

    source = FIXTURES / "torch-2.9.0-variants.json"
    info = loads_variant_info(source.read_bytes(), str(source), kind="index")
    from benchmarks.user_install import program

    # Both peers run as installed programs do, with their bytecode cached (a shell that sets
    # PYTHONDONTWRITEBYTECODE would otherwise make the editable fitwheel recompile every run).
    env = {"PYTHONDONTWRITEBYTECODE": ""}
    fitwheel = program()
    with tempfile.TemporaryDirectory(prefix="fw-bench-select-") as tmp:
        converted = Path(tmp) / "torch-2.9.0-variants.json"
        # variantlib 0.2.2 cannot read the published 817-era file; give it the same content in
        # the form it reads (enable-if dropped: the profile is a Linux machine, where it holds).
        converted.write_text(dump_variant_info(info, allow_lossy=True), encoding="utf-8")
        compare(
            "fitwheel select torch-2.9.0 --profile h100.json --json (whole process)",
            [
                Case.command(
                    "fitwheel select",
                    [str(fitwheel), "select", str(source), "--profile", str(PROFILE), "--json"],
                    env=env,
                ),
                Case.command(
                    "python -c variantlib",
                    [sys.executable, "-c", VARIANTLIB_SCRIPT, str(converted), str(PROFILE)],
                    env=env,
                ),
            ],
            repeat=15,
        )


def main() -> None:
    in_process()
    whole_process()


if __name__ == "__main__":
    main()
