"""The order in which the resolver decides projects, the same as pip's.

When requirements conflict, resolvelib walks back the most recent decision that took part in
the conflict, so the order in which projects are decided also decides which of them gives way.
fitwheel uses pip's order, so that a requirements file resolves to pip's versions:

1. the projects of the conflict that made the resolver walk back (the conflicting requirements
   and the candidates that asked for them), then projects that keep turning up undecided in
   conflicts (:data:`PROMOTE_AFTER` times);
2. then, by sort key: a project with an exact pin (``==`` without a wildcard, ``===``); one with
   an upper bound (``<``, ``<=``, ``~=``, ``==`` with a wildcard); the user's own requirements
   in the order the user wrote them, before dependencies; one that any specifier limits; a
   project before its extras; the name.

The user's order matters: with ``s3fs`` written before a loose ``boto3``, ``boto3`` is decided
after ``s3fs``, and a conflict between what the two need (``botocore``) walks ``boto3`` back to
an older release while ``s3fs`` stays current, as pip does. See docs/resolver.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from packaging.specifiers import SpecifierSet

#: a project that turns up undecided in this many conflicts is decided before the others
PROMOTE_AFTER = 5

_UPPER = ("<", "<=", "~=")

#: the sort key of a project (lower is decided first)
PreferenceKey = tuple[bool, bool, bool, float, bool, bool, str]


class Preferences:
    """The order of one resolution: the user's requirements in their order, and what the
    conflicts so far have shown."""

    __slots__ = ("_conflicts", "promoted", "requested")

    def __init__(self, requested: Mapping[str, int] | None = None) -> None:
        #: identifier -> the position of the user's first requirement of it; a project
        #: requested only with extras takes the position of its first extras requirement
        self.requested: dict[str, int] = {}
        for identifier, position in (requested or {}).items():
            for key in (identifier, identifier.split("[", 1)[0]):
                if position < self.requested.get(key, position + 1):
                    self.requested[key] = position
        self._conflicts: dict[str, int] = {}
        #: projects decided before the others: they kept turning up undecided in conflicts
        self.promoted: set[str] = set()

    def narrow(
        self,
        identifiers: list[str],
        resolutions: Mapping[str, Any],
        causes: Sequence[Any],
        identify: Callable[[Any], str],
    ) -> list[str]:
        """The projects of the latest conflict, else the promoted ones, else ``identifiers``."""
        involved: set[str] = set()
        for cause in causes:
            for item in (cause.requirement, cause.parent):
                if item is None:
                    continue
                name = identify(item)
                involved.add(name)
                if name not in resolutions:
                    count = self._conflicts[name] = self._conflicts.get(name, 0) + 1
                    if count >= PROMOTE_AFTER:
                        self.promoted.add(name)
        in_conflict = [i for i in identifiers if i in involved]
        if in_conflict:
            return in_conflict
        promoted = [i for i in identifiers if i in self.promoted]
        return promoted or identifiers

    def key(
        self,
        identifier: str,
        specifiers: Sequence[SpecifierSet],
        pinned: Callable[[SpecifierSet], bool],
    ) -> PreferenceKey:
        """The sort key of ``identifier``, given the specifiers of its requirements."""
        upper = unfree = False
        for spec in specifiers:
            for item in spec:
                unfree = True
                if item.operator in _UPPER or (item.operator == "==" and "*" in item.version):
                    upper = True
        base = identifier.split("[", 1)[0]
        order = self.requested.get(identifier, self.requested.get(base, math.inf))
        return (
            identifier not in self.promoted,
            not any(pinned(spec) for spec in specifiers),
            not upper,
            order,
            not unfree,
            "[" in identifier,  # extras after their base, so the base version is decided first
            identifier,
        )
