"""fitwheel's TOML: one reader (``tomllib``, with errors naming the file) and one exact writer.

Reading: :func:`loads` parses a document and :func:`load` reads a file; text that is not UTF-8
or not valid TOML raises :class:`TomlReadError`, whose message names the source. ``tomllib`` is
imported on the first read only, so commands that read no TOML never load it.

Writing: :func:`dumps` writes the subset fitwheel's files use (a ``pylock.toml``, the
configuration file). Values are strings, integers, booleans, arrays and tables; floats and
dates are not written (fitwheel's files have none). The layout is fixed, so the same document
always gives the same bytes:

- keys keep their order; a key is bare when it can be (``A-Za-z0-9_-``), else a basic string;
- a top-level array of tables (``packages``) is written as ``[[packages]]`` blocks;
- inside a table, plain values come first, then its sub-tables as ``[a.b]`` sections;
- the tables named by ``inline`` (by their dotted path, ``*`` matching any one key) and every
  table inside an array are written inline, ``{ k = v }``; an array of tables inside a table is
  written one inline table per line.

:func:`dumps` output always reads back to the same data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from os import PathLike
from typing import Any

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}


class TomlReadError(ValueError):
    """Text that is not a TOML document; the message names its source and the problem."""


class TomlWriteError(ValueError):
    """A value the writer does not write (a float, a date, an object)."""


def loads(text: str | bytes, source: str) -> dict[str, Any]:
    """The TOML document ``text`` (bytes must be UTF-8); ``source`` names it in errors."""
    import tomllib  # on the first read only: off the start path of commands that read none

    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8")
        return tomllib.loads(text)
    except UnicodeDecodeError as exc:
        raise TomlReadError(f"{source} is not UTF-8 text ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise TomlReadError(f"{source} is not valid TOML ({exc})") from None


def load(path: str | PathLike[str], source: str | None = None) -> dict[str, Any]:
    """The TOML file at ``path`` (``source`` names it in errors, the path by default).
    :class:`OSError` is the caller's to report."""
    with open(path, "rb") as handle:
        data = handle.read()
    return loads(data, str(path) if source is None else source)


def key(text: str) -> str:
    return text if _BARE.fullmatch(text) else string(text)


def string(text: str) -> str:
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def value(item: Any) -> str:
    """One value, inline."""
    if isinstance(item, bool):
        return "true" if item else "false"
    if isinstance(item, int):
        return str(item)
    if isinstance(item, str):
        return string(item)
    if isinstance(item, Mapping):
        if not item:
            return "{}"
        return "{ " + ", ".join(f"{key(k)} = {value(v)}" for k, v in item.items()) + " }"
    if isinstance(item, Sequence):
        return "[" + ", ".join(value(v) for v in item) + "]"
    raise TomlWriteError(f"cannot write a {type(item).__name__} in a TOML file")


def _matches(path: tuple[str, ...], patterns: Sequence[tuple[str, ...]]) -> bool:
    return any(
        len(p) == len(path) and all(a in ("*", b) for a, b in zip(p, path, strict=True))
        for p in patterns
    )


def _is_table_array(item: Any) -> bool:
    return (
        isinstance(item, Sequence)
        and not isinstance(item, str)
        and bool(item)
        and all(isinstance(v, Mapping) for v in item)
    )


def _is_section(item: Any, path: tuple[str, ...], patterns: Sequence[tuple[str, ...]]) -> bool:
    return isinstance(item, Mapping) and not _matches(path, patterns)


def dumps(document: Mapping[str, Any], *, inline: Sequence[str] = ()) -> str:
    patterns = [tuple(p.split(".")) for p in inline]
    lines: list[str] = []
    _table(lines, (), (), document, patterns, top=True)
    return "\n".join(lines).strip("\n") + "\n"


def _table(
    lines: list[str],
    header: tuple[str, ...],
    path: tuple[str, ...],
    table: Mapping[str, Any],
    patterns: Sequence[tuple[str, ...]],
    *,
    top: bool = False,
) -> None:
    """Write ``table``'s plain values (under ``header``, already written), then its sections.
    ``path`` is the table's dotted path with array positions left out (what ``inline`` names)."""
    sections: list[tuple[str, Any]] = []
    for name, item in table.items():
        sub = (*path, name)
        if _is_section(item, sub, patterns) or (top and _is_table_array(item)):
            sections.append((name, item))
        elif _is_table_array(item):
            lines.append(f"{key(name)} = [")
            lines += [f"    {value(v)}," for v in item]
            lines.append("]")
        else:
            lines.append(f"{key(name)} = {value(item)}")
    for name, item in sections:
        sub_header = (*header, name)
        dotted = ".".join(key(k) for k in sub_header)
        if isinstance(item, Mapping):
            if not item or any(
                not _is_section(v, (*path, name, k), patterns) for k, v in item.items()
            ):
                # a table of nothing but sub-tables needs no header of its own
                lines += ["", f"[{dotted}]"]
            _table(lines, sub_header, (*path, name), item, patterns)
        else:
            for element in item:
                lines += ["", f"[[{dotted}]]"]
                _table(lines, sub_header, (*path, name), element, patterns)
