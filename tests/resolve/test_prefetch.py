"""The resolver's prefetch against a served index: every page and metadata file of a tree is
asked for once, whether a prefetch thread or the resolver gets to it first, and never more
requests at once than the prefetch threads allow."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from packaging import tags
from packaging.markers import default_environment

from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import Finder
from fitwheel.index.http import Session
from fitwheel.platform.policy import target_from_profile
from fitwheel.platform.profile import parse_profile
from fitwheel.resolve.candidates import CandidateSource, Options
from fitwheel.resolve.provider import PREFETCH_JOBS
from fitwheel.resolve.requirements import collect
from fitwheel.resolve.resolver import resolve, start_prefetch
from tests.kit import build_simple_index, make_wheel, serve

PY = ".".join(map(str, sys.version_info[:3]))
WIDTH = 12


def _site(tmp_path: Path) -> Path:
    """app needs lib00..lib11, each of which needs its own leaf: three levels, 25 projects."""
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "app", "1.0", requires=[f"lib{i:02d}>=1" for i in range(WIDTH)])
    for i in range(WIDTH):
        make_wheel(wheels, f"lib{i:02d}", "1.0", requires=[f"leaf{i:02d}"])
        make_wheel(wheels, f"leaf{i:02d}", "1.0")
    build_simple_index(wheels, tmp_path / "site")
    return tmp_path / "site"


def _resolve(url: str, *, early: bool = False) -> list[str]:
    prof = parse_profile({"properties": {}}, "test profile")
    opts = Options(target_from_profile(prof), PY, list(tags.sys_tags()))
    session = Session(retries=0, backoff=0.0, timeout=10.0, env={})
    source = CandidateSource(Finder(IndexConfig(f"{url}/simple/"), session), opts)
    user, environment = collect(["app"]), dict(default_environment())
    prefetched = (
        start_prefetch(user, source, session=session, environment=environment) if early else None
    )
    resolution = resolve(
        user, source, session=session, environment=environment, prefetched=prefetched
    )
    return sorted(c.name for c in resolution.pins)


@pytest.mark.parametrize("early", [False, True], ids=["with-the-resolver", "started-before"])
def test_each_page_and_metadata_file_is_fetched_once(tmp_path: Path, early: bool) -> None:
    with serve(_site(tmp_path), hold=0.01) as (url, state):
        names = _resolve(url, early=early)
    assert len(names) == 1 + 2 * WIDTH
    asked = [path for method, path, _headers in state.requests if method == "GET"]
    pages = [p for p in asked if p.startswith("/simple/")]
    metadata = [p for p in asked if p.endswith(".metadata")]
    assert sorted(pages) == sorted(f"/simple/{name}/" for name in names)
    assert len(metadata) == len(set(metadata)) == len(names)
    assert not [p for p in asked if p.endswith(".whl")]  # metadata only, never a wheel


def test_no_more_requests_at_once_than_the_prefetch_threads_and_the_resolver(
    tmp_path: Path,
) -> None:
    with serve(_site(tmp_path), hold=0.02) as (url, state):
        _resolve(url)
    # the prefetch threads, plus the resolver's own thread when it asks before they do
    assert 1 <= state.peak <= PREFETCH_JOBS + 1


def test_a_prefetch_started_early_for_no_deps_asks_for_no_dependency(tmp_path: Path) -> None:
    prof = parse_profile({"properties": {}}, "test profile")
    opts = Options(target_from_profile(prof), PY, list(tags.sys_tags()))
    with serve(_site(tmp_path)) as (url, state):
        session = Session(retries=0, backoff=0.0, timeout=10.0, env={})
        source = CandidateSource(Finder(IndexConfig(f"{url}/simple/"), session), opts)
        user, environment = collect(["app"]), dict(default_environment())
        early = start_prefetch(user, source, session=session, environment=environment, no_deps=True)
        resolution = resolve(
            user,
            source,
            session=session,
            environment=environment,
            no_deps=True,
            prefetched=early,
        )
    assert [c.name for c in resolution.pins] == ["app"]
    assert {path for _m, path, _h in state.requests if path.startswith("/simple/")} == {
        "/simple/app/"
    }
