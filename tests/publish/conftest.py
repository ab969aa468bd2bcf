from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.publish.config import VariantConfig, parse_config
from tests.kit import UV_NVIDIA


@pytest.fixture
def config() -> VariantConfig:
    """Providers that variantlib, uv and fitwheel all accept: uv's built-in nvidia and x86_64
    providers (install-time plugins by name) and a static one."""
    return parse_config(
        {
            "default-priorities": {"namespace": ["nvidia", "x86_64", "blas"]},
            "providers": {
                "nvidia": dict(UV_NVIDIA),
                "x86_64": {"requires": ["x86-64-variant-provider"]},
                "blas": {"static-properties": {"provider": ["mkl", "openblas"]}},
            },
        },
        source="test-config",
    )


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder
