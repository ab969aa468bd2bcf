"""Errors of the format core: every one names the source, the key path and the rule broken."""

from __future__ import annotations


class VariantError(ValueError):
    """Base of every error raised by :mod:`fitwheel.variants`."""


class VariantFormatError(VariantError):
    """Data that breaks a rule of the wheel-variant format.

    ``source`` is the file or URL the data came from (``None`` when unknown), ``path`` the key
    path inside it (``providers.nvidia.requires[0]``; empty for the whole document) and ``rule``
    a sentence that states what was expected.
    """

    def __init__(self, rule: str, path: str = "", *, source: str | None = None) -> None:
        self.rule = rule
        self.path = path
        self.source = source
        super().__init__(self._render())

    def _render(self) -> str:
        where = self.source or "<input>"
        if self.path:
            where = f"{where}: at {self.path}"
        return f"{where}: {self.rule}"

    def with_source(self, source: str) -> VariantFormatError:
        """The same error, attributed to ``source`` (readers know the file name, parsers do not)."""
        return type(self)(self.rule, path=self.path, source=source)


class InvalidPropertyError(VariantFormatError):
    """A namespace, feature, value or property string that does not match the grammar."""


class InvalidLabelError(VariantFormatError):
    """A variant label that does not match the grammar, or breaks the null-label rule."""


class InvalidWheelFilenameError(VariantFormatError):
    """A wheel filename that cannot be parsed."""


class MergeConflictError(VariantFormatError):
    """Two pieces of variant metadata that cannot be combined into one index file."""
