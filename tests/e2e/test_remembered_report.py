"""``--report`` from a remembered resolution: the second identical install (into a fresh copy of
the same venv) replays the record, without loading the resolver, and writes the report the full
resolution wrote, field for field."""

from __future__ import annotations

import json
from pathlib import Path

from tests.e2e.test_remembered import Run, run, server, site

__all__ = ["run", "server", "site"]


def _report(path: Path) -> dict[str, object]:
    loaded = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def test_a_replayed_install_writes_the_full_resolutions_report(run: Run, tmp_path: Path) -> None:
    first_path, again_path = tmp_path / "first.json", tmp_path / "again.json"
    first, resolved = run.install("--report", str(first_path), "app[more]", "torch")
    assert resolved
    full = run.files()
    again, resolved = run.install("--report", str(again_path), "app[more]", "torch")
    assert not resolved, "the install asking for a report resolved again"
    assert run.files() == full
    assert again.stdout == first.stdout
    replayed, resolved_report = _report(again_path), _report(first_path)
    # what the run did ahead of its pins is the run's own: a replay fetched nothing early
    assert replayed.pop("speculative") is None  # type: ignore[attr-defined]
    resolved_report.pop("speculative")  # type: ignore[attr-defined]
    assert replayed == resolved_report
    names = [entry["name"] for entry in _report(first_path)["install"]]  # type: ignore[attr-defined]
    assert "app" in names and "lib" in names and "torch" in names


def test_a_report_on_stdout_is_replayed_alone(run: Run) -> None:
    first, resolved = run.install("-q", "--report", "-", "app")
    assert resolved
    again, resolved = run.install("-q", "--report", "-", "app")
    assert not resolved
    replayed, resolved_report = json.loads(again.stdout), json.loads(first.stdout)
    assert replayed.pop("speculative") is None
    resolved_report.pop("speculative")
    assert replayed == resolved_report


def test_a_dry_run_report_is_replayed(run: Run) -> None:
    first, resolved = run.install("--dry-run", "--report", "-", "app")
    assert resolved
    again, resolved = run.install("--dry-run", "--report", "-", "app")
    assert not resolved
    assert again.stdout == first.stdout


def test_a_record_without_a_report_answers_installs_without_one(run: Run, tmp_path: Path) -> None:
    """A record filed before records kept reports (none in it): an install asking for a report
    resolves, and files the record with its report; one that asks for none replays."""
    run.install("app")
    for record in run.records():
        data = json.loads(record.read_text())
        del data["report"]
        record.write_text(json.dumps(data))
    _, resolved = run.install("app")
    assert not resolved
    _, resolved = run.install("--report", str(tmp_path / "r.json"), "app")
    assert resolved
    _, resolved = run.install("--report", str(tmp_path / "r2.json"), "app")
    assert not resolved
    resolved_report, replayed = _report(tmp_path / "r.json"), _report(tmp_path / "r2.json")
    assert replayed.pop("speculative") is None
    resolved_report.pop("speculative")
    assert replayed == resolved_report
