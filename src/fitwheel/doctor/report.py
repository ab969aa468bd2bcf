"""Doctor's findings: one :class:`Check` each, the JSON shape of the CLI contract, the checklist."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["FAIL", "NA", "PASS", "WARN", "Check", "checklist", "ok", "report_json"]

Status = Literal["pass", "warn", "fail", "n/a"]
PASS: Status = "pass"
#: it runs, but not as it could: a build for hardware the machine lacks (a CUDA build on a
#: machine without an NVIDIA GPU runs on the CPU only); no failure
WARN: Status = "warn"
FAIL: Status = "fail"
NA: Status = "n/a"


@dataclass(frozen=True, slots=True)
class Check:
    """One finding. ``detail`` explains it (for a failure or a warning: what is wrong and why
    it matters; for n/a: why the check does not apply); ``fix`` is the command that repairs a
    failure or a warning."""

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
    """No check fails (warnings are no failure)."""
    return all(c.status != FAIL for c in checks)


def report_json(checks: Sequence[Check]) -> dict[str, Any]:
    return {"ok": ok(checks), "checks": [c.to_json() for c in checks]}


_MARK = {PASS: "ok  ", WARN: "warn", FAIL: "FAIL", NA: "n/a "}


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'s' * (count != 1)}"


def checklist(checks: Sequence[Check]) -> list[str]:
    """The human checklist: one line per check, the fix under each failure and warning, a
    summary."""
    lines = []
    for c in checks:
        who = f"{c.package}: " if c.package else ""
        lines.append(f"[{_MARK[c.status]}] {c.name}: {who}{c.detail}")
        if c.status in (FAIL, WARN) and c.fix:
            lines.append(f"       fix: {c.fix}")
    failed = sum(1 for c in checks if c.status == FAIL)
    warned = sum(1 for c in checks if c.status == WARN)
    passed = sum(1 for c in checks if c.status == PASS)
    skipped = len(checks) - failed - warned - passed
    if failed:
        verdict = f"{_plural(failed, 'problem')} found"
    elif warned:
        verdict = f"no problem, {_plural(warned, 'warning')}"
    else:
        verdict = "all is well"
    lines.append(
        f"{verdict} ({passed} passed, {warned} warned, {failed} failed, {skipped} not applicable)"
    )
    return lines
