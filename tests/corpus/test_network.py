"""Every file of the requirements corpus resolved by fitwheel and by pip in the same run, with
``--dry-run --report``, against the default index as pip finds it (run with
FITWHEEL_NETWORK_TESTS=1).

The environment is hermetic: no pip or fitwheel settings (``PIP_CONFIG_FILE`` is empty), so both
read pip's built-in default index. The corpus's hosts are filled in as follows:

- ``${TORCH_INDEX}/whl/<backend>`` and ``-f ${FIND_LINKS}/torch_stable.html``: a loopback
  stand-in of PyTorch's download root (tests/corpus/torch_links.py). The real one serves
  gigabytes of CUDA wheels; the stand-in serves the releases the corpus pins with their
  dependency lists, which is all a dry run reads. The default index has no ``+cu118`` builds,
  so it cannot stand in for it.
- the older files' ``https://${INDEX_HOST}/simple`` (a mirror of the default index): the
  default index; ``https://${INDEX_HOST}/whl/``: the stand-in; every other host (private
  indexes, VCS hosts): a host name that does not resolve, which both tools pass over with a
  warning (fitwheel with ``--unreachable-index warn``, pip by default).

The rule: no file where pip succeeds and fitwheel fails, and the same names and versions where
both succeed. A set that differs only because fitwheel takes a project from the first index that
has it (``first-index``, its default, against pip's best version of any index) is resolved again
with ``--index-strategy unsafe-best-match``, which must then give pip's set; the test says so
with a warning. Differences with another cause must be listed in :data:`DOCUMENTED` with the
rule from docs/ that explains them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name

from tests.corpus.corpus import corpus_files, for_network
from tests.corpus.torch_links import build_torch_links
from tests.kit import clean_env, make_venv, serve_static

pytestmark = [
    pytest.mark.network,
    pytest.mark.skipif(
        os.environ.get("FITWHEEL_NETWORK_TESTS") != "1",
        reason="needs the default package index: set FITWHEEL_NETWORK_TESTS=1",
    ),
]

FILES = corpus_files()

#: files whose resolution pip cannot finish here either (local projects that are not there,
#: VCS and private hosts nothing answers at, made-up hashes): fitwheel must fail too, or agree
PIP_FAILS = {
    "compiled.txt",  # a hash-checked lock that leaves requests' dependencies out
    "continued.txt",  # one --hash turns hash-checking on for lines that have none
    "local.txt",  # editable and local projects that are not there
    "offline.txt",  # --no-index with an empty folder
    "vcs.txt",  # repositories on a host nothing answers at
    "web/dev.txt",  # -e ../../.., not a project here
}

#: file -> the documented rule that explains why fitwheel's set differs from pip's
DOCUMENTED: dict[str, str] = {}


def default_index() -> str:
    """The index pip uses when nothing configures one (asked of pip, not written here)."""
    from pip._internal.models.index import PyPI

    return str(PyPI.simple_url)


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    root = tmp_path_factory.mktemp("corpus-run")
    mirror = build_torch_links(root / "mirror")
    unreachable = "packages.unreachable.invalid"  # a name no resolver answers for
    corpus = for_network(root / "corpus", default_index(), unreachable)
    target = make_venv(root / "target", via="venv")
    work = root / "work" / "a" / "b"  # relative local paths in the files lead nowhere
    work.mkdir(parents=True)
    with serve_static(mirror) as url:
        env = clean_env(
            TORCH_INDEX=url,
            FIND_LINKS=f"{url}/whl",
            PRIVATE_INDEX_HOST=unreachable,
            PRIVATE_INDEX_USER="ci",
            PRIVATE_INDEX_TOKEN="not-a-secret",
            PIP_NO_CACHE_DIR="1",
        )
        yield {"corpus": corpus, "target": target, "work": work, "env": env}


def _run(cmd: list[str], world: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        cmd,
        capture_output=True,
        text=True,
        env=world["env"],
        cwd=world["work"],
        check=False,
        timeout=1200,
    )


def _pip(path: Path, world: dict[str, Any]) -> tuple[dict[str, str] | None, str]:
    python = world["target"] / "bin" / "python"
    proc = _run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            str(python),
            "install",
            "--dry-run",
            "--ignore-installed",
            "--quiet",
            "--retries",
            "0",
            "--report",
            "-",
            "-r",
            str(path),
        ],
        world,
    )
    if proc.returncode != 0:
        return None, proc.stderr
    report = json.loads(proc.stdout)
    return {
        str(canonicalize_name(item["metadata"]["name"])): item["metadata"]["version"]
        for item in report["install"]
    }, proc.stderr


def _fitwheel(
    path: Path, world: dict[str, Any], tmp_path: Path, *extra: str
) -> tuple[dict[str, str] | None, str]:
    report_path = tmp_path / f"report{len(extra)}.json"
    proc = _run(
        [
            sys.executable,
            "-m",
            "fitwheel",
            "install",
            "--dry-run",
            "--python",
            str(world["target"]),
            "--cache-dir",
            str(tmp_path / "cache"),
            "--retries",
            "0",
            "--unreachable-index",
            "warn",
            "--report",
            str(report_path),
            *extra,
            "-r",
            str(path),
        ],
        world,
    )
    if proc.returncode != 0:
        return None, proc.stderr
    report = json.loads(report_path.read_text(encoding="utf-8"))
    return {str(canonicalize_name(e["name"])): e["version"] for e in report["install"]}, proc.stderr


def _differences(ours: dict[str, str], theirs: dict[str, str]) -> str:
    names = sorted(set(ours) | set(theirs))
    return ", ".join(
        f"{n}: fitwheel {ours.get(n, '-')}, pip {theirs.get(n, '-')}"
        for n in names
        if ours.get(n) != theirs.get(n)
    )


@pytest.mark.parametrize("name", FILES)
def test_fitwheel_resolves_what_pip_resolves(
    name: str, world: dict[str, Any], tmp_path: Path
) -> None:
    path = world["corpus"] / name
    theirs, pip_err = _pip(path, world)
    ours, our_err = _fitwheel(path, world, tmp_path)
    if theirs is None:
        assert name in PIP_FAILS, f"pip could not resolve {name}:\n{pip_err}"
        return
    assert name not in PIP_FAILS, f"pip now resolves {name}: take it off PIP_FAILS"
    assert ours is not None, f"pip resolves {name}, fitwheel fails:\n{our_err}"
    if ours == theirs:
        return
    if name in DOCUMENTED:
        warnings.warn(f"{name}: {DOCUMENTED[name]} ({_differences(ours, theirs)})", stacklevel=1)
        return
    best, best_err = _fitwheel(path, world, tmp_path, "--index-strategy", "unsafe-best-match")
    assert best == theirs, (
        f"{name}: fitwheel's set differs from pip's: {_differences(ours, theirs)}; "
        f"with unsafe-best-match: "
        f"{best_err if best is None else _differences(best, theirs) or 'the same'}"
    )
    warnings.warn(
        f"{name}: the same set as pip only with --index-strategy unsafe-best-match: with "
        f"first-index (fitwheel's default) {_differences(ours, theirs)}",
        stacklevel=1,
    )
