"""The static checks: what is installed against the machine, without importing anything from
the target environment. Pure functions of an :class:`~fitwheel.doctor.inventory.Inventory`, a
:class:`~fitwheel.platform.profile.Profile` (today's detection) and the environment's markers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from fitwheel.doctor.backends import (
    cuda_arch_runs,
    device_cc,
    driver_cuda,
    host_rocm,
    pick_backend,
)
from fitwheel.doctor.builds import (
    TORCH_FAMILY,
    TRITONS,
    Build,
    build_of,
    torch_minor,
    with_gpu_code,
)
from fitwheel.doctor.inventory import Installed, Inventory
from fitwheel.doctor.mismatch import Mismatch, devices_text, mismatch_check, mismatches
from fitwheel.doctor.report import FAIL, NA, PASS, WARN, Check
from fitwheel.platform.profile import Device, Profile
from fitwheel.torchbackend.gpubuild import BUILD_VENDOR, host_fit, usable_gpus
from fitwheel.variants.names import canonicalize_name

__all__ = ["static_checks"]

#: torch minor -> the triton minor its CUDA builds pin (used when torch's metadata names none)
_TRITON_FOR_TORCH = {
    (2, 1): "2.1", (2, 2): "2.2", (2, 3): "2.3", (2, 4): "3.0", (2, 5): "3.1", (2, 6): "3.2",
    (2, 7): "3.3", (2, 8): "3.4", (2, 9): "3.5", (2, 10): "3.6",
}  # fmt: skip


def _ver(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in text.split(".") if p.isdigit())


class _Fixes:
    """Fix commands: one ``fitwheel install`` per torch-family problem, with the backend that
    ``--torch-backend auto`` chooses for the machine
    (:func:`~fitwheel.doctor.backends.pick_backend`)."""

    def __init__(
        self,
        inventory: Inventory,
        profile: Profile,
        markers: Mapping[str, str] | None,
        gpu_policy: str,
    ) -> None:
        self.inventory = inventory
        torch = inventory.get("torch")
        self.torch_version = torch_minor(torch.version) if torch is not None else None
        self.choice = pick_backend(profile, self.torch_version, markers, gpu_policy=gpu_policy)
        self.backend: str = self.choice.backend or "cpu"

    def no_gpu_build(self) -> str | None:
        """Why no torch GPU build runs here (None: one does), for a fix that cannot name one."""
        if self.backend != "cpu" or not self.choice.unserved:
            return None
        reasons = [
            f"{v.backend}: {v.reason}"
            for v in self.choice.considered
            if v.reason is not None
            and not (v.reason.startswith("no ") and v.reason.endswith(" GPU here"))
        ]
        minor = self.torch_version
        series = f"{minor[0]}.{minor[1]}" if minor is not None else None
        judged = self.choice.series
        by = f"judged by torch {judged}'s builds: " if judged and judged != series else ""
        what = f"torch {series}" if series else "torch"
        return f"no {what} GPU build runs on it ({by}{'; '.join(reasons[:3]) or 'none fits'})"

    def torch_install(self, names: Sequence[str] | None = None, backend: str | None = None) -> str:
        """Reinstall the torch family (every member installed, or ``names``) for the backend."""
        pins = []
        for name in names or TORCH_FAMILY:
            dist = self.inventory.get(name)
            if dist is not None:
                pins.append(f"'{dist.name}=={dist.public}'")
        chosen = backend or self.backend
        return f"fitwheel install {' '.join(pins)} --torch-backend {chosen} --force-reinstall"

    @staticmethod
    def reinstall(dist: Installed) -> str:
        return f"fitwheel install '{dist.name}=={dist.public}' --force-reinstall"


def static_checks(
    inventory: Inventory,
    profile: Profile,
    markers: Mapping[str, str] | None = None,
    *,
    gpu_policy: str = "all",
    only: Sequence[str] | None = None,
) -> list[Check]:
    """Every static check; ``only`` (canonical names) limits the package checks to those
    distributions (requirement consistency still covers what they need and what needs them)."""
    fixes = _Fixes(inventory, profile, markers, gpu_policy)
    wanted: set[str] | None = None if only is None else {canonicalize_name(n) for n in only}
    checks: list[Check] = []
    builds: dict[str, Build] = {}
    for dist in inventory.dists.values():
        if wanted is not None and dist.key not in wanted:
            continue
        if dist.error:
            checks.append(
                Check(
                    "metadata",
                    dist.name,
                    FAIL,
                    f"the installed metadata cannot be read ({dist.error}), so nothing can tell "
                    "what this distribution is or needs",
                    f"fitwheel install '{dist.name}=={dist.public}' --force-reinstall"
                    if dist.version
                    else f"remove {dist.dist_info} and install {dist.name} again",
                )
            )
            continue
        if dist.variant_error:
            checks.append(
                Check(
                    "variant",
                    dist.name,
                    FAIL,
                    f"its installed variant.json cannot be read ({dist.variant_error})",
                    _Fixes.reinstall(dist),
                )
            )
        build = build_of(dist)
        if build is not None:
            builds[dist.key] = build
    tensorflow = inventory.get("tensorflow")
    if (
        tensorflow is not None
        and not tensorflow.error
        and "tensorflow" not in builds
        and (wanted is None or "tensorflow" in wanted)
    ):
        builds["tensorflow"] = _tensorflow(tensorflow, inventory)
    found, folded = mismatches(builds, profile)
    for key, build in builds.items():
        if key in found:
            checks.append(mismatch_check(found[key], profile, _mismatch_fix(found[key], fixes)))
        elif key not in folded:
            checks += _build_checks(build, profile, fixes)
    jax = inventory.get("jax")
    if jax is not None and not jax.error and (wanted is None or "jax" in wanted):
        checks += _jax_check(jax, builds, profile)
    for dist in inventory.dists.values():
        if (wanted is None or dist.key in wanted) and dist.variant_info is not None:
            if dist.key in found or dist.key in folded:
                continue  # a variant for a GPU the machine lacks: the build check judges it
            checks += _variant_checks(dist, profile, gpu_policy)
    checks += _companions(inventory, builds, fixes)
    checks += _requirements(inventory, markers, wanted)
    return checks


def _build_checks(build: Build, profile: Profile, fixes: _Fixes) -> list[Check]:
    dist = build.dist
    name = dist.name
    torch_family = dist.key in TORCH_FAMILY
    fix = fixes.torch_install() if torch_family else None
    if dist.key == "tensorflow":
        fix = f"fitwheel install 'tensorflow[and-cuda]=={dist.public}'"
    gpus = usable_gpus(profile)
    if build.role == "triton":
        return []  # judged with torch (companions)
    variant = dist.variant is not None and not dist.variant.is_null
    what = f"{dist.version} is {build.describe()} (from {build.source})"
    if build.kind == "cpu":
        if gpus and (torch_family or dist.key in ("jax", "tensorflow")):
            detail = (
                f"CPU build on a GPU host: {what}, but this machine has "
                f"{devices_text(gpus)}; it runs, on the CPU only, many times slower"
            )
            why = fixes.no_gpu_build() if torch_family else None
            if why is not None:  # reinstalling the cpu build would fix nothing
                detail, fix = f"{detail}; {why}", None
            return [Check("build", name, FAIL, detail, fix)]
        detail = f"{what}; this machine has no GPU it could use" if not gpus else what
        return [Check("build", name, PASS, detail)]
    fit = host_fit(build.kind, profile)
    if fit.verdict != "fits":  # a runtime wheel no framework here uses (frameworks: mismatch)
        return [
            Check(
                "build",
                name,
                WARN,
                f"{what}; this machine has no {fit.vendor_name} GPU, so nothing can use it",
            )
        ]
    own = usable_gpus(profile, BUILD_VENDOR[build.kind])
    checks: list[Check] = []
    if not variant:  # a variant wheel's fit is judged from its recorded properties
        checks.append(_driver_check(build, profile, what, fix))
    if build.role == "framework":  # runtime libraries carry code for their whole CUDA line
        checks.append(_arch_check(build, own, fix, variant))
    return [c for c in checks if c is not None]


def _mismatch_fix(found: Mismatch, fixes: _Fixes) -> str | None:
    """For torch: the build that fits (``cpu`` where there is no GPU), and the removal of the
    GPU runtime and triton wheels nothing else installed needs. Other projects: none known."""
    dist = found.owner.dist
    if dist.key not in TORCH_FAMILY:
        return None
    backend = "cpu" if found.fit.verdict == "no-gpu" else None
    fix = fixes.torch_install(backend=backend)
    gone = {dist.key} | {b.dist.key for b in found.along}
    extra = sorted(
        b.dist.name
        for b in found.along
        if b.dist.key not in TORCH_FAMILY
        and not any(
            _pin_on_any(d, b.dist.key)
            for d in fixes.inventory
            if d.key not in gone | set(TORCH_FAMILY)
        )
    )
    return f"{fix} && fitwheel uninstall {' '.join(extra)}" if extra else fix


def _tensorflow(dist: Installed, inventory: Inventory) -> Build:
    """TensorFlow's Linux wheels use a GPU through the CUDA 12 library wheels of its
    ``and-cuda`` extra; without them it is a CPU build."""
    runtime = [n for n in ("nvidia-cudnn-cu12", "nvidia-cublas-cu12") if inventory.get(n)]
    if runtime:
        return with_gpu_code(Build(dist, "cuda", "12", f"the installed {', '.join(runtime)}"))
    return Build(dist, "cpu", "", "no CUDA library wheels installed beside it")


def _jax_check(jax: Installed, builds: Mapping[str, Build], profile: Profile) -> list[Check]:
    """JAX runs on a GPU only through a plugin (``jax-cuda12-plugin``, ``jax-rocm60-plugin``) or
    a GPU jaxlib; without one it is a CPU build."""
    gpu_builds = [
        b for k, b in builds.items() if k.startswith(("jax-", "jaxlib")) and b.kind != "cpu"
    ]
    if gpu_builds:
        return []  # each plugin is judged as a build
    nvidia, amd = usable_gpus(profile, "nvidia"), usable_gpus(profile, "amd")
    if not nvidia and not amd:
        return [Check("build", jax.name, PASS, f"{jax.version} runs on the CPU; no GPU here")]
    extra = "cuda13" if (driver_cuda(profile) or (0, 0)) >= (13, 0) else "cuda12"
    return [
        Check(
            "build",
            jax.name,
            FAIL,
            f"CPU build on a GPU host: jax {jax.version} has no GPU plugin installed, but this "
            f"machine has {devices_text(nvidia or amd)}",
            f"fitwheel install 'jax[{extra if nvidia else 'rocm'}]=={jax.public}'",
        )
    ]


def _driver_check(build: Build, profile: Profile, what: str, fix: str | None) -> Check:
    name = build.dist.name
    if build.kind == "cuda":
        driver = driver_cuda(profile)
        built = _ver(build.version)
        if driver is None or not built:
            return Check("driver", name, NA, f"{what}; the driver's CUDA version is not known here")
        shown = f"{driver[0]}.{driver[1]}"
        if built[0] > driver[0]:
            return Check(
                "driver",
                name,
                FAIL,
                f"{what}, but the NVIDIA driver supports CUDA {shown} at most: CUDA "
                f"{built[0]} code does not load on it",
                fix or f"upgrade the NVIDIA driver to one for CUDA {build.version}",
            )
        note = ""
        if built[:2] > driver:
            note = f" (through CUDA minor version compatibility: no PTX JIT above {shown})"
        return Check("driver", name, PASS, f"{what}; the driver supports CUDA {shown}{note}")
    if build.kind == "rocm":
        host = host_rocm(profile)
        built = _ver(build.version)
        if host is None or len(built) < 2:
            return Check("driver", name, NA, f"{what}; this host's ROCm version is not known")
        if built[:2] != host:
            return Check(
                "driver",
                name,
                FAIL,
                f"{what}, but this host has ROCm {host[0]}.{host[1]}: its HIP runtime and "
                "kernel driver are not the ones this build was made and tested against",
                fix,
            )
        return Check("driver", name, PASS, f"{what}; this host has ROCm {host[0]}.{host[1]}")
    return Check("driver", name, PASS, what)


def _runs(build: Build, device: Device) -> bool:
    assert build.archs is not None
    if build.kind == "cuda":
        cc = device_cc(device)
        return cc is None or cuda_arch_runs(build.archs, cc)
    targets = device.properties.get("amd", {}).get("gfx_arch", ())
    return not targets or any(t in build.archs for t in targets)


def _arch_check(build: Build, devices: Sequence[Device], fix: str | None, variant: bool) -> Check:
    name = build.dist.name
    if build.archs is None:
        return Check(
            "gpu archs",
            name,
            NA,
            "the GPU architectures compiled into this build cannot be read from its files",
        )
    if variant and build.arch_source == "its variant.json":
        return None  # type: ignore[return-value]  # the variant check covers it
    missing = [d for d in devices if not _runs(build, d)]
    shown = ", ".join(_arch_names(build))
    if missing:
        return Check(
            "gpu archs",
            name,
            FAIL,
            f"no kernels for {devices_text(missing)}: the build carries {shown} (from "
            f"{build.arch_source}); on that GPU every operation fails with 'no kernel image is "
            "available for execution on the device'",
            fix,
        )
    return Check(
        "gpu archs", name, PASS, f"kernels for every GPU here ({shown}, from {build.arch_source})"
    )


def _arch_names(build: Build) -> list[str]:
    assert build.archs is not None
    if build.kind != "cuda":
        return sorted(build.archs)

    def key(arch: str) -> tuple[int, str]:
        number = arch.split("_")[0].rstrip("af")
        return (int(number) if number.isdigit() else 0, arch)

    return [
        ("sm_" if a.endswith("_real") else "compute_") + a.split("_")[0]
        for a in sorted(build.archs, key=key)
    ]


def _variant_checks(dist: Installed, profile: Profile, gpu_policy: str) -> list[Check]:
    from fitwheel.platform.policy import target_from_profile
    from fitwheel.variants.abi import with_abi_provider
    from fitwheel.variants.ordering import order_variants

    info = dist.variant_info
    assert info is not None
    label = next(iter(info.variants), "")
    target = target_from_profile(profile, gpu_policy=gpu_policy)
    # abi_dependency is not the machine's to answer (the installer matched it at install time)
    ordering = order_variants(with_abi_provider(info), target)
    if label in ordering.rejected:
        recorded = "; ".join(
            f"{ns} :: {f} :: {', '.join(vs)}"
            for ns, fs in info.variants[label].as_dict().items()
            for f, vs in fs.items()
        )
        return [
            Check(
                "variant",
                dist.name,
                FAIL,
                f"installed as variant {label} ({recorded}), which today's detection rejects: "
                f"{ordering.rejected[label]}. The machine changed since the install (a driver "
                "downgrade, a moved disk image, a container started on another GPU) or the "
                "build was forced",
                _Fixes.reinstall(dist),
            )
        ]
    return [Check("variant", dist.name, PASS, f"variant {label} still fits today's detection")]


def _companions(inventory: Inventory, builds: Mapping[str, Build], fixes: _Fixes) -> list[Check]:
    torch = builds.get("torch")
    if torch is None:
        return []
    checks: list[Check] = []
    minor = torch_minor(torch.dist.version)
    for name, offset in (("torchvision", 15), ("torchaudio", None)):
        other = builds.get(name)
        if other is None:
            continue
        pinned = _pin_on(other.dist, "torch")
        expected_ok: bool
        if pinned is not None:
            expected_ok = _satisfies(torch.dist.version, pinned)
            wants = f"its metadata requires torch{pinned}"
        elif minor is not None:
            own = torch_minor(other.dist.version)
            if offset is not None:
                target = (0, minor[1] + offset) if minor[0] == 2 else None
            else:
                target = minor if minor >= (2, 1) else None
            expected_ok = target is None or own == target
            wants = f"torch {minor[0]}.{minor[1]} pairs with {name} " + (
                f"{target[0]}.{target[1]}" if target else "(unknown)"
            )
        else:
            continue
        version_fix = (
            f"fitwheel install '{other.dist.name}' 'torch=={torch.dist.public}' "
            f"--torch-backend {torch.backend or fixes.backend}"
        )
        if not expected_ok:
            checks.append(
                Check(
                    "companion",
                    other.dist.name,
                    FAIL,
                    f"{other.dist.name} {other.dist.version} does not go with torch "
                    f"{torch.dist.version}: {wants}; its compiled operators fail to load "
                    "against another torch",
                    version_fix,
                )
            )
        elif (other.kind, other.version) != (torch.kind, torch.version) and not (
            other.kind == torch.kind and (not other.version or not torch.version)
        ):
            checks.append(
                Check(
                    "companion",
                    other.dist.name,
                    FAIL,
                    f"{other.dist.name} {other.dist.version} is {other.describe()}, torch "
                    f"{torch.dist.version} is {torch.describe()}: both must come from one "
                    "backend",
                    f"fitwheel install '{other.dist.name}=={other.dist.public}' --torch-backend "
                    f"{torch.backend or fixes.backend} --force-reinstall",
                )
            )
        else:
            checks.append(
                Check(
                    "companion",
                    other.dist.name,
                    PASS,
                    f"{other.dist.version} matches torch {torch.dist.version}",
                )
            )
    checks += _triton(inventory, torch, builds, minor)
    checks += _runtimes(inventory, torch, builds)
    return checks


def _pin_on(dist: Installed, project: str) -> str | None:
    """The version specifier ``dist`` puts on ``project`` (unconditional or marker-free)."""
    from fitwheel.wheel.metadata import requires_dist_parts

    for value in dist.requires:
        try:
            name, spec, marker = requires_dist_parts(value)
        except ValueError:
            continue
        if (
            canonicalize_name(name) == project
            and spec
            and (marker is None or "extra" not in marker)
        ):
            return spec
    return None


def _satisfies(version: str, spec: str) -> bool:
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import InvalidVersion, Version

    try:
        return SpecifierSet(spec).contains(Version(version), prereleases=True)
    except (InvalidSpecifier, InvalidVersion):
        return True


def _triton(
    inventory: Inventory,
    torch: Build,
    builds: Mapping[str, Build],
    minor: tuple[int, int] | None,
) -> list[Check]:
    tritons = [b for b in builds.values() if b.role == "triton"]
    wanted: tuple[str, str] | None = None
    from fitwheel.wheel.metadata import requires_dist_parts

    for value in torch.dist.requires:
        try:
            name, spec, marker = requires_dist_parts(value)
        except ValueError:
            continue
        if canonicalize_name(name) in TRITONS and (marker is None or "extra" not in marker):
            wanted = (canonicalize_name(name), spec)
    if wanted is None and minor in _TRITON_FOR_TORCH and torch.kind in ("cuda", "rocm", "xpu"):
        flavour = {"cuda": "triton", "rocm": "pytorch-triton-rocm", "xpu": "pytorch-triton-xpu"}
        wanted = (flavour[torch.kind], f"=={_TRITON_FOR_TORCH[minor]}.*")
    checks: list[Check] = []
    for triton in tritons:
        dist = triton.dist
        if triton.kind != torch.kind and torch.kind != "cpu":
            checks.append(
                Check(
                    "companion",
                    dist.name,
                    FAIL,
                    f"{dist.name} {dist.version} serves {triton.kind.upper()} GPUs, but torch "
                    f"{torch.dist.version} is {torch.describe()}: torch.compile generates kernels "
                    "through the triton that matches its backend",
                    f"fitwheel uninstall {dist.name} && "
                    + (
                        f"fitwheel install '{wanted[0]}{wanted[1]}'"
                        if wanted
                        else f"fitwheel install 'torch=={torch.dist.public}' --force-reinstall"
                    ),
                )
            )
            continue
        if (
            wanted is not None
            and wanted[0] == dist.key
            and wanted[1]
            and not _satisfies(dist.version, wanted[1])
        ):
            checks.append(
                Check(
                    "companion",
                    dist.name,
                    FAIL,
                    f"{dist.name} {dist.version} does not match torch {torch.dist.version}, "
                    f"which needs {wanted[0]}{wanted[1]}: torch.compile fails or generates "
                    "wrong code with another triton",
                    f"fitwheel install '{wanted[0]}{wanted[1]}' --force-reinstall",
                )
            )
            continue
        checks.append(
            Check(
                "companion", dist.name, PASS, f"{dist.version} matches torch {torch.dist.version}"
            )
        )
    return checks


def _runtimes(inventory: Inventory, torch: Build, builds: Mapping[str, Build]) -> list[Check]:
    if torch.kind != "cuda" or not torch.version:
        return []
    major = torch.version.split(".")[0]
    checks = []
    for build in builds.values():
        if build.role != "runtime" or build.version.split(".")[0] == major:
            continue
        users = [
            d.name
            for d in inventory.dists.values()
            if d.key not in (build.dist.key, "torch") and _pin_on_any(d, build.dist.key)
        ]
        if users:
            continue  # another CUDA framework of that major uses it
        checks.append(
            Check(
                "companion",
                build.dist.name,
                FAIL,
                f"a CUDA {build.version} runtime wheel under a CUDA {torch.version} torch "
                f"({torch.dist.version}); nothing installed needs it, and its libraries can be "
                "loaded in place of the ones torch was built with",
                f"fitwheel uninstall {build.dist.name}",
            )
        )
    return checks


def _pin_on_any(dist: Installed, project: str) -> bool:
    from fitwheel.wheel.metadata import requires_dist_parts

    for value in dist.requires:
        try:
            name, _spec, _marker = requires_dist_parts(value)
        except ValueError:
            continue
        if canonicalize_name(name) == project:
            return True
    return False


#: requirements between these pairs are judged by the companion checks
_COMPANION_EDGES = {("torchvision", "torch"), ("torchaudio", "torch")} | {
    ("torch", t) for t in TRITONS
}


def _requirements(
    inventory: Inventory, markers: Mapping[str, str] | None, wanted: set[str] | None
) -> list[Check]:
    """``pip check`` (:func:`fitwheel.install.env.inventory.check_inventory`, the ``fitwheel check``
    answer): every requirement of every installed distribution is installed, in a version that
    satisfies it."""
    from fitwheel.install.env.inventory import check_inventory

    checks: list[Check] = []
    for broken in check_inventory(inventory.base, dict(markers or {}), ()):
        dist = canonicalize_name(broken.name)
        requirement = (broken.requirement or "").split(";")[0].strip()
        dep = canonicalize_name(re.split(r"[\s\[<>=!~(@]", requirement, maxsplit=1)[0])
        if wanted is not None and dist not in wanted and dep not in wanted:
            continue
        if (dist, dep) in _COMPANION_EDGES and inventory.get(dep) is not None:
            continue  # judged with its companion, with a fix that fits both
        if broken.kind == "missing":
            detail = (
                f"{broken.name} {broken.version} requires {requirement}, which is not installed"
            )
        else:
            detail = (
                f"{broken.name} {broken.version} requires {requirement}, but "
                f"{broken.installed} is installed"
            )
        checks.append(
            Check("requirements", broken.name, FAIL, detail, f"fitwheel install '{requirement}'")
        )
    if not checks:
        count = len(inventory.base.dists)
        checks.append(
            Check(
                "requirements",
                None,
                PASS,
                f"the requirements of the {count} installed distribution"
                f"{'s' * (count != 1)} are met",
            )
        )
    return checks
