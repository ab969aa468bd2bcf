"""Source builds end to end: tiny real sdists (setuptools, flit_core and setup.py-only) on a
loopback index beside the backends' own wheels, installed by ``fitwheel install`` into real
virtual environments; the build environments are filled by fitwheel from the same index."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.kit import (
    BackendsUnavailable,
    backend_wheels,
    build_simple_index,
    clean_env,
    make_sdist,
    make_source_tree,
    make_venv,
    make_wheel,
    serve,
    sha256_of,
    snapshot,
)

FITWHEEL = [sys.executable, "-m", "fitwheel"]


@pytest.fixture(scope="module")
def backends() -> Path:
    try:
        return backend_wheels()
    except BackendsUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory, backends: Path) -> Path:
    """The distributions of the index: backends, docopt-like and hydra-like trees."""
    out = tmp_path_factory.mktemp("dists")
    for wheel in backends.glob("*.whl"):
        (out / wheel.name).write_bytes(wheel.read_bytes())
    # docopt: a setup.py-only sdist, no wheel at all
    make_sdist(out, "docopt-like", "0.6.2", backend="legacy")
    # hydra-core: the newest release needs a source-only antlr runtime, and one omegaconf
    # release has metadata pip 26 refuses ("PyYAML (>=5.1.*)")
    make_sdist(out, "antlr-like-runtime", "4.9.3", backend="legacy")
    make_wheel(out, "pyyaml-like", "6.0")
    make_wheel(
        out, "omegaconf-like", "2.3.0", requires=["antlr-like-runtime==4.9.3", "pyyaml-like>=5.1"]
    )
    make_wheel(out, "omegaconf-like", "2.0.6", requires=["pyyaml-like (>=5.1.*)"])
    make_wheel(out, "omegaconf-like", "2.0.5", requires=["pyyaml-like>=5.1"])
    make_wheel(
        out,
        "hydra-like",
        "1.3.8",
        requires=["omegaconf-like>=2.2,<2.4", "antlr-like-runtime==4.9.3"],
    )
    make_wheel(out, "hydra-like", "0.11.3", requires=["omegaconf-like"])
    # a flit project with a dependency, and one whose wheel and sdist differ
    make_sdist(out, "flit-like", "1.0", backend="flit", requires=["pyyaml-like"])
    make_wheel(out, "both-kinds", "2.0")
    make_sdist(
        out,
        "both-kinds",
        "2.0",
        files={"both_kinds.py": "__version__ = '2.0'\nBUILD = 'from-source'\n"},
    )
    make_sdist(out, "zipped-like", "1.1", fmt="zip")
    make_sdist(
        out,
        "broken-like",
        "1.0",
        backend="legacy",
        files={"setup.py": "raise SystemExit('broken-like: the compiler said no')\n"},
    )
    make_sdist(
        out,
        "slow-like",
        "1.0",
        backend="legacy",
        files={"setup.py": "import time\ntime.sleep(120)\n"},
    )
    # a build that needs itself to build (as setuptools would from its own sdist)
    make_sdist(
        out,
        "self-building",
        "1.0",
        files={
            "pyproject.toml": '[build-system]\nrequires = ["self-building"]\n'
            'build-backend = "setuptools.build_meta"\n'
        },
    )
    return out


@pytest.fixture(scope="module")
def index(dists: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    simple = build_simple_index(dists, tmp_path_factory.mktemp("site"))
    with serve(simple.parent) as (url, _state):
        yield f"{url}/simple"


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache for the module: each sdist is built once, as a user's cache would keep it."""
    return tmp_path_factory.mktemp("cache")


def install(venv: Path, index: str, cache: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            *FITWHEEL,
            "install",
            "--python",
            str(venv),
            "--index-url",
            index,
            "--no-variants",
            "--cache-dir",
            str(cache),
            *args,
        ],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=300,
        check=False,
    )


def run_python(venv: Path, code: str) -> str:
    out = subprocess.run(
        [str(venv / "bin" / "python"), "-c", code], capture_output=True, text=True, check=True
    )
    return out.stdout.strip()


def pip_check(venv: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "check"],
        capture_output=True,
        text=True,
        env=clean_env(),
        check=False,
    )
    assert out.returncode == 0, out.stdout + out.stderr


def test_setup_py_only_sdist_builds_installs_and_imports(
    venv: Path, index: str, cache: Path
) -> None:
    proc = install(venv, index, cache, "docopt-like")
    assert proc.returncode == 0, proc.stderr
    assert "Installed: docopt-like 0.6.2" in proc.stdout
    assert "building a wheel for docopt-like 0.6.2" in proc.stderr
    # the legacy path: setuptools' __legacy__ backend, its requirement installed by fitwheel
    assert "setuptools>=40.8.0" in proc.stderr
    assert run_python(venv, "import docopt_like; print(docopt_like.__version__)") == "0.6.2"
    pip_check(venv)
    # the built wheel is cached by the sdist's hash: a second environment builds nothing
    (built,) = (cache / "built").rglob("docopt_like-0.6.2-*.whl")
    assert built.parent.name == "wheels"
    other = make_venv(venv.parent / "other")
    again = install(other, index, cache, "docopt-like")
    assert again.returncode == 0, again.stderr
    assert "building a wheel" not in again.stderr
    assert run_python(other, "import docopt_like; print(docopt_like.__version__)") == "0.6.2"


def test_hydra_like_resolves_newest_with_a_source_only_dependency(
    venv: Path, index: str, cache: Path
) -> None:
    proc = install(venv, index, cache, "hydra-like")
    assert proc.returncode == 0, proc.stderr
    assert "hydra-like 1.3.8" in proc.stdout
    assert "antlr-like-runtime 4.9.3" in proc.stdout
    assert "omegaconf-like 2.3.0" in proc.stdout
    assert run_python(venv, "import antlr_like_runtime, hydra_like; print('ok')") == "ok"
    pip_check(venv)


def test_invalid_metadata_skips_that_version_with_a_warning(
    venv: Path, index: str, cache: Path
) -> None:
    proc = install(venv, index, cache, "omegaconf-like<2.1", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "omegaconf-like 2.0.5" in proc.stdout
    warning = [line for line in proc.stderr.splitlines() if "2.0.6" in line]
    assert len(warning) == 1, proc.stderr
    assert warning[0].startswith("fitwheel: warning: ignoring omegaconf-like 2.0.6")
    assert "pyyaml-like (>=5.1.*)" in warning[0]
    # with nothing else left, the error names what was skipped
    proc = install(venv, index, cache, "omegaconf-like==2.0.6", "--dry-run")
    assert proc.returncode == 1
    assert "invalid metadata" in proc.stderr and "Traceback" not in proc.stderr


def test_flit_sdist_with_a_dependency(venv: Path, index: str, cache: Path) -> None:
    proc = install(venv, index, cache, "flit-like")
    assert proc.returncode == 0, proc.stderr
    assert "flit-like 1.0" in proc.stdout and "pyyaml-like 6.0" in proc.stdout
    assert "flit_core>=3.4" in proc.stderr
    assert run_python(venv, "import flit_like; print(flit_like.__version__)") == "1.0"
    # the build environment was fitwheel's own: nothing of the backend reached the target
    assert run_python(venv, "import importlib.util as u; print(u.find_spec('flit_core'))") == (
        "None"
    )
    pip_check(venv)


def test_zip_sdist(venv: Path, index: str, cache: Path) -> None:
    proc = install(venv, index, cache, "zipped-like")
    assert proc.returncode == 0, proc.stderr
    assert run_python(venv, "import zipped_like; print(zipped_like.__version__)") == "1.1"


def test_only_binary_refuses_builds_and_names_the_cause(
    venv: Path, index: str, cache: Path
) -> None:
    before = snapshot(venv)
    for flag in (":all:", "docopt-like", "other,docopt_like"):
        proc = install(venv, index, cache, "docopt-like", "--only-binary", flag)
        assert proc.returncode == 1, proc.stdout
        assert "only source distributions (0.6.2), builds refused by --only-binary" in (proc.stderr)
        assert "drop --only-binary" in proc.stderr
    # a dependency's refusal names it too
    proc = install(venv, index, cache, "hydra-like==1.3.8", "--only-binary", ":all:")
    assert proc.returncode == 1
    assert "antlr-like-runtime==4.9.3 (needed by hydra-like 1.3.8)" in proc.stderr
    assert "only source distributions" in proc.stderr
    # :none: clears it again, and a name in --no-binary wins over :all: in --only-binary
    proc = install(venv, index, cache, "docopt-like", "--only-binary", ":all:,:none:", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert {k for k in snapshot(venv) if not k.startswith(".fitwheel")} == {
        k for k in before if not k.startswith(".fitwheel")
    }


def test_no_binary_builds_even_when_a_wheel_exists(venv: Path, index: str, cache: Path) -> None:
    proc = install(venv, index, cache, "both-kinds")
    assert proc.returncode == 0, proc.stderr
    assert run_python(venv, "import both_kinds; print(both_kinds.BUILD)") == "plain"
    for flag in ("both-kinds", ":all:"):
        fresh = make_venv(venv.parent / f"fresh-{flag.strip(':')}")
        proc = install(fresh, index, cache, "both-kinds", "--no-binary", flag)
        assert proc.returncode == 0, proc.stderr
        assert run_python(fresh, "import both_kinds; print(both_kinds.BUILD)") == "from-source"


def test_a_failed_build_shows_the_backend_output(venv: Path, index: str, cache: Path) -> None:
    before = snapshot(venv)
    proc = install(venv, index, cache, "broken-like")
    assert proc.returncode == 1
    assert proc.stderr.count("fitwheel: error:") == 1
    assert "broken-like 1.0" in proc.stderr
    assert "broken-like: the compiler said no" in proc.stderr
    assert "Traceback (most recent call last)" not in proc.stderr.split("  |")[0]
    after = snapshot(venv)
    assert {k for k in after if not k.startswith(".fitwheel")} == {
        k for k in before if not k.startswith(".fitwheel")
    }


def test_report_names_the_sdist(venv: Path, index: str, cache: Path) -> None:
    proc = install(venv, index, cache, "docopt-like", "--dry-run", "--report", "-")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    (item,) = report["install"]
    assert item["filename"] == "docopt_like-0.6.2.tar.gz"
    assert item["built_from_source"] is True


def test_local_source_tree_and_sdist_file(
    venv: Path, index: str, cache: Path, tmp_path: Path
) -> None:
    tree = make_source_tree(tmp_path / "proj", "local-proj", "0.3", requires=["pyyaml-like"])
    proc = install(venv, index, cache, str(tree))
    assert proc.returncode == 0, proc.stderr
    assert "local-proj 0.3" in proc.stdout
    assert run_python(venv, "import local_proj; print(local_proj.__version__)") == "0.3"
    sdist = make_sdist(tmp_path / "files", "local-file", "0.4")
    proc = install(venv, index, cache, str(sdist))
    assert proc.returncode == 0, proc.stderr
    assert run_python(venv, "import local_file; print(local_file.__version__)") == "0.4"


@pytest.fixture(scope="module")
def index_658(dists: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The same distributions, with each sdist's PEP 658 metadata file published."""
    simple = build_simple_index(dists, tmp_path_factory.mktemp("site658"), sdist_metadata=True)
    with serve(simple.parent) as (url, _state):
        yield f"{url}/simple"


def test_pep_658_metadata_of_an_sdist_spares_the_build_during_resolution(
    venv: Path, index: str, index_658: str, tmp_path: Path
) -> None:
    # without index metadata, resolving needs the backend's prepare_metadata_for_build_wheel
    proc = install(venv, index, tmp_path / "c1", "flit-like", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "installing the build requirements of flit-like" in proc.stderr
    assert "pyyaml-like 6.0" in proc.stdout  # its dependency came from the backend
    # with it, nothing is built to resolve; installing builds the wheel
    proc = install(venv, index_658, tmp_path / "c2", "flit-like", "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "build requirements" not in proc.stderr
    assert "flit-like 1.0" in proc.stdout and "pyyaml-like 6.0" in proc.stdout
    proc = install(venv, index_658, tmp_path / "c2", "flit-like")
    assert proc.returncode == 0, proc.stderr
    assert "building a wheel for flit-like 1.0" in proc.stderr
    assert run_python(venv, "import flit_like; print(flit_like.__version__)") == "1.0"


def test_a_build_is_stopped_at_its_time_bound(venv: Path, index: str, tmp_path: Path) -> None:
    proc = install(venv, index, tmp_path / "c", "slow-like", "--build-timeout", "3")
    assert proc.returncode == 1
    assert "did not finish within 3 s and was stopped" in proc.stderr
    assert "--build-timeout" in proc.stderr


def test_a_build_requirement_that_needs_itself_is_refused(
    venv: Path, index: str, tmp_path: Path
) -> None:
    proc = install(venv, index, tmp_path / "c", "self-building")
    assert proc.returncode == 1
    assert "needs self-building itself to build" in proc.stderr
    assert proc.stderr.count("fitwheel: error:") == 1


def test_hash_pins_are_checked_before_an_sdist_runs(
    venv: Path, index: str, dists: Path, tmp_path: Path
) -> None:
    digest = sha256_of(dists / "docopt_like-0.6.2.tar.gz")
    wrong = tmp_path / "wrong.txt"
    wrong.write_text("docopt-like==0.6.2 --hash=sha256:" + "0" * 64 + "\n")
    proc = install(venv, index, tmp_path / "c", "--require-hashes", "-r", str(wrong))
    assert proc.returncode == 1
    assert "build requirements" not in proc.stderr  # refused before anything was run
    assert "docopt_like-0.6.2.tar.gz" in proc.stderr
    right = tmp_path / "right.txt"
    right.write_text(f"docopt-like==0.6.2 --hash=sha256:{digest}\n")
    proc = install(venv, index, tmp_path / "c", "--require-hashes", "-r", str(right))
    assert proc.returncode == 0, proc.stderr
    assert run_python(venv, "import docopt_like; print(docopt_like.__version__)") == "0.6.2"


def test_editable_install_follows_the_source_tree(
    venv: Path, index: str, cache: Path, tmp_path: Path
) -> None:
    tree = make_source_tree(tmp_path / "proj", "edit-me", "0.1")
    proc = install(venv, index, cache, "-e", str(tree))
    assert proc.returncode == 0, proc.stderr
    assert "building an editable wheel" in proc.stderr
    assert run_python(venv, "import edit_me; print(edit_me.__version__)") == "0.1"
    (tree / "edit_me.py").write_text("__version__ = 'changed in place'\n")
    assert run_python(venv, "import edit_me; print(edit_me.__version__)") == "changed in place"
    (direct,) = venv.rglob("edit_me-0.1.dist-info/direct_url.json")
    assert json.loads(direct.read_text()) == {
        "url": tree.resolve().as_uri(),
        "dir_info": {"editable": True},
    }
    # installing it again replaces the install (a local project is never "already installed")
    proc = install(venv, index, cache, "-e", str(tree))
    assert proc.returncode == 0, proc.stderr
    assert "Installed: edit-me 0.1" in proc.stdout
    bad = install(venv, index, cache, "-e", "edit-me")
    assert bad.returncode == 1 and "needs a local project folder" in bad.stderr
