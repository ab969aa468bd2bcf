"""Remote wheel metadata is read by the one wheel reader: a wheel built to confuse zip readers is
refused whether its members are read by range requests or from the whole file."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.errors import InvalidWheelError
from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import Finder
from fitwheel.index.http import Session
from fitwheel.index.metadata import fetch_member, fetch_metadata
from tests.kit import build_simple_index, serve
from tests.wheel.hostile_zip import FILENAME, KINDS, hostile_wheel


def _session() -> Session:
    return Session(retries=0, backoff=0.0, timeout=5.0, env={})


@pytest.mark.parametrize(
    ("kind", "ranges"),
    [
        ("overlapping-members", True),
        ("overlapping-members", False),
        # by range requests only the members read have their local headers checked (the rest
        # are checked when the wheel is installed); from the whole wheel, every one
        ("forged-central-directory", False),
    ],
)
def test_a_hostile_wheel_is_refused_when_reading_its_metadata(
    tmp_path: Path, kind: str, ranges: bool
) -> None:
    hostile_wheel(tmp_path / "wheels", kind)
    build_simple_index(tmp_path / "wheels", tmp_path / "site", metadata_files=False)
    with serve(tmp_path / "site", ranges=ranges) as (url, state):
        session = _session()
        (link,) = Finder(IndexConfig(f"{url}/simple/"), session).links("hostile")
        with pytest.raises(InvalidWheelError, match=KINDS[kind]) as caught:
            fetch_metadata(link, session)
        assert FILENAME in str(caught.value)
        assert any("range" in r[2] for r in state.requests) is ranges


def test_metadata_from_the_whole_wheel_is_streamed_to_a_file(tmp_path: Path) -> None:
    """A server without range support: the wheel is downloaded to a temporary file, read there,
    and removed (nothing of it is held in memory whole, nothing left behind)."""
    hostile_wheel(tmp_path / "wheels", "md5-record")  # METADATA itself is well-formed
    build_simple_index(tmp_path / "wheels", tmp_path / "site", metadata_files=False)
    with serve(tmp_path / "site", ranges=False) as (url, _state):
        session = _session()
        (link,) = Finder(IndexConfig(f"{url}/simple/"), session).links("hostile")
        before = set(Path("/tmp").glob("fitwheel-metadata-*"))
        data = fetch_member(link, session, "METADATA", required=True)
        assert data is not None and b"Name: hostile" in data
        assert set(Path("/tmp").glob("fitwheel-metadata-*")) == before
