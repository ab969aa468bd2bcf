"""Untrusted JSON in, checked: what reading variant metadata needs of JSON itself.

:func:`decode_json` decodes text within size, nesting and encoding limits, refusing ``NaN`` and
``Infinity`` and remembering keys given twice; :class:`JsonChecker` gives typed access to the
decoded values, each failure a :class:`~fitwheel.variants.errors.VariantFormatError` naming the
source, the key path (``variants.cu126.nvidia.sm_arch[2]``) and the rule broken. What the
values mean is :mod:`fitwheel.variants.reading`'s job.
"""

from __future__ import annotations

import json
import re

from fitwheel.variants.errors import VariantFormatError

# ``typing`` stays unimported at run time (this module is on the start-up path of
# ``fitwheel select``); type checkers treat a name spelled TYPE_CHECKING as theirs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, NoReturn

#: Largest document accepted, in bytes. Real index files are a few kilobytes.
MAX_SIZE = 8 * 1024 * 1024
#: Deepest nesting of JSON arrays and objects accepted. The format itself needs 4.
MAX_DEPTH = 64
_JSON_STRING_RE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_JSON_BRACKET_RE = re.compile(r"[\[\]{}]")


class _PairsDict(dict[str, "Any"]):
    """A decoded JSON object that remembers which keys appeared more than once."""

    duplicates: tuple[str, ...] = ()


def _object_pairs(pairs: list[tuple[str, Any]]) -> _PairsDict:
    out = _PairsDict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        dups: list[str] = []
        for key, _ in pairs:
            if key in seen and key not in dups:
                dups.append(key)
            seen.add(key)
        out.duplicates = tuple(dups)
    return out


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not valid JSON")


def _too_deep(text: str) -> bool:
    depth = 0
    for match in _JSON_BRACKET_RE.finditer(_JSON_STRING_RE.sub("", text)):
        if match.group() in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return True
        else:
            depth -= 1
    return False


def decode_json(text: str | bytes, source: str) -> Any:
    """The JSON document ``text`` (``str`` or UTF-8 ``bytes``), decoded within :data:`MAX_SIZE`
    and :data:`MAX_DEPTH`; an object with a repeated key keeps the names in ``duplicates`` (for
    :meth:`JsonChecker.obj`). Raises :class:`VariantFormatError` naming ``source``."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        raw = bytes(text)
        if len(raw) > MAX_SIZE:
            raise VariantFormatError(
                f"the file is {len(raw)} bytes; variant metadata is limited to {MAX_SIZE} bytes",
                source=source,
            )
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise VariantFormatError(
                f"the file is not valid UTF-8 (byte {exc.start}: {exc.reason}); JSON must be UTF-8",
                source=source,
            ) from None
    elif isinstance(text, str):
        decoded = text
        if len(decoded) > MAX_SIZE or len(decoded.encode("utf-8", "surrogatepass")) > MAX_SIZE:
            raise VariantFormatError(
                f"the file is over {MAX_SIZE} bytes; variant metadata is limited to "
                f"{MAX_SIZE} bytes",
                source=source,
            )
    else:
        raise VariantFormatError(
            f"expected JSON text (str or bytes), got {type(text).__name__}", source=source
        )
    # JSON forbids a byte-order mark, but parsers may ignore one (RFC 8259 §8.1).
    decoded = decoded.removeprefix("\ufeff")
    if _too_deep(decoded):
        raise VariantFormatError(
            f"JSON nesting is deeper than {MAX_DEPTH} levels; variant metadata needs 4",
            source=source,
        )
    try:
        data = json.loads(decoded, object_pairs_hook=_object_pairs, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise VariantFormatError(
            f"invalid JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})", source=source
        ) from None
    except RecursionError:
        raise VariantFormatError(
            f"JSON nesting is deeper than {MAX_DEPTH} levels; variant metadata needs 4",
            source=source,
        ) from None
    except ValueError as exc:
        raise VariantFormatError(f"invalid JSON: {exc}", source=source) from None
    return data


def key_path(base: str, key: str) -> str:
    """The path of ``key`` in the object at ``base`` (``a.b``)."""
    return f"{base}.{key}" if base else key


def index_path(base: str, i: int) -> str:
    """The path of item ``i`` of the array at ``base`` (``a.b[2]``)."""
    return f"{base}[{i}]"


def type_name(value: Any) -> str:
    """What a decoded JSON value is, as an error message says it (``an array``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


class JsonChecker:
    """Typed access to decoded JSON from ``source``: each check returns the value or raises."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(
        self, path: str, rule: str, cls: type[VariantFormatError] = VariantFormatError
    ) -> NoReturn:
        raise cls(rule, path=path, source=self.source)

    def obj(self, value: Any, path: str, what: str = "an object") -> dict[str, Any]:
        if not isinstance(value, dict):
            self.fail(path, f"expected {what}, got {type_name(value)}")
        dups = getattr(value, "duplicates", ())
        if dups:
            self.fail(
                key_path(path, dups[0]),
                f"key {dups[0]!r} appears more than once in one JSON object; each key may "
                "be given once",
            )
        for key in value:
            if not isinstance(key, str):
                self.fail(path, f"object keys must be strings, got {type_name(key)}")
        return value

    def array(self, value: Any, path: str, what: str) -> list[Any]:
        if not isinstance(value, list):
            self.fail(path, f"expected an array of {what}, got {type_name(value)}")
        return value

    def string(self, value: Any, path: str, what: str = "a string") -> str:
        if not isinstance(value, str):
            self.fail(path, f"expected {what}, got {type_name(value)}")
        return value

    def boolean(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            self.fail(path, f"expected true or false, got {type_name(value)}")
        return value

    def unique_list(
        self,
        value: Any,
        path: str,
        what: str,
        check: Callable[[Any, str], str],
        *,
        non_empty: bool,
    ) -> tuple[str, ...]:
        items = self.array(value, path, what)
        if non_empty and not items:
            self.fail(path, f"the list of {what} must not be empty")
        out: dict[str, None] = {}
        for i, item in enumerate(items):
            text = check(item, index_path(path, i))
            if text in out:
                self.fail(index_path(path, i), f"{text!r} is listed twice; {what} must be unique")
            out[text] = None
        return tuple(out)
