"""What each accelerator package installed is built for, from its own files: the local version
label (``+cu128``), ``torch/version.py`` (read as text, never imported), the recorded
``variant.json``, the GPU code in its libraries and the project name (``cupy-cuda12x``,
``jax-cuda12-plugin``, ``nvidia-cublas-cu12``, ``pytorch-triton-rocm``)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from fitwheel.doctor.backends import published_archs
from fitwheel.doctor.binaries import read_gpu_code
from fitwheel.doctor.inventory import Installed
from fitwheel.torchbackend.gpubuild import local_build

__all__ = ["TORCH_FAMILY", "TRITONS", "Build", "build_of", "torch_minor", "with_gpu_code"]

TORCH_FAMILY = ("torch", "torchvision", "torchaudio")
#: triton and its forks -> the backend kind it serves
TRITONS = {
    "triton": "cuda",
    "pytorch-triton": "cuda",
    "pytorch-triton-rocm": "rocm",
    "triton-rocm": "rocm",
    "pytorch-triton-xpu": "xpu",
    "triton-xpu": "xpu",
}
_VERSION_PY = re.compile(
    r"^(cuda|hip|rocm|xpu)\s*(?::[^=]*)?=\s*(?:'([^']*)'|\"([^\"]*)\"|None)", re.MULTILINE
)
_CUPY = re.compile(r"^cupy-(?:cuda(\d+)x|cuda(\d)(\d)|rocm-(\d+)-(\d+))$")
_JAX_PLUGIN = re.compile(r"^jax-(?:cuda(\d+)|rocm(\d)(\d))-(?:plugin|pjrt)$")
_RUNTIME = re.compile(r"^(?:nvidia-[a-z0-9-]+?|cuda-[a-z0-9-]+?)-cu(\d+)$")
#: at most this many libraries of one package are read for GPU code (the largest first)
MAX_LIBRARIES = 4


@dataclass(slots=True)
class Build:
    """``kind``: "cuda", "rocm", "xpu" or "cpu"; ``version``: the CUDA or ROCm version
    ("12.8"; only the major where that is all the name says: "12"); ``archs``: the GPU code it
    carries (sm_arch values or gfx targets), None when unknown; ``role``: "framework" (torch,
    jax, cupy, ...: code that runs on the GPU), "triton" or "runtime" (CUDA library wheels)."""

    dist: Installed
    kind: str
    version: str
    source: str
    role: str = "framework"
    archs: frozenset[str] | None = None
    arch_source: str = ""

    @property
    def backend(self) -> str:
        """The PyTorch backend index name of this build (``cu128``, ``rocm6.4``, ``xpu``,
        ``cpu``); "" when the version is not precise enough."""
        if self.kind == "cuda" and "." in self.version:
            return "cu" + self.version.replace(".", "")[:3]
        if self.kind == "rocm" and "." in self.version:
            return "rocm" + ".".join(self.version.split(".")[:2])
        return self.kind if self.kind in ("xpu", "cpu") else ""

    def describe(self) -> str:
        if self.kind == "cpu":
            return "a CPU build"
        name = {"cuda": "a CUDA", "rocm": "a ROCm", "xpu": "an XPU"}[self.kind]
        return f"{name} {self.version} build" if self.version else f"{name} build"


def torch_minor(version: str) -> tuple[int, int] | None:
    parts = version.partition("+")[0].split(".")
    if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
        return int(parts[0]), int(parts[1])
    return None


def _short(version: str, parts: int = 2) -> str:
    return ".".join(version.split(".")[:parts])


def _from_version_py(text: str) -> tuple[str, str] | None:
    values = {}
    for m in _VERSION_PY.finditer(text):
        values[m[1]] = m[2] or m[3] or ""
    if not values:
        return None
    if values.get("cuda"):
        return "cuda", _short(values["cuda"])
    if values.get("hip") or values.get("rocm"):
        return "rocm", _short(values.get("rocm") or values["hip"])
    if values.get("xpu"):
        return "xpu", ""
    return "cpu", ""


def _from_variant(dist: Installed) -> tuple[str, str, frozenset[str] | None] | None:
    variant = dist.variant
    if variant is None:
        return None
    props = variant.as_dict()
    if "nvidia" in props:
        archs = props["nvidia"].get("sm_arch")
        bounds = props["nvidia"].get("cuda_version_lower_bound", [])
        version = max(
            bounds, key=lambda v: [int(p) for p in v.split(".") if p.isdigit()], default=""
        )
        return "cuda", version, frozenset(archs) if archs else None
    if "amd" in props:
        archs = props["amd"].get("gfx_arch")
        versions = props["amd"].get("rocm_version", [])
        return "rocm", versions[0] if versions else "", frozenset(archs) if archs else None
    if "intel" in props:
        return "xpu", "", None
    if variant.is_null:
        return "cpu", "", None
    return None


def _gpu_libraries(dist: Installed, kind: str) -> tuple[frozenset[str] | None, str]:
    """The GPU code of the package's largest shared libraries (None: none carries any)."""
    import os
    import stat

    candidates = []
    for rel in dist.files():
        base = rel.rsplit("/", 1)[-1]
        if ".so" not in base or base.endswith(".py"):
            continue
        try:
            info = os.stat(dist.path(rel))
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):  # never open a FIFO or device named like a library
            candidates.append((info.st_size, rel))
    candidates.sort(reverse=True)
    found: set[str] = set()
    names = []
    for _size, rel in candidates[:MAX_LIBRARIES]:
        code = read_gpu_code(str(dist.path(rel)))
        if code is None or code.empty:
            continue
        found |= code.cuda if kind == "cuda" else code.rocm
        names.append(rel.rsplit("/", 1)[-1])
    if not found:
        return None, ""
    return frozenset(found), "the GPU code in " + ", ".join(names)


def build_of(dist: Installed) -> Build | None:
    """The build ``dist`` is, or None when it is no accelerator package."""
    key = dist.key
    if dist.error:
        return None
    if key in TORCH_FAMILY:
        return _torch_family(dist)
    if key in TRITONS:
        return Build(dist, TRITONS[key], "", f"the project name {dist.name}", role="triton")
    m = _CUPY.match(key)
    if m:
        if m[1]:
            return Build(dist, "cuda", m[1], f"the project name {dist.name}")
        if m[2]:
            return Build(dist, "cuda", f"{m[2]}.{m[3]}", f"the project name {dist.name}")
        return Build(dist, "rocm", f"{m[4]}.{m[5]}", f"the project name {dist.name}")
    m = _JAX_PLUGIN.match(key)
    if m:
        if m[1]:
            return with_gpu_code(Build(dist, "cuda", m[1], f"the project name {dist.name}"))
        return with_gpu_code(Build(dist, "rocm", f"{m[2]}.{m[3]}", f"the project name {dist.name}"))
    m = _RUNTIME.match(key)
    if m:
        return Build(dist, "cuda", m[1], f"the project name {dist.name}", role="runtime")
    if key == "onnxruntime-gpu":
        return Build(
            dist,
            "cuda",
            "12" if (torch_minor(dist.version) or (0, 0)) >= (1, 19) else "11",
            f"{dist.name} {dist.version}",
        )
    if key == "tensorflow-rocm":
        return Build(dist, "rocm", "", f"the project name {dist.name}")
    if key == "jaxlib":
        found = local_build(dist.local.split(".", 1)[0]) if dist.local else None
        if found is not None:
            return Build(dist, found[0], found[1], f"the version {dist.version}")
        return None
    variant = _from_variant(dist)
    if variant is not None and variant[0] != "cpu":
        kind, version, archs = variant
        return Build(
            dist,
            kind,
            version,
            "its variant.json",
            archs=archs,
            arch_source="its variant.json" if archs else "",
        )
    return None


def with_gpu_code(build: Build) -> Build:
    """``build`` with the archs its largest libraries carry, where they say and it knew none."""
    if build.archs is None and build.kind in ("cuda", "rocm"):
        archs, source = _gpu_libraries(build.dist, build.kind)
        if archs is not None:
            build.archs, build.arch_source = archs, source
    return build


def _torch_family(dist: Installed) -> Build:
    module = dist.key
    found: tuple[str, str] | None = None
    source = ""
    text = dist.read_text(f"{module}/version.py")
    if text is not None:
        found = _from_version_py(text)
        source = f"{module}/version.py"
    local = local_build(dist.local) if dist.local else None
    if local is not None and (
        found is None or (found[0] == local[0] and not found[1] and local[1])
    ):
        found, source = local, f"the version {dist.version}"
    variant = _from_variant(dist)
    archs: frozenset[str] | None = None
    arch_source = ""
    if variant is not None:
        if found is None:
            found, source = (variant[0], variant[1]), "its variant.json"
        elif not found[1] and variant[1]:
            found = (found[0], variant[1])
        if variant[2] is not None and variant[0] == found[0]:
            archs, arch_source = variant[2], "its variant.json"
    if found is None:
        found, source = ("cpu", ""), "no CUDA, ROCm or XPU marker in its files"
    build = Build(dist, found[0], found[1], source, archs=archs, arch_source=arch_source)
    if build.archs is None:
        with_gpu_code(build)
    if build.archs is None and module == "torch" and build.kind in ("cuda", "rocm"):
        published = published_archs(build.backend, dist.version) if build.backend else None
        if published is not None:
            build.archs = published
            build.arch_source = f"the list of PyTorch's {build.backend} builds"
    return build
