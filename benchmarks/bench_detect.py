"""Detection: fitwheel's in-process providers vs variantlib's plugin subprocess, and the whole
``fitwheel detect --json`` process vs a bare ``python -c "import json"``.

variantlib runs every provider plugin in a fresh interpreter (``PluginLoader``); the plugins used
here (``variant_plugins/fwbench_cpu_plugins.py``) answer like the published x86_64 and aarch64
providers from raw /proc files, without archspec, so the comparison measures the route, not the
plugins' own imports. The published provider-variant-x86-64 package does not load under
variantlib 0.2.2, which is why it is not used directly.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import Case, compare

HERE = Path(__file__).resolve().parent
PLUGINS = HERE / "variant_plugins"


def _fitwheel_cases() -> list[Case]:
    from fitwheel.platform.detect import PROVIDER_MODULES, detect, registered_providers
    from fitwheel.platform.overrides import Overrides
    from fitwheel.platform.probe import Probe

    cpu = registered_providers(
        {ns: m for ns, m in PROVIDER_MODULES.items() if ns in ("x86_64", "aarch64")}
    )
    everything = registered_providers()
    none = Overrides()
    return [
        Case.func(
            "fitwheel x86_64+aarch64",
            lambda: detect(Probe(), use_cache=False, providers=cpu, overrides=none),
        ),
        Case.func(
            "fitwheel all namespaces",
            lambda: detect(Probe(), use_cache=False, providers=everything, overrides=none),
        ),
    ]


def _variantlib_case() -> Case:
    from variantlib.api import VariantsJson
    from variantlib.plugins import loader as vl_loader

    info = VariantsJson(
        {
            "$schema": "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json",
            "default-priorities": {"namespace": ["x86_64", "aarch64"]},
            "providers": {
                "x86_64": {
                    "requires": ["fwbench-cpu-plugins"],
                    "plugin-api": "fwbench_cpu_plugins:X8664Plugin",
                },
                "aarch64": {
                    "requires": ["fwbench-cpu-plugins"],
                    "plugin-api": "fwbench_cpu_plugins:AArch64Plugin",
                },
            },
            "variants": {
                "v3": {"x86_64": {"level": ["v3"]}},
                "sve": {"aarch64": {"sve": ["on"]}},
            },
        }
    )

    def run() -> None:
        with vl_loader.PluginLoader(info) as plugins:
            plugins.get_supported_configs()

    # variantlib memoises answers per process; a fresh installer run has no memo
    return Case.func(
        "variantlib PluginLoader", run, setup=vl_loader.VARIANT_PROVIDER_CACHE_TABLE.clear
    )


def main() -> None:
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(PLUGINS), os.environ.get("PYTHONPATH", "")) if p
    )
    compare(
        "cold detection of the CPU namespaces, in process (no GPU libraries)",
        [*_fitwheel_cases(), _variantlib_case()],
        repeat=30,
    )

    from benchmarks.user_install import program

    fitwheel = str(program())
    cache = tempfile.mkdtemp(prefix="fitwheel-bench-cache-")
    # byte-compiled modules, as an installed fitwheel has them; a private cache directory
    env = {"PYTHONDONTWRITEBYTECODE": "", "FITWHEEL_CACHE_DIR": cache}
    try:
        compare(
            "whole process: fitwheel detect --json vs python -c 'import json'",
            [
                Case.command(
                    "python -c 'import json'", [sys.executable, "-c", "import json"], env=env
                ),
                Case.command("fitwheel detect --json", [fitwheel, "detect", "--json"], env=env),
                Case.command(
                    "fitwheel detect --json --no-cache",
                    [fitwheel, "detect", "--json", "--no-cache"],
                    env=env,
                ),
            ],
            repeat=20,
            warmup=2,
        )
    finally:
        shutil.rmtree(cache, ignore_errors=True)


if __name__ == "__main__":
    main()
