"""The alphabets of namespaces, feature names, values and labels, their validators, and the one
project-name normaliser (:func:`canonicalize_name`).

Kept apart from :mod:`fitwheel.variants.model` (which re-exports all of it) so that detection and
profiles can check names without defining the model's classes on every start.
"""

from __future__ import annotations

import re

from fitwheel.variants.errors import InvalidLabelError, InvalidPropertyError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from packaging.utils import NormalizedName

__all__ = [
    "FEATURE_RE",
    "LABEL_RE",
    "NAMESPACE_RE",
    "VALUE_RE",
    "canonicalize_name",
    "check_feature",
    "check_label",
    "check_namespace",
    "check_value",
]

NAMESPACE_RE = re.compile(r"[a-z0-9_]+")
FEATURE_RE = re.compile(r"[a-z0-9_]+")
VALUE_RE = re.compile(r"[a-z0-9_.]+")
LABEL_RE = re.compile(r"[0-9a-z._]+")
_SEPARATORS_RE = re.compile(r"[-_.]+")


def canonicalize_name(name: str) -> NormalizedName:
    """PEP 503 normalisation of a project name, as ``packaging.utils.canonicalize_name`` does it
    (which this module does not import: ``packaging.utils`` loads ``packaging.tags``, ~15 ms)."""
    return _SEPARATORS_RE.sub("-", name).lower()  # type: ignore[return-value]


def check_namespace(name: str, *, path: str = "") -> str:
    if not isinstance(name, str) or not NAMESPACE_RE.fullmatch(name):
        raise InvalidPropertyError(
            f"namespace {name!r} must be non-empty and use only a-z, 0-9 and _", path=path
        )
    return name


def check_feature(name: str, *, path: str = "") -> str:
    if not isinstance(name, str) or not FEATURE_RE.fullmatch(name):
        raise InvalidPropertyError(
            f"feature name {name!r} must be non-empty and use only a-z, 0-9 and _", path=path
        )
    return name


def check_value(value: str, *, path: str = "") -> str:
    if not isinstance(value, str) or not VALUE_RE.fullmatch(value):
        raise InvalidPropertyError(
            f"feature value {value!r} must be non-empty and use only a-z, 0-9, _ and .", path=path
        )
    return value


def check_label(label: str, *, path: str = "") -> str:
    if not isinstance(label, str) or not LABEL_RE.fullmatch(label):
        raise InvalidLabelError(
            f"variant label {label!r} must be non-empty and use only a-z, 0-9, _ and .", path=path
        )
    return label
