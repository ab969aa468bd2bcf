"""``fitwheel export`` (one target's part as a hash-pinned requirements file) and ``fitwheel
bundle`` (the files of some targets, the lock and a static simple index, for machines without a
network).

The requirements file names each file by its locked URL with its sha256, one requirement per
line (``name @ URL --hash=sha256:...``), so that ``pip install --require-hashes -r`` and
``uv pip sync`` install exactly the locked files, from wherever the lock says, without an index.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from fitwheel.errors import InputError
from fitwheel.lock.document import Lock, LockedPackage, LockedWheel
from fitwheel.lock.selection import Host, Selection, select


def requirements_text(lock: Lock, selection: Selection) -> tuple[str, list[str]]:
    """The requirements file and warnings (variant wheels that non-variant tools cannot read)."""
    target = selection.target.name if selection.target is not None else "this host"
    lines = [
        f"# {len(selection.files)} files of {lock.source} for target {target}, written by "
        "fitwheel export",
        "# install with: pip install --require-hashes --no-deps -r THIS_FILE",
    ]
    warnings = []
    for package, wheel in sorted(selection.files, key=lambda item: item[0].name):
        if wheel.url is None:
            raise InputError(
                f"{lock.source}: {package.describe()}: {wheel.filename} has a path but no URL; "
                "a requirements file needs a URL for it."
            )
        if wheel.label is not None:
            warnings.append(
                f"{package.name} {package.version} is the variant build {wheel.label} "
                f"({wheel.filename}); installers that do not read wheel variants refuse its "
                "filename: use 'fitwheel sync' for this target"
            )
        lines.append(f"{package.name} @ {wheel.url} \\")
        lines.append(f"    --hash=sha256:{wheel.sha256}")
    return "\n".join(lines) + "\n", warnings


def export(lock: Lock, host: Host, *, allow_fallback: bool = False) -> tuple[str, list[str]]:
    return requirements_text(lock, select(lock, host, allow_fallback=allow_fallback))


Fetch = Callable[[Lock, Sequence[tuple[LockedPackage, LockedWheel]]], list[Path]]


def plugin_files(lock: Lock) -> list[tuple[LockedPackage, LockedWheel]]:
    """The files of the lock's plugins, each as an entry of its own project (a bundle carries
    them, so that ``sync`` can run the plugins without a network)."""
    out = []
    for plugin in lock.plugins:
        for wheel in plugin.wheels:
            parsed = wheel.parsed
            entry = LockedPackage(parsed.normalized_name, str(parsed.parsed_version), (wheel,))
            out.append((entry, wheel))
    return out


def bundle(
    lock: Lock,
    hosts: Sequence[Host],
    out: Path,
    *,
    fetch: Fetch,
    allow_fallback: bool = False,
) -> tuple[Path, int]:
    """Write ``out``: ``pylock.toml`` (the lock, with ``path`` set on the bundled files), the
    files of the targets ``hosts`` select and of the lock's plugins, and a static simple index
    over them (``simple/``,
    ``files/``, built by ``index build``, with the variants files merged from the wheels).
    Returns the lock's path and the number of files.

    ``fetch(lock, files)`` brings each file in, checked against its locked sha256."""
    from fitwheel.fs import atomic_write
    from fitwheel.publish.index_build import build_index

    chosen: dict[str, tuple[LockedPackage, LockedWheel]] = {}
    for host in hosts:
        selection = select(lock, host, allow_fallback=allow_fallback)
        for package, wheel in selection.files:
            chosen.setdefault(wheel.filename, (package, wheel))
    if out.exists() and any(out.iterdir()):
        raise InputError(f"{out} exists and is not empty: give a new folder for the bundle.")
    files = [chosen[name] for name in sorted(chosen)]
    files += [item for item in plugin_files(lock) if item[1].filename not in chosen]
    paths = fetch(lock, files)
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=".bundle-", dir=out.parent) as tmp:
        wheels_dir = Path(tmp) / "wheels"
        wheels_dir.mkdir()
        for path, (_package, wheel) in zip(paths, files, strict=True):
            dest = wheels_dir / wheel.filename
            try:
                os.link(path, dest)
            except OSError:
                shutil.copyfile(path, dest)
        build_index(wheels_dir, out, mode="copy")
    relative = {}
    for _package, wheel in files:
        found = sorted(out.glob(f"files/*/{wheel.filename}"))
        if found:
            relative[wheel.filename] = found[0].relative_to(out).as_posix()
    target = out / "pylock.toml"
    atomic_write(target, lock.with_paths(relative).dumps().encode())
    return target, len(files)
