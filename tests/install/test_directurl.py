"""PEP 610 records: what pip writes for each kind of direct install, without credentials, and
read back into the requirement pip's freeze writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.install.place.directurl import (
    archive_record,
    as_requirement,
    direct_url_record,
    record_url,
    vcs_record,
)


@pytest.mark.parametrize(
    ("url", "vcs", "recorded"),
    [
        ("https://u:secret@h.invalid/x.whl", None, "https://h.invalid/x.whl"),
        ("https://token@h.invalid:8443/x.whl", None, "https://h.invalid:8443/x.whl"),
        ("ssh://git@h.invalid/o/r.git", "git", "ssh://git@h.invalid/o/r.git"),
        ("ssh://git@h.invalid/o/r.git", None, "ssh://h.invalid/o/r.git"),
        ("https://git:pw@h.invalid/o/r.git", "git", "https://h.invalid/o/r.git"),
        ("https://${USER}:${TOKEN}@h.invalid/r", "git", "https://${USER}:${TOKEN}@h.invalid/r"),
        ("file:///tmp/x.whl", None, "file:///tmp/x.whl"),
    ],
)
def test_records_hold_no_credentials(url: str, vcs: str | None, recorded: str) -> None:
    assert record_url(url, vcs=vcs) == recorded


def test_a_checkout_reads_back_as_pips_freeze_line() -> None:
    record = vcs_record("git", "https://u:p@h.invalid/r.git", "a" * 40, "v1", "pkg")
    assert record == {
        "url": "https://h.invalid/r.git",
        "vcs_info": {"vcs": "git", "commit_id": "a" * 40, "requested_revision": "v1"},
        "subdirectory": "pkg",
    }
    line = as_requirement("p", record)
    assert line == f"p @ git+https://h.invalid/r.git@{'a' * 40}#subdirectory=pkg"


def test_archives_folders_and_editables(tmp_path: Path) -> None:
    record = archive_record("https://h.invalid/x-1.0.tar.gz", "b" * 64)
    assert as_requirement("x", record) == f"x @ https://h.invalid/x-1.0.tar.gz#sha256={'b' * 64}"
    assert as_requirement("x", direct_url_record(tmp_path)) == f"x @ {tmp_path.as_uri()}"
    assert as_requirement("x", direct_url_record(tmp_path, editable=True)) is None
    assert as_requirement("x", {"url": 3}) is None
    assert as_requirement("x", {"url": "u"}) is None
