"""RECORD: the list of a wheel's files with their hashes and sizes (the binary distribution
format's ``RECORD``), parsed, checked and written here only.

The rules, the same for every reader:

- hashes are ``sha256``, ``sha384`` or ``sha512`` (urlsafe base64 without padding); any other
  algorithm (``md5``, ``sha1``, a name hashlib does not know) is refused;
- a row has three fields; a path appears once; a row with a hash has a size, a decimal number;
- every file member of the archive has a hash and a size in RECORD, except RECORD itself and its
  signatures (``RECORD.jws``, ``RECORD.p7s``).

The one leniency, for wheels found in the wild: a RECORD row for a file the archive lacks is an
error when publishing (fitwheel writes the wheel) and a warning when installing (nothing is
installed for that row, as pip does). It is decided in :func:`check_coverage` alone.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

#: the algorithms a RECORD may use, strongest last
HASHES = ("sha256", "sha384", "sha512")
#: digital signatures of RECORD, which RECORD cannot list
SIGNATURES = ("RECORD.jws", "RECORD.p7s")


class RecordError(ValueError):
    """RECORD is malformed or does not describe the archive; the message says how."""


class RecordEntry(NamedTuple):
    path: str
    algorithm: str | None
    digest: str | None
    size: int | None

    def hasher(self) -> Any:
        """A fresh hash object of this row's algorithm (parsing admitted only :data:`HASHES`)."""
        return hashlib.new(self.algorithm or "sha256")

    def matches(self, hasher: Any) -> bool:
        """Whether the content fed to ``hasher`` (from :meth:`hasher`) is what this row lists."""
        return b64(hasher.digest()) == self.digest


def b64(digest: bytes) -> str:
    """A digest in RECORD's form: urlsafe base64 without padding."""
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def record_hash(data: bytes) -> str:
    """``sha256=<urlsafe base64, no padding>``: the RECORD form of a digest."""
    return "sha256=" + b64(hashlib.sha256(data).digest())


def _rows(text: str) -> Iterator[list[str]]:
    """RECORD's CSV rows (empty lists for blank lines)."""
    if '"' in text or "\r" in text:
        import csv  # only a RECORD with quotes needs it; installing from the cache parses none
        import io

        return csv.reader(io.StringIO(text, newline=""))
    # Without quotes or carriage returns, CSV rows are plain lines split at commas, and
    # splitting them is several times faster than the csv module on a 12,000-line RECORD.
    return (line.split(",") if line else [] for line in text.split("\n"))


def installed_paths(text: str) -> list[str]:
    """The paths an *installed* distribution's RECORD lists (relative to its site folder; any
    installer may have written it, so hashes and sizes are not checked here)."""
    import csv

    try:
        return [row[0] for row in _rows(text) if row and row[0]]
    except csv.Error as exc:
        raise RecordError(f"RECORD cannot be read as CSV ({exc})") from None


def parse_record(data: bytes) -> dict[str, RecordEntry]:
    """RECORD's rows by path; :class:`RecordError` when a row breaks the rules above."""
    import csv

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RecordError(f"RECORD is not UTF-8 ({exc})") from None
    entries: dict[str, RecordEntry] = {}
    try:
        for lineno, row in enumerate(_rows(text), start=1):
            if not row:
                continue
            if len(row) != 3:
                raise RecordError(f"RECORD line {lineno} has {len(row)} fields, not 3")
            path, hash_field, size_field = row
            if not path:
                raise RecordError(f"RECORD line {lineno} has an empty path")
            if path in entries:
                raise RecordError(f"RECORD lists {path!r} twice")
            algorithm = digest = None
            if hash_field:
                algorithm, sep, digest = hash_field.partition("=")
                if not sep or not digest or algorithm not in HASHES:
                    raise RecordError(
                        f"RECORD line {lineno}: hash {hash_field!r} is not sha256, sha384 or "
                        "sha512 (weaker or unknown hashes are refused)"
                    )
            size: int | None = None
            if size_field:
                if not size_field.isdigit():
                    raise RecordError(f"RECORD line {lineno}: bad size {size_field!r}")
                size = int(size_field)
            elif digest is not None:
                raise RecordError(f"RECORD line {lineno}: {path!r} has a hash but no size")
            entries[path] = RecordEntry(path, algorithm, digest, size)
    except csv.Error as exc:
        raise RecordError(f"RECORD cannot be read as CSV ({exc})") from None
    return entries


def unlisted(dist_info: str) -> frozenset[str]:
    """The members RECORD does not hash: itself and its signatures."""
    return frozenset(f"{dist_info}/{name}" for name in ("RECORD", *SIGNATURES))


def check_coverage(
    record: Mapping[str, RecordEntry],
    members: Mapping[str, int],
    dist_info: str,
    *,
    strict: bool,
) -> list[str]:
    """Check that RECORD covers ``members`` (file name -> size): every file has a hash and its
    size. A RECORD row for a file the archive lacks raises when ``strict``; otherwise it is
    returned, one line each, for the caller to warn about."""
    skip = unlisted(dist_info)
    for name, size in members.items():
        if name in skip:
            continue
        entry = record.get(name)
        if entry is None or entry.digest is None:
            raise RecordError(f"member {name!r} has no hash in RECORD")
        if entry.size is not None and entry.size != size:
            raise RecordError(
                f"RECORD says {name!r} is {entry.size} bytes, the archive says {size}"
            )
    extra = [
        path
        for path in record
        if path not in members and not path.endswith("/") and path not in skip
    ]
    if extra and strict:
        raise RecordError(f"RECORD lists {extra[0]!r}, which is not in the archive")
    return [f"RECORD lists {path!r}, which is not in the archive; ignored" for path in extra]


_NEEDS_QUOTING = (",", '"', "\r", "\n")


def record_line(path: str, hash_field: str, size: int | str) -> str:
    """One RECORD row (CSV: a path with a comma, quote or line break is quoted)."""
    if any(c in path for c in _NEEDS_QUOTING):
        path = '"' + path.replace('"', '""') + '"'
    return f"{path},{hash_field},{size}\n"
