"""A plugin's files against the sha256 hashes pinned for it: a pinned file whose hash differs
is refused, naming the plugin, the file and both hashes."""

from __future__ import annotations

from collections.abc import Mapping

from fitwheel.plugins.errors import PluginError


def check_pins(plugin: str, files: Mapping[str, str], pins: Mapping[str, str], origin: str) -> None:
    """Every file of ``files`` (name -> sha256) that ``pins`` (name -> sha256, from ``origin``)
    names must have its pinned hash; a file pins do not name is refused when there are pins."""
    for name, digest in sorted(files.items()):
        pinned = pins.get(name)
        if pinned is None and pins:
            raise PluginError(
                plugin,
                f"its file {name} (sha256 {digest}) is not among the files pinned in {origin}",
                "nothing was installed; if you trust it, add its hash there or remove the "
                "pins to trust the new files on their first use",
            )
        if pinned is not None and pinned.lower() != digest.lower():
            raise PluginError(
                plugin,
                f"its file {name} has sha256 {digest}, but {origin} pins sha256 {pinned}",
                "nothing was installed; the file changed after it was pinned: find out why "
                "before trusting it, then update or remove the pin",
            )


def same_files(files: Mapping[str, str], pins: Mapping[str, str]) -> bool:
    """Whether ``files`` are exactly the pinned files, hash for hash."""
    return {k: v.lower() for k, v in files.items()} == {k: v.lower() for k, v in pins.items()}
