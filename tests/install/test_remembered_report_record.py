"""The ``--report`` a record keeps (:mod:`fitwheel.install.remembered`): only the fields that
follow from the decision, round-tripped whole; a record whose report is damaged is a miss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fitwheel.install.remembered import (
    REPORT_FIELDS,
    Plan,
    Remembered,
    load,
    remembered_report,
    store,
)

SHA = "a" * 64
KEY = "c" * 64


def _plan() -> Plan:
    row = ["lib", "1.0", None, "lib-1.0-py3-none-any.whl", "http://x/lib.whl", SHA, True]
    return Plan.from_json([*row, "install"])


def _report() -> dict[str, object]:
    report: dict[str, object] = {name: [] for name in REPORT_FIELDS}
    report["fitwheel_report"] = 1
    report["install"] = [{"name": "lib", "version": "1.0"}]
    return report


def test_a_report_round_trips_without_the_fields_of_one_run(tmp_path: Path) -> None:
    full = {**_report(), "of_this_run_only": {"bytes": 3}}
    kept = remembered_report(full)
    assert list(kept) == list(REPORT_FIELDS)
    store(tmp_path, KEY, Remembered([_plan()], [], [], [], kept))
    back = load(tmp_path, KEY)
    assert back is not None and back.report == kept


def test_a_record_without_a_report_still_loads(tmp_path: Path) -> None:
    store(tmp_path, KEY, Remembered([_plan()], [], [], []))
    back = load(tmp_path, KEY)
    assert back is not None and back.report is None


@pytest.mark.parametrize(
    "report",
    [
        "not a report",
        [],
        {"fitwheel_report": 1},
        {**{name: [] for name in REPORT_FIELDS}, "install": [{}, {}]},
        {**{name: [] for name in REPORT_FIELDS}, "install": "lib"},
        {**{name: [] for name in REPORT_FIELDS}, "extra": 1},
    ],
)
def test_a_damaged_report_is_a_miss(tmp_path: Path, report: object) -> None:
    store(tmp_path, KEY, Remembered([_plan()], [], [], [], _report()))
    path = tmp_path / KEY[:2] / f"{KEY}.json"
    data = json.loads(path.read_text())
    data["report"] = report
    path.write_text(json.dumps(data))
    assert load(tmp_path, KEY) is None
