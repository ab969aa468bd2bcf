"""The test kit (real wheels, loopback servers, venvs, hermetic environments), for benchmarks."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests import kit

__all__ = ["kit"]
