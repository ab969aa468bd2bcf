"""The torch backend the user's requirements name, and how it meets ``--torch-backend``.

Two things in the requirements name a backend:

- a pin of a routed project whose local version names one (``torch==2.4.0+cu118``,
  ``torchvision===0.24.0+cpu``; read by :func:`~fitwheel.torchbackend.builds.local_backend`),
  among the requirements and constraints whose marker holds for the target (a wheel file
  named directly is not a pin: it is installed whatever its build);
- an index URL (``-i``/``--extra-index-url``, in a requirements file or on the command line)
  that is a per-backend index: ``BASE/<backend>`` for the torch index root in force
  (``--torch-index-url``, PyTorch's by default), or any URL whose path ends in
  ``/whl/<backend>`` (PyTorch's layout, on a mirror of it). ``/whl/nightly/cu130`` names
  nothing: the backend indexes under BASE do not serve nightly builds.

With ``--torch-backend auto`` the backend they name is the one used (:func:`requested_backend`);
a backend named by hand must be the same one; two different backends named by the
requirements are an error. Without a torch-backend setting nothing here applies: the pins
are resolved from the indexes the user gave, as before. Pure: no I/O.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from fitwheel.errors import InputError
from fitwheel.index.auth import split_credentials
from fitwheel.resolve.requirements import UserInput, UserRequirement
from fitwheel.torchbackend.builds import local_backend
from fitwheel.torchbackend.settings import TorchSettings
from fitwheel.variants.names import canonicalize_name

if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Protocol

    class IndexSources(Protocol):
        """Where packages come from, as :class:`fitwheel.options.SourceOptions` says it."""

        @property
        def index_url(self) -> str | None: ...
        @property
        def extra_index_urls(self) -> Sequence[str]: ...
        @property
        def no_index(self) -> bool: ...
        @property
        def index_url_origin(self) -> str | None: ...
        @property
        def origins(self) -> Sequence[tuple[str, str]]: ...


class BackendConflict(InputError):
    """The requirements name two backends, or another one than ``--torch-backend``."""


@dataclass(frozen=True, slots=True)
class Named:
    """A backend the requirements name, and what names it."""

    backend: str
    #: the pin or index option (``torch==2.4.0+cu118``, ``--extra-index-url URL``)
    what: str
    #: where it is written (``requirements.txt:3``, ``the command line``)
    where: str

    def describe(self) -> str:
        """``requirements.txt:3 (torch==2.4.0+cu118)``"""
        return f"{self.where} ({self.what})"


@dataclass(frozen=True, slots=True)
class IndexLine:
    """An index the user gave: its URL, the option, and where it is written."""

    url: str
    option: str
    where: str


def index_lines(sources: IndexSources) -> list[IndexLine]:
    """The indexes the command line and the requirements files give (``sources`` with the
    files' options on top: a file's ``-i`` has replaced those named before it)."""
    written = dict(sources.origins)
    out = []
    if sources.index_url is not None and not sources.no_index:
        url = sources.index_url
        where = sources.index_url_origin or written.get(url, "the command line")
        out.append(IndexLine(url, "--index-url", where))
    for url in sources.extra_index_urls:
        if not sources.no_index:
            out.append(IndexLine(url, "--extra-index-url", written.get(url, "the command line")))
    return out


def _public(url: str) -> str:
    """``url`` without user info (a password never goes into a message)."""
    return split_credentials(url)[0]


def _comparable(url: str) -> str:
    parts = urllib.parse.urlsplit(_public(url).strip())
    return urllib.parse.urlunsplit(
        (parts.scheme.lower(), parts.netloc.lower(), parts.path.rstrip("/"), "", "")
    )


def url_backend(url: str, torch_index_url: str) -> str | None:
    """The backend whose per-backend index ``url`` is (None: it is no such index)."""
    clean = _comparable(url)
    parent, _, last = clean.rpartition("/")
    backend = local_backend(last)
    if backend is None or backend != last.lower():
        return None
    if parent == _comparable(torch_index_url) or parent.rpartition("/")[2] == "whl":
        return backend
    return None


def pin_backend(item: UserRequirement, projects: Collection[str]) -> str | None:
    """The backend a pin of a routed project names by its local version (None: none). A
    wheel file named directly names none: it is installed whatever its build."""
    if item.name not in projects or item.wheel_path is not None or item.source_path is not None:
        return None
    for spec in item.requirement.specifier:
        if spec.operator not in ("==", "==="):
            continue
        try:
            local = Version(spec.version).local
        except InvalidVersion:
            local = spec.version.partition("+")[2] or None
        backend = local_backend(local)
        if backend is not None:
            return backend
    return None


def _namings(
    user: UserInput,
    indexes: Iterable[IndexLine],
    *,
    projects: Collection[str],
    torch_index_url: str,
    markers: Mapping[str, str] | None,
) -> list[Named]:
    routed = {canonicalize_name(p) for p in projects}
    out = []
    for item in (*user.requirements, *user.constraints):
        marker = item.requirement.marker
        if (
            marker is not None
            and markers is not None
            and not marker.evaluate({**markers, "extra": ""})
        ):
            continue
        backend = pin_backend(item, routed)
        if backend is not None:
            where = "the command line" if item.origin == "command line" else item.origin
            out.append(Named(backend, str(item.requirement), where))
    for line in indexes:
        backend = url_backend(line.url, torch_index_url)
        if backend is not None:
            out.append(Named(backend, f"{line.option} {_public(line.url)}", line.where))
    return out


def named_backend(
    user: UserInput,
    indexes: Iterable[IndexLine] = (),
    *,
    projects: Collection[str],
    torch_index_url: str,
    markers: Mapping[str, str] | None = None,
) -> Named | None:
    """The backend the requirements name (the first place that names it), or None. Two
    different backends named are a :class:`BackendConflict` naming both places. ``markers``:
    the target's environment (a pin whose marker is false there names nothing); None: every
    pin counts."""
    namings = _namings(
        user, indexes, projects=projects, torch_index_url=torch_index_url, markers=markers
    )
    if not namings:
        return None
    first = namings[0]
    for other in namings[1:]:
        if other.backend != first.backend:
            raise BackendConflict(
                f"the requirements name two torch backends: {first.what} at {first.where} "
                f"names {first.backend}, {other.what} at {other.where} names {other.backend}. "
                "One environment holds one build of torch: keep the pins and index lines of "
                "one backend."
            )
    return first


def _flag(settings: TorchSettings) -> str:
    if settings.backend_origin == "--torch-backend":
        return f"--torch-backend {settings.backend}"
    return f"torch-backend {settings.backend} (from {settings.backend_origin})"


def requested_backend(
    settings: TorchSettings,
    user: UserInput,
    indexes: Iterable[IndexLine] = (),
    *,
    projects: Collection[str],
    markers: Mapping[str, str] | None = None,
) -> Named | None:
    """What ``auto`` follows: the backend the requirements name, when the torch-backend
    setting is ``auto``. None without a setting (the pins resolve from the user's indexes,
    as they would without fitwheel's routing), or when it names a backend by hand that the
    requirements name too (or do not name at all). A backend named by hand that is not the
    requirements' is a :class:`BackendConflict` naming both."""
    if settings.backend is None:
        return None
    named = named_backend(
        user,
        indexes,
        projects=projects,
        torch_index_url=settings.index_url,
        markers=markers,
    )
    if named is None:
        return None
    if settings.backend == "auto":
        return named
    if named.backend != settings.backend:
        raise BackendConflict(
            f"{_flag(settings)} conflicts with {named.what} at {named.where}, which names the "
            f"{named.backend} build: pass --torch-backend {named.backend} (or auto, which "
            f"follows the requirements), or change {named.where} to the "
            f"{settings.backend} build."
        )
    return None
