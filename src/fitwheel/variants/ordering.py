"""Filter and order the variants of one package version for a target (PEP 825's algorithm).

Public API (stable; other layers call only these):

- :class:`DeviceConstraint`, :class:`Target`, :class:`Ordering`
- :func:`order_variants(info, target) -> Ordering`
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from fitwheel.variants.model import SupportedProperties, VariantDescription


@dataclass(frozen=True)
class DeviceConstraint:
    """One device that a GPU variant must run on (the multi-GPU policy ``all``).

    A variant that uses ``namespace`` is compatible only if, for every feature in ``supported``
    that the variant declares, at least one of the variant's values is in the device's list.
    """

    namespace: str
    device: str
    supported: Mapping[str, tuple[str, ...]]


@dataclass(frozen=True)
class Target:
    """What a target supports.

    ``supported``: namespace -> feature -> values, most preferred first, as providers answer.
    ``device_constraints``: per-device checks on top of ``supported`` (empty: none).
    ``enabled_optional``: optional providers the user enabled (True: all of them).
    ``environment``: PEP 508 marker values of the target (for 817-era ``enable-if``); None: any.
    """

    supported: SupportedProperties
    device_constraints: tuple[DeviceConstraint, ...] = ()
    enabled_optional: frozenset[str] | bool = False
    environment: Mapping[str, str] | None = None


@dataclass(frozen=True)
class Ordering:
    """``ordered``: the compatible variants best first (null last, only when the file has it).
    ``rejected``: label -> one-line reason, for every incompatible label, in file order."""

    ordered: tuple[VariantDescription, ...]
    rejected: Mapping[str, str] = field(default_factory=dict)

    @property
    def labels(self) -> list[str]:
        return [v.label for v in self.ordered]
