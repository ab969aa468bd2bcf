"""Which index a package comes from with several indexes (``--index-strategy``, uv's meaning),
against two real index servers on 127.0.0.1."""

from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging import tags
from packaging.markers import default_environment
from packaging.version import Version

from fitwheel.errors import FitwheelError, ResolutionError
from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import Finder
from fitwheel.index.http import Session
from fitwheel.resolve.candidates import CandidateSource, Options
from fitwheel.resolve.requirements import collect
from fitwheel.resolve.resolver import resolve
from tests.kit import build_simple_index, make_wheel, serve

PY = Version("3.11")


@pytest.fixture(scope="module")
def indexes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``public`` (given as --index-url): conf 1.0 and 3.0, solo 1.0; ``private`` (an extra
    index): conf 1.0 (another build of it) and 2.0."""
    root = tmp_path_factory.mktemp("strategy")
    make_wheel(root / "pub", "conf", "1.0", files={"conf.py": "WHERE = 'public'\n"})
    make_wheel(root / "pub", "conf", "3.0", files={"conf.py": "WHERE = 'public'\n"})
    make_wheel(root / "pub", "solo", "1.0")
    make_wheel(root / "priv", "conf", "1.0", files={"conf.py": "WHERE = 'private'\n"})
    make_wheel(root / "priv", "conf", "2.0", files={"conf.py": "WHERE = 'private'\n"})
    build_simple_index(root / "pub", root / "pub-site")
    build_simple_index(root / "priv", root / "priv-site")
    with serve(root / "pub-site") as (public, _), serve(root / "priv-site") as (private, _):
        yield f"{public}/simple/", f"{private}/simple/"


def pick(indexes: tuple[str, str], strategy: str, requirement: str) -> tuple[str, str]:
    """The chosen version of the requirement's project and the index its file comes from."""
    public, private = indexes
    finder = Finder(IndexConfig(public, (private,)), Session(retries=0, env={}), strategy)
    source = CandidateSource(finder, Options(None, PY, list(tags.sys_tags())))
    resolution = resolve(
        collect([requirement]), source, session=finder.session, environment=default_environment()
    )
    (pin,) = resolution.pins
    origin = public.removesuffix("simple/")
    return str(pin.version), ("public" if pin.link.url.startswith(origin) else "private")


def test_first_index_takes_a_project_from_the_first_index_that_has_it(
    indexes: tuple[str, str],
) -> None:
    # the extra index is searched first, as uv does: its conf shadows the public one entirely
    assert pick(indexes, "first-index", "conf") == ("2.0", "private")
    assert pick(indexes, "first-index", "conf==1.0") == ("1.0", "private")
    with pytest.raises(ResolutionError):
        pick(indexes, "first-index", "conf>=3")
    # a project the first index lacks comes from the next one
    assert pick(indexes, "first-index", "solo") == ("1.0", "public")


def test_unsafe_first_match_prefers_the_first_index_but_looks_at_all(
    indexes: tuple[str, str],
) -> None:
    assert pick(indexes, "unsafe-first-match", "conf") == ("2.0", "private")
    assert pick(indexes, "unsafe-first-match", "conf>=3") == ("3.0", "public")
    assert pick(indexes, "unsafe-first-match", "conf==1.0") == ("1.0", "private")


def test_unsafe_best_match_takes_the_best_version_anywhere(indexes: tuple[str, str]) -> None:
    assert pick(indexes, "unsafe-best-match", "conf") == ("3.0", "public")
    # one version on both indexes: the first index's file, never a mix
    assert pick(indexes, "unsafe-best-match", "conf==1.0") == ("1.0", "private")


def test_first_index_stops_asking_once_an_index_has_the_project(tmp_path: Path) -> None:
    make_wheel(tmp_path / "a", "conf", "1.0")
    make_wheel(tmp_path / "b", "conf", "2.0")
    build_simple_index(tmp_path / "a", tmp_path / "a-site")
    build_simple_index(tmp_path / "b", tmp_path / "b-site")
    with (
        serve(tmp_path / "a-site") as (main, main_state),
        serve(tmp_path / "b-site") as (
            extra,
            _,
        ),
    ):
        config = IndexConfig(f"{main}/simple/", (f"{extra}/simple/",))
        finder = Finder(config, Session(retries=0, env={}))
        assert {link.filename for link in finder.links("conf")} == {"conf-2.0-py3-none-any.whl"}
        assert not main_state.requests
        pooled = Finder(config, Session(retries=0, env={}), "unsafe-best-match")
        assert len(pooled.links("conf")) == 2
        assert main_state.requests


def test_an_unknown_strategy_is_refused() -> None:
    with pytest.raises(FitwheelError, match="first-index"):
        Finder(IndexConfig(None), None, "best")
