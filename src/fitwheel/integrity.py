"""The one hash-verification policy: which published hash is checked, and what a failure is.

The rule (pip's, for the algorithms it trusts): of the algorithms a file is offered with, the
strongest of sha512, sha384 and sha256 is checked, once; the others are ignored. md5, sha1 and
names this Python does not know are never checked and never crash: a file offered only with
those has no usable hash. Where hashes are required (an index that publishes hashes for the
file, ``--require-hashes``, a lock) a file without a usable hash is refused
(:class:`HashRequiredError`); a file offered with no hash at all is accepted unchecked.

Index, metadata and download code all go through :func:`verify` (bytes in memory) or
:class:`Verifier` (a stream), so the choice and the error are the same everywhere. The ``url``
they take is the one shown in messages: callers pass it without a password.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from fitwheel._values import Frozen
from fitwheel.errors import IntegrityError

if TYPE_CHECKING:
    from hashlib import _Hash

#: the algorithms checked, strongest first (all guaranteed by hashlib)
STRONG_ALGORITHMS = ("sha512", "sha384", "sha256")


class HashMismatchError(IntegrityError):
    """A file whose content does not have the hash it must have. ``fact`` says which file has
    which hash (the message without its advice, for a caller that gives its own), ``actual`` is
    the digest found (None where not known)."""

    def __init__(
        self, message: str, url: str = "", *, actual: str | None = None, fact: str = ""
    ) -> None:
        super().__init__(message)
        self.url = url
        self.actual = actual
        self.fact = fact or message


class HashRequiredError(IntegrityError):
    """A hash is required, and none usable was given."""

    def __init__(self, message: str, url: str = "") -> None:
        super().__init__(message)
        self.url = url


class Hashes(Frozen):
    """The digests a file may have: algorithm name (lower case) -> acceptable hex digests (any
    one matches). Empty: nothing was published or pinned."""

    __slots__ = ("allowed",)
    allowed: Mapping[str, frozenset[str]]

    def __init__(self, allowed: Mapping[str, frozenset[str]]) -> None:
        object.__setattr__(self, "allowed", allowed)

    @classmethod
    def of(cls, hashes: Mapping[str, str | Iterable[str]] | None) -> Hashes:
        """From an index's ``{algorithm: digest}`` or pins' ``{algorithm: digests}``."""
        out: dict[str, frozenset[str]] = {}
        for algo, value in (hashes or {}).items():
            values = [value] if isinstance(value, str) else list(value)
            digests = frozenset(v.lower() for v in values if v)
            if digests:
                key = algo.lower()
                out[key] = out.get(key, frozenset()) | digests
        return cls(out)

    def __bool__(self) -> bool:
        return bool(self.allowed)

    @property
    def algorithm(self) -> str | None:
        """The algorithm checked: the strongest usable one offered (None: none usable)."""
        return next((a for a in STRONG_ALGORITHMS if a in self.allowed), None)

    def choose(self, url: str, what: str = "") -> str | None:
        """The algorithm to check for the file at ``url``; None when nothing is offered (so
        nothing to check). Offered, but none usable: :class:`HashRequiredError`."""
        if not self.allowed:
            return None
        algo = self.algorithm
        if algo is None:
            offered = ", ".join(sorted(self.allowed))
            subject = f"{what} " if what else ""
            raise HashRequiredError(
                f"{subject}{url} is offered only with hashes fitwheel does not check "
                f"({offered}): it needs sha256, sha384 or sha512, so the file is refused. Ask "
                "the index's maintainer to publish sha256 hashes, or pin one with --hash.",
                url,
            )
        return algo

    def check(self, algorithm: str, digest: str, url: str, what: str = "") -> None:
        """Raise :class:`HashMismatchError` unless ``digest`` is an allowed ``algorithm`` one."""
        allowed = self.allowed.get(algorithm, frozenset())
        if digest.lower() in allowed:
            return
        subject = f"{what} " if what else ""
        expected = " or ".join(sorted(allowed))
        fact = (
            f"{subject}{url} does not have the hash published or pinned for it ({algorithm} "
            f"{expected}; it has {digest})"
        )
        raise HashMismatchError(
            f"{fact}, so fitwheel refuses it: the file served is not the one listed (tell the "
            "index's maintainer, or try again if it is being updated).",
            url,
            actual=digest.lower(),
            fact=fact,
        )


def verify(data: bytes, hashes: Hashes, url: str, what: str = "") -> str | None:
    """Check ``data`` against ``hashes`` once, by the strongest algorithm offered; return that
    algorithm (None: nothing offered, nothing checked)."""
    algo = hashes.choose(url, what)
    if algo is not None:
        hashes.check(algo, hashlib.new(algo, data).hexdigest(), url, what)
    return algo


class Verifier:
    """:func:`verify` for a stream: ``update`` with each piece, then :meth:`verify`. Also keeps
    a sha256 (the download cache's address), computed once when that is the algorithm checked."""

    __slots__ = ("_hashers", "algorithm", "hashes", "url", "what")

    def __init__(self, hashes: Hashes, url: str, what: str = "") -> None:
        self.hashes = hashes
        self.url = url
        self.what = what
        #: refused here, before anything is downloaded, when no usable hash is offered
        self.algorithm = hashes.choose(url, what)
        self._hashers: dict[str, _Hash] = {}
        self.reset()

    def reset(self) -> None:
        """Start over (the file was rewound)."""
        names = {"sha256"} if self.algorithm is None else {"sha256", self.algorithm}
        self._hashers = {name: hashlib.new(name) for name in names}

    def update(self, data: bytes) -> None:
        for hasher in self._hashers.values():
            hasher.update(data)

    @property
    def sha256(self) -> str:
        return self._hashers["sha256"].hexdigest()

    def verify(self) -> None:
        if self.algorithm is not None:
            digest = self._hashers[self.algorithm].hexdigest()
            self.hashes.check(self.algorithm, digest, self.url, self.what)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """The sha256 of a file's contents, read a mebibyte at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()
