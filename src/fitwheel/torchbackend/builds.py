"""Which torch backend a file of a torch-ecosystem project is built for, read from its name.

- a local version that names a backend (``+cu130``, ``+cpu``, ``+rocm6.4``, ``+xpu``, also
  with a suffix such as ``+cpu.cxx11.abi``): that backend;
- a variant label that names one (``cuda12.8``, ``cu128``, ``rocm6.4``, ``xpu``; the null
  variant is the cpu build): that backend;
- a pure-Python wheel (``none-any``): no build, it runs with every backend;
- a platform wheel under a plain version (or a local version that names no backend): the
  build the default index publishes, which is the CPU build for macOS and Windows and, on
  Linux, a GPU build whose backend the name does not say (on x86-64, a CUDA build of the CUDA
  version that release chose);
- a source distribution: what it builds depends on where it is built; its name says nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from fitwheel.torchbackend.refresh import backend_of_label
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import SdistFilename, WheelFilename, is_sdist_filename

#: a backend's name at the start of a local version, alone or before a ``.``-separated suffix
_LOCAL = re.compile(r"(cpu|xpu|cu\d{2,}|rocm\d+\.\d+(?:\.\d+)?)(?:$|\.(?!\d))")
_DEFAULT_CPU = ("macosx", "win")


def local_backend(local: str | None) -> str | None:
    """The backend a (normalised) local version names: ``cu130``, ``cpu.cxx11.abi`` -> ``cpu``;
    None when it names none."""
    if not local:
        return None
    m = _LOCAL.match(local.lower())
    return m.group(1) if m else None


@dataclass(frozen=True, slots=True)
class FileBuild:
    """What a distribution file's name says about its build."""

    name: str
    version: str
    #: "local" (its local version names the backend), "variant" (its variant label does),
    #: "default" (a platform wheel under a plain version), "pure", "source"
    kind: str
    #: the backend it is built for; None: pure, a source distribution, or not said
    backend: str | None = None

    def fits(self, backend: str) -> bool:
        """Whether the file may be taken when ``backend`` was chosen."""
        return self.kind == "pure" or self.backend == backend

    def describe(self) -> str:
        """What the build is, for messages."""
        if self.kind == "source":
            return "a source distribution, whose build depends on where it is built"
        if self.backend is not None:
            how = {"variant": "its variant label", "default": "the default index's build"}
            why = how.get(self.kind, "its local version")
            return f"the {self.backend} build ({why})"
        return (
            "a build its name does not name (under a plain version on Linux, the default "
            "index's CUDA build)"
        )


def build_of(filename: str) -> FileBuild | None:
    """The build of a wheel or source distribution (None: neither, such as a variants file)."""
    if filename.endswith(".whl"):
        try:
            wheel = WheelFilename.parse(filename)
        except VariantFormatError:
            return None
        return _wheel_build(wheel)
    if is_sdist_filename(filename):
        try:
            sdist = SdistFilename.parse(filename)
        except VariantFormatError:
            return None
        return FileBuild(sdist.name, sdist.version, "source")
    return None


def _wheel_build(wheel: WheelFilename) -> FileBuild:
    try:
        local = Version(wheel.version).local
    except InvalidVersion:
        local = wheel.version.partition("+")[2] or None
    named = local_backend(local)
    if named is not None:
        return FileBuild(wheel.name, wheel.version, "local", named)
    if wheel.variant_label is not None:
        label = backend_of_label(wheel.variant_label)
        if label is not None:
            return FileBuild(wheel.name, wheel.version, "variant", label)
    platforms = wheel.platform_tag.split(".")
    if all(p == "any" for p in platforms):
        return FileBuild(wheel.name, wheel.version, "pure")
    cpu = local is None and all(p.startswith(_DEFAULT_CPU) for p in platforms)
    return FileBuild(wheel.name, wheel.version, "default", "cpu" if cpu else None)
