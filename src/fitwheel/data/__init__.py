"""Bundled data tables (JSON) used by detection; see each file's ``description``."""

from __future__ import annotations

import json
import os
from functools import cache

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# A plain path next to this module: importlib.resources would pull in zipfile, tempfile and
# compression modules, which costs more start-up time than the tables themselves.
_HERE = os.path.dirname(os.path.abspath(__file__))


@cache
def load_table(name: str) -> Any:
    """The decoded JSON of bundled table ``name`` (for example ``"nvidia_pci_devices.json"``)."""
    with open(os.path.join(_HERE, name), encoding="utf-8") as fh:
        return json.load(fh)
