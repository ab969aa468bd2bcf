"""Shared fixtures of the format-core tests: the published files and variantlib as a peer.

Plain helpers (paths, hypothesis strategies, example counts) live in ``strategies.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.variants.strategies import PUBLISHED_DIR


@pytest.fixture(scope="session")
def published_dir() -> Path:
    return PUBLISHED_DIR


@pytest.fixture(scope="session")
def published_bytes(published_dir: Path) -> Callable[[str], bytes]:
    def load(name: str) -> bytes:
        return (published_dir / name).read_bytes()

    return load


@pytest.fixture(scope="session")
def variantlib_reader() -> Callable[[str], Any]:
    """variantlib 0.2.2's own index-file reader, applied to JSON text."""
    from variantlib.variants_json import VariantsJson

    def read(text: str) -> Any:
        return VariantsJson(json.loads(text))

    return read
