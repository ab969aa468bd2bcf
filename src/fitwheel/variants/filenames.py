"""Wheel filenames with an optional variant label, and ``{name}-{version}-variants.json`` names.

``{name}-{version}(-{build})?-{python}-{abi}-{platform}(-{label})?.whl``: five parts are a plain
wheel, seven a wheel with build tag and label. Six parts are told apart by PEP 825's rule that a
python tag never starts with a digit while a build tag always does: if the third part starts with a
digit it is a build tag and there is no label, otherwise the last part is the label.

Parsing keeps every component as written, so :meth:`WheelFilename.format` gives back the same name.
"""

from __future__ import annotations

import re

from packaging.version import InvalidVersion, Version

from fitwheel._values import Frozen
from fitwheel.variants.errors import InvalidWheelFilenameError
from fitwheel.variants.model import LABEL_RE
from fitwheel.variants.names import canonicalize_name

TYPE_CHECKING = False
if TYPE_CHECKING:
    # packaging.utils imports packaging.tags (platform, subprocess, logging: ~15 ms), which only
    # :attr:`WheelFilename.tags` needs; every command that names a wheel loads this module.
    from packaging.tags import Tag
    from packaging.utils import NormalizedName

__all__ = [
    "SDIST_SUFFIXES",
    "VARIANTS_JSON_SUFFIX",
    "SdistFilename",
    "VariantsJsonFilename",
    "WheelFilename",
    "parse_variants_json_filename",
    "variants_json_filename",
]

VARIANTS_JSON_SUFFIX = "-variants.json"
#: the source distribution archives fitwheel builds from (PEP 625's ``.tar.gz``, and ``.zip``)
SDIST_SUFFIXES = (".tar.gz", ".zip")

_NAME_RE = re.compile(r"[A-Za-z0-9._]+")
_BUILD_RE = re.compile(r"[0-9][A-Za-z0-9_.]*")
_TAG_RE = re.compile(r"[A-Za-z0-9_.]+")
_PROJECT_NAME_RE = re.compile(r"[A-Za-z0-9]|[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]")


def _fail(filename: str, rule: str) -> InvalidWheelFilenameError:
    return InvalidWheelFilenameError(rule, source=filename)


class WheelFilename(Frozen):
    """The parts of a wheel filename, as written. ``variant_label`` is None for a plain wheel."""

    __slots__ = (  # noqa: RUF023 (the order of the fields, as repr shows them)
        "name",
        "version",
        "python_tag",
        "abi_tag",
        "platform_tag",
        "build",
        "variant_label",
    )
    name: str
    version: str
    python_tag: str
    abi_tag: str
    platform_tag: str
    build: str | None
    variant_label: str | None

    def __init__(
        self,
        name: str,
        version: str,
        python_tag: str,
        abi_tag: str,
        platform_tag: str,
        build: str | None = None,
        variant_label: str | None = None,
    ) -> None:
        init = object.__setattr__
        init(self, "name", name)
        init(self, "version", version)
        init(self, "python_tag", python_tag)
        init(self, "abi_tag", abi_tag)
        init(self, "platform_tag", platform_tag)
        init(self, "build", build)
        init(self, "variant_label", variant_label)
        self._check()

    def _check(self) -> None:
        shown = self.format_unchecked()
        if not _NAME_RE.fullmatch(self.name):
            raise _fail(shown, "the distribution name may use only letters, digits, _ and .")
        try:
            Version(self.version)
        except InvalidVersion:
            raise _fail(shown, f"version {self.version!r} is not a valid version") from None
        if self.build is not None and not _BUILD_RE.fullmatch(self.build):
            raise _fail(
                shown,
                f"build tag {self.build!r} must start with a digit and use only letters, "
                "digits, _ and .",
            )
        for what, tag in (
            ("python", self.python_tag),
            ("abi", self.abi_tag),
            ("platform", self.platform_tag),
        ):
            if not _TAG_RE.fullmatch(tag):
                raise _fail(shown, f"{what} tag {tag!r} must be non-empty letters, digits, _ and .")
        if self.python_tag[0].isdigit():
            raise _fail(
                shown,
                f"python tag {self.python_tag!r} must not start with a digit (PEP 825), "
                "which is how a build tag is told from a python tag",
            )
        if self.variant_label is not None and not LABEL_RE.fullmatch(self.variant_label):
            raise _fail(
                shown,
                f"variant label {self.variant_label!r} must be non-empty and use only 0-9, a-z, "
                ". and _",
            )

    @classmethod
    def parse(cls, filename: str) -> WheelFilename:
        """Parse a wheel filename (no directory part), with or without a variant label."""
        if not isinstance(filename, str) or not filename.endswith(".whl"):
            raise _fail(str(filename), "a wheel filename must end with '.whl'")
        parts = filename[: -len(".whl")].split("-")
        if len(parts) == 5:
            name, version, py, abi, plat = parts
            build = label = None
        elif len(parts) == 6:
            if parts[2][:1].isdigit():
                name, version, build, py, abi, plat = parts
                label = None
            else:
                name, version, py, abi, plat, label = parts
                build = None
        elif len(parts) == 7:
            name, version, build, py, abi, plat, label = parts
        else:
            raise _fail(
                filename,
                f"a wheel filename has 5 to 7 '-'-separated parts "
                "(name-version[-build]-python-abi-platform[-label]); this one has "
                f"{len(parts)}",
            )
        # The constructor's errors quote format_unchecked(), which is ``filename`` again.
        return cls(name, version, py, abi, plat, build, label)

    def format_unchecked(self) -> str:
        parts = [self.name, self.version]
        if self.build is not None:
            parts.append(self.build)
        parts += [self.python_tag, self.abi_tag, self.platform_tag]
        if self.variant_label is not None:
            parts.append(self.variant_label)
        return "-".join(parts) + ".whl"

    def format(self) -> str:
        return self.format_unchecked()

    def __str__(self) -> str:
        return self.format()

    @property
    def is_variant(self) -> bool:
        return self.variant_label is not None

    @property
    def normalized_name(self) -> NormalizedName:
        return canonicalize_name(self.name)

    @property
    def parsed_version(self) -> Version:
        return Version(self.version)

    @property
    def build_number(self) -> tuple[int, str] | tuple[()]:
        """The build tag as sortable ``(number, rest)``, or ``()`` without one."""
        if self.build is None:
            return ()
        match = re.match(r"([0-9]+)(.*)", self.build)
        assert match is not None  # the constructor checked it starts with a digit
        return (int(match.group(1)), match.group(2))

    @property
    def tags(self) -> frozenset[Tag]:
        from packaging.tags import parse_tag

        return parse_tag(f"{self.python_tag}-{self.abi_tag}-{self.platform_tag}")

    def with_label(self, label: str) -> WheelFilename:
        return self.replace(variant_label=label)

    def without_label(self) -> WheelFilename:
        return self.replace(variant_label=None)


def _escape_name(name: str) -> str:
    return canonicalize_name(name).replace("-", "_")


def _normal_version(version: str) -> str:
    try:
        return str(Version(version)).replace("-", "_")
    except InvalidVersion:
        raise InvalidWheelFilenameError(f"version {version!r} is not a valid version") from None


class VariantsJsonFilename(Frozen):
    """``{name}-{version}-variants.json``: name and version as written in the filename."""

    __slots__ = ("name", "version")
    name: str
    version: str

    def __init__(self, name: str, version: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "version", version)

    @classmethod
    def parse(cls, filename: str) -> VariantsJsonFilename:
        if not isinstance(filename, str) or not filename.endswith(VARIANTS_JSON_SUFFIX):
            raise InvalidWheelFilenameError(
                f"an index variant file is named '{{name}}-{{version}}{VARIANTS_JSON_SUFFIX}'",
                source=str(filename),
            )
        parts = filename[: -len(VARIANTS_JSON_SUFFIX)].split("-")
        if len(parts) != 2:
            raise InvalidWheelFilenameError(
                f"expected '{{name}}-{{version}}{VARIANTS_JSON_SUFFIX}' with no '-' in name or "
                "version (they are escaped as in wheel filenames)",
                source=filename,
            )
        name, version = parts
        if not _NAME_RE.fullmatch(name):
            raise InvalidWheelFilenameError(
                "the distribution name may use only letters, digits, _ and .", source=filename
            )
        try:
            Version(version)
        except InvalidVersion:
            raise InvalidWheelFilenameError(
                f"version {version!r} is not a valid version", source=filename
            ) from None
        return cls(name, version)

    @property
    def normalized_name(self) -> NormalizedName:
        return canonicalize_name(self.name)

    @property
    def parsed_version(self) -> Version:
        return Version(self.version)

    def format(self) -> str:
        return f"{self.name}-{self.version}{VARIANTS_JSON_SUFFIX}"

    def matches(self, wheel: WheelFilename) -> bool:
        """Whether this file describes ``wheel``'s release (same normalised name and version)."""
        return (
            self.normalized_name == wheel.normalized_name
            and self.parsed_version == wheel.parsed_version
        )


def variants_json_filename(name: str, version: str) -> str:
    """``{name}-{version}-variants.json`` with name and version normalised as in wheel filenames
    (``Foo.Bar``, ``1.0-RC1`` -> ``foo_bar-1.0rc1-variants.json``)."""
    if not isinstance(name, str) or not _PROJECT_NAME_RE.fullmatch(name):
        raise InvalidWheelFilenameError(
            f"{name!r} is not a valid distribution name (letters, digits, '.', '_' and '-', "
            "starting and ending with a letter or digit)"
        )
    escaped = _escape_name(name)
    return f"{escaped}-{_normal_version(version)}{VARIANTS_JSON_SUFFIX}"


def parse_variants_json_filename(filename: str) -> VariantsJsonFilename:
    return VariantsJsonFilename.parse(filename)


class SdistFilename(Frozen):
    """``{name}-{version}.tar.gz`` (or ``.zip``): a source distribution's name and version.

    Older sdists keep ``-`` in the name (``python-dateutil-2.8.2.tar.gz``); given the project it
    belongs to, the split is the one whose prefix is that project, as pip reads them; without it,
    the last ``-`` splits."""

    __slots__ = ("name", "suffix", "version")
    name: str
    version: str
    suffix: str

    def __init__(self, name: str, version: str, suffix: str) -> None:
        object.__setattr__(self, "name", name)
        object.__setattr__(self, "version", version)
        object.__setattr__(self, "suffix", suffix)

    @classmethod
    def parse(cls, filename: str, project: str | None = None) -> SdistFilename:
        suffix = next((s for s in SDIST_SUFFIXES if filename.lower().endswith(s)), None)
        if suffix is None:
            raise InvalidWheelFilenameError(
                f"a source distribution is named '{{name}}-{{version}}' + one of "
                f"{', '.join(SDIST_SUFFIXES)}",
                source=filename,
            )
        stem = filename[: -len(suffix)]
        splits = [i for i, ch in enumerate(stem) if ch == "-"]
        if project is not None:
            key = canonicalize_name(project)
            splits = [i for i in splits if canonicalize_name(stem[:i]) == key] or splits[-1:]
        for cut in reversed(splits):
            name, version = stem[:cut], stem[cut + 1 :]
            if not _PROJECT_NAME_RE.fullmatch(name):
                continue
            try:
                Version(version)
            except InvalidVersion:
                continue
            return cls(name, version, suffix)
        raise InvalidWheelFilenameError(
            "expected '{name}-{version}' before the archive suffix, with a valid version",
            source=filename,
        )

    @property
    def normalized_name(self) -> NormalizedName:
        return canonicalize_name(self.name)

    @property
    def parsed_version(self) -> Version:
        return Version(self.version)

    def format(self) -> str:
        return f"{self.name}-{self.version}{self.suffix}"


def is_sdist_filename(filename: str) -> bool:
    return filename.lower().endswith(SDIST_SUFFIXES)
