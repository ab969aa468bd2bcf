"""Bundled data tables (JSON) used by detection; see each file's ``description``."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any


@cache
def load_table(name: str) -> Any:
    """The decoded JSON of bundled table ``name`` (for example ``"nvidia_pci_devices.json"``)."""
    text = resources.files(__package__).joinpath(name).read_text(encoding="utf-8")
    return json.loads(text)
