"""Which locked files fit a host: the part of the lock ``sync`` and ``export`` install.

Pure: a :class:`Host` (its variant target, devices, marker values and wheel tags) and a
:class:`~fitwheel.lock.document.Lock` in, a :class:`Selection` out. The steps:

1. For every entry with variant wheels, the host's own choice among the locked files: PEP 825's
   ordering of the locked labels for the host (the inline ``variants-json``), the best tag
   within a label, the non-variant wheel last.
2. A target of the lock fits the host when its marker holds here, each of its files carries a
   tag of the host, for each variant entry the host's own choice is the file that target
   locked, and, when ``--torch-backend auto`` chose the target's torch backend, that backend's
   build of the locked torch is one the same choice accepts for the host (a CUDA build runs on
   its GPUs and driver; the cpu build only where no GPU build would run, or with
   ``allow_fallback``): per-backend builds are plain wheels, told apart by nothing else. The
   first target that fits is installed, exactly its files. A build made for versions of
   another distribution (``abi_dependency``) is the host's choice for a target only when those
   versions match the ones that target locks.
3. When none fits because a package's only fitting build leaves a GPU here unused, that is
   refused, naming the device and what the lock covers (``allow_fallback`` accepts the build
   without GPU support). When none fits for another reason, each target's reason is named.

A lock without fitwheel's target table (written by another tool) is read the generic way:
every entry whose marker holds, with the host's choice of file.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.tags import Tag
from packaging.version import InvalidVersion, Version

from fitwheel.errors import ResolutionError
from fitwheel.lock.document import Lock, LockedPackage, LockedWheel, TargetRecord
from fitwheel.lock.markers import marker_holds
from fitwheel.platform.coverage import unserved_gpus
from fitwheel.platform.profile import Device
from fitwheel.variants.abi import (
    abi_features,
    feature_for,
    matches_any,
    uses_abi,
    with_abi_provider,
)
from fitwheel.variants.ordering import Target, order_variants

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.torchbackend.table import BackendTable


@dataclass(frozen=True, slots=True)
class Host:
    target: Target
    devices: tuple[Device, ...]
    environment: Mapping[str, str]
    tags: tuple[Tag, ...]
    #: a few words naming the host, for messages ("sysroot /srv/m1", "this machine")
    description: str = "this machine"


@dataclass(frozen=True, slots=True)
class Choice:
    """The host's own pick for one entry, with what the ordering said."""

    package: LockedPackage
    wheel: LockedWheel | None
    ordered: tuple[str, ...]
    rejected: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class Selection:
    target: TargetRecord | None
    files: tuple[tuple[LockedPackage, LockedWheel], ...]
    choices: tuple[Choice, ...]
    #: per target of the lock: why it does not fit (empty for the chosen one)
    reasons: Mapping[str, str]


def _fits_tags(wheel: LockedWheel, ranks: Mapping[Tag, int]) -> int | None:
    found = [ranks[t] for t in wheel.parsed.tags if t in ranks]
    return min(found) if found else None


def host_choice(package: LockedPackage, host: Host, ranks: Mapping[Tag, int]) -> Choice:
    fitting = [(w, r) for w in package.wheels if (r := _fits_tags(w, ranks)) is not None]
    fitting.sort(key=lambda item: (item[1], item[0].filename))
    ordered: tuple[str, ...] = ()
    rejected: Mapping[str, str] = {}
    if package.info is not None:
        ordering = order_variants(with_abi_provider(package.info), host.target)
        ordered = tuple(ordering.labels)
        rejected = dict(ordering.rejected)
        for label in ordered:
            for wheel, _rank in fitting:
                if wheel.label == label:
                    return Choice(package, wheel, ordered, rejected)
    plain = next((w for w, _r in fitting if w.label is None), None)
    return Choice(package, plain, ordered, rejected)


def _target_choice(
    lock: Lock, record: TargetRecord, choice: Choice, ranks: Mapping[Tag, int]
) -> Choice:
    """The host's choice for one target of the lock: of builds made for versions of another
    distribution (``abi_dependency``), only those that match the versions this target locks."""
    package, info = choice.package, choice.package.info
    if info is None or not uses_abi(info):
        return choice
    locked: dict[str, Version] = {}
    for p in lock.packages:
        if record.name in p.targets:
            with contextlib.suppress(InvalidVersion):
                locked[feature_for(p.name)] = Version(p.version)
    rejected = dict(choice.rejected)
    fitting = sorted(
        ((w, r) for w in package.wheels if (r := _fits_tags(w, ranks)) is not None),
        key=lambda item: (item[1], item[0].filename),
    )
    for label in choice.ordered:
        desc = info.variants.get(label)
        if desc is None:
            continue
        misfit = [
            f"built for {f} {', '.join(vs)}, and the target locks "
            + (f"{f} {locked[f]}" if f in locked else f"no {f}")
            for f, vs in abi_features(desc).items()
            if f not in locked or not matches_any(vs, locked[f])
        ]
        if misfit:
            rejected[label] = "; ".join(misfit)
            continue
        wheel = next((w for w, _r in fitting if w.label == label), None)
        if wheel is not None:
            return Choice(package, wheel, choice.ordered, rejected)
    plain = next((w for w, _r in fitting if w.label is None), None)
    return Choice(package, plain, choice.ordered, rejected)


def _gpu_refusal(lock: Lock, choices: Sequence[Choice], host: Host) -> str | None:
    """Why the host's choice would leave a GPU here unused, or None. Either the package's
    locked builds for this GPU's kind do not fit it, or the lock has GPU builds of the package
    for other kinds of GPU only (the builds for this one were never locked)."""
    here: dict[str, list[Device]] = {}
    for dev in host.devices:
        for ns in {dev.vendor, *dev.properties}:
            here.setdefault(ns, []).append(dev)
    fix = (
        f"The lock covers: {lock.covers()}. Lock again with a profile of this machine "
        "('fitwheel detect --json -o this.json', then 'fitwheel lock ... --profile "
        "this.json'), or pass --allow-fallback to install the build without GPU support."
    )
    for choice in choices:
        info = choice.package.info
        if info is None or not here:
            continue
        wheel = choice.wheel
        if wheel is not None and wheel.label is not None:
            desc = info.variants.get(wheel.label)
            if desc is not None and not desc.is_null:
                continue
        what = f"{choice.package.name} {choice.package.version} in {lock.source}"
        unserved = unserved_gpus(info, choice.ordered, choice.rejected, host.devices)
        if unserved is not None:
            return f"{unserved.describe(what)}. {fix}"
        gpu_builds = {
            label: sorted(desc.namespaces)
            for label, desc in info.variants.items()
            if not desc.is_null and desc.namespaces & _GPU_NAMESPACES
        }
        if gpu_builds:
            devices = "; ".join(dict.fromkeys(d.describe() for ds in here.values() for d in ds))
            builds = ", ".join(f"{label} ({' '.join(ns)})" for label, ns in gpu_builds.items())
            return (
                f"{what} has locked builds for other GPUs only ({builds}), none for the GPU "
                f"here ({devices}). {fix}"
            )
    return None


#: the namespaces of GPU builds (those the detection of GPUs answers)
_GPU_NAMESPACES = frozenset({"nvidia", "amd", "intel"})


def select(
    lock: Lock, host: Host, *, allow_fallback: bool = False, table: BackendTable | None = None
) -> Selection:
    """``table``: the torch backend table (None: fitwheel's own, read when a target needs it)."""
    ranks = {tag: i for i, tag in enumerate(host.tags)}
    live = [p for p in lock.packages if marker_holds(p.marker, host.environment)]
    choices = tuple(host_choice(p, host, ranks) for p in live if p.info is not None)
    by_entry = {id(c.package): c for c in choices}
    if not lock.targets:
        found: list[tuple[LockedPackage, LockedWheel]] = []
        for p in live:
            choice = by_entry.get(id(p)) or host_choice(p, host, ranks)
            if choice.wheel is None:
                raise ResolutionError(
                    f"{lock.source}: {p.describe()}: no locked file fits {host.description} "
                    f"(its wheels: {', '.join(w.filename for w in p.wheels)})."
                )
            found.append((p, choice.wheel))
        return Selection(None, tuple(found), choices, {})
    refusal = None if allow_fallback else _gpu_refusal(lock, choices, host)
    reasons: dict[str, str] = {}
    if table is None and any(r.torch_backend_requested == "auto" for r in lock.targets):
        from fitwheel.torchbackend.table import load_backend_table

        table = load_backend_table()
    for record in lock.targets:
        why = _misfit(lock, record, host, ranks, by_entry)
        if why is None and table is not None:
            why = _backend_misfit(lock, record, host, table, allow_fallback)
        if why is None and refusal is None:
            files = tuple(
                (p, p.wheel(p.targets[record.name]))
                for p in lock.packages
                if record.name in p.targets
            )
            return Selection(record, files, choices, reasons)
        reasons[record.name] = why or "its build would leave the GPU here unused"
    if refusal is not None:
        raise ResolutionError(refusal)
    detail = "; ".join(f"{name}: {why}" for name, why in reasons.items())
    raise ResolutionError(
        f"nothing in {lock.source} fits {host.description} "
        f"(python {host.environment.get('python_version')}, "
        f"{host.environment.get('sys_platform')} {host.environment.get('platform_machine')}): "
        f"{detail}. Lock again with a profile of this machine ('fitwheel detect --json -o "
        "this.json', then 'fitwheel lock ... --profile this.json')."
    )


def _misfit(
    lock: Lock,
    record: TargetRecord,
    host: Host,
    ranks: Mapping[Tag, int],
    choices: Mapping[int, Choice],
) -> str | None:
    if not marker_holds(record.marker, host.environment):
        return f"its environment ({record.marker}) is not this host's"
    for p in lock.packages:
        filename = p.targets.get(record.name)
        if filename is None:
            continue
        wheel = p.wheel(filename)
        if _fits_tags(wheel, ranks) is None:
            return f"{filename} does not fit this interpreter and platform"
        choice = choices.get(id(p))
        if choice is None:
            continue
        choice = _target_choice(lock, record, choice, ranks)
        if choice.wheel is None or choice.wheel.filename != filename:
            label = wheel.label or "the non-variant wheel"
            picked = choice.wheel.label or "the non-variant wheel" if choice.wheel else "nothing"
            why = choice.rejected.get(wheel.label or "", "")
            because = f" ({why})" if why else ""
            return f"it has {p.name} {label}{because}, where this host takes {picked}"
    return None


def _backend_misfit(
    lock: Lock, record: TargetRecord, host: Host, table: BackendTable, allow_fallback: bool
) -> str | None:
    """Why the torch backend ``auto`` chose for ``record`` does not suit the host (None: it
    does, or the target's backend was named by hand, which is used as it is)."""
    backend = record.torch_backend
    if not backend or record.torch_backend_requested != "auto":
        return None
    torch = next((p for p in lock.packages if p.name == "torch" and record.name in p.targets), None)
    if torch is None:
        return None
    try:
        release = Version(torch.version).public
    except InvalidVersion:
        return None
    if backend == "cpu" and allow_fallback:
        return None
    from fitwheel.torchbackend.choose import choose_backend, gpu_devices

    env = host.environment
    choice = choose_backend(
        table,
        host.target,
        host.devices,
        system=env.get("platform_system", ""),
        machine=env.get("platform_machine", ""),
        python_version=env.get("python_version"),
        torch_spec=SpecifierSet(f"=={release}"),
    )
    if backend in choice.ordered:
        return None
    what = f"its torch {torch.version} is the {backend} build"
    if backend == "cpu":
        gpus = "; ".join(d.describe() for d in gpu_devices(host.devices)) or "the GPU here"
        runs = f"; the {', '.join(choice.ordered)} build runs here" if choice.ordered else ""
        return f"{what}, which would leave {gpus} unused{runs} (--allow-fallback takes it)"
    verdict = next(
        (v for v in choice.considered if v.backend == backend and v.reason is not None), None
    )
    return f"{what}, which does not run here" + (f": {verdict.reason}" if verdict else "")
