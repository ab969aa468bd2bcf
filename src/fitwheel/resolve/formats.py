"""Which kinds of distribution count for a project: ``--no-binary`` and ``--only-binary``, as pip
reads them.

Each option takes comma-separated project names, ``:all:`` or ``:none:``; ``:all:`` replaces
both lists with itself, ``:none:`` empties the option's own list, and a name given to one option
is taken out of the other. For a project, its own name decides before ``:all:`` does, and
``--only-binary`` before ``--no-binary``.
"""

from __future__ import annotations

from collections.abc import Iterable

from fitwheel.errors import UsageError
from fitwheel.variants.names import canonicalize_name

ALL = ":all:"
NONE = ":none:"


class FormatControl:
    __slots__ = ("implied_by", "no_binary", "only_binary")

    def __init__(
        self,
        no_binary: Iterable[str] = (),
        only_binary: Iterable[str] = (),
        *,
        implied_by: str | None = None,
    ) -> None:
        self.no_binary: set[str] = set()
        self.only_binary: set[str] = set()
        #: why the rules hold when no option of the user's set them (a command that takes
        #: wheels only says why, and how to do without a build): the advice of a refusal
        self.implied_by = implied_by
        for value in no_binary:
            self.add("--no-binary", value, self.no_binary, self.only_binary)
        for value in only_binary:
            self.add("--only-binary", value, self.only_binary, self.no_binary)

    @staticmethod
    def add(option: str, value: str, target: set[str], other: set[str]) -> None:
        for item in (v.strip() for v in value.split(",")):
            if not item:
                continue
            if item.startswith("-"):
                raise UsageError(
                    f"{option} takes project names, {ALL} or {NONE}, not the option {item!r}."
                )
            if item == ALL:
                other.clear()
                target.clear()
                target.add(ALL)
            elif item == NONE:
                target.clear()
            else:
                name = canonicalize_name(item)
                other.discard(name)
                target.add(name)

    def wheels_allowed(self, name: str) -> bool:
        key = canonicalize_name(name)
        if key in self.only_binary:
            return True
        if key in self.no_binary:
            return False
        return ALL in self.only_binary or ALL not in self.no_binary

    def sdists_allowed(self, name: str) -> bool:
        key = canonicalize_name(name)
        if key in self.only_binary:
            return False
        if key in self.no_binary:
            return True
        return ALL not in self.only_binary

    def refusal(self, name: str) -> str:
        """The option that refuses builds of ``name`` (for messages)."""
        key = canonicalize_name(name)
        return f"--only-binary {key}" if key in self.only_binary else f"--only-binary {ALL}"

    def build_advice(self, name: str) -> str:
        """What the user can do about a project these rules keep from being built."""
        if self.implied_by is not None:
            return self.implied_by
        return (
            f"drop {self.refusal(name)} for {canonicalize_name(name)} to let fitwheel build it, "
            "or add an index that has its wheels"
        )

    def wheel_refusal(self, name: str) -> str:
        """The option that refuses the wheels of ``name`` (for messages)."""
        key = canonicalize_name(name)
        return f"--no-binary {key}" if key in self.no_binary else f"--no-binary {ALL}"

    def __bool__(self) -> bool:
        return bool(self.no_binary or self.only_binary)
