"""Which PyTorch backend (``cu126``, ``rocm6.4``, ``xpu``, ``cpu``) doctor names in its fix
commands, and how it reads a machine's CUDA and ROCm facts for its own checks.

The backend table and the ``auto`` decision belong to :mod:`fitwheel.torchbackend`:
:func:`pick_backend` asks :func:`~fitwheel.torchbackend.choose.choose_backend` (the answer
``--torch-backend auto`` gives, with the CPU fallback accepted), and :func:`published_archs`
reads the architectures a backend's builds of a torch release ship from the same table. What
stays here reads GPU code found in binaries against a device (:func:`cuda_arch_runs`: cubins and
PTX, as the CUDA loader judges them) and the driver's and host's versions from a profile.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from fitwheel.platform.profile import Device, Profile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.torchbackend.choose import Choice

__all__ = [
    "cuda_arch_runs",
    "device_cc",
    "driver_cuda",
    "host_rocm",
    "pick_backend",
    "published_archs",
]

#: the feature of each vendor's namespace that lists a build's GPU architectures
_ARCH_FEATURE = {"nvidia": "sm_arch", "amd": "gfx_arch"}


def published_archs(backend: str, torch_version: str) -> frozenset[str] | None:
    """The GPU architectures (``sm_arch`` values or gfx targets) that ``backend``'s build of
    torch ``torch_version`` ships, by the torch backend table; None when it does not say."""
    from packaging.version import InvalidVersion, Version

    from fitwheel.torchbackend.table import load_backend_table

    try:
        version = Version(torch_version)
    except InvalidVersion:
        return None
    table = load_backend_table()
    release = table.release_for(version)
    vendor = table.backend(backend).vendor if backend else None
    if release is None or vendor not in _ARCH_FEATURE or backend not in release.builds:
        return None
    archs = release.builds[backend].get(vendor, {}).get(_ARCH_FEATURE[vendor], ())
    return frozenset(archs) or None


def device_cc(device: Device) -> tuple[int, int] | None:
    """A CUDA device's compute capability, from detection's fact or its own ``sm_arch``."""
    text = str(device.extra.get("compute_capability") or "")
    major, _, minor = text.partition(".")
    if major.isdigit() and minor.isdigit():
        return int(major), int(minor)
    reals = [
        int(v.split("_")[0])
        for v in device.properties.get("nvidia", {}).get("sm_arch", ())
        if v.endswith("_real") and v.split("_")[0].isdigit()
    ]
    return divmod(max(reals), 10) if reals else None


def cuda_arch_runs(archs: Iterable[str], cc: tuple[int, int]) -> bool:
    """Whether code built for ``archs`` runs on a GPU of compute capability ``cc``: a cubin of
    the same major and a minor not above the GPU's, or PTX of an older or equal arch (JIT)."""
    for arch in archs:
        number, _, kind = arch.partition("_")
        digits = number.rstrip("af")
        if not digits.isdigit():
            continue
        major, minor = divmod(int(digits), 10)
        if kind == "real" and major == cc[0] and minor <= cc[1] and digits == number:
            return True
        if kind == "real" and (major, minor) == cc:
            return True  # an arch-specific cubin (sm_90a) on exactly that GPU
        if kind == "virtual" and (major, minor) <= cc:
            return True
    return False


def driver_cuda(profile: Profile) -> tuple[int, int] | None:
    """The newest CUDA version the NVIDIA driver supports (detection lists it first)."""
    values = profile.properties.get("nvidia", {}).get("cuda_version_lower_bound", ())
    for value in values:
        major, _, minor = value.partition(".")
        if major.isdigit() and minor.isdigit():
            return int(major), int(minor)
    return None


def host_rocm(profile: Profile) -> tuple[int, int] | None:
    values = profile.properties.get("amd", {}).get("rocm_version", ())
    for value in values:
        parts = value.split(".")
        if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
            return int(parts[0]), int(parts[1])
    return None


def pick_backend(
    profile: Profile,
    torch_version: tuple[int, int] | None = None,
    markers: Mapping[str, str] | None = None,
    *,
    gpu_policy: str = "all",
) -> Choice:
    """What ``--torch-backend auto`` chooses for ``profile`` (its GPUs under ``gpu_policy``,
    the environment's ``markers``) for the torch series ``torch_version`` (None: any release),
    the CPU fallback accepted: ``choice.backend`` is ``cpu`` when no GPU build runs here, and
    ``choice.considered`` says why each one does not."""
    import platform as host

    from packaging.specifiers import SpecifierSet

    from fitwheel.platform.policy import target_from_profile
    from fitwheel.torchbackend.choose import choose_backend
    from fitwheel.torchbackend.table import load_backend_table

    env = {**(markers or {}), **profile.environment}
    spec = None
    if torch_version is not None:
        spec = SpecifierSet(f"=={torch_version[0]}.{torch_version[1]}.*")
    return choose_backend(
        load_backend_table(),
        target_from_profile(profile, gpu_policy=gpu_policy),
        profile.devices,
        system=env.get("platform_system") or host.system(),
        machine=env.get("platform_machine") or host.machine(),
        python_version=env.get("python_version"),
        torch_spec=spec,
        allow_fallback=True,
    )
