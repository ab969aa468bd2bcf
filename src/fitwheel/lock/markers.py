"""The plain PEP 508 markers of a ``pylock.toml``'s packages: the simple form ``lock`` writes
(``a == "1" and b == "2"``, alternatives in parentheses joined by ``or``), read without
packaging, and whether a marker holds on a host. The document checks markers with
:func:`simple_marker`; the selection of a host's files evaluates them with :func:`marker_holds`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

_CLAUSE = re.compile(r'\s*([a-z_]+) == "([^"\\]*)"\s*')


def simple_marker(marker: str) -> list[list[tuple[str, str]]] | None:
    """``marker`` as alternatives of ``name == "value"`` conjunctions, when it is of the form
    ``lock`` writes (``a == "1" and b == "2"``, or such in parentheses joined by ``or``);
    None for anything else (packaging evaluates that)."""
    out = []
    for part in marker.split(" or "):
        part = part.strip()
        if part.startswith("(") and part.endswith(")"):
            part = part[1:-1]
        clauses = []
        for clause in part.split(" and "):
            found = _CLAUSE.fullmatch(clause)
            if found is None:
                return None
            clauses.append((found.group(1), found.group(2)))
        out.append(clauses)
    return out


def marker_holds(marker: str | None, environment: Mapping[str, str]) -> bool:
    """Whether ``marker`` (None or empty: no marker) holds in ``environment``; the simple form
    is compared here, anything else is evaluated by packaging."""
    if not marker:
        return True
    simple = simple_marker(marker)
    if simple is not None and all(k in environment for alt in simple for k, _v in alt):
        return any(all(environment[k] == v for k, v in alt) for alt in simple)
    from packaging.markers import Marker

    return Marker(marker).evaluate({**environment, "extra": ""})
