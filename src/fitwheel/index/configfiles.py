"""Where pip's configuration files are, lowest precedence first (what :mod:`fitwheel.index.config`
reads, and what a remembered install checks for changes: no parser is loaded here)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from fitwheel.paths import home, xdg_config_dirs, xdg_config_home

__all__ = ["pip_config_files"]


def pip_config_files(env: Mapping[str, str], site_prefix: str | None = None) -> list[Path]:
    """pip's configuration files, lowest precedence first."""
    if env.get("PIP_CONFIG_FILE") == os.devnull:
        return []
    files: list[Path] = []
    files += [Path(d) / "pip" / "pip.conf" for d in xdg_config_dirs(env)]
    files.append(Path("/etc/pip.conf"))
    files.append(Path(home(env)) / ".pip" / "pip.conf")
    files.append(Path(xdg_config_home(env)) / "pip" / "pip.conf")
    files.append(Path(site_prefix or sys.prefix) / "pip.conf")
    if env.get("PIP_CONFIG_FILE"):
        files.append(Path(env["PIP_CONFIG_FILE"]))
    return files
