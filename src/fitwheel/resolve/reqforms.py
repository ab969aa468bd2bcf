"""What one requirement names, read from its text alone (no file system, network or VCS tool).

A requirement, on the command line or on a line of a requirements file, takes one of these
forms, as pip reads them:

- a named PEP 508 requirement (``name[extra]>=1; marker``): :class:`Named`;
- ``name @ URL`` or a bare URL of a wheel or sdist (``http``, ``https``, ``file``): :class:`Url`;
- a local path of a wheel, an sdist or a project folder (``.``, ``./path[a,b]``,
  ``dist/x-1.0-py3-none-any.whl``): :class:`LocalPath`, relative to the folder of the file that
  names it (the current folder on the command line);
- a version-control URL (``git+https://host/repo@rev#subdirectory=sub``, with ``name @`` in
  front or a legacy ``#egg=name``; ``hg+``, ``svn+`` and ``bzr+`` too): :class:`Vcs`.

A path counts as one when it has a path separator, starts with ``.`` or ``~``, or ends with an
archive suffix; anything else is read as a name. VCS URLs that would hand options to the VCS
tool (the ``ext::`` transport, a URL or revision that starts with ``-``) are refused.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from packaging.markers import InvalidMarker, Marker
from packaging.requirements import InvalidRequirement, Requirement

from fitwheel._values import Frozen
from fitwheel.errors import InputError
from fitwheel.index.findlinks import local_path
from fitwheel.index.urlnames import url_filename


class RequirementError(InputError):
    pass


#: the transports each version-control system takes (``git+https://``), as pip knows them
VCS_TRANSPORTS: dict[str, frozenset[str]] = {
    "git": frozenset({"http", "https", "ssh", "git", "file"}),
    "hg": frozenset({"http", "https", "ssh", "static-http", "file"}),
    "svn": frozenset({"http", "https", "ssh", "svn", "file"}),
    "bzr": frozenset({"http", "https", "ssh", "sftp", "ftp", "lp", "file"}),
}
#: the URL schemes of archives a requirement can name directly
URL_SCHEMES = frozenset({"http", "https", "file"})
#: archive suffixes that make a bare word a path (pip's list)
ARCHIVE_SUFFIXES = (
    ".whl",
    ".tar.gz",
    ".tgz",
    ".tar",
    ".zip",
    ".tar.bz2",
    ".tbz",
    ".tar.xz",
    ".txz",
    ".tlz",
    ".tar.lz",
    ".tar.lzma",
)
_EXTRAS_RE = re.compile(r"^(.+?)(\[[^\]]+\])$")
#: an scp-like address (``git+git@host:org/repo.git``), which pip does not read either
_SCP_RE = re.compile(r"^[\w.-]+@[\w.-]+:")


class Named(Frozen):
    """``name[extra]>=1; marker``: a project from the indexes."""

    __slots__ = ("requirement",)
    requirement: Requirement

    def __init__(self, requirement: Requirement) -> None:
        object.__setattr__(self, "requirement", requirement)


class Url(Frozen):
    """An archive (wheel or sdist) at a URL: ``name @ https://...`` or the bare URL."""

    __slots__ = ("extras", "marker", "name", "url")
    url: str
    #: the project, from ``name @`` or the wheel's file name (None: only a build can tell)
    name: str | None
    extras: frozenset[str]
    marker: Marker | None

    def __init__(
        self,
        url: str,
        name: str | None,
        extras: frozenset[str] = frozenset(),
        marker: Marker | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "url", url)
        _set(self, "name", name)
        _set(self, "extras", extras)
        _set(self, "marker", marker)

    @property
    def is_file(self) -> bool:
        return self.url.lower().startswith("file:")

    @property
    def subdirectory(self) -> str | None:
        """The ``#subdirectory=`` of a ``file:`` URL naming a folder (None: none given)."""
        return _fragment(self.url).get("subdirectory") or None


class LocalPath(Frozen):
    """A wheel, an sdist or a project folder on this machine (whether it exists is not checked
    here)."""

    __slots__ = ("extras", "marker", "name", "path")
    path: Path
    name: str | None
    extras: frozenset[str]
    marker: Marker | None

    def __init__(
        self,
        path: Path,
        name: str | None = None,
        extras: frozenset[str] = frozenset(),
        marker: Marker | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "path", path)
        _set(self, "name", name)
        _set(self, "extras", extras)
        _set(self, "marker", marker)

    @property
    def is_wheel(self) -> bool:
        return self.path.name.lower().endswith(".whl")


class Vcs(Frozen):
    """A project in a version-control repository (``git+https://host/repo@rev``)."""

    __slots__ = ("extras", "marker", "name", "repository", "revision", "subdirectory", "url", "vcs")
    #: ``git``, ``hg``, ``svn`` or ``bzr``
    vcs: str
    #: the whole URL as written (``git+https://host/repo@v1#egg=x``)
    url: str
    #: the repository's URL without the VCS prefix, revision and fragment
    repository: str
    revision: str | None
    subdirectory: str | None
    #: from ``name @`` or ``#egg=name`` (None: only a checkout can tell)
    name: str | None
    extras: frozenset[str]
    marker: Marker | None

    def __init__(
        self,
        vcs: str,
        url: str,
        repository: str,
        revision: str | None = None,
        subdirectory: str | None = None,
        name: str | None = None,
        extras: frozenset[str] = frozenset(),
        marker: Marker | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "vcs", vcs)
        _set(self, "url", url)
        _set(self, "repository", repository)
        _set(self, "revision", revision)
        _set(self, "subdirectory", subdirectory)
        _set(self, "name", name)
        _set(self, "extras", extras)
        _set(self, "marker", marker)


Form = Named | Url | LocalPath | Vcs


def _vcs_of(text: str) -> str | None:
    head, plus, _rest = text.partition("+")
    head = head.lower()
    return head if plus and head in VCS_TRANSPORTS else None


def _is_url(text: str) -> bool:
    if _vcs_of(text) is not None:
        return True
    scheme = urlsplit(text).scheme.lower()
    return scheme in URL_SCHEMES


def _looks_like_path(text: str) -> bool:
    return "/" in text or text.startswith((".", "~")) or text.lower().endswith(ARCHIVE_SUFFIXES)


def _path(text: str, base: Path | None) -> Path:
    path = Path(text).expanduser()
    return base / path if base is not None and not path.is_absolute() else path


def _fragment(url: str) -> dict[str, str]:
    fragment = urlsplit(url).fragment
    out: dict[str, str] = {}
    for part in fragment.split("&"):
        key, sep, value = part.partition("=")
        if sep:
            out[key] = unquote(value)
    return out


def _split_extras(text: str, origin: str) -> tuple[str, frozenset[str]]:
    match = _EXTRAS_RE.match(text)
    if match is None:
        return text, frozenset()
    try:
        extras = Requirement(f"x{match.group(2)}").extras
    except InvalidRequirement:
        raise RequirementError(
            f"{origin}: {match.group(2)!r} is not a list of extras: write them as [a,b]."
        ) from None
    return match.group(1), frozenset(extras)


def _marker(text: str, origin: str) -> Marker | None:
    text = text.strip()
    if not text:
        return None
    try:
        return Marker(text)
    except InvalidMarker as exc:
        raise RequirementError(f"{origin}: {text!r} is not a valid marker: {exc}.") from None


def vcs_form(
    url: str,
    origin: str,
    name: str | None = None,
    extras: frozenset[str] = frozenset(),
    marker: Marker | None = None,
) -> Vcs:
    """A version-control URL, checked against the forms that hand options to the VCS tool."""
    vcs = _vcs_of(url)
    assert vcs is not None
    rest = url.split("+", 1)[1]
    transport = rest.split(":", 1)[0].lower()
    if transport == "ext" or "ext::" in rest.lower():
        raise RequirementError(
            f"{origin}: {url!r} uses the ext:: transport, which runs a command: name the "
            "repository by an https, ssh or file URL."
        )
    if rest.startswith("-"):
        raise RequirementError(
            f"{origin}: {url!r} starts its repository with '-', which {vcs} would read as an "
            "option: name the repository by its URL."
        )
    if transport not in VCS_TRANSPORTS[vcs]:
        hint = ""
        if _SCP_RE.match(rest):
            hint = f" (for {rest.split(':', 1)[0]}, write {vcs}+ssh://USER@HOST/PATH)"
        raise RequirementError(
            f"{origin}: {url!r}: {vcs} URLs take one of "
            f"{', '.join(f'{vcs}+{t}' for t in sorted(VCS_TRANSPORTS[vcs]))}{hint}."
        )
    repository = rest.split("#", 1)[0]
    revision: str | None = None
    if "@" in urlsplit(repository).path:
        repository, revision = repository.rsplit("@", 1)
        revision = unquote(revision) or None
    if revision is not None and revision.startswith("-"):
        raise RequirementError(
            f"{origin}: {url!r} names the revision {revision!r}, which {vcs} would read as an "
            "option: name a branch, tag or commit."
        )
    fragment = _fragment(url)
    subdirectory = fragment.get("subdirectory") or None
    egg = fragment.get("egg")
    if egg and name is None:
        try:
            parsed = Requirement(egg)
        except InvalidRequirement:
            raise RequirementError(
                f"{origin}: #egg={egg} is not a project name: write #egg=NAME, or NAME @ URL."
            ) from None
        if parsed.specifier or parsed.url or parsed.marker:
            raise RequirementError(
                f"{origin}: #egg={egg} is not a project name: write #egg=NAME, or NAME @ URL."
            )
        name = parsed.name
        extras = extras or frozenset(parsed.extras)
    return Vcs(vcs, url, repository, revision, subdirectory, name, extras, marker)


def _wheel_name(filename: str) -> str | None:
    from fitwheel.variants.errors import VariantError
    from fitwheel.variants.filenames import WheelFilename

    try:
        return WheelFilename.parse(filename).name
    except VariantError:
        return None


def _url_form(
    url: str,
    origin: str,
    name: str | None,
    extras: frozenset[str],
    marker: Marker | None,
) -> Form:
    if _vcs_of(url) is not None:
        return vcs_form(url, origin, name, extras, marker)
    scheme = urlsplit(url).scheme.lower()
    if scheme not in URL_SCHEMES:
        raise RequirementError(
            f"{origin}: {url!r} is not a URL fitwheel can read: name an http, https or file URL, "
            "or a git+, hg+, svn+ or bzr+ repository URL."
        )
    if name is None:
        filename = url_filename(url) or ""
        if filename.lower().endswith(".whl"):
            name = _wheel_name(filename)
            if name is None:
                raise RequirementError(
                    f"{origin}: {filename!r} is not a valid wheel file name, so {url} names no "
                    "project."
                )
        else:
            egg = _fragment(url).get("egg")
            name = egg or None
    return Url(url, name, extras, marker)


def _direct(requirement: Requirement, origin: str, base: Path | None) -> Form:
    url = requirement.url
    assert url is not None
    extras = frozenset(requirement.extras)
    if _vcs_of(url) is None and len(urlsplit(url).scheme) < 2:
        # ``name @ ./path``: a path, from the same folder as any other
        return LocalPath(_path(url, base), requirement.name, extras, requirement.marker)
    return _url_form(url, origin, requirement.name, extras, requirement.marker)


def classify(text: str, origin: str, base: Path | None = None) -> Form:
    """The form of one requirement as written (options already taken off); ``base`` is the
    folder relative paths start from."""
    text = text.strip()
    if _is_url(text):
        # as pip: a URL's marker follows "; " (a bare ";" may be part of the URL)
        url, _sep, markers = text.partition("; ")
        return _url_form(url.strip(), origin, None, frozenset(), _marker(markers, origin))
    head = text.split(";", 1)[0].strip()
    if _looks_like_path(head) and ("@" not in head or _looks_like_path(head.split("@", 1)[0])):
        spec, _, markers = text.partition(";")
        spec, extras = _split_extras(spec.strip(), origin)
        return LocalPath(_path(spec, base), None, extras, _marker(markers, origin))
    try:
        requirement = Requirement(text)
    except InvalidRequirement as exc:
        hint = ""
        if "=" in text and not any(op in text for op in ("==", ">=", "<=", "~=", "!=", "===")):
            hint = " (= is not a version operator: did you mean ==?)"
        raise RequirementError(
            f"{origin}: {text!r} is not a valid requirement: {exc}{hint}."
        ) from exc
    if requirement.url:
        return _direct(requirement, origin, base)
    return Named(requirement)


def classify_editable(text: str, origin: str, base: Path | None = None) -> Form:
    """The form of an ``-e`` requirement: a local project folder (with extras) or a VCS URL
    with a project name, as pip takes them."""
    text = text.strip()
    if _vcs_of(text) is None and not text.lower().startswith("file:") and " @ " in text:
        form = classify(text, origin, base)
    elif _is_url(text):
        form = _url_form(text, origin, None, frozenset(), None)
        if isinstance(form, Url) and form.is_file:
            form = LocalPath(file_url_path(form.url), form.name)
    else:
        spec, extras = _split_extras(text, origin)
        form = LocalPath(_path(spec, base), None, extras)
    if isinstance(form, Vcs) and form.name is None:
        raise RequirementError(
            f"{origin}: -e {text}: name the project, with #egg=NAME or NAME @ URL."
        )
    if isinstance(form, Url) and not form.is_file:
        raise RequirementError(
            f"{origin}: -e {text}: an editable install takes a local project folder or a "
            "version-control URL (git+, hg+, svn+, bzr+), not an archive URL."
        )
    if isinstance(form, Named):
        raise RequirementError(
            f"{origin}: -e {text}: an editable install takes a local project folder or a "
            "version-control URL, not a project name."
        )
    return form


def file_url_path(url: str) -> Path:
    """The local path a ``file:`` URL names (the rule is find-links', which reads them too)."""
    path = local_path(url)
    assert path is not None, url  # a file: URL always names a local path
    return path
