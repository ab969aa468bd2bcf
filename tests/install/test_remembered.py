"""The records of :mod:`fitwheel.install.remembered` and the checks they rest on: what a record
may hold, what makes a key change, and the cheap reads (a page's freshness, the installed
names) that stand in for the full ones."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from fitwheel.index.httpcache import HttpCache
from fitwheel.install.env.interpreter import inspect_environment
from fitwheel.install.remembered import (
    Plan,
    Remembered,
    digest,
    installed_state,
    load,
    still_valid,
    store,
)

SHA = "a" * 64


def plan(**changes: object) -> Plan:
    row: list[object] = ["lib", "1.0", None, "lib-1.0-py3-none-any.whl", "http://x/lib.whl"]
    row += [SHA, True, "install"]
    fields = ["name", "version", "label", "filename", "url", "sha256", "requested", "action"]
    for key, value in changes.items():
        row[fields.index(key)] = value
    return Plan.from_json(row)


def test_a_record_round_trips(tmp_path: Path) -> None:
    record = Remembered([plan()], [("http://x/simple/lib/", SHA)], [("reqs.txt", SHA)], ["w"])
    store(tmp_path, "k" * 64, record)
    back = load(tmp_path, "k" * 64)
    assert back is not None
    assert [p.as_json() for p in back.plan] == [p.as_json() for p in record.plan]
    assert back.pages == record.pages and back.files == record.files
    assert back.warnings == ["w"]


@pytest.mark.parametrize(
    "change",
    [
        {"filename": "../../../etc/passwd"},
        {"filename": "a/b.whl"},
        {"sha256": "short"},
        {"sha256": "../" * 21 + "x"},
        {"sha256": "A" * 64},
        {"name": "../evil"},
        {"version": "1.0/../../x"},
        {"filename": "lib-1.0.tar.gz"},
        {"action": "delete"},
        {"requested": "yes"},
        {"name": 3},
        {"label": ["x"]},
    ],
)
def test_a_hostile_plan_row_is_refused(change: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        plan(**change)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"not json",
        b"[]",
        b'{"format": 99, "plan": [], "pages": [], "files": [], "warnings": []}',
        b'{"format": 1, "plan": [1], "pages": [], "files": [], "warnings": []}',
        b'{"format": 1, "plan": [], "pages": [["only-url"]], "files": [], "warnings": []}',
        b'{"format": 1, "plan": [], "pages": [], "files": [], "warnings": [3]}',
        b'{"format": 1}',
    ],
)
def test_a_damaged_record_is_a_miss(tmp_path: Path, raw: bytes) -> None:
    key = "b" * 64
    path = tmp_path / key[:2] / f"{key}.json"
    path.parent.mkdir()
    path.write_bytes(raw)
    assert load(tmp_path, key) is None


def test_the_key_is_stable_and_changes_with_any_part() -> None:
    parts = {"options": {"pre": False, "requirements": ["app"]}, "env": {"PIP_PRE": "1"}}
    assert digest(parts) == digest(json.loads(json.dumps(parts)))
    assert digest(parts) != digest({**parts, "env": {}})
    assert digest(parts) != digest({**parts, "options": {"pre": True, "requirements": ["app"]}})


def test_the_installed_state_changes_with_a_reinstall(tmp_path: Path) -> None:
    site = tmp_path / "site"
    info = site / "lib-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Name: lib\nVersion: 1.0\n")
    (site / "lib").mkdir()  # a package folder is not a distribution
    before = installed_state([str(site)])
    assert installed_state([str(site)]) == before
    (info / "METADATA").write_text("Name: lib\nVersion: 1.0\nRequires-Dist: other\n")
    os.utime(info / "METADATA", ns=(1, 1))
    assert installed_state([str(site)]) != before
    changed = installed_state([str(site)])
    (info / "variant.json").write_text("{}")
    assert installed_state([str(site)]) != changed


def test_freshness_is_read_from_the_entry_head(tmp_path: Path) -> None:
    cache = HttpCache(tmp_path)
    url = "http://127.0.0.1/simple/lib/"
    cache.store(url, {"cache-control": "max-age=600"}, b"page")
    sha = cache.fresh_sha256(url, time.time())
    assert sha is not None and len(sha) == 64
    assert cache.fresh_sha256(url, time.time() + 601) is None
    assert cache.fresh_sha256("http://127.0.0.1/simple/other/", time.time()) is None
    cache.store(url, {"cache-control": "no-cache"}, b"page2")
    assert cache.fresh_sha256(url, time.time()) is None


def test_validity_needs_fresh_pages_same_files_and_cached_wheels(tmp_path: Path) -> None:
    reqs = tmp_path / "reqs.txt"
    reqs.write_text("lib\n")
    from fitwheel.install.remembered import content_state

    record = Remembered(
        [plan()], [("http://x/simple/lib/", SHA)], [(str(reqs), content_state(str(reqs)))], []
    )
    wheel = tmp_path / "lib.whl"
    wheel.write_bytes(b"w")

    def check(fresh: str | None = SHA, cached: bool = True, installing: bool = True) -> bool:
        return still_valid(
            record,
            fresh_sha256=lambda url, now: fresh,
            wheel_file=lambda sha, name: str(wheel),
            unpacked=lambda sha: cached,
            installing=installing,
        )

    assert check()
    assert not check(fresh=None)
    assert not check(fresh="c" * 64)
    assert not check(cached=False)
    assert check(cached=False, installing=False)  # a dry run needs no files
    reqs.write_text("lib==1\n")
    assert not check()


def test_maybe_installed_reads_names_from_folders(tmp_path: Path, venv: Path) -> None:
    env = inspect_environment(str(venv), {}, cache_dir=tmp_path / "envs")
    site = Path(env.scheme["purelib"])
    assert not env.maybe_installed(["pyyaml"])
    (site / "PyYAML-6.0.2.dist-info").mkdir()
    assert env.maybe_installed(["pyyaml"])
    assert not env.maybe_installed(["other"])
    assert not env.maybe_installed([])
    (site / "odd-name-here.dist-info").mkdir()  # not NAME-VERSION: it could be anyone's
    assert env.maybe_installed(["other"])
