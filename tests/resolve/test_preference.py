"""The order the resolver decides projects in (pip's): conflict first, then pins, upper bounds,
the user's order, any specifier, a project before its extras, the name."""

from __future__ import annotations

from typing import Any, NamedTuple

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet

from fitwheel.resolve.preference import PROMOTE_AFTER, Preferences
from fitwheel.resolve.provider import identify_requirement


class Info(NamedTuple):
    requirement: Requirement
    parent: Any


class Parent(NamedTuple):
    name: str


def _pinned(spec: SpecifierSet) -> bool:
    return any(s.operator in ("==", "===") and "*" not in s.version for s in spec)


def _identify(item: Any) -> str:
    return identify_requirement(item) if isinstance(item, Requirement) else str(item.name)


def _order(prefs: Preferences, specs: dict[str, str]) -> list[str]:
    return sorted(specs, key=lambda n: prefs.key(n, [SpecifierSet(specs[n])], _pinned))


def test_pins_then_upper_bounds_then_the_users_order_then_any_specifier() -> None:
    prefs = Preferences({"s3fs": 0, "boto3": 1, "pandas": 2})
    specs = {
        "pandas": "",
        "boto3": ">=1.20",
        "s3fs": "",
        "aiobotocore": ">=2.5",
        "botocore": "<1.41,>=1.40",
        "jmespath": "==1.0.1",
        "six": "",
        "urllib3": "==2.*",
    }
    assert _order(prefs, specs) == [
        "jmespath",  # pinned
        "botocore",  # upper bounds, by name
        "urllib3",
        "s3fs",  # the user's order
        "boto3",
        "pandas",
        "aiobotocore",  # a specifier
        "six",
    ]


def test_a_project_before_its_extras() -> None:
    prefs = Preferences({"celery[redis]": 0})
    assert _order(prefs, {"celery[redis]": "", "celery": ""}) == ["celery", "celery[redis]"]


def test_the_conflict_comes_first_with_the_candidates_that_asked() -> None:
    prefs = Preferences()
    causes = [
        Info(Requirement("botocore<1.41"), Parent("aiobotocore")),
        Info(Requirement("botocore==1.44.8"), Parent("boto3")),
    ]
    names = ["aiobotocore", "pandas", "botocore", "zipp"]
    assert prefs.narrow(names, {}, causes, _identify) == ["aiobotocore", "botocore"]
    assert prefs.narrow(["pandas", "zipp"], {}, causes, _identify) == ["pandas", "zipp"]


def test_a_project_undecided_in_repeated_conflicts_is_promoted() -> None:
    prefs = Preferences()
    causes = [Info(Requirement("numpy<2"), None)]
    for _ in range(PROMOTE_AFTER):
        prefs.narrow(["numpy", "pandas"], {}, causes, _identify)
    assert prefs.narrow(["numpy", "pandas"], {}, [], _identify) == ["numpy"]
    assert prefs.key("numpy", [], _pinned) < prefs.key("aaa", [SpecifierSet("==1")], _pinned)
