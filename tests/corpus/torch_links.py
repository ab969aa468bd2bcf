"""A loopback stand-in of PyTorch's download root for the corpus's ``${TORCH_INDEX}/whl/<backend>``
index lines and ``-f ${FIND_LINKS}/torch_stable.html`` pages: the torch, torchvision and
torchaudio releases the corpus pins, under PyTorch's file names with local versions
(``torch-2.1.0+cu118-cp311-cp311-linux_x86_64.whl``), as tiny wheels whose METADATA lists the
pure-Python dependencies each release declares (the CUDA runtime packages left out). As on the
real CUDA 11.8 index, ``numpy`` is served there too (an older release), so a run shows what the
index strategy does with a project that two indexes offer."""

from __future__ import annotations

import sys
import urllib.parse
from pathlib import Path

from tests.kit import build_simple_index, make_wheel

PY = f"cp{sys.version_info.major}{sys.version_info.minor}"
TAG = f"{PY}-{PY}-linux_x86_64"

#: backend -> (torch release, {companion: its release})
RELEASES: dict[str, list[tuple[str, dict[str, str]]]] = {
    "cu117": [("1.13.1", {"torchvision": "0.14.1"})],
    "cu118": [
        ("2.0.1", {"torchvision": "0.15.2"}),
        ("2.1.0", {"torchvision": "0.16.0"}),
        ("2.4.0", {"torchvision": "0.19.0", "torchaudio": "2.4.0"}),
    ],
    "cu121": [
        ("2.2.2", {"torchaudio": "2.2.2"}),
        ("2.3.1", {"torchvision": "0.18.1", "torchaudio": "2.3.1"}),
    ],
    "cpu": [("2.2.2", {"torchvision": "0.17.2"})],
}
#: other projects a backend index serves, as PyTorch's do
ALSO: dict[str, list[tuple[str, str]]] = {"cu118": [("numpy", "1.24.1")]}


def torch_requires(version: str) -> list[str]:
    if version.startswith("1."):
        return ["typing-extensions"]
    deps = ["filelock", "typing-extensions", "sympy", "networkx", "jinja2"]
    return deps if version.startswith("2.0.") else [*deps, "fsspec"]


def build_torch_links(root: Path) -> Path:
    """Write ``root/whl/<backend>/`` (a simple index each) and ``root/whl/torch_stable.html``
    (every wheel, as a find-links page); returns ``root``."""
    anchors = []
    for backend, releases in RELEASES.items():
        wheels = root / "build" / backend
        for version, companions in releases:
            local = f"{version}+{backend}"
            make_wheel(wheels, "torch", local, requires=torch_requires(version), tag=TAG)
            for name, release in companions.items():
                requires = [f"torch=={version}"]
                if name == "torchvision":
                    requires += ["numpy", "requests", "pillow!=8.3.*,>=5.3.0"]
                make_wheel(wheels, name, f"{release}+{backend}", requires=requires, tag=TAG)
        for name, version in ALSO.get(backend, []):
            make_wheel(wheels, name, version, requires_python=">=3.8", tag=TAG)
        build_simple_index(wheels, root / "whl" / backend, pages="")
        for wheel in sorted(wheels.glob("*.whl")):
            if wheel.name.startswith("torch"):
                href = f"{backend}/files/{urllib.parse.quote(wheel.name)}"
                anchors.append(f'<a href="{href}">{wheel.name}</a><br>')
    page = "<!DOCTYPE html>\n<html><body>\n" + "\n".join(anchors) + "\n</body></html>\n"
    (root / "whl" / "torch_stable.html").write_text(page)
    return root
