"""The alphabets of namespaces, feature names, values and labels, and their validators.

Kept apart from :mod:`fitwheel.variants.model` (which re-exports all of it) so that detection and
profiles can check names without defining the model's classes on every start.
"""

from __future__ import annotations

import re

from fitwheel.variants.errors import InvalidLabelError, InvalidPropertyError

__all__ = [
    "FEATURE_RE",
    "LABEL_RE",
    "NAMESPACE_RE",
    "VALUE_RE",
    "check_feature",
    "check_label",
    "check_namespace",
    "check_value",
]

NAMESPACE_RE = re.compile(r"[a-z0-9_]+")
FEATURE_RE = re.compile(r"[a-z0-9_]+")
VALUE_RE = re.compile(r"[a-z0-9_.]+")
LABEL_RE = re.compile(r"[0-9a-z._]+")


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
