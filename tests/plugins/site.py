"""A loopback index for the plugin tests: the look-alike Ascend plugin, the hostile plugins and
``npukern``, a package with an Ascend build and a null build whose variants need the plugin."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

from fitwheel.publish.index_build import build_index
from tests.kit import clean_env, make_wheel, variant_doc
from tests.plugins.kit import LOOKALIKE, hostile_wheel, lookalike_wheel

HOSTILE = ("hang", "exit", "flood", "othernamespace", "snoop")
PROVIDERS = {
    "ascend": {
        "requires": [f"{LOOKALIKE}>=0.0.1"],
        "plugin-api": "ascend_lookalike_provider.plugin:AscendVariantPlugin",
    }
}


def npukern(folder: Path, providers: dict[str, Any] | None = None) -> None:
    """``npukern`` 1.0: an Ascend 910b build and the null build."""
    providers = providers or PROVIDERS
    ascend = {"ascend": {"npu_type": ["910b"]}}
    make_wheel(
        folder,
        "npukern",
        "1.0",
        label="910b",
        variant=ascend,
        variant_doc=variant_doc("910b", ascend, providers),
    )
    make_wheel(
        folder,
        "npukern",
        "1.0",
        label="null",
        variant={},
        variant_doc=variant_doc("null", {}, providers),
    )


def build_site(root: Path, *, hostile: bool = True) -> Path:
    """The wheels under ``root/wheels``, the index under ``root/out``; returns the index."""
    wheels = root / "wheels"
    lookalike_wheel(wheels)
    if hostile:
        for kind in HOSTILE:
            hostile_wheel(wheels, kind)
    npukern(wheels)
    build_index(wheels, root / "out")
    return root / "out"


def run_fitwheel(
    tmp_path: Path, *args: str, config: Path | None = None, **env: str
) -> subprocess.CompletedProcess[str]:
    """``fitwheel ARGS`` in a hermetic environment (its cache under ``tmp_path``; its
    configuration file ``config``, else none)."""
    environ = clean_env(
        FITWHEEL_CACHE_DIR=str(tmp_path / "cache"), FITWHEEL_DETECT_TIMEOUT="1", **env
    )
    if config is not None:
        environ["FITWHEEL_CONFIG"] = str(config)
    return subprocess.run(
        [sys.executable, "-m", "fitwheel", *args],
        capture_output=True,
        text=True,
        env=environ,
        timeout=300,
    )


def build_of(venv: Path) -> str:
    done = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import npukern; print(npukern.BUILD)"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def has_module(venv: Path, module: str) -> bool:
    return any(venv.glob(f"lib/python*/site-packages/{module}"))


def config_of(path: Path) -> dict[str, Any]:
    import tomllib

    return tomllib.loads(path.read_text()) if path.exists() else {}
