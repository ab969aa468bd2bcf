"""Plugin wheels for the plugin tests: the look-alike Ascend provider and the hostile ones,
built at test time from the sources in ``tests/data/plugins``."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

from tests.kit import make_wheel

SOURCES = Path(__file__).resolve().parents[1] / "data" / "plugins"
LOOKALIKE = "ascend-lookalike-provider"


def plugin_wheel(
    folder: Path, name: str, source: str, attr: str, *, version: str = "0.0.2", extra: str = ""
) -> Path:
    """A wheel of plugin ``name`` whose module ``plugin`` is ``tests/data/plugins/{source}``
    (with ``extra`` appended), registering ``{module}.plugin:{attr}`` as a variant plugin."""
    module = name.replace("-", "_")
    body = (SOURCES / source).read_text() + extra
    files = {
        f"{module}/__init__.py": f"__version__ = {version!r}\n",
        f"{module}/plugin.py": body,
        f"{module}-{version}.dist-info/entry_points.txt": (
            f"[variant_plugins]\n{module} = {module}.plugin:{attr}\n"
        ),
    }
    return make_wheel(folder, name, version, files=files)


def lookalike_wheel(folder: Path, *, version: str = "0.0.2", extra: str = "") -> Path:
    return plugin_wheel(
        folder,
        LOOKALIKE,
        "ascend_lookalike.py",
        "AscendVariantPlugin",
        version=version,
        extra=extra,
    )


def hostile_wheel(folder: Path, kind: str) -> Path:
    """The hostile plugin ``hostile-{kind}`` (``kind``: a class of ``hostile.py``, lower case)."""
    classes = {
        c.lower(): c
        for c in (
            "Hang",
            "Exit",
            "Crash",
            "Flood",
            "OtherNamespace",
            "BuiltinNamespace",
            "OutOfGrammar",
            "Snoop",
        )
    }
    return plugin_wheel(folder, f"hostile-{kind}", "hostile.py", classes[kind])


def site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info[0]}.{sys.version_info[1]}" / "site-packages"


def unpack_into(venv: Path, wheel: Path) -> None:
    """Put ``wheel``'s files into ``venv`` as an installer would (for the runner's tests,
    which need an environment holding a plugin, not an install)."""
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site_packages(venv))
