"""Profiles: what a target machine supports, saved as JSON (see the CLI contract).

A profile holds ``properties`` (namespace -> feature -> values, most preferred first), ``devices``
(each with its own per-device ``properties``), ``environment`` (PEP 508 marker values) and
``sources`` (where each namespace's answer came from). Only ``properties`` is required.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from fitwheel._values import Frozen
from fitwheel.errors import InputError
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.names import check_feature, check_namespace, check_value

# Neither ``typing`` nor ``pathlib`` is imported at run time: ``fitwheel select --profile`` loads
# this module on every start. A name spelled TYPE_CHECKING is treated by type checkers as the
# real one.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

PROFILE_VERSION = 1
#: Device facts worth naming in messages, with how they are spelled there.
_DESCRIBED_EXTRAS = (
    ("compute_capability", "compute capability"),
    ("device_ip", "device IP"),
)


_set = object.__setattr__


class Device(Frozen):
    """One accelerator of the target: who made it, its index and its own properties."""

    __slots__ = ("extra", "index", "name", "pci_id", "properties", "vendor")
    vendor: str
    index: int
    name: str
    pci_id: str
    #: per-device features, e.g. {"nvidia": {"sm_arch": ("90_real", "90_virtual")}}
    properties: Mapping[str, Mapping[str, tuple[str, ...]]]
    #: anything else detection knows (compute_capability, gfx_target_version, ...)
    extra: Mapping[str, Any]

    def __init__(
        self,
        vendor: str,
        index: int,
        name: str = "",
        pci_id: str = "",
        properties: Mapping[str, Mapping[str, tuple[str, ...]]] | None = None,
        extra: Mapping[str, Any] | None = None,
    ) -> None:
        _set(self, "vendor", vendor)
        _set(self, "index", index)
        _set(self, "name", name)
        _set(self, "pci_id", pci_id)
        _set(self, "properties", {} if properties is None else properties)
        _set(self, "extra", {} if extra is None else extra)

    def describe(self) -> str:
        """How messages name the device: ``nvidia GPU 1 (NVIDIA GeForce GTX 1080 Ti, compute
        capability 6.1)``."""
        details = [self.name] if self.name else []
        for key, label in _DESCRIBED_EXTRAS:
            if self.extra.get(key):
                details.append(f"{label} {self.extra[key]}")
        if len(details) < 2:
            # No summary fact: name the device's own best value of each feature instead.
            details += [
                f"{f} {v[0]}" for fs in self.properties.values() for f, v in fs.items() if v
            ]
        if not details and self.pci_id:
            details.append(f"PCI id {self.pci_id}")
        suffix = f" ({', '.join(details)})" if details else ""
        return f"{self.vendor} GPU {self.index}{suffix}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"vendor": self.vendor, "index": self.index}
        if self.pci_id:
            out["pci_id"] = self.pci_id
        if self.name:
            out["name"] = self.name
        out.update(self.extra)
        out["properties"] = {
            ns: {f: list(v) for f, v in fs.items()} for ns, fs in self.properties.items()
        }
        return out


class Profile(Frozen):
    """What a target supports, with its devices, marker values and the sources of each answer."""

    __slots__ = ("devices", "environment", "properties", "sources")
    properties: Mapping[str, Mapping[str, tuple[str, ...]]]
    devices: tuple[Device, ...]
    environment: Mapping[str, str]
    sources: Mapping[str, str]

    def __init__(
        self,
        properties: Mapping[str, Mapping[str, tuple[str, ...]]],
        devices: tuple[Device, ...] = (),
        environment: Mapping[str, str] | None = None,
        sources: Mapping[str, str] | None = None,
    ) -> None:
        _set(self, "properties", properties)
        _set(self, "devices", devices)
        _set(self, "environment", {} if environment is None else environment)
        _set(self, "sources", {} if sources is None else sources)

    def to_json(self) -> dict[str, Any]:
        return {
            "fitwheel_profile": PROFILE_VERSION,
            "properties": {
                ns: {f: list(v) for f, v in fs.items()} for ns, fs in self.properties.items()
            },
            "devices": [d.to_json() for d in self.devices],
            "environment": dict(self.environment),
            "sources": dict(self.sources),
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), indent=2) + "\n"


_DEVICE_KEYS = {"vendor", "index", "name", "pci_id", "properties"}


def _properties(raw: Any, path: str) -> dict[str, dict[str, tuple[str, ...]]]:
    if not isinstance(raw, dict):
        raise VariantFormatError(
            "expected an object of namespace -> feature -> [values]", path=path
        )
    out: dict[str, dict[str, tuple[str, ...]]] = {}
    for ns, features in raw.items():
        check_namespace(ns, path=f"{path}.{ns}")
        if not isinstance(features, dict):
            raise VariantFormatError(
                "expected an object of feature -> [values]", path=f"{path}.{ns}"
            )
        out[ns] = {}
        for feat, values in features.items():
            fpath = f"{path}.{ns}.{feat}"
            check_feature(feat, path=fpath)
            if not isinstance(values, list):
                raise VariantFormatError("expected a list of values", path=fpath)
            for i, v in enumerate(values):
                check_value(v, path=f"{fpath}[{i}]")
            out[ns][feat] = tuple(dict.fromkeys(values))
    return out


def parse_profile(data: Any, source: str) -> Profile:
    """Validate decoded JSON as a profile. Errors name ``source`` and the key path."""
    try:
        if not isinstance(data, dict):
            raise VariantFormatError("a profile must be a JSON object")
        version = data.get("fitwheel_profile", PROFILE_VERSION)
        if version != PROFILE_VERSION:
            raise VariantFormatError(
                f"unsupported profile version {version!r} (this fitwheel reads {PROFILE_VERSION})",
                path="fitwheel_profile",
            )
        if "properties" not in data:
            raise VariantFormatError("a profile needs 'properties'")
        props = _properties(data["properties"], "properties")
        devices = []
        raw_devices = data.get("devices", [])
        if not isinstance(raw_devices, list):
            raise VariantFormatError("expected a list of devices", path="devices")
        for i, dev in enumerate(raw_devices):
            dpath = f"devices[{i}]"
            if not isinstance(dev, dict) or not isinstance(dev.get("vendor"), str):
                raise VariantFormatError("a device needs a string 'vendor'", path=dpath)
            devices.append(
                Device(
                    vendor=dev["vendor"],
                    index=int(dev.get("index", i)),
                    name=str(dev.get("name", "")),
                    pci_id=str(dev.get("pci_id", "")),
                    properties=_properties(dev.get("properties", {}), f"{dpath}.properties"),
                    extra={k: v for k, v in dev.items() if k not in _DEVICE_KEYS},
                )
            )
        env = data.get("environment", {})
        if not isinstance(env, dict) or not all(isinstance(v, str) for v in env.values()):
            raise VariantFormatError(
                "expected an object of marker name -> string", path="environment"
            )
        sources = data.get("sources", {})
        if not isinstance(sources, dict):
            raise VariantFormatError("expected an object", path="sources")
        return Profile(
            props, tuple(devices), dict(env), {str(k): str(v) for k, v in sources.items()}
        )
    except VariantFormatError as exc:
        raise exc.with_source(source) from None


def _shown(path: str | Path) -> str:
    """``path`` as ``str(Path(path))`` spells it (``./a//b`` is ``a/b``), for messages."""
    text = os.fspath(path)
    if (
        os.sep == "/"
        and text
        and "//" not in text
        and "/./" not in text
        and not text.startswith("./")
        and not text.endswith(("/", "/."))
    ):
        return text
    from pathlib import Path

    return str(Path(text))


def load_profile(path: str | Path) -> Profile:
    p = _shown(path)
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read profile {p}: {exc.strerror or exc}") from None
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise InputError(f"{p}: not valid JSON: {exc}") from None
    return parse_profile(data, p)
