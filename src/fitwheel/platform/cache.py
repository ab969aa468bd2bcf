"""A per-boot on-disk cache of provider results.

Library probes (NVML and the like) can take from tens of milliseconds to seconds, while the answer
changes only when the machine boots, a driver is loaded or a device appears. The cache is keyed by
all of these: the boot id, the loaded driver versions (``/sys/module/{nvidia,amdgpu}/version``),
the GPU device nodes, the PCI addresses, the environment variables that steer GPU runtimes, the
set of providers and the fitwheel version. A result with an ``unknown`` namespace is kept for ten
minutes only, anything else for a day; a file that cannot be decoded, that has another key, or a
timestamp in the future is ignored and rewritten.

Directory: the ``detect`` folder of the cache root (:mod:`fitwheel.paths`). Detection under a
sysroot does not use the cache (the files, not the boot, define that answer).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterable, Mapping

from fitwheel import __version__

# ``typing`` is not imported at run time (start-up cost on the detect path); type checkers
# treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Protocol

    from fitwheel.platform.profile import Device
    from fitwheel.platform.result import ProviderResult

    class Files(Protocol):
        """What the cache key reads: a Probe, or :class:`HostFiles`."""

        @property
        def env(self) -> Mapping[str, str]: ...

        def read_text(self, path: str, limit: int = ...) -> str | None: ...

        def listdir(self, path: str) -> list[str]: ...


CACHE_VERSION = 1
FILE_NAME = "detect-v1.json"
TTL_S = 24 * 3600.0
PARTIAL_TTL_S = 600.0

_DEV_PREFIXES = ("nvidia", "kfd", "dxg", "accel")
_ENV_PREFIXES = (
    "CUDA_",
    "NVIDIA_",
    "NV_VARIANT_PROVIDER_",
    "ROCM_",
    "HIP_",
    "HSA_",
    "AMD_",
    "INTEL_",
    "ZE_",
    "ONEAPI_",
)


class HostFiles:
    """This machine's files, read without building a Probe (the start-up path of ``fitwheel
    detect --json``, answered from the cache)."""

    root = "/"

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = env

    def read_text(self, path: str, limit: int = 1 << 20) -> str | None:
        try:
            with open(path, "rb") as fh:
                return fh.read(limit).decode("utf-8", "replace")
        except (OSError, ValueError):
            return None

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []


def _code_stamp() -> str:
    """fitwheel's version and the modification time of this package's folder (it changes when a
    provider module is added or removed)."""
    try:
        stamp = os.stat(os.path.dirname(os.path.abspath(__file__))).st_mtime_ns
    except OSError:
        stamp = 0
    return f"{__version__}:{stamp}"


def default_dir(env: Mapping[str, str]) -> str:
    from fitwheel.paths import detect_dir

    return detect_dir(env)


def cache_key(probe: Files, namespaces: Iterable[str]) -> dict[str, Any] | None:
    """What the cached answer depends on, or None when the boot cannot be identified."""
    boot_id = (probe.read_text("/proc/sys/kernel/random/boot_id", 256) or "").strip()
    if not boot_id:
        return None
    devices = [n for n in probe.listdir("/dev") if n.startswith(_DEV_PREFIXES)]
    devices += [f"dri/{n}" for n in probe.listdir("/dev/dri") if n.startswith("renderD")]
    return {
        "fitwheel": _code_stamp(),
        "root": str(getattr(probe, "root", "/")),
        "boot_id": boot_id,
        "nvidia": (probe.read_text("/sys/module/nvidia/version", 256) or "").strip(),
        "amdgpu": (probe.read_text("/sys/module/amdgpu/version", 256) or "").strip(),
        "devices": devices,
        "pci": probe.listdir("/sys/bus/pci/devices"),
        "env": {k: v for k, v in sorted(probe.env.items()) if k.startswith(_ENV_PREFIXES)},
        "providers": list(namespaces),
    }


def _device_to_json(dev: Device) -> dict[str, Any]:
    return {
        "vendor": dev.vendor,
        "index": dev.index,
        "name": dev.name,
        "pci_id": dev.pci_id,
        "properties": {n: {f: list(v) for f, v in fs.items()} for n, fs in dev.properties.items()},
        "extra": dict(dev.extra),
    }


def _device_from_json(data: dict[str, Any]) -> Device:
    from fitwheel.platform.profile import Device

    return Device(
        vendor=str(data["vendor"]),
        index=int(data["index"]),
        name=str(data["name"]),
        pci_id=str(data["pci_id"]),
        properties={
            str(n): {str(f): tuple(str(v) for v in vs) for f, vs in fs.items()}
            for n, fs in data["properties"].items()
        },
        extra=dict(data["extra"]),
    )


def result_to_json(result: ProviderResult) -> dict[str, Any]:
    return {
        "namespace": result.namespace,
        "status": result.status,
        "properties": {f: list(v) for f, v in result.properties.items()},
        "devices": [_device_to_json(d) for d in result.devices],
        "capabilities": dict(result.capabilities),
        "sources": dict(result.sources),
        "reason": result.reason,
    }


def result_from_json(data: dict[str, Any]) -> ProviderResult:
    from fitwheel.platform.result import ProviderResult

    status = data["status"]
    if status not in ("ok", "absent", "unknown"):
        raise ValueError(f"bad status {status!r}")
    return ProviderResult(
        namespace=str(data["namespace"]),
        status=status,
        properties={str(f): tuple(str(v) for v in vs) for f, vs in data["properties"].items()},
        devices=[_device_from_json(d) for d in data["devices"]],
        capabilities=dict(data["capabilities"]),
        sources={str(k): str(v) for k, v in data["sources"].items()},
        reason=str(data["reason"]),
    )


class DetectionCache:
    """The cache file in ``directory``. Paths are strings: ``pathlib`` costs more to import than
    answering from the cache does."""

    def __init__(
        self, directory: str | os.PathLike[str], *, clock: Callable[[], float] = time.time
    ) -> None:
        self.directory = os.fspath(directory)
        self.path = os.path.join(self.directory, FILE_NAME)
        self._clock = clock

    def load_raw(self, key: Mapping[str, Any]) -> dict[str, dict[str, Any]] | None:
        """The cached results for ``key`` as decoded JSON (namespace -> result fields), or None
        (missing, stale, corrupt or another key)."""
        try:
            with open(self.path, "rb") as fh:
                data = json.loads(fh.read())
            if data.get("version") != CACHE_VERSION or data.get("key") != key:
                return None
            created = float(data["created"])
            results = data["results"]
            if not isinstance(results, dict) or not all(
                isinstance(r, dict) and r.get("status") in ("ok", "absent", "unknown")
                for r in results.values()
            ):
                return None
        except (OSError, ValueError, TypeError, KeyError, AttributeError, RecursionError):
            return None
        now = self._clock()
        partial = any(r["status"] == "unknown" for r in results.values())
        if created > now + 60 or now - created > (PARTIAL_TTL_S if partial else TTL_S):
            return None
        return results

    def load(self, key: Mapping[str, Any]) -> dict[str, ProviderResult] | None:
        raw = self.load_raw(key)
        if raw is None:
            return None
        try:
            return {ns: result_from_json(r) for ns, r in raw.items()}
        except (ValueError, TypeError, KeyError, AttributeError):
            return None

    def store(self, key: Mapping[str, Any], results: Mapping[str, ProviderResult]) -> bool:
        """Write the results; False when they cannot be stored (never an error)."""
        try:
            payload = json.dumps(
                {
                    "version": CACHE_VERSION,
                    "key": key,
                    "created": self._clock(),
                    "results": {ns: result_to_json(r) for ns, r in results.items()},
                }
            )
        except (TypeError, ValueError):
            return False
        from fitwheel.fs import atomic_write

        try:
            atomic_write(self.path, payload.encode("utf-8"))
        except OSError:
            return False
        return True


def summary(status: str, sources: Mapping[str, str], reason: str) -> str | None:
    """Where a namespace's answer came from, as the profile's ``sources`` says it (None: the
    namespace is simply not there, nothing to say)."""
    if status == "unknown":
        return f"unknown: {reason}"
    if status == "absent" and not sources:
        return None
    unique = list(dict.fromkeys(sources.values()))
    return " + ".join(unique) if unique else "provider"


def _device_json(dev: Mapping[str, Any]) -> dict[str, Any]:
    # the shape of Device.to_json, from the cache's record of a device
    out: dict[str, Any] = {"vendor": dev["vendor"], "index": dev["index"]}
    if dev["pci_id"]:
        out["pci_id"] = dev["pci_id"]
    if dev["name"]:
        out["name"] = dev["name"]
    out.update(dev["extra"])
    out["properties"] = dev["properties"]
    return out


def cached_profile_json(env: Mapping[str, str] | None = None) -> str | None:
    """This machine's profile JSON, exactly as ``detect(Probe()).profile().dumps()`` writes it,
    straight from a fresh cache entry; None when it has to be detected (no entry, or overrides
    that could change it). Builds no provider result, so it imports next to nothing."""
    from fitwheel.platform.environment import host_environment
    from fitwheel.platform.overrides import may_override

    env = os.environ if env is None else env
    if may_override(env):
        return None
    store = DetectionCache(default_dir(env))
    try:
        with open(store.path, "rb") as fh:
            namespaces = list(json.loads(fh.read())["key"]["providers"])
    except (OSError, ValueError, TypeError, KeyError, RecursionError):
        return None
    # The stored key names the providers it was made with; the code stamp in it changes when
    # provider modules are added or removed, so an entry made before that does not match.
    key = cache_key(HostFiles(env), namespaces)
    if key is None:
        return None
    raw = store.load_raw(key)
    if raw is None or set(raw) != set(namespaces):
        return None
    try:
        results = [raw[ns] for ns in namespaces]
        profile = {
            "fitwheel_profile": 1,
            "properties": {
                r["namespace"]: r["properties"]
                for r in results
                if r["status"] == "ok" and r["properties"]
            },
            "devices": [_device_json(d) for r in results for d in r["devices"]],
            "environment": host_environment(),
            "sources": {
                r["namespace"]: summary_
                for r in results
                if (summary_ := summary(r["status"], r["sources"], r["reason"])) is not None
            },
        }
    except (KeyError, TypeError, AttributeError):
        return None
    return json.dumps(profile, indent=2) + "\n"
