"""What the user asked for: requirement strings, local wheel paths, local source trees and sdist
files (built into wheels before resolution), direct references (an archive's URL, a
version-control URL: fetched and built before resolution too), requirement/constraint files.

Requirements files are read as pip reads them (:mod:`fitwheel.resolve.reqfile`); fitwheel adds
one per-requirement option, ``--variant=LABEL``: install that variant of the project (what
``fitwheel freeze`` writes for a variant install, so that ``fitwheel install -r`` reproduces
it). What the install acts on becomes a :class:`UserRequirement`; the rest of what a file or
the command line may say (file options, ``--config-settings``) is kept in
:attr:`UserInput.options` and :attr:`UserInput.pending`. The commands apply the file options
(see :meth:`fitwheel.options.SourceOptions.with_file_options`); :func:`ignored` warns of those
fitwheel has no counterpart for, and :func:`unsupported` says why each pending requirement is
not acted on yet.

A requirement whose project only a build can name (a folder, a URL without ``#egg=``) carries
the placeholder name :data:`PLACEHOLDER` until it is built; its extras and marker are kept on
it and carried over to the built project (:func:`named_like`).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import NormalizedName

from fitwheel._values import Frozen
from fitwheel.resolve.reqfile import (
    FileOptions,
    Reader,
    RequirementLine,
    RequirementsReader,
    command_line_requirement,
    read_local,
)
from fitwheel.resolve.reqforms import (
    ARCHIVE_SUFFIXES,
    LocalPath,
    Named,
    RequirementError,
    Url,
    Vcs,
    file_url_path,
)
from fitwheel.variants.names import canonicalize_name

__all__ = [
    "PLACEHOLDER",
    "RequirementError",
    "UserInput",
    "UserRequirement",
    "collect",
    "ignored",
    "named_like",
    "unsupported",
]

#: the name a requirement carries until a build names its project
PLACEHOLDER = "local-source"


def named_like(like: Requirement, name: str, version: str | None = None) -> Requirement:
    """``name`` (``==version``) with the extras and marker of ``like``."""
    text = name
    if like.extras:
        text += f"[{','.join(sorted(like.extras))}]"
    if version is not None:
        text += f"=={version}"
    if like.marker is not None:
        text += f"; {like.marker}"
    return Requirement(text)


def _placeholder(name: str | None, extras: frozenset[str], marker: object | None) -> Requirement:
    text = name or PLACEHOLDER
    if extras:
        text += f"[{','.join(sorted(extras))}]"
    if marker is not None:
        text += f"; {marker}"
    return Requirement(text)


class UserRequirement(Frozen):
    __slots__ = (
        "direct",
        "editable",
        "hashes",
        "origin",
        "requirement",
        "source_path",
        "variant",
        "wheel_path",
    )
    requirement: Requirement
    #: algorithm -> digests pinned with --hash (not part of equality or the hash)
    hashes: dict[str, frozenset[str]]
    #: a local wheel file given directly
    wheel_path: Path | None
    origin: str
    #: ``--variant=LABEL``: install this variant (not part of equality or the hash)
    variant: str | None
    #: a local source tree or sdist file given directly (built into ``wheel_path``)
    source_path: Path | None
    #: ``-e``: installed in editable mode (PEP 660)
    editable: bool
    #: an archive URL or a version-control URL given directly (fetched and built into
    #: ``wheel_path`` before resolution)
    direct: Url | Vcs | None

    def __init__(
        self,
        requirement: Requirement,
        hashes: dict[str, frozenset[str]] | None = None,
        wheel_path: Path | None = None,
        origin: str = "command line",
        variant: str | None = None,
        source_path: Path | None = None,
        editable: bool = False,
        direct: Url | Vcs | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "requirement", requirement)
        _set(self, "hashes", {} if hashes is None else hashes)
        _set(self, "wheel_path", wheel_path)
        _set(self, "origin", origin)
        _set(self, "variant", variant)
        _set(self, "source_path", source_path)
        _set(self, "editable", editable)
        _set(self, "direct", direct)

    def _values(self) -> tuple[object, ...]:
        # the pinned hashes and the variant are not part of equality or the hash
        return (
            self.requirement,
            self.wheel_path,
            self.origin,
            self.source_path,
            self.editable,
            self.direct,
        )

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.requirement.name)


class UserInput:
    __slots__ = ("constraints", "files", "options", "pending", "requirements")

    def __init__(
        self,
        requirements: list[UserRequirement] | None = None,
        constraints: list[UserRequirement] | None = None,
    ) -> None:
        self.requirements: list[UserRequirement] = [] if requirements is None else requirements
        self.constraints: list[UserRequirement] = [] if constraints is None else constraints
        #: the requirements and constraints files read, in order (nested ones included)
        self.files: list[str] = []
        #: the options the requirements files set
        self.options = FileOptions()
        #: requirements (and constraints) read but not acted on yet: see :func:`unsupported`
        self.pending: list[RequirementLine] = []


def _project_folder(path: Path, origin: str) -> None:
    if not path.is_dir():
        raise RequirementError(f"{origin}: {path} is not a folder or a file that exists.")
    if not any((path / f).is_file() for f in ("pyproject.toml", "setup.py")):
        raise RequirementError(
            f"{origin}: {path} is a folder without pyproject.toml or setup.py, so it "
            "is not a Python project to build."
        )


def _local(line: RequirementLine, form: LocalPath) -> UserRequirement:
    """A local wheel, sdist or project folder (a ``.tar.gz`` or ``.zip`` sdist)."""
    from fitwheel.variants.errors import VariantError
    from fitwheel.variants.filenames import SDIST_SUFFIXES, SdistFilename, WheelFilename

    origin, path = line.origin, form.path
    lower = path.name.lower()
    if lower.endswith(".whl"):
        if not path.is_file():
            raise RequirementError(f"{origin}: the wheel {path} does not exist.")
        wheel = WheelFilename.parse(path.name)
        req = named_like(_placeholder(None, form.extras, form.marker), wheel.name, wheel.version)
        return UserRequirement(req, line.hashes, path.resolve(), origin, line.variant)
    if lower.endswith(SDIST_SUFFIXES):
        if not path.is_file():
            raise RequirementError(f"{origin}: the source distribution {path} does not exist.")
        try:
            parsed = SdistFilename.parse(path.name)
        except VariantError as exc:
            raise RequirementError(f"{origin}: {exc}") from None
        placeholder = _placeholder(parsed.name, form.extras, form.marker)
        return UserRequirement(placeholder, line.hashes, None, origin, source_path=path.resolve())
    _project_folder(path, origin)
    return UserRequirement(
        _placeholder(form.name, form.extras, form.marker),
        line.hashes,
        None,
        origin,
        source_path=path.resolve(),
        editable=line.editable,
    )


def _direct(line: RequirementLine, form: Url | Vcs) -> UserRequirement | None:
    """An archive URL or a version-control URL: fetched and built before resolution."""
    if isinstance(form, Url) and line.editable:
        return None
    if isinstance(form, Url) and form.is_file:
        path = file_url_path(form.url)
        if path.is_dir():
            _project_folder(path, line.origin)
        elif not path.is_file():
            raise RequirementError(
                f"{line.origin}: {form.url} names {path}, which does not exist: name a wheel, "
                "an sdist or a project folder that does."
            )
    requirement = _placeholder(form.name, form.extras, form.marker)
    return UserRequirement(
        requirement,
        line.hashes,
        None,
        line.origin,
        line.variant,
        editable=line.editable,
        direct=form,
    )


def _fragment_hash(url: str) -> bool:
    """Whether ``url`` pins its file's hash (``#sha256=...``; the one reader of URL hashes)."""
    from fitwheel.index.simple import split_fragment

    return bool(split_fragment(url)[1])


def _acted_on(line: RequirementLine, direct: bool) -> UserRequirement | None:
    """The requirement the command acts on, or None where it does not act on this form (yet);
    ``direct``: archive and version-control URLs are acted on."""
    form = line.form
    if line.config_settings:
        return None
    if isinstance(form, Named):
        return UserRequirement(form.requirement, line.hashes, None, line.origin, line.variant)
    if isinstance(form, Url) and form.is_file and not _fragment_hash(form.url):
        path = file_url_path(form.url)
        if not path.is_dir():  # a local file, as a path to it is (a folder keeps its URL)
            form = LocalPath(path, form.name, form.extras, form.marker)
    if isinstance(form, Url | Vcs):
        return _direct(line, form) if direct else None
    from fitwheel.variants.filenames import SDIST_SUFFIXES

    lower = form.path.name.lower()
    if lower.endswith(".whl") or lower.endswith(SDIST_SUFFIXES):
        if line.editable:
            return None
        item = _local(line, form)
        if form.name is not None and canonicalize_name(form.name) != item.name:
            raise RequirementError(
                f"{line.origin}: {form.path.name} is a file of {item.name}, not of {form.name}."
            )
        return item
    if not form.path.is_dir() and lower.endswith(ARCHIVE_SUFFIXES):
        # archives pip reads that fitwheel does not build from
        return None
    return _local(line, form)


def _reason(line: RequirementLine) -> str:
    """Why the install does not act on ``line`` yet."""
    form = line.form
    where = f"{line.origin}: {line.text}"
    if line.config_settings:
        return (
            f"{where}: --config-settings is not passed to build backends yet; build the "
            "project into a wheel and name the wheel."
        )
    if isinstance(form, Url | Vcs):
        what = "a repository" if isinstance(form, Vcs) else "an archive URL"
        return (
            f"{where}: {what} is a direct reference, which `fitwheel install` installs but this "
            "command does not take: publish the project to an index or a find-links folder, "
            "and name it."
        )
    if line.editable:
        return f"{where}: an editable install takes a project folder, not an archive."
    assert isinstance(form, LocalPath)
    return f"{where}: fitwheel builds sdists from .tar.gz and .zip archives only."


def unsupported(user: UserInput) -> list[str]:
    """Why each requirement in ``user`` that the install does not act on yet is not acted on
    (empty when there is none). The file options are acted on (see
    :meth:`fitwheel.options.SourceOptions.with_file_options`), or warned of (:func:`ignored`)."""
    return [_reason(line) for line in user.pending]


def ignored(options: FileOptions) -> list[str]:
    """A warning for each option of a requirements file that pip takes and fitwheel reads
    but does not act on (the install goes on without it, as it would without the line).
    ``--no-require-hashes`` needs none: fitwheel never turns hash-checking on by itself."""
    out: list[str] = []
    if options.prefer_binary is not None:
        out.append(
            f"{options.prefer_binary.origin}: --prefer-binary: fitwheel has no such option and "
            "ignores the line; pass --only-binary :all: (or a project's name) to install "
            "wheels only."
        )
    for option, value in options.pip_only:
        shown = option if value.value == option else f"{option} {value.value}"
        out.append(
            f"{value.origin}: {shown}: fitwheel has no counterpart to this pip option and "
            "ignores the line."
        )
    return out


def collect(
    requirements: Iterable[str],
    files: Iterable[str] = (),
    constraint_files: Iterable[str] = (),
    editables: Iterable[str] = (),
    *,
    read: Reader = read_local,
    env: Mapping[str, str] | None = None,
    allow_pending: bool = False,
    direct: bool = False,
) -> UserInput:
    """What the command line and the requirements files ask for. ``read`` reads requirements
    files (by path or URL), ``env`` expands ``${NAME}`` in them (``os.environ`` by default).
    With ``direct`` (what ``install`` passes) archive and version-control URLs are acted on
    (:attr:`UserRequirement.direct`); otherwise they are pending. Unless ``allow_pending``, a
    requirement the command does not act on is refused, with the reasons :func:`unsupported`
    gives."""
    out = UserInput()
    lines: list[RequirementLine] = []
    cwd = Path.cwd()
    for text in requirements:
        lines.append(command_line_requirement(text, "command line", cwd))
    for text in editables:
        line = command_line_requirement(text, "command line (-e)", cwd, editable=True)
        form = line.form
        if isinstance(form, LocalPath) and not form.path.is_dir():
            raise RequirementError(
                f"-e {text}: an editable install needs a local project folder (with "
                "pyproject.toml or setup.py)."
            )
        lines.append(line)
    reader = RequirementsReader(read, os.environ if env is None else env)
    for name in files:
        reader.parse(name)
    for name in constraint_files:
        reader.parse(name, constraint=True)
    out.files = reader.files
    out.options = reader.options
    for line in [*lines, *reader.lines]:
        if line.constraint and (not isinstance(line.form, Named) or line.form.requirement.extras):
            raise RequirementError(
                f"{line.origin}: a constraint names a version range only, not extras or files."
            )
        item = _acted_on(line, direct)
        if item is None:
            out.pending.append(line)
        else:
            (out.constraints if line.constraint else out.requirements).append(item)
    if not allow_pending:
        reasons = unsupported(out)
        if reasons:
            raise RequirementError("\n".join(reasons))
    return out
