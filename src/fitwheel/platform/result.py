"""What one built-in provider answers for one namespace."""

from __future__ import annotations

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    from fitwheel.platform.profile import Device

    Status = Literal["ok", "absent", "unknown"]


class ProviderResult:
    """``status``: ``ok`` (detected), ``absent`` (nothing of this kind here: no such GPU, wrong CPU
    architecture) or ``unknown`` (could not tell; ``reason`` says why, and the namespace supports
    nothing). ``properties``: feature -> values, most preferred first, the provider's feature order;
    an empty tuple means "not supported". ``sources``: feature (or "*") -> where the value came
    from (a file path, "nvml", "pci-table", "override:ENV_VAR", ...). ``capabilities``: name ->
    JSON-able value shown beside the properties.

    A plain class rather than a dataclass: every detection builds these, and ``dataclasses``
    costs more to import than detecting the CPU does."""

    __slots__ = (
        "capabilities",
        "devices",
        "namespace",
        "properties",
        "reason",
        "sources",
        "status",
    )
    # the constructor's order, for repr and comparison
    _FIELDS = ("namespace", "status", "properties", "devices", "capabilities", "sources", "reason")

    def __init__(
        self,
        namespace: str,
        status: Status = "absent",
        properties: dict[str, tuple[str, ...]] | None = None,
        devices: list[Device] | None = None,
        capabilities: dict[str, Any] | None = None,
        sources: dict[str, str] | None = None,
        reason: str = "",
    ) -> None:
        self.namespace = namespace
        self.status = status
        self.properties = {} if properties is None else properties
        self.devices = [] if devices is None else devices
        self.capabilities = {} if capabilities is None else capabilities
        self.sources = {} if sources is None else sources
        self.reason = reason

    def _values(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self._FIELDS)

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values() == other._values()

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._FIELDS)
        return f"ProviderResult({fields})"

    def replace(self, **changes: Any) -> ProviderResult:
        """A copy with ``changes`` applied."""
        values: dict[str, Any] = {name: getattr(self, name) for name in self._FIELDS}
        unknown = changes.keys() - values.keys()
        if unknown:
            raise TypeError(f"ProviderResult has no field {sorted(unknown)[0]!r}")
        values.update(changes)
        return ProviderResult(**values)
