"""What one built-in provider answers for one namespace."""

from __future__ import annotations

from dataclasses import dataclass, field

from fitwheel.platform.profile import Device

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    Status = Literal["ok", "absent", "unknown"]


@dataclass
class ProviderResult:
    """``status``: ``ok`` (detected), ``absent`` (nothing of this kind here: no such GPU, wrong CPU
    architecture) or ``unknown`` (could not tell; ``reason`` says why, and the namespace supports
    nothing). ``properties``: feature -> values, most preferred first, the provider's feature order;
    an empty tuple means "not supported". ``sources``: feature (or "*") -> where the value came
    from (a file path, "nvml", "pci-table", "override:ENV_VAR", ...). ``capabilities``: name ->
    JSON-able value shown beside the properties."""

    namespace: str
    status: Status = "absent"
    properties: dict[str, tuple[str, ...]] = field(default_factory=dict)
    devices: list[Device] = field(default_factory=list)
    capabilities: dict[str, Any] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    reason: str = ""
