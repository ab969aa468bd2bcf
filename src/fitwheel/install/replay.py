"""Whether an install may be answered from a remembered resolution
(:mod:`fitwheel.install.remembered`), and the part of its key that the options make.

An install is never remembered when it builds or installs something local (editables, wheel or
source files, folders, URLs, ``--no-index``), reads a requirements file from a server
(``-r https://...``; one named inside a file is ruled out when the record is made), checks
hashes (``--require-hashes``), reinstalls (``--force-reinstall``), keeps no cache
(``--no-cache-dir``), asks the indexes again (``--refresh``), or when its caller needs the
resolution itself (``--explain``, ``--verify``; a ``--report`` is written from the record);
``FITWHEEL_NO_REMEMBER=1`` turns the records off. Otherwise the key is made of the typed option
records, field by field, with the torch settings, the requirements, the interpreter named and
``--dry-run``.

Loaded on the short path of a remembered install: no ``typing``, no resolver, no HTTP client.
"""

from __future__ import annotations

from fitwheel.options import key_of

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping

    from fitwheel.install.remembered import Recall
    from fitwheel.install.request import InstallRequest

#: turns the records off (reading and writing)
DISABLE_ENV = "FITWHEEL_NO_REMEMBER"
#: requirement strings that name a file, a folder or a URL (never remembered)
_LOCAL_HINTS = ("/", "\\", "://", "@", "~")
_LOCAL_SUFFIXES = (".whl", ".zip", ".tar.gz", ".tgz", ".tar.bz2", ".tar")


def rememberable(request: InstallRequest, env: Mapping[str, str]) -> bool:
    """Whether ``request`` may use and file records (see the module's docstring; the outputs
    that need the resolution are the caller's to rule out)."""
    sources, resolution = request.sources, request.resolution
    if env.get(DISABLE_ENV, "") not in ("", "0"):
        return False
    # find-links folders and ``file://`` indexes are remembered by their state (a pick of a
    # local wheel is ruled out when the record is made: it has no published hash)
    if request.editables or sources.no_cache or sources.no_index:
        return False
    if sources.refresh or resolution.force_reinstall or resolution.require_hashes:
        return False
    files = [*request.requirement_files, *request.constraint_files]
    if any(name.lower().startswith(("http://", "https://")) for name in files):
        return False  # read from a server: nothing tells when it changes
    for text in request.requirements:
        if text.startswith(".") or any(h in text for h in _LOCAL_HINTS):
            return False
        if text.lower().endswith(_LOCAL_SUFFIXES):
            return False
    return True


def options_key(request: InstallRequest) -> dict[str, object]:
    """The options' part of a record's key: every field of every record, and the inputs
    named on the command line."""
    return {
        "requirements": list(request.requirements),
        "requirement_files": list(request.requirement_files),
        "constraint_files": list(request.constraint_files),
        "python": request.python,
        "dry_run": request.dry_run,
        "sources": key_of(request.sources),
        "resolution": key_of(request.resolution),
        "placement": key_of(request.placement),
        "torch": request.torch,
    }


def recall_for(request: InstallRequest, *, env: Mapping[str, str], target: object) -> Recall | None:
    """The records as ``request`` uses them, or None where it cannot be remembered (or the
    key's inputs cannot be read: the full path then names the problem)."""
    if not rememberable(request, env):
        return None
    from fitwheel.errors import FitwheelError
    from fitwheel.install.remembered import Recall

    sources = request.sources
    cache_dir = None if sources.cache_dir is None else str(sources.cache_dir)
    try:
        return Recall(
            options=options_key(request),
            env=env,
            python=request.python,
            cache_dir=cache_dir,
            target=target,
        )
    except (FitwheelError, OSError, KeyError, TypeError, ValueError):
        return None
