"""A stand-in of PyTorch's download root: per-backend indexes, a default index, a variant index.

``build_torch_mirror(root)`` writes, under ``root``:

- ``whl/<backend>/``: one simple index per backend (``BASE/<backend>/`` as PyTorch serves them),
  with tiny wheels under the real file names and local versions
  (``torch-2.9.0+cu128-cp311-cp311-manylinux_2_28_x86_64.whl``, linked as PyTorch's pages link
  them: ``torch-2.9.0%2Bcu128-...whl``), whose METADATA carries the
  dependency list that backend's torch declares (NVIDIA's CUDA 12 or 13 runtime packages and
  triton, ROCm's triton, Intel's oneAPI runtime, or nothing GPU-related for cpu), with
  torchvision (``0.24.0+cu128``, requiring ``torch==2.9.0``) and the triton builds alongside;
- ``pypi/simple/``: the default index as it is for Linux x86-64: the CUDA build under a plain
  version (``torch-2.9.0-cp311-...``, with the cu128 dependencies), torchvision, and every
  dependency as a tiny pure wheel;
- ``whl/variant/``: the variant index: variant wheels of torch for every label of the real
  published ``torch-{version}-variants.json``, and the file itself.

The backends of each torch release are those of fitwheel's backend table. Serve ``root`` with
``serve_static`` and pass ``--torch-index-url URL/whl --index-url URL/pypi/simple/``.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.kit.wheels import FIXTURES, build_simple_index, make_wheel

#: the interpreter's tag: the wheels install into the test venvs
PY = f"cp{sys.version_info.major}{sys.version_info.minor}"
LINUX = "manylinux_2_28_x86_64"
LINUX_ARM = "manylinux_2_28_aarch64"
#: torch release -> torchvision release built with it
TORCHVISION = {"2.8.0": "0.23.0", "2.9.0": "0.24.0", "2.10.0": "0.25.0"}
#: torch release -> triton release it pins
TRITON = {"2.8.0": "3.4.0", "2.9.0": "3.5.0", "2.10.0": "3.6.0"}

_COMMON = [
    "filelock",
    "typing-extensions>=4.10.0",
    'setuptools; python_version >= "3.12"',
    "sympy>=1.13.3",
    "networkx>=2.5.1",
    "jinja2",
    "fsspec>=0.8.5",
]
_LINUX_X86 = 'platform_system == "Linux" and platform_machine == "x86_64"'
#: torch 2.9.0's pins of NVIDIA's CUDA 12.6 / 12.8 / 13.0 runtime packages
_CUDA_PINS = {
    "cu126": [
        "nvidia-cuda-nvrtc-cu12==12.6.77",
        "nvidia-cuda-runtime-cu12==12.6.77",
        "nvidia-cuda-cupti-cu12==12.6.80",
        "nvidia-cudnn-cu12==9.10.2.21",
        "nvidia-cublas-cu12==12.6.4.1",
        "nvidia-cufft-cu12==11.3.0.4",
        "nvidia-curand-cu12==10.3.7.77",
        "nvidia-cusolver-cu12==11.7.1.2",
        "nvidia-cusparse-cu12==12.5.4.2",
        "nvidia-cusparselt-cu12==0.7.1",
        "nvidia-nccl-cu12==2.27.5",
        "nvidia-nvshmem-cu12==3.3.20",
        "nvidia-nvtx-cu12==12.6.77",
        "nvidia-nvjitlink-cu12==12.6.85",
        "nvidia-cufile-cu12==1.11.1.6",
    ],
    "cu128": [
        "nvidia-cuda-nvrtc-cu12==12.8.93",
        "nvidia-cuda-runtime-cu12==12.8.90",
        "nvidia-cuda-cupti-cu12==12.8.90",
        "nvidia-cudnn-cu12==9.10.2.21",
        "nvidia-cublas-cu12==12.8.4.1",
        "nvidia-cufft-cu12==11.3.3.83",
        "nvidia-curand-cu12==10.3.9.90",
        "nvidia-cusolver-cu12==11.7.3.90",
        "nvidia-cusparse-cu12==12.5.8.93",
        "nvidia-cusparselt-cu12==0.7.1",
        "nvidia-nccl-cu12==2.27.5",
        "nvidia-nvshmem-cu12==3.3.20",
        "nvidia-nvtx-cu12==12.8.90",
        "nvidia-nvjitlink-cu12==12.8.93",
        "nvidia-cufile-cu12==1.13.1.3",
    ],
    "cu130": [
        "nvidia-cuda-nvrtc==13.0.48",
        "nvidia-cuda-runtime==13.0.48",
        "nvidia-cuda-cupti==13.0.48",
        "nvidia-cudnn-cu13==9.13.0.50",
        "nvidia-cublas==13.0.0.19",
        "nvidia-cufft==12.0.0.15",
        "nvidia-curand==10.4.0.35",
        "nvidia-cusolver==12.0.3.29",
        "nvidia-cusparse==12.6.2.49",
        "nvidia-cusparselt-cu13==0.8.0",
        "nvidia-nccl-cu13==2.27.7",
        "nvidia-nvshmem-cu13==3.3.24",
        "nvidia-nvtx==13.0.39",
        "nvidia-nvjitlink==13.0.39",
        "nvidia-cufile==1.15.0.42",
    ],
}
_CUDA_PINS["cu129"] = _CUDA_PINS["cu128"]
#: torch 2.9.0's pins of Intel's oneAPI runtime (the xpu build)
_XPU_PINS = [
    "intel-cmplr-lib-rt==2025.2.1",
    "intel-cmplr-lib-ur==2025.2.1",
    "intel-cmplr-lic-rt==2025.2.1",
    "intel-sycl-rt==2025.2.1",
    "oneccl-devel==2021.16.1",
    "oneccl==2021.16.1",
    "impi-rt==2021.16.1",
    "onemkl-sycl-blas==2025.2.0",
    "onemkl-sycl-dft==2025.2.0",
    "onemkl-sycl-lapack==2025.2.0",
    "onemkl-sycl-rng==2025.2.0",
    "onemkl-sycl-sparse==2025.2.0",
    "dpcpp-cpp-rt==2025.2.1",
    "intel-opencl-rt==2025.2.1",
    "mkl==2025.2.0",
    "intel-openmp==2025.2.1",
    "tbb==2022.2.0",
    "tcmlib==1.4.0",
    "umf==0.11.0",
    "intel-pti==0.13.1",
]


def torch_requires(backend: str, version: str) -> list[str]:
    """The Requires-Dist of ``backend``'s torch ``version`` (as PyTorch publishes them)."""
    triton = TRITON.get(version, "3.5.0")
    if backend.startswith("cu"):
        pins = [f"{p}; {_LINUX_X86}" for p in _CUDA_PINS.get(backend, _CUDA_PINS["cu128"])]
        return [*_COMMON, *pins, f'triton=={triton}; platform_system == "Linux"']
    if backend.startswith("rocm"):
        return [*_COMMON, f'pytorch-triton-rocm=={triton}; platform_system == "Linux"']
    if backend == "xpu":
        pins = [f'{p}; platform_system == "Linux"' for p in _XPU_PINS]
        return [*_COMMON, *pins, f'pytorch-triton-xpu=={triton}; platform_system == "Linux"']
    return list(_COMMON)


def _dep_name(requirement: str) -> tuple[str, str]:
    from packaging.requirements import Requirement

    req = Requirement(requirement)
    pinned = [s.version for s in req.specifier if s.operator == "=="]
    return req.name, pinned[0] if pinned else "100.0"


@dataclass(frozen=True)
class TorchMirror:
    root: Path
    #: backend -> torch versions on its index
    backends: dict[str, list[str]]

    def torch_index(self, url: str) -> str:
        """``--torch-index-url`` for the mirror served at ``url``."""
        return f"{url}/whl"

    def default_index(self, url: str) -> str:
        return f"{url}/pypi/simple/"

    def variant_index(self, url: str) -> str:
        return f"{url}/whl/variant/"


def _release_backends(version: str) -> list[str]:
    from fitwheel.torchbackend.table import load_backend_table

    series = ".".join(version.split(".")[:2])
    table = load_backend_table()
    release = next(r for r in table.releases if r.series == series)
    return [b.name for b in table.backends if b.name in release.builds]


def build_torch_mirror(
    root: Path,
    versions: Sequence[str] = ("2.9.0", "2.10.0"),
    *,
    platforms: Iterable[str] = (LINUX,),
    variant_versions: Sequence[str] = ("2.9.0", "2.10.0"),
    skip: Iterable[tuple[str, str]] = (),
    literal_plus: bool = False,
) -> TorchMirror:
    """Write the mirror (see the module docstring); ``skip`` leaves out (backend, version)
    pairs, to stand for an index that lacks a build. The pages write a local version's ``+``
    percent-encoded (``torch-2.9.0%2Bcpu-...whl``), as PyTorch's index does; ``literal_plus``
    writes a literal ``+`` instead."""
    skipped = set(skip)
    platforms = tuple(platforms)
    staging = root / "_wheels"
    deps: set[tuple[str, str]] = set()
    backends: dict[str, list[str]] = {}
    for version in versions:
        for backend in _release_backends(version):
            if (backend, version) in skipped:
                continue
            folder = staging / backend
            requires = torch_requires(backend, version)
            for plat in platforms:
                if plat == LINUX_ARM and backend not in ("cpu", "cu128", "cu129", "cu130"):
                    continue
                tag = f"{PY}-{PY}-{plat}"
                _torch_pair(folder, backend, version, TORCHVISION[version], requires, tag)
            triton = TRITON[version]
            triton_name = {"rocm": "pytorch-triton-rocm", "xpu": "pytorch-triton-xpu"}.get(
                backend[:4] if backend.startswith("rocm") else backend, "triton"
            )
            if backend != "cpu":
                make_wheel(
                    folder,
                    triton_name,
                    triton,
                    tag=f"{PY}-{PY}-{LINUX}",
                    files={f"{triton_name.replace('-', '_')}/__init__.py": "BUILD = 'gpu'\n"},
                )
            for req in requires:
                name, pinned = _dep_name(req)
                if name not in ("triton", "pytorch-triton-rocm", "pytorch-triton-xpu"):
                    deps.add((name, pinned))
            backends.setdefault(backend, []).append(version)
    for backend in backends:
        build_simple_index(
            staging / backend, root / "whl" / backend, pages="", literal_plus=literal_plus
        )
    # the default index: the CUDA 12.8 build under a plain version, as on Linux x86-64
    default = staging / "_pypi"
    for version in versions:
        make_wheel(
            default,
            "torch",
            version,
            requires=torch_requires("cu128", version),
            tag=f"{PY}-{PY}-{LINUX}",
            files={"torch/__init__.py": "BUILD = 'cu128 (default index)'\n"},
        )
        make_wheel(
            default,
            "torchvision",
            TORCHVISION[version],
            requires=["numpy", f"torch=={version}", "pillow!=8.3.*,>=5.3.0"],
            tag=f"{PY}-{PY}-{LINUX}",
        )
        make_wheel(default, "triton", TRITON[version], tag=f"{PY}-{PY}-{LINUX}")
    # what the variant index's stand-in builds depend on (see ``torch_like``)
    extra = {("numpy", "2.1.0"), ("pillow", "100.0"), ("nvidia-runtime", "1.0")}
    for name, version in sorted(deps | extra | {("cuda13-extras", "1.0")}):
        make_wheel(default, name, version)
    build_simple_index(default, root / "pypi")
    # the variant index
    from tests.kit.wheels import torch_like

    variant = staging / "_variant"
    for version in variant_versions:
        torch_like(variant, "torch", version, deps=("filelock",), extra_projects=False)
    if variant_versions:
        build_simple_index(variant, root / "whl" / "variant", pages="")
    shutil.rmtree(staging)
    (root / "mirror.json").write_text(json.dumps(backends, indent=1))
    return TorchMirror(root, backends)


__all__ = ["FIXTURES", "LINUX", "LINUX_ARM", "PY", "TorchMirror", "build_torch_mirror"]


# -- other platforms: Windows, macOS, Linux on Arm -------------------------------------------

WINDOWS = "win_amd64"
MAC_ARM = "macosx_11_0_arm64"
#: what the default index gains with ``add_platform_builds``: (name, version, tag, requires).
#: tqdm needs colorama on Windows only (``platform_system``), portalocker pywin32 on Windows
#: only (``sys_platform``), and pywin32 has a Windows wheel only; psutil has a native wheel per
#: platform (abi3, as published).
PLATFORM_PROJECTS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("tqdm", "4.67.1", "py3-none-any", ('colorama; platform_system == "Windows"',)),
    ("colorama", "0.4.6", "py2.py3-none-any", ()),
    ("portalocker", "3.1.1", "py3-none-any", ('pywin32>=226; sys_platform == "win32"',)),
    ("pywin32", "311", f"{PY}-{PY}-{WINDOWS}", ()),
    ("psutil", "7.0.0", "cp36-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64", ()),
    ("psutil", "7.0.0", "cp36-abi3-manylinux_2_17_aarch64.manylinux2014_aarch64", ()),
    ("psutil", "7.0.0", f"cp37-abi3-{WINDOWS}", ()),
    ("psutil", "7.0.0", f"cp36-abi3-{MAC_ARM}", ()),
)


def table_platform(tag: str) -> str:
    """The backend table's name of the platform of wheel platform ``tag`` (``win_amd64`` is
    ``Windows-AMD64``, ``macosx_11_0_arm64`` is ``Darwin-arm64``)."""
    if tag == WINDOWS:
        return "Windows-AMD64"
    if tag.startswith("macosx_"):
        return "Darwin-" + tag.rsplit("_", 1)[1]
    return "Linux-" + ("aarch64" if tag.endswith("aarch64") else "x86_64")


def _backends_for(version: str, tag: str) -> list[str]:
    from fitwheel.torchbackend.table import load_backend_table

    where = table_platform(tag)
    table = load_backend_table()
    return [
        name
        for name in _release_backends(version)
        if not table.backend(name).platforms or where in table.backend(name).platforms
    ]


def _reindex(folder: Path, add: Path, literal_plus: bool, pages: str) -> None:
    """Rebuild the index at ``folder`` over its files and the wheels in ``add``."""
    for wheel in (folder / "files").glob("*.whl"):
        if not (add / wheel.name).exists():
            shutil.copy2(wheel, add / wheel.name)
    shutil.rmtree(folder)
    build_simple_index(add, folder, pages=pages, literal_plus=literal_plus)


def add_platform_builds(
    mirror: TorchMirror,
    platforms: Iterable[str] = (WINDOWS, MAC_ARM, LINUX_ARM),
    *,
    literal_plus: bool = False,
) -> TorchMirror:
    """Add to a mirror ``build_torch_mirror`` wrote the builds PyTorch publishes for other
    platforms, for every torch version on it, on each backend the table publishes for the
    platform (its ``platforms``: CUDA and cpu on Windows, cpu only on macOS, no ROCm off Linux
    x86-64): torch and torchvision for ``win_amd64`` under the backend's local version
    (``torch-2.10.0+cu130-cp311-cp311-win_amd64.whl``), for macOS arm64 the cpu build under a
    plain version with no ABI tag (``torch-2.10.0-cp311-none-macosx_11_0_arm64.whl``), as
    PyTorch's cpu index holds it, and for ``manylinux_2_28_aarch64`` the ``+cpu`` and CUDA
    builds (kept when ``build_torch_mirror(platforms=...)`` wrote them already). Each torch
    declares the dependencies of its backend (the CUDA runtime and triton under Linux markers).
    The default index gains :data:`PLATFORM_PROJECTS`. Returns the mirror."""
    staging = mirror.root / "_platforms"
    platforms = tuple(platforms)
    written: set[str] = set()
    for backend, versions in mirror.backends.items():
        folder = staging / backend
        folder.mkdir(parents=True, exist_ok=True)
        for version in versions:
            for plat in platforms:
                if backend not in _backends_for(version, plat):
                    continue
                mac = plat.startswith("macosx_")
                local = version if mac else f"{version}+{backend}"
                vision = TORCHVISION[version] if mac else f"{TORCHVISION[version]}+{backend}"
                make_wheel(
                    folder,
                    "torch",
                    local,
                    requires=torch_requires(backend, version),
                    tag=f"{PY}-{'none' if mac else PY}-{plat}",
                    files={"torch/__init__.py": f"BUILD = {backend!r}\nPLATFORM = {plat!r}\n"},
                )
                make_wheel(
                    folder,
                    "torchvision",
                    vision,
                    requires=["numpy", f"torch=={version}", "pillow!=8.3.*,>=5.3.0"],
                    tag=f"{PY}-{PY}-{plat}",
                    files={"torchvision/__init__.py": f"BUILD = {backend!r}\n"},
                )
                written.add(backend)
    for backend in sorted(written):
        _reindex(mirror.root / "whl" / backend, staging / backend, literal_plus, "")
    default = staging / "_pypi"
    for name, version, tag, requires in PLATFORM_PROJECTS:
        module = name.replace("-", "_")
        make_wheel(
            default,
            name,
            version,
            requires=requires,
            tag=tag,
            files={f"{module}/__init__.py": f"BUILD = {tag!r}\n"},
        )
    _reindex(mirror.root / "pypi", default, literal_plus, "simple")
    shutil.rmtree(staging)
    return mirror


__all__ += [
    "MAC_ARM",
    "PLATFORM_PROJECTS",
    "WINDOWS",
    "add_platform_builds",
    "table_platform",
]


#: the "2.15 mirror": releases newer than fitwheel's backend table, on backends it lacks
#: (rocm7.2) or has no release data for (cu132); cu128 and rocm7.1 stop at 2.11
PUBLISHED_2_15: dict[str, tuple[str, ...]] = {
    "cu132": ("2.15.0",),
    "cu130": ("2.10.0", "2.11.0", "2.15.0"),
    "cu128": ("2.10.0", "2.11.0"),
    "cu126": ("2.10.0", "2.11.0", "2.15.0"),
    "rocm7.2": ("2.15.0",),
    "rocm7.1": ("2.10.0", "2.11.0"),
    "xpu": ("2.10.0", "2.11.0", "2.15.0"),
    "cpu": ("2.10.0", "2.11.0", "2.15.0"),
}


def _torch_pair(
    folder: Path, backend: str, version: str, vision: str, requires: list[str], tag: str
) -> None:
    """One backend's torch ``version`` and torchvision ``vision`` for platform ``tag``, each
    saying which build it is (``BUILD``)."""
    make_wheel(
        folder,
        "torch",
        f"{version}+{backend}",
        requires=requires,
        tag=tag,
        files={"torch/__init__.py": f"BUILD = {backend!r}\n"},
    )
    make_wheel(
        folder,
        "torchvision",
        f"{vision}+{backend}",
        requires=["numpy", f"torch=={version}", "pillow!=8.3.*,>=5.3.0"],
        tag=tag,
        files={"torchvision/__init__.py": f"BUILD = {backend!r}\n"},
    )


def _published_wheels(folder: Path, backend: str, version: str, tag: str) -> list[str]:
    """One backend's torch and torchvision of ``version`` (and its triton); the requirements
    of its torch."""
    requires = torch_requires(backend, version)
    vision = TORCHVISION.get(version, f"0.{int(version.split('.')[1]) + 15}.0")
    _torch_pair(folder, backend, version, vision, requires, tag)
    if backend != "cpu":
        triton = next(_dep_name(r)[1] for r in requires if "triton" in r)
        name = next(_dep_name(r)[0] for r in requires if "triton" in r)
        make_wheel(folder, name, triton, tag=tag)
    return requires


def build_published_mirror(
    root: Path,
    published: dict[str, tuple[str, ...]] = PUBLISHED_2_15,
    *,
    variant_versions: Sequence[str] = ("2.9.0", "2.10.0"),
    root_listing: bool = True,
) -> TorchMirror:
    """A mirror publishing exactly ``published`` (backend -> torch versions), whatever
    fitwheel's backend table knows: ``whl/<backend>/`` pages, the default index with every
    dependency, and the variant index with variants files for ``variant_versions`` only (as the
    real index has them for some releases). ``root_listing`` writes ``whl/index.html`` listing
    the backend folders, as a mirror's root page does."""
    staging = root / "_wheels"
    tag = f"{PY}-{PY}-{LINUX}"
    deps: set[tuple[str, str]] = set()
    for backend, versions in published.items():
        for version in versions:
            for req in _published_wheels(staging / backend, backend, version, tag):
                name, pinned = _dep_name(req)
                if "triton" not in name:
                    deps.add((name, pinned))
        build_simple_index(staging / backend, root / "whl" / backend, pages="")
    default = staging / "_pypi"
    extra = {("numpy", "2.1.0"), ("pillow", "100.0"), ("nvidia-runtime", "1.0")}
    for name, version in sorted(deps | extra | {("cuda13-extras", "1.0")}):
        make_wheel(default, name, version)
    build_simple_index(default, root / "pypi")
    from tests.kit.wheels import torch_like

    for version in variant_versions:
        torch_like(staging / "_variant", "torch", version, deps=("filelock",), extra_projects=False)
    if variant_versions:
        build_simple_index(staging / "_variant", root / "whl" / "variant", pages="")
    if root_listing:
        entries = [*published, *(["variant"] if variant_versions else [])]
        links = "".join(f'<a href="{name}/">{name}/</a><br>\n' for name in entries)
        (root / "whl" / "index.html").write_text(
            f"<!DOCTYPE html>\n<html><body>\n{links}</body></html>\n"
        )
    shutil.rmtree(staging)
    backends = {name: list(versions) for name, versions in published.items()}
    (root / "mirror.json").write_text(json.dumps(backends, indent=1))
    return TorchMirror(root, backends)
