"""What PyTorch's per-backend indexes publish: the backend folders under ``BASE/``, and the
torch releases on each backend's ``torch`` page.

The root page ``BASE/``, where a mirror serves one, lists the backend folders (``cu126/``,
``rocm7.2/``, ``xpu/``); its other entries (project names) are not backend names and are left
out. Without a root listing the backends are the table's. Both the install (through the index
finder, :mod:`.routing`) and ``fitwheel torch refresh`` read them here.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from fitwheel.errors import FitwheelError, UsageError
from fitwheel.index.simple import Link
from fitwheel.torchbackend.table import check_backend_name
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.names import canonicalize_name

if TYPE_CHECKING:
    from fitwheel.index.http import Session


def torch_wheel(link: Link) -> WheelFilename | None:
    """``link``'s wheel file name when it is a torch wheel."""
    if not link.is_wheel:
        return None
    try:
        wheel = WheelFilename.parse(link.filename)
    except VariantFormatError:
        return None
    return wheel if canonicalize_name(wheel.name) == "torch" else None


def torch_versions(
    links: Iterable[Link], keep: Callable[[WheelFilename], bool] | None = None
) -> tuple[Version, ...]:
    """The torch versions (public part: ``2.15.0`` of ``2.15.0+cu126``) of the wheels among
    ``links`` that ``keep`` accepts, newest first."""
    found: set[Version] = set()
    for link in links:
        wheel = torch_wheel(link)
        if wheel is None or (keep is not None and not keep(wheel)):
            continue
        try:
            found.add(Version(Version(wheel.version).public))
        except InvalidVersion:
            continue
    return tuple(sorted(found, reverse=True))


_HREF = re.compile(r"""href\s*=\s*["']([^"']+)["']""", re.IGNORECASE)


def backend_names(page: str) -> list[str]:
    """The backend folders a root page links to (``cu126/`` -> ``cu126``), in order."""
    out: list[str] = []
    for href in _HREF.findall(page):
        name = href.split("#", 1)[0].split("?", 1)[0].rstrip("/").rsplit("/", 1)[-1]
        try:
            backend = check_backend_name(name, "index entry")
        except UsageError:
            continue
        if backend != "auto" and backend not in out:
            out.append(backend)
    return out


def listed_backends(session: Session | None, base: str) -> list[str] | None:
    """The backend folders ``BASE/`` lists (None: no root listing there, or it cannot be read;
    the backends are then the table's)."""
    if session is None or not base.startswith(("http:", "https:")):
        return None
    url = base.rstrip("/") + "/"
    try:
        resp = session.get(url, accept="text/html", what="torch index root", allow_404=True)
    except FitwheelError:
        return None
    if resp is None:
        return None
    return backend_names(resp.body.decode("utf-8", "replace")) or None
