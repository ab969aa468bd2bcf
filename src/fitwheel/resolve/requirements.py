"""What the user asked for: requirement strings, local wheel paths, local source trees and sdist
files (built into wheels before resolution), requirement/constraint files.

Requirement files take pip's core syntax: one PEP 508 requirement per line, ``#`` comments,
backslash continuations, ``-r``/``--requirement`` and ``-c``/``--constraint`` (relative to the
file), and per-requirement ``--hash=algo:digest`` options. fitwheel adds one per-requirement
option, ``--variant=LABEL``: install that variant of the project (what ``fitwheel freeze``
writes for a variant install, so that ``fitwheel install -r`` reproduces it).
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import NormalizedName

from fitwheel._values import Frozen
from fitwheel.errors import InputError
from fitwheel.variants.names import canonicalize_name


class RequirementError(InputError):
    pass


class UserRequirement(Frozen):
    __slots__ = (
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

    def __init__(
        self,
        requirement: Requirement,
        hashes: dict[str, frozenset[str]] | None = None,
        wheel_path: Path | None = None,
        origin: str = "command line",
        variant: str | None = None,
        source_path: Path | None = None,
        editable: bool = False,
    ) -> None:
        _set = object.__setattr__
        _set(self, "requirement", requirement)
        _set(self, "hashes", {} if hashes is None else hashes)
        _set(self, "wheel_path", wheel_path)
        _set(self, "origin", origin)
        _set(self, "variant", variant)
        _set(self, "source_path", source_path)
        _set(self, "editable", editable)

    def _values(self) -> tuple[object, ...]:
        # the pinned hashes and the variant are not part of equality or the hash
        return (self.requirement, self.wheel_path, self.origin, self.source_path, self.editable)

    @property
    def name(self) -> NormalizedName:
        return canonicalize_name(self.requirement.name)


class UserInput:
    __slots__ = ("constraints", "files", "requirements")

    def __init__(
        self,
        requirements: list[UserRequirement] | None = None,
        constraints: list[UserRequirement] | None = None,
    ) -> None:
        self.requirements: list[UserRequirement] = [] if requirements is None else requirements
        self.constraints: list[UserRequirement] = [] if constraints is None else constraints
        #: the requirements and constraints files read, in order (nested ones included)
        self.files: list[str] = []


def _looks_like_wheel(text: str) -> bool:
    if "@" in text or "://" in text or ";" in text:
        return False
    return text.endswith(".whl") and ("/" in text or Path(text).exists())


def _local_source(text: str, base: Path | None) -> Path | None:
    """The source tree or sdist file a requirement names by path (None: not a path)."""
    if "@" in text or "://" in text or ";" in text:
        return None
    from fitwheel.variants.filenames import is_sdist_filename

    pathlike = text.startswith((".", "/", "~")) or "/" in text or is_sdist_filename(text)
    if not pathlike:
        return None
    path = Path(text).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    if path.is_dir() or (is_sdist_filename(path.name) and (path.is_file() or "/" in text)):
        return path
    return None


def parse_line(text: str, origin: str, base: Path | None = None) -> UserRequirement:
    """One requirement (``name[extra]>=1; marker``, optional ``--hash``es and ``--variant``, or
    a wheel path)."""
    import re

    parts = re.split(r"\s+--(?=(?:hash|variant)\b)", text)
    spec = parts[0].strip()
    hashes: dict[str, set[str]] = {}
    variant: str | None = None
    for item in parts[1:]:
        if item.startswith("variant"):
            label = item[len("variant") :].strip().lstrip("=").strip()
            if not label or " " in label:
                raise RequirementError(
                    f"{origin}: --variant must look like --variant=LABEL, not {item!r}."
                )
            variant = label
            continue
        item = item[len("hash") :]
        value = item.strip().lstrip("=").strip()
        algo, sep, digest = value.partition(":")
        if not sep or not digest:
            raise RequirementError(
                f"{origin}: --hash must look like sha256:HEXDIGEST, not {value!r}."
            )
        hashes.setdefault(algo.lower(), set()).add(digest.lower())
    frozen = {k: frozenset(v) for k, v in hashes.items()}
    if _looks_like_wheel(spec):
        path = Path(spec)
        if base is not None and not path.is_absolute():
            path = base / path
        if not path.is_file():
            raise RequirementError(f"{origin}: the wheel {path} does not exist.")
        from fitwheel.variants.filenames import WheelFilename

        wheel = WheelFilename.parse(path.name)
        req = Requirement(f"{wheel.name}=={wheel.version}")
        return UserRequirement(req, frozen, path.resolve(), origin, variant)
    source = _local_source(spec, base)
    if source is not None:
        if source.is_dir():
            if not any((source / f).is_file() for f in ("pyproject.toml", "setup.py")):
                raise RequirementError(
                    f"{origin}: {source} is a folder without pyproject.toml or setup.py, so it "
                    "is not a Python project to build."
                )
            placeholder = Requirement("local-source")
        else:
            if not source.is_file():
                raise RequirementError(
                    f"{origin}: the source distribution {source} does not exist."
                )
            from fitwheel.variants.errors import VariantError
            from fitwheel.variants.filenames import SdistFilename

            try:
                parsed = SdistFilename.parse(source.name)
            except VariantError as exc:
                raise RequirementError(f"{origin}: {exc}") from None
            placeholder = Requirement(f"{parsed.name}=={parsed.version}")
        return UserRequirement(placeholder, frozen, None, origin, source_path=source.resolve())
    try:
        req = Requirement(spec)
    except InvalidRequirement as exc:
        raise RequirementError(f"{origin}: {spec!r} is not a valid requirement: {exc}.") from exc
    if req.url:
        raise RequirementError(
            f"{origin}: {spec!r} is a direct URL requirement; fitwheel installs from indexes, "
            "find-links folders and local wheel paths."
        )
    return UserRequirement(req, frozen, None, origin, variant)


def _logical_lines(text: str) -> Iterable[tuple[int, str]]:
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line = pending + line
        pending = ""
        if line.lstrip().startswith("#"):
            continue
        line = line.split(" #", 1)[0].strip()
        if line:
            yield start, line
    if pending.strip():
        yield start, pending.strip()


def read_file(
    path: Path, into: UserInput, *, constraint: bool = False, seen: set[Path] | None = None
) -> None:
    seen = set() if seen is None else seen
    resolved = path.resolve()
    if resolved in seen:
        return
    seen.add(resolved)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise RequirementError(
            f"cannot read the requirements file {path}: {exc.strerror}."
        ) from exc
    into.files.append(str(path))
    for number, line in _logical_lines(text):
        origin = f"{path}:{number}"
        if line.startswith("-"):
            words = shlex.split(line)
            option, _, inline = words[0].partition("=")
            value = inline or (words[1] if len(words) > 1 else "")
            if option in ("-r", "--requirement", "-c", "--constraint"):
                if not value:
                    raise RequirementError(f"{origin}: {option} needs a file name.")
                nested = path.parent / value
                read_file(
                    nested,
                    into,
                    constraint=constraint or option in ("-c", "--constraint"),
                    seen=seen,
                )
                continue
            raise RequirementError(
                f"{origin}: the option {option} is not supported in requirement files; pass index "
                "options on the command line."
            )
        req = parse_line(line, origin, path.parent)
        (into.constraints if constraint else into.requirements).append(req)


def collect(
    requirements: Iterable[str],
    files: Iterable[str] = (),
    constraint_files: Iterable[str] = (),
    editables: Iterable[str] = (),
) -> UserInput:
    out = UserInput()
    for text in requirements:
        out.requirements.append(parse_line(text, "command line", Path.cwd()))
    for text in editables:
        item = parse_line(text, "command line (-e)", Path.cwd())
        if item.source_path is None or not item.source_path.is_dir():
            raise RequirementError(
                f"-e {text}: an editable install needs a local project folder (with "
                "pyproject.toml or setup.py)."
            )
        out.requirements.append(
            UserRequirement(
                item.requirement,
                item.hashes,
                None,
                item.origin,
                source_path=item.source_path,
                editable=True,
            )
        )
    for name in files:
        read_file(Path(name), out)
    for name in constraint_files:
        read_file(Path(name), out, constraint=True)
    for item in out.constraints:
        if item.requirement.extras or item.wheel_path is not None or item.source_path is not None:
            raise RequirementError(
                f"{item.origin}: a constraint names a version range only, not extras or files."
            )
    return out
