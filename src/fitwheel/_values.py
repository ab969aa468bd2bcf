"""Immutable value objects for the modules every command start loads.

``dataclasses`` imports ``inspect`` (and with it ``ast``, ``dis`` and ``tokenize``), about 15 ms,
and builds each class by ``exec``; ``fitwheel select`` and ``fitwheel detect`` run in well under
100 ms, so their model classes are plain slotted classes built on this base instead. A
subclass lists its fields in ``__slots__`` (in comparison order where it orders) and assigns
them in ``__init__`` with ``object.__setattr__``; it then compares, hashes and prints by those
fields, refuses assignment, and offers :meth:`Frozen.replace`.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _F = TypeVar("_F", bound="Frozen")


class Frozen:
    __slots__ = ()

    def _fields(self) -> tuple[str, ...]:
        return type(self).__slots__

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._fields())

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    def __hash__(self) -> int:
        return hash((type(self).__name__, *self._values()))

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields())
        return f"{type(self).__name__}({fields})"

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot assign {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def replace(self: _F, **changes: Any) -> _F:
        """A copy with ``changes`` applied (checked again by the constructor)."""
        values: dict[str, Any] = {name: getattr(self, name) for name in self._fields()}
        unknown = changes.keys() - values.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        values.update(changes)
        return type(self)(**values)


class OrderedFrozen(Frozen):
    """A :class:`Frozen` whose instances order by their fields, in order."""

    __slots__ = ()

    def __lt__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() < other._values()

    def __le__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() <= other._values()

    def __gt__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() > other._values()

    def __ge__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() >= other._values()
