"""Wheels built to attack zip readers are refused alike by install and by publish (the one
reader), with a message naming the file and the problem, and nothing is written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from fitwheel.errors import InvalidWheelError
from fitwheel.wheel.archive import WheelArchive
from tests.kit import clean_env, snapshot
from tests.wheel.hostile_zip import FILENAME, KINDS, hostile_wheel

FITWHEEL = [sys.executable, "-m", "fitwheel"]


def _user_files(venv: Path) -> dict[str, str]:
    """The environment's files, less fitwheel's own lock folder."""
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


def _refused_by_the_reader(wheel: Path) -> str:
    """What the reader says of ``wheel``: when it opens, RECORD is read and checked as
    publishing checks it, and every member inflated as verification does."""
    with pytest.raises(InvalidWheelError) as caught, WheelArchive(wheel) as archive:
        record = archive.record()
        archive.check_record_coverage(record)
        for member in archive.members:
            archive.inflate(member, lambda _chunk: None)
    assert str(wheel) in str(caught.value)
    return str(caught.value)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_publish_refuses(tmp_path: Path, kind: str) -> None:
    wheel = hostile_wheel(tmp_path, kind)
    assert KINDS[kind] in _refused_by_the_reader(wheel)
    out = tmp_path / "out"
    config = tmp_path / "variants.toml"
    config.write_text(
        '[variant.default-priorities]\nnamespace = ["x"]\n'
        '[variant.providers.x]\nrequires = ["x-provider"]\n'
    )
    make = ["variant", "make", str(wheel), "-p", "x :: f :: v", "--variants-config", str(config)]
    result = subprocess.run(
        [*FITWHEEL, *make, "-o", str(out)],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert result.returncode == 1, result.stderr
    assert KINDS[kind] in result.stderr and FILENAME in result.stderr
    assert not out.exists() or not list(out.iterdir())


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_install_refuses_and_changes_nothing(base_venv: Path, tmp_path: Path, kind: str) -> None:
    wheel = hostile_wheel(tmp_path / "w", kind)
    venv = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(base_venv), str(venv)], check=True)
    before = _user_files(venv)
    cache = tmp_path / "cache"
    install = ["install", "--no-index", "--python", str(venv), "--cache-dir", str(cache)]
    result = subprocess.run(
        [*FITWHEEL, *install, str(wheel)],
        capture_output=True,
        text=True,
        env=clean_env(),
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert KINDS[kind] in result.stderr and FILENAME in result.stderr
    assert _user_files(venv) == before
    # nothing of the wheel reached the unpacked-wheel cache either
    assert not list(cache.glob("**/fitwheel-unpacked.json"))
    assert not [p for p in cache.glob("**/*.pth")]


UNPACK_PEAK = """
import json, resource, sys
from pathlib import Path
from fitwheel.errors import InvalidWheelError
from fitwheel.install.cache.unpacked import UnpackedCache
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    UnpackedCache(Path(sys.argv[2])).get(Path(sys.argv[1]), "0" * 64)
    outcome = "installed"
except InvalidWheelError as exc:
    outcome = str(exc)
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"outcome": outcome, "grew_kib": after - before}))
"""


def test_a_zip_bomb_is_refused_in_bounded_memory(tmp_path: Path) -> None:
    """A member that declares 1,000 bytes and inflates to 200 MB: unpacking stops at the first
    byte past the declared size, so memory does not grow by anything like 200 MB."""
    wheel = hostile_wheel(tmp_path, "zip-bomb")
    result = subprocess.run(
        [sys.executable, "-c", UNPACK_PEAK, str(wheel), str(tmp_path / "cache")],
        capture_output=True,
        text=True,
        check=True,
    )
    report = json.loads(result.stdout)
    assert "declared 1000 bytes" in report["outcome"]
    assert report["grew_kib"] < 32 * 1024, report


def test_a_record_row_for_a_missing_file_installs_with_a_warning(
    base_venv: Path, tmp_path: Path
) -> None:
    """Install's one leniency, as pip's: the row is ignored, and the user is told in one line."""
    from tests.wheel.hostile_zip import DIST_INFO, Entry, record_hash, write_zip

    files = {
        "hostile/__init__.py": b"X = 1\n",
        f"{DIST_INFO}/METADATA": b"Metadata-Version: 2.1\nName: hostile\nVersion: 1.0\n",
        f"{DIST_INFO}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = "".join(f"{name},{record_hash(data)},{len(data)}\n" for name, data in files.items())
    record += f"hostile/ghost.py,{record_hash(b'')},0\n{DIST_INFO}/RECORD,,\n"
    entries = [Entry(name, data) for name, data in files.items()]
    wheel = write_zip(
        tmp_path / "w" / FILENAME, [*entries, Entry(f"{DIST_INFO}/RECORD", record.encode())]
    )
    venv = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(base_venv), str(venv)], check=True)
    install = ["install", "--no-index", "--python", str(venv), "--no-cache-dir"]
    result = subprocess.run(
        [*FITWHEEL, *install, str(wheel)], capture_output=True, text=True, env=clean_env()
    )
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "ghost.py" in line]
    assert warning and warning[0].startswith("fitwheel: warning: ")
    assert list(venv.glob("lib/python*/site-packages/hostile/__init__.py"))


@pytest.mark.parametrize("metadata_files", [True, False], ids=["metadata-file", "range-reads"])
def test_an_index_served_wheel_with_another_projects_metadata_is_refused(
    base_venv: Path, tmp_path: Path, metadata_files: bool
) -> None:
    """Served by an index, the wheel is refused whether its METADATA comes from the index's
    metadata file (the wheel is read when it is installed) or from range reads of the wheel
    itself (read when it is resolved); the environment is left as it was."""
    from tests.kit import build_simple_index, serve

    hostile_wheel(tmp_path / "w", "foreign-dist-info")
    simple = build_simple_index(tmp_path / "w", tmp_path / "index", metadata_files=metadata_files)
    venv = tmp_path / "venv"
    subprocess.run(["cp", "-a", str(base_venv), str(venv)], check=True)
    before = _user_files(venv)
    with serve(simple.parent) as (url, _state):
        install = ["install", "--index-url", f"{url}/simple/", "--python", str(venv)]
        result = subprocess.run(
            [*FITWHEEL, *install, "--cache-dir", str(tmp_path / "cache"), "hostile"],
            capture_output=True,
            text=True,
            env=clean_env(),
            timeout=120,
        )
    assert result.returncode == 1, result.stdout + result.stderr
    assert KINDS["foreign-dist-info"] in result.stderr and FILENAME in result.stderr
    assert _user_files(venv) == before
