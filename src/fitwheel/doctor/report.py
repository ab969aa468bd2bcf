"""Doctor's findings: one :class:`Check` each, the JSON shape of the CLI contract, the checklist."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["FAIL", "NA", "PASS", "Check", "checklist", "report_json"]

Status = Literal["pass", "fail", "n/a"]
PASS: Status = "pass"
FAIL: Status = "fail"
NA: Status = "n/a"


@dataclass(frozen=True, slots=True)
class Check:
    """One finding. ``detail`` explains it (for a failure: what is wrong and why it matters; for
    n/a: why the check does not apply); ``fix`` is the command that repairs a failure."""

    name: str
    package: str | None
    status: Status
    detail: str
    fix: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "package": self.package,
            "status": self.status,
            "detail": self.detail,
            "fix": self.fix,
        }


def ok(checks: Iterable[Check]) -> bool:
    return all(c.status != FAIL for c in checks)


def report_json(checks: Sequence[Check]) -> dict[str, Any]:
    return {"ok": ok(checks), "checks": [c.to_json() for c in checks]}


_MARK = {PASS: "ok  ", FAIL: "FAIL", NA: "n/a "}


def checklist(checks: Sequence[Check]) -> list[str]:
    """The human checklist: one line per check, the fix under each failure, a summary."""
    lines = []
    for c in checks:
        who = f"{c.package}: " if c.package else ""
        lines.append(f"[{_MARK[c.status]}] {c.name}: {who}{c.detail}")
        if c.status == FAIL and c.fix:
            lines.append(f"       fix: {c.fix}")
    failed = sum(1 for c in checks if c.status == FAIL)
    passed = sum(1 for c in checks if c.status == PASS)
    skipped = len(checks) - failed - passed
    verdict = "all is well" if not failed else f"{failed} problem{'s' * (failed != 1)} found"
    lines.append(f"{verdict} ({passed} passed, {failed} failed, {skipped} not applicable)")
    return lines
