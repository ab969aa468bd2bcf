"""Requirements files, as pip reads them: the requirements they list and the options they set.

:class:`RequirementsReader` reads one or more files (and the files they name with ``-r`` and
``-c``) into :class:`RequirementLine` records, each with its place (``file:line``), and one
:class:`FileOptions` record shared by all of them, as pip's finder is:

- ``-i``/``--index-url`` replaces the whole list of indexes, extra ones named before it (and
  on the command line) included; ``--extra-index-url`` adds one; ``--no-index`` drops them
  all; ``-f``/``--find-links`` adds a place to look (a relative path starts from the file's
  folder when it exists there, as pip does); ``--trusted-host`` adds a host; ``--pre``,
  ``--prefer-binary``, ``--require-hashes`` turn on; ``--no-binary`` and ``--only-binary``
  apply in order (see :mod:`fitwheel.resolve.formats`).
- ``-r``/``-c`` name a file relative to the file's folder (or its URL), read through the
  ``read`` callable given (the default reads local files only); a file that names itself,
  directly or not, is refused, and so is nesting deeper than :data:`MAX_DEPTH`.
- A requirement's own options are ``--hash=algo:digest`` (sha256, sha384, sha512),
  ``--config-settings KEY=VALUE`` and fitwheel's ``--variant=LABEL``; ``-e`` takes
  ``--config-settings`` only.

Where pip silently drops part of a line (a file option after a requirement, a ``--hash`` on a
line without one, a second ``-r`` on a line, words after the options), fitwheel refuses the
line, naming its place. Requirement paths start from the file's folder.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import urljoin, urlsplit

from fitwheel._values import Frozen
from fitwheel.resolve.reqforms import (
    Form,
    RequirementError,
    classify,
    classify_editable,
    file_url_path,
)
from fitwheel.resolve.reqlines import (
    MAX_FILE_BYTES,
    decode,
    logical_lines,
    parse_options,
    split_line,
)

#: how deep ``-r``/``-c`` files may nest
MAX_DEPTH = 32
#: the hash algorithms ``--hash`` takes (pip's)
HASH_ALGORITHMS = ("sha256", "sha384", "sha512")
#: the options that belong to one requirement
REQUIREMENT_OPTIONS = frozenset({"--hash", "--config-settings", "--variant"})
#: the options that name another file or an editable requirement
_NESTING = {"--requirement", "--constraint", "--editable"}
#: pip options fitwheel reads but has no counterpart for
PIP_ONLY = frozenset({"--use-feature", "--all-releases", "--only-final"})

#: ``read(location)``: the content of a requirements file (a path or a URL)
Reader = Callable[[str], "str | bytes"]


def is_url(location: str) -> bool:
    return urlsplit(location).scheme.lower() in ("http", "https", "file")


def read_local(location: str) -> bytes:
    """The default reader: local paths and ``file:`` URLs; other URLs are refused."""
    if is_url(location):
        if not location.lower().startswith("file:"):
            raise RequirementError(
                f"{location} is a URL, and reading requirements files from URLs is not "
                "supported here: download it and pass its path."
            )
        location = str(file_url_path(location))
    try:
        with open(location, "rb") as handle:
            return handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise RequirementError(
            f"cannot read the requirements file {location}: {exc.strerror}."
        ) from exc


class Located(Frozen):
    """An option's value and the place (``file:line``) that set it."""

    __slots__ = ("origin", "value")
    value: str
    origin: str

    def __init__(self, value: str, origin: str) -> None:
        object.__setattr__(self, "value", value)
        object.__setattr__(self, "origin", origin)

    def __str__(self) -> str:
        return f"{self.value} ({self.origin})"


class FileOptions:
    """The options requirements files set (flags hold the place that set them)."""

    __slots__ = (
        "extra_index_urls",
        "find_links",
        "formats",
        "index_url",
        "no_index",
        "no_require_hashes",
        "pip_only",
        "pre",
        "prefer_binary",
        "require_hashes",
        "trusted_hosts",
    )

    def __init__(self) -> None:
        #: the last ``-i``: it replaces every index named before it
        self.index_url: Located | None = None
        #: ``--extra-index-url`` after the last ``-i``, in order
        self.extra_index_urls: list[Located] = []
        self.no_index: Located | None = None
        #: ``-f`` places (relative paths made absolute where the file's folder has them)
        self.find_links: list[Located] = []
        self.pre: Located | None = None
        self.prefer_binary: Located | None = None
        #: (``--no-binary`` or ``--only-binary``, its value), in order: they undo each other
        self.formats: list[tuple[str, Located]] = []
        self.trusted_hosts: list[Located] = []
        self.require_hashes: Located | None = None
        self.no_require_hashes: Located | None = None
        #: (option, value) of pip options with no counterpart in fitwheel, in order
        self.pip_only: list[tuple[str, Located]] = []

    @property
    def no_binary(self) -> list[Located]:
        return [value for option, value in self.formats if option == "--no-binary"]

    @property
    def only_binary(self) -> list[Located]:
        return [value for option, value in self.formats if option == "--only-binary"]

    def given(self) -> list[tuple[str, Located]]:
        """Every option set, as (option, value and place), in the order of this record."""
        out: list[tuple[str, Located]] = []
        if self.index_url is not None:
            out.append(("--index-url", self.index_url))
        out += [("--extra-index-url", v) for v in self.extra_index_urls]
        flags = (
            ("--no-index", self.no_index),
            ("--pre", self.pre),
            ("--prefer-binary", self.prefer_binary),
            ("--require-hashes", self.require_hashes),
            ("--no-require-hashes", self.no_require_hashes),
        )
        out += [("--find-links", v) for v in self.find_links]
        out += [(name, flag) for name, flag in flags if flag is not None]
        out += self.formats
        out += [("--trusted-host", v) for v in self.trusted_hosts]
        out += self.pip_only
        return out

    def __bool__(self) -> bool:
        return bool(self.given())

    def __repr__(self) -> str:
        return f"FileOptions({', '.join(f'{o}={v}' for o, v in self.given())})"


class RequirementLine(Frozen):
    """One requirement as a file (or the command line) wrote it."""

    __slots__ = (
        "config_settings",
        "constraint",
        "editable",
        "form",
        "hashes",
        "origin",
        "text",
        "variant",
    )
    #: the requirement as written, its options taken off (``${VAR}`` expanded)
    text: str
    form: Form
    #: ``file:line`` (or ``command line``)
    origin: str
    constraint: bool
    editable: bool
    #: algorithm -> digests pinned with ``--hash``
    hashes: dict[str, frozenset[str]]
    #: ``--config-settings KEY=VALUE`` pairs, in order
    config_settings: tuple[tuple[str, str], ...]
    #: fitwheel's ``--variant=LABEL``
    variant: str | None

    def __init__(
        self,
        text: str,
        form: Form,
        origin: str,
        constraint: bool = False,
        editable: bool = False,
        hashes: dict[str, frozenset[str]] | None = None,
        config_settings: tuple[tuple[str, str], ...] = (),
        variant: str | None = None,
    ) -> None:
        _set = object.__setattr__
        _set(self, "text", text)
        _set(self, "form", form)
        _set(self, "origin", origin)
        _set(self, "constraint", constraint)
        _set(self, "editable", editable)
        _set(self, "hashes", {} if hashes is None else hashes)
        _set(self, "config_settings", config_settings)
        _set(self, "variant", variant)

    def _values(self) -> tuple[object, ...]:
        return (self.text, self.form, self.origin, self.constraint, self.editable)


def _requirement_options(
    options: list[tuple[str, str | None]], origin: str, editable: bool
) -> tuple[dict[str, frozenset[str]], tuple[tuple[str, str], ...], str | None]:
    hashes: dict[str, set[str]] = {}
    settings: list[tuple[str, str]] = []
    variant: str | None = None
    for name, value in options:
        if name not in REQUIREMENT_OPTIONS:
            raise RequirementError(
                f"{origin}: {name} applies to the whole file, not to one requirement: put it "
                "on a line of its own."
            )
        assert value is not None
        if editable and name != "--config-settings":
            raise RequirementError(
                f"{origin}: {name} does not apply to an editable (-e) requirement."
            )
        if name == "--hash":
            algorithm, sep, digest = value.partition(":")
            algorithm = algorithm.lower()
            if not sep or not digest or algorithm not in HASH_ALGORITHMS:
                raise RequirementError(
                    f"{origin}: --hash must look like sha256:HEXDIGEST (or sha384, sha512), "
                    f"not {value!r}."
                )
            hashes.setdefault(algorithm, set()).add(digest.lower())
        elif name == "--config-settings":
            key, sep, setting = value.partition("=")
            if not sep:
                raise RequirementError(
                    f"{origin}: --config-settings must look like KEY=VALUE, not {value!r}."
                )
            settings.append((key, setting))
        else:
            if not value or any(ch.isspace() for ch in value):
                raise RequirementError(
                    f"{origin}: --variant must look like --variant=LABEL, not {value!r}."
                )
            variant = value
    return {k: frozenset(v) for k, v in hashes.items()}, tuple(settings), variant


def command_line_requirement(
    argument: str, origin: str, base: Path | None, *, editable: bool = False
) -> RequirementLine:
    """One requirement given on the command line: the whole argument (a path may hold
    spaces), up to a ``--hash``, ``--variant`` or ``--config-settings`` that follows it;
    ``base`` is the folder its relative paths start from."""
    match = _OWN_OPTION_RE.search(argument)
    text, words = argument, []
    if match is not None:
        text = argument[: match.start()]
        words = _split(argument[match.start() :].strip(), origin)[1]
    return _requirement(text, origin, base, False, editable, words=words)


#: where a command-line requirement's own options start
_OWN_OPTION_RE = re.compile(r"\s+--(?=(?:hash|variant|config-settings)\b)")


def _split(line: str, origin: str) -> tuple[str, list[str]]:
    try:
        return split_line(line)
    except RequirementError as exc:
        raise RequirementError(f"{origin}: {exc}") from None


def _options(words: list[str], origin: str) -> list[tuple[str, str | None]]:
    try:
        return parse_options(words)
    except RequirementError as exc:
        raise RequirementError(f"{origin}: {exc}") from None


def _requirement(
    text: str,
    origin: str,
    base: Path | None,
    constraint: bool,
    editable: bool,
    *,
    words: list[str] | None = None,
    options: list[tuple[str, str | None]] | None = None,
) -> RequirementLine:
    # the requirement first: its own errors say more than those of the words after it
    form = classify_editable(text, origin, base) if editable else classify(text, origin, base)
    if options is None:
        options = _options(words or [], origin)
    hashes, settings, variant = _requirement_options(options, origin, editable)
    return RequirementLine(text, form, origin, constraint, editable, hashes, settings, variant)


class RequirementsReader:
    """Reads requirements files into :attr:`lines` and :attr:`options`; :attr:`files` lists
    every file read, nested ones included, in order."""

    def __init__(self, read: Reader = read_local, env: Mapping[str, str] | None = None) -> None:
        self.read = read
        self.env: Mapping[str, str] = {} if env is None else env
        self.lines: list[RequirementLine] = []
        self.options = FileOptions()
        self.files: list[str] = []
        self._done: set[tuple[str, bool]] = set()

    def parse(self, location: str, *, constraint: bool = False) -> None:
        """Read ``location`` (a path or URL) and the files it names."""
        self._parse(location, constraint, (), None)

    def _parse(
        self, location: str, constraint: bool, stack: tuple[str, ...], origin: str | None
    ) -> None:
        key = _key(location)
        if key in stack:
            chain = " -> ".join([*stack[stack.index(key) :], key])
            raise RequirementError(
                f"{origin}: {location} names itself through -r/-c ({chain}): remove the line "
                "that closes the circle."
            )
        if len(stack) >= MAX_DEPTH:
            raise RequirementError(
                f"{origin}: requirements files nest more than {MAX_DEPTH} deep here: is there "
                "a loop?"
            )
        if (key, constraint) in self._done:
            return
        self._done.add((key, constraint))
        try:
            text = decode(self.read(location), location)
        except RequirementError as exc:
            raise (RequirementError(f"{origin}: {exc}") if origin else exc) from None
        except OSError as exc:
            where = f"{origin}: " if origin else ""
            raise RequirementError(
                f"{where}cannot read the requirements file {location}: {exc}."
            ) from None
        self.files.append(location)
        for number, line in logical_lines(text, location, self.env):
            self._line(location, f"{location}:{number}", line, constraint, (*stack, key))

    def _line(
        self, location: str, origin: str, line: str, constraint: bool, stack: tuple[str, ...]
    ) -> None:
        text, words = _split(line, origin)
        base = _folder(location)
        if text:
            self.lines.append(_requirement(text, origin, base, constraint, False, words=words))
            return
        options = _options(words, origin)
        nesting = [(name, value) for name, value in options if name in _NESTING]
        if not nesting:
            self._file_options(location, origin, options)
            return
        name, value = nesting[0]
        assert value is not None
        if name == "--editable":
            if constraint:
                raise RequirementError(
                    f"{origin}: a constraints file cannot name an editable (-e) requirement."
                )
            rest = [(n, v) for n, v in options if n != "--editable"]
            if len(nesting) > 1 or any(n != "--config-settings" for n, _v in rest):
                raise RequirementError(
                    f"{origin}: -e takes only --config-settings on its line: put other options "
                    "on lines of their own."
                )
            self.lines.append(_requirement(value, origin, base, False, True, options=rest))
            return
        if len(options) > 1:
            raise RequirementError(
                f"{origin}: {name} names one file: put other options on lines of their own."
            )
        nested = _join(location, value)
        self._parse(nested, constraint or name == "--constraint", stack, origin)

    def _file_options(
        self, location: str, origin: str, options: list[tuple[str, str | None]]
    ) -> None:
        out = self.options
        for name, value in options:
            if name in REQUIREMENT_OPTIONS:
                raise RequirementError(
                    f"{origin}: {name} belongs to a requirement: put it on the requirement's "
                    "line (a backslash at a line's end continues it)."
                )
            here = Located(value if value is not None else name, origin)
            if name == "--index-url":
                out.index_url = here
                out.extra_index_urls = []
            elif name == "--extra-index-url":
                out.extra_index_urls.append(here)
            elif name == "--find-links":
                out.find_links.append(Located(_find_links(location, here.value), origin))
            elif name == "--trusted-host":
                out.trusted_hosts.append(here)
            elif name in ("--no-binary", "--only-binary"):
                _check_formats(name, here)
                out.formats.append((name, here))
            elif name in PIP_ONLY:
                out.pip_only.append((name, here))
            else:
                setattr(out, name[2:].replace("-", "_"), here)


def _check_formats(option: str, value: Located) -> None:
    from fitwheel.errors import UsageError
    from fitwheel.resolve.formats import FormatControl

    try:
        FormatControl.add(option, value.value, set(), set())
    except UsageError as exc:
        raise RequirementError(f"{value.origin}: {exc}") from None


def _key(location: str) -> str:
    """What identifies a file across spellings (absolute path, or the URL)."""
    return location if is_url(location) else os.path.abspath(location)


def _join(location: str, value: str) -> str:
    """The file a ``-r``/``-c`` in ``location`` names."""
    if is_url(location) and not location.lower().startswith("file:"):
        return urljoin(location, value)
    if is_url(value):
        return value
    folder = _folder(location)
    assert folder is not None
    return str(folder / value)


def _folder(location: str) -> Path | None:
    """The local folder of the file at ``location`` (None for a file read from a server)."""
    if location.lower().startswith("file:"):
        return file_url_path(location).parent
    return None if is_url(location) else Path(location).parent


def _find_links(location: str, value: str) -> str:
    """A ``-f`` value: a relative path starts from the file's folder where it exists there."""
    folder = _folder(location)
    if folder is None or is_url(value) or os.path.isabs(value):
        return value
    candidate = os.path.join(os.path.abspath(folder), value)
    return candidate if os.path.exists(candidate) else value
