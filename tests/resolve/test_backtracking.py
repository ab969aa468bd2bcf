"""Which project the resolver walks back when two requirements conflict, and what walking back
costs: the shape of an old data-science requirements file (``s3fs`` and a loose ``boto3``),
built here on a loopback index.

- ``storefs`` (think s3fs) needs ``asynccore`` (aiobotocore), which allows only an older
  ``corelib`` (botocore) than the newest ``awsclient`` (boto3) pins; the oldest ``storefs`` is a
  source distribution that needs ``awsclient`` directly and no ``asynccore``.
- Every ``asynccore`` version has a wheel and a source distribution.

pip keeps ``storefs`` current and takes an older ``awsclient``: the user's requirements are
decided in the order the user wrote them, so ``awsclient`` is pinned last and is what a
conflict walks back. fitwheel must choose the same, and must never build the source
distribution of a version whose wheel was already turned down.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from pathlib import Path

from packaging import tags
from packaging.markers import default_environment
from packaging.utils import canonicalize_name

from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import Finder
from fitwheel.index.http import Session
from fitwheel.platform.policy import target_from_profile
from fitwheel.platform.profile import parse_profile
from fitwheel.resolve.candidates import Candidate, CandidateSource, Options
from fitwheel.resolve.requirements import collect
from fitwheel.resolve.resolver import resolve
from tests.kit import build_simple_index, clean_env, make_sdist, make_wheel, serve

PY = ".".join(map(str, sys.version_info[:3]))
NEWEST_CORE = 5


def _site(tmp_path: Path) -> Path:
    files = tmp_path / "files"
    for minor in range(NEWEST_CORE + 1):
        make_wheel(files, "corelib", f"1.{minor}")
        make_wheel(files, "awsclient", f"1.{minor}", requires=[f"corelib==1.{minor}"])
    for minor in range(6):
        # every asynccore allows only corelib 1.1 to 1.2, never the newest
        requires = ["corelib>=1.1,<1.3"]
        make_wheel(files, "asynccore", f"2.{minor}", requires=requires)
        make_sdist(files, "asynccore", f"2.{minor}", requires=requires)
    for month in (1, 2, 3):
        make_wheel(files, "storefs", f"2024.{month}.0", requires=["asynccore>=2.0"])
    make_sdist(files, "storefs", "0.4.2", requires=["awsclient>=1.0"])
    build_simple_index(files, tmp_path / "site")
    return tmp_path / "site"


REQUIREMENTS = ["storefs", "awsclient>=1.0"]
#: what pip installs (checked against pip itself below)
EXPECTED = {"storefs": "2024.3.0", "asynccore": "2.5", "awsclient": "1.2", "corelib": "1.2"}


def _pkg_info(sdist: Path) -> bytes:
    with tarfile.open(sdist) as tf:
        member = next(m for m in tf.getmembers() if m.name.endswith("/PKG-INFO"))
        handle = tf.extractfile(member)
        assert handle is not None
        return handle.read()


def _fitwheel(url: str, files: Path, requirements: list[str]) -> tuple[dict[str, str], list[str]]:
    prof = parse_profile({"properties": {}}, "test profile")
    opts = Options(target_from_profile(prof), PY, list(tags.sys_tags()))
    session = Session(retries=0, backoff=0.0, timeout=10.0, env={})
    source = CandidateSource(Finder(IndexConfig(f"{url}/simple/"), session), opts)
    built: list[str] = []

    def build_metadata(candidate: Candidate) -> bytes:
        # what a build backend would answer: the sdist's own PKG-INFO
        built.append(candidate.link.filename)
        return _pkg_info(files / candidate.link.filename)

    resolution = resolve(
        collect(requirements),
        source,
        session=session,
        environment=dict(default_environment()),
        build_metadata=build_metadata,
    )
    return {str(c.name): str(c.version) for c in resolution.pins}, built


def test_a_conflict_walks_back_the_requirement_written_last_as_pip_does(
    tmp_path: Path,
) -> None:
    site = _site(tmp_path)
    with serve(site) as (url, _state):
        chosen, built = _fitwheel(url, tmp_path / "files", REQUIREMENTS)
        pip = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--dry-run",
                "--ignore-installed",
                "--quiet",
                "--no-cache-dir",
                "--report",
                "-",
                "--index-url",
                f"{url}/simple/",
                *REQUIREMENTS,
            ],
            capture_output=True,
            text=True,
            env=clean_env(),
            check=False,
            timeout=300,
        )
    assert pip.returncode == 0, pip.stderr
    by_pip = {
        str(canonicalize_name(item["metadata"]["name"])): item["metadata"]["version"]
        for item in json.loads(pip.stdout)["install"]
    }
    assert by_pip == EXPECTED
    assert chosen == EXPECTED
    # no asynccore sdist is tried once its version's wheel was turned down, and the old
    # sdist-only storefs is never reached
    assert built == []


def test_the_sdist_of_a_version_whose_wheel_conflicts_is_never_built(tmp_path: Path) -> None:
    """Written the other way round, the user's order makes ``storefs`` the one walked back,
    through every ``asynccore``: none of their sdists is built on the way (a wheel and an sdist
    of one version declare the same dependencies), and the sdist-only 0.4.2 is reached."""
    site = _site(tmp_path)
    requirements = ["awsclient>=1.0", "corelib==1.5", "storefs"]
    with serve(site) as (url, _state):
        chosen, built = _fitwheel(url, tmp_path / "files", requirements)
    assert chosen == {"storefs": "0.4.2", "awsclient": "1.5", "corelib": "1.5"}
    assert built == ["storefs-0.4.2.tar.gz"]


def test_the_sdist_still_stands_in_for_a_wheel_that_cannot_be_used(tmp_path: Path) -> None:
    """A wheel whose own metadata excludes this interpreter is not a usable wheel: the sdist of
    that version is still a candidate (and is built for its metadata)."""
    files = tmp_path / "files"
    make_wheel(files, "oldlib", "1.0", requires_python=">=3.99")
    make_sdist(files, "oldlib", "1.0")
    build_simple_index(files, tmp_path / "site")
    with serve(tmp_path / "site") as (url, _state):
        chosen, built = _fitwheel(url, files, ["oldlib"])
    assert chosen == {"oldlib": "1.0"}
    assert built == ["oldlib-1.0.tar.gz"]
