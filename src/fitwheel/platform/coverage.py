"""Which GPUs a package's builds leave unserved: the check behind "never fall back silently".

A machine with a GPU that a package publishes builds for, but none of which runs on it, must not
quietly get the null or plain build: ``select`` warns and ``install`` stops (unless the user
accepts the fallback), naming the devices and what the package offers.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from fitwheel._values import Frozen
from fitwheel.platform.profile import Device
from fitwheel.variants.model import VariantInfo

#: Why a label is missing from both the ordered and the rejected lists (the file names a variant
#: the index has no wheel of for this interpreter and platform).
NO_WHEEL = "no wheel for this interpreter and platform"


class UnservedGpus(Frozen):
    """``namespaces``: the GPU namespaces the package has builds for; ``devices``: the devices of
    those namespaces here; ``offered``: each such build's label and why it does not fit."""

    __slots__ = ("devices", "namespaces", "offered")
    namespaces: tuple[str, ...]
    devices: tuple[Device, ...]
    offered: Mapping[str, str]

    def __init__(
        self, namespaces: tuple[str, ...], devices: tuple[Device, ...], offered: Mapping[str, str]
    ) -> None:
        object.__setattr__(self, "namespaces", namespaces)
        object.__setattr__(self, "devices", devices)
        object.__setattr__(self, "offered", offered)

    def describe(self, package: str) -> str:
        present = "; ".join(d.describe() for d in self.devices)
        builds = "; ".join(f"{label}: {why}" for label, why in self.offered.items())
        return (
            f"{package} publishes builds for {', '.join(self.namespaces)} GPUs, but none runs on "
            f"the GPU here ({present}). Builds offered: {builds}"
        )


def unserved_gpus(
    info: VariantInfo,
    ordered: Iterable[str],
    rejected: Mapping[str, str],
    devices: Sequence[Device],
) -> UnservedGpus | None:
    """The GPUs left without a fitting build, or None when a GPU build fits (or the package has no
    build for the GPUs present). ``ordered`` and ``rejected`` are the selection's labels."""
    by_namespace: dict[str, list[Device]] = {}
    for dev in devices:
        for ns in {dev.vendor, *dev.properties}:
            by_namespace.setdefault(ns, []).append(dev)
    if not by_namespace:
        return None
    offered = [
        label for label, desc in info.variants.items() if desc.namespaces & by_namespace.keys()
    ]
    if not offered or set(offered) & set(ordered):
        return None
    namespaces = sorted(
        {ns for label in offered for ns in info.variants[label].namespaces} & by_namespace.keys()
    )
    present: dict[tuple[str, int], Device] = {}
    for ns in namespaces:
        for dev in by_namespace[ns]:
            present.setdefault((dev.vendor, dev.index), dev)
    per_device = {(ns, f) for d in present.values() for ns, fs in d.properties.items() for f in fs}
    return UnservedGpus(
        tuple(namespaces),
        tuple(present.values()),
        {label: _offer(info, label, rejected, per_device) for label in offered},
    )


def _offer(
    info: VariantInfo, label: str, rejected: Mapping[str, str], per_device: set[tuple[str, str]]
) -> str:
    """Why ``label`` does not fit, and what it is built for on the per-device features."""
    built_for = ", ".join(
        f"{ns} :: {feature} {' '.join(values)}"
        for ns, features in info.variants[label].as_dict().items()
        for feature, values in features.items()
        if (ns, feature) in per_device
    )
    why = rejected.get(label, NO_WHEEL)
    return f"{why} (built for {built_for})" if built_for else why
