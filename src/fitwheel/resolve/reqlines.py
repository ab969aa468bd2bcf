"""The line grammar of requirements files, as pip reads it: text, logical lines, options.

- The file's bytes are text in UTF-8 (a byte order mark of UTF-8, UTF-16 or UTF-32 is honoured
  and dropped, and a ``# -*- coding: NAME -*-`` comment in one of the first two lines names
  another encoding); anything else, NUL bytes, a file over :data:`MAX_FILE_BYTES` or a logical
  line over :data:`MAX_LINE_CHARS` is refused, naming the file.
- A line that ends in a backslash continues on the next one (a comment line never continues);
  the joined line keeps the number of its first line.
- ``#`` at the start of a line, or after whitespace (a tab too), starts a comment.
- ``${NAME}`` (upper-case letters, digits and ``_`` only) is replaced by that variable's value
  from the environment given; an unset or empty variable is left as written.
- A line's words up to the first one that starts with ``-`` are its requirement; the rest are
  options, split as a shell would (quotes), each given as ``--opt=value`` or ``--opt value``
  (``-X value`` or ``-Xvalue`` for the short ones); a long option may be abbreviated to any
  prefix that names one option only, as pip (optparse) allows.
"""

from __future__ import annotations

import codecs
import re
import shlex
from collections.abc import Iterator, Mapping

from fitwheel.resolve.reqforms import RequirementError

#: the largest requirements file read (bytes)
MAX_FILE_BYTES = 16 * 1024 * 1024
#: the longest logical line read (characters, continuations joined)
MAX_LINE_CHARS = 256 * 1024

_BOMS = (
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
)
_CODING_RE = re.compile(rb"coding[:=]\s*([-\w.]+)")
_COMMENT_RE = re.compile(r"(^|\s+)#.*$")
_VARIABLE_RE = re.compile(r"\$\{([A-Z0-9_]+)\}")

#: every option a requirements file takes: long name -> (short name, takes a value)
OPTIONS: dict[str, tuple[str | None, bool]] = {
    "--index-url": ("-i", True),
    "--extra-index-url": (None, True),
    "--no-index": (None, False),
    "--find-links": ("-f", True),
    "--pre": (None, False),
    "--prefer-binary": (None, False),
    "--only-binary": (None, True),
    "--no-binary": (None, True),
    "--trusted-host": (None, True),
    "--require-hashes": (None, False),
    "--no-require-hashes": (None, False),
    "--requirement": ("-r", True),
    "--constraint": ("-c", True),
    "--editable": ("-e", True),
    "--hash": (None, True),
    "--config-settings": ("-C", True),
    "--variant": (None, True),
    "--use-feature": (None, True),
    "--all-releases": (None, True),
    "--only-final": (None, True),
}
#: other spellings pip accepts
_ALIASES = {"--pypi-url": "--index-url"}
_SHORT = {short: long for long, (short, _v) in OPTIONS.items() if short is not None}


def decode(data: bytes | str, location: str) -> str:
    """The text of a requirements file, or a :class:`RequirementError` naming ``location``."""
    if isinstance(data, str):
        text = data.removeprefix("\ufeff")
    else:
        if len(data) > MAX_FILE_BYTES:
            raise RequirementError(
                f"{location} is larger than a requirements file is (at most {MAX_FILE_BYTES} "
                "bytes): is it a requirements file?"
            )
        text = _decode_bytes(data, location)
    if len(text) > MAX_FILE_BYTES:
        raise RequirementError(
            f"{location} holds {len(text)} characters, more than a requirements file holds "
            f"(at most {MAX_FILE_BYTES}): is it a requirements file?"
        )
    if "\x00" in text:
        raise RequirementError(
            f"{location} is not a text file (it holds NUL bytes): name a requirements file."
        )
    return text


def _decode_bytes(data: bytes, location: str) -> str:
    encoding = "utf-8"
    for bom, name in _BOMS:
        if data.startswith(bom):
            data = data[len(bom) :]
            encoding = name
            break
    else:
        for line in data.split(b"\n", 2)[:2]:
            match = _CODING_RE.search(line) if line.startswith(b"#") else None
            if match is not None:
                encoding = match.group(1).decode("ascii")
                break
    try:
        return data.decode(encoding)
    except LookupError:
        raise RequirementError(
            f"{location} declares the encoding {encoding!r}, which Python does not know: "
            "save it as UTF-8."
        ) from None
    except UnicodeDecodeError as exc:
        raise RequirementError(
            f"{location} is not {encoding} text (byte {exc.start} cannot be read): save it as "
            "UTF-8, or declare its encoding with a '# -*- coding: NAME -*-' first line."
        ) from None


def _joined(text: str) -> Iterator[tuple[int, str]]:
    first = 0
    pending: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        comment = _COMMENT_RE.match(line) is not None
        if line.endswith("\\") and not comment:
            if not pending:
                first = number
            pending.append(line.strip("\\"))
            continue
        if comment:
            # a comment ends a continuation and is dropped with it below
            line = " " + line
        if pending:
            pending.append(line)
            yield first, "".join(pending)
            pending = []
        else:
            yield number, line
    if pending:
        yield first, "".join(pending)


def logical_lines(text: str, location: str, env: Mapping[str, str]) -> Iterator[tuple[int, str]]:
    """(number of its first line, text) for each line that says something."""
    for number, raw in _joined(text):
        if len(raw) > MAX_LINE_CHARS:
            raise RequirementError(
                f"{location}:{number}: a line of {len(raw)} characters is longer than a "
                f"requirements file's lines are (at most {MAX_LINE_CHARS}): is it a "
                "requirements file?"
            )
        line = _COMMENT_RE.sub("", raw, count=1).strip()
        if not line:
            continue
        yield number, _VARIABLE_RE.sub(lambda m: env.get(m.group(1)) or m.group(0), line)


def split_line(line: str) -> tuple[str, list[str]]:
    """(the requirement, the option words) of one logical line."""
    words = line.split(" ")
    for index, word in enumerate(words):
        if word.startswith("-"):
            return " ".join(words[:index]).strip(), _shell_words(" ".join(words[index:]))
    return line, []


def _shell_words(text: str) -> list[str]:
    try:
        return shlex.split(text)
    except ValueError as exc:
        raise RequirementError(f"the options {text!r} cannot be split into words: {exc}") from None


def _long_name(word: str) -> str:
    if word in OPTIONS:
        return word
    if word in _ALIASES:
        return _ALIASES[word]
    names = [*OPTIONS, *_ALIASES]
    matches = {_ALIASES.get(name, name) for name in names if name.startswith(word)}
    if len(matches) == 1:
        return matches.pop()
    if matches:
        raise RequirementError(
            f"the option {word} is ambiguous: it could be {', '.join(sorted(matches))}."
        )
    raise RequirementError(
        f"no such option in a requirements file: {word} (they take "
        f"{', '.join(o for o in OPTIONS if o not in ('--variant',))} and fitwheel's --variant)."
    )


def parse_options(words: list[str]) -> list[tuple[str, str | None]]:
    """(long option name, value or None for a flag) for each option, in order; a
    :class:`RequirementError` (without a place) for words that are no option."""
    out: list[tuple[str, str | None]] = []
    rest = list(words)
    while rest:
        word = rest.pop(0)
        inline: str | None = None
        if word.startswith("--"):
            spelled, sep, value = word.partition("=")
            name = _long_name(spelled)
            inline = value if sep else None
        elif word.startswith("-") and len(word) > 1:
            spelled = word[:2]
            if spelled not in _SHORT:
                raise RequirementError(f"no such option in a requirements file: {spelled}.")
            name = _SHORT[spelled]
            inline = word[2:] or None
        else:
            raise RequirementError(
                f"{word!r} follows the options but is not one: a line names one requirement, "
                "its options after it."
            )
        takes_value = OPTIONS[name][1]
        if not takes_value:
            if inline is not None:
                raise RequirementError(f"the option {spelled} takes no value, not {inline!r}.")
            out.append((name, None))
            continue
        if inline is None:
            if not rest:
                raise RequirementError(f"the option {spelled} needs a value.")
            inline = rest.pop(0)
        out.append((name, inline))
    return out
