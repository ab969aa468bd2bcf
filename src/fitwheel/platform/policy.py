"""From a profile to a selection target, under a multi-GPU policy.

- ``all`` (default): a GPU build must run on every GPU. For each device that carries per-device
  features (``sm_arch``, ``gfx_arch``, ``device_ip``) the target gets a
  :class:`~fitwheel.variants.ordering.DeviceConstraint`, so a variant is compatible only if each
  device supports one of its values. An integrated GPU beside a discrete GPU of the same vendor
  does not count (a Ryzen iGPU next to a Radeon card must not push the machine to a CPU build);
  ``device=N`` selects it explicitly.
- ``any``: the machine-wide union, no per-device constraint (the build runs on some GPU).
- ``device=N``: only device ``N`` (its position in the profile's ``devices``, or ``vendor:N`` for
  the vendor's own index) counts: every per-device feature takes that device's values, and the
  per-device features of other devices' namespaces are not supported.

A profile that holds only ``properties`` gives a target without constraints under every policy.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fitwheel.errors import UsageError
from fitwheel.platform.profile import Device, Profile
from fitwheel.variants.ordering import DeviceConstraint, Target

POLICIES = ("all", "any", "device=N")


class PolicyError(UsageError):
    """A ``--gpu-policy`` this target cannot honour (bad usage: exit 2)."""


def device_key(device: Device) -> str:
    return f"{device.vendor}:{device.index}"


def _find_device(devices: tuple[Device, ...], spec: str) -> Device:
    vendor, sep, number = spec.rpartition(":")
    if not number.isdigit():
        raise PolicyError(
            f"GPU policy 'device={spec}': expected a device number (0, 1, ...) or vendor:N"
        )
    n = int(number)
    if sep:
        for dev in devices:
            if dev.vendor == vendor and dev.index == n:
                return dev
    elif n < len(devices):
        return devices[n]
    listed = ", ".join(f"{i}={device_key(d)}" for i, d in enumerate(devices)) or "none"
    raise PolicyError(f"GPU policy 'device={spec}': no such device (devices: {listed})")


def parse_policy(text: str) -> str:
    """Check a policy string; returns it normalised."""
    value = text.strip()
    if value in ("all", "any") or (value.startswith("device=") and value[7:]):
        return value
    raise PolicyError(f"unknown GPU policy {text!r}: use all, any or device=N")


def _per_device_features(devices: Iterable[Device]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for dev in devices:
        for ns, feats in dev.properties.items():
            out.setdefault(ns, set()).update(feats)
    return out


def counted_devices(devices: Iterable[Device]) -> tuple[Device, ...]:
    """The devices policy ``all`` holds builds to: those with per-device features, less the
    integrated GPUs of a vendor that also has a discrete one here."""
    with_features = tuple(d for d in devices if d.properties)
    discrete = {d.vendor for d in with_features if not d.extra.get("integrated")}
    return tuple(
        d for d in with_features if not (d.extra.get("integrated") and d.vendor in discrete)
    )


def target_from_profile(
    profile: Profile,
    gpu_policy: str = "all",
    enabled_optional: frozenset[str] | bool = False,
) -> Target:
    policy = parse_policy(gpu_policy)
    supported: dict[str, Mapping[str, tuple[str, ...]]] = {
        ns: dict(feats) for ns, feats in profile.properties.items()
    }
    constraints: list[DeviceConstraint] = []
    devices = tuple(d for d in profile.devices if d.properties)
    if policy == "all":
        for dev in counted_devices(devices):
            for ns, feats in dev.properties.items():
                constraints.append(DeviceConstraint(ns, dev.describe(), dict(feats)))
    elif policy.startswith("device="):
        chosen = _find_device(tuple(profile.devices), policy[len("device=") :])
        for ns, features in _per_device_features(devices).items():
            if ns not in supported:
                continue  # the namespace supports nothing machine-wide: nothing to restrict
            own = chosen.properties.get(ns, {})
            merged = dict(supported.get(ns, {}))
            for feature in features:
                merged[feature] = tuple(own.get(feature, ()))
            supported[ns] = merged
    environment = dict(profile.environment) or None
    return Target(
        supported=supported,
        device_constraints=tuple(constraints),
        enabled_optional=enabled_optional,
        environment=environment,
    )


def restrict_profile(profile: Profile, gpu_policy: str) -> Profile:
    """The profile as policy ``device=N`` sees it (others unchanged): properties of that device
    only, and only that device listed."""
    policy = parse_policy(gpu_policy)
    if not policy.startswith("device="):
        return profile
    chosen = _find_device(tuple(profile.devices), policy[len("device=") :])
    target = target_from_profile(profile, policy)
    return Profile(
        {ns: dict(f) for ns, f in target.supported.items()},
        (chosen,),
        profile.environment,
        profile.sources,
    )
