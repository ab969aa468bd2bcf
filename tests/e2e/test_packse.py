"""The packse resolver scenarios, run against fitwheel, uv 0.13.8 and pip in the same run.

packse itself needs Python 3.12 and more (hatchling, fastapi) to build and serve its scenarios;
this suite only reads them: the scenario files ship in packse's sdist on the package index
(``scenarios/**/*.toml``), downloaded once into the test cache. Each scenario's packages become
real wheels and sdists (setuptools projects, built from the same loopback index that holds the
backend's wheel), served on 127.0.0.1; each tool resolves the scenario's root requirements into
a fresh environment of the scenario's interpreter (``--dry-run``), and a tool passes a scenario
when it installs exactly the expected versions, or fails where no solution exists.

Scenarios that need what only a universal or cross-platform resolver does (``fork``, target
platforms or Python versions other than the interpreter's) are left out. Marked slow; the
counts are printed and written to ``$FITWHEEL_PACKSE_REPORT`` when set;
``$FITWHEEL_PACKSE_FILTER`` runs only the scenarios whose ``folder/name`` contains it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from packaging.utils import canonicalize_name

from tests.kit import (
    UV,
    BackendsUnavailable,
    backend_wheels,
    build_simple_index,
    clean_env,
    make_sdist,
    make_wheel,
    serve,
)

pytestmark = pytest.mark.slow

PACKSE = "packse==0.3.59"
FITWHEEL = [sys.executable, "-m", "fitwheel"]
LEFT_OUT_FOLDERS = {"fork", "excluded"}


def _cache() -> Path:
    configured = os.environ.get("FITWHEEL_TEST_MIRROR_CACHE")
    if configured:
        return Path(configured) / "packse"
    import platformdirs

    return Path(platformdirs.user_cache_dir("fitwheel-tests")) / "packse"


def scenario_files() -> Path:
    folder = _cache()
    tree = folder / "scenarios"
    if tree.is_dir() and any(tree.rglob("*.toml")):
        return tree
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary=:all:",
            "--ignore-requires-python",
            "--disable-pip-version-check",
            "-d",
            str(folder),
            PACKSE,
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    sdists = list(folder.glob("packse-*.tar.gz"))
    if proc.returncode != 0 or not sdists:
        pytest.skip(f"cannot download packse's sdist: {(proc.stdout + proc.stderr)[-400:]}")
    with tarfile.open(sdists[0]) as tf:
        for member in tf.getmembers():
            parts = member.name.split("/")
            if len(parts) > 2 and parts[1] == "scenarios" and member.isfile():
                target = tree.joinpath(*parts[2:])
                target.parent.mkdir(parents=True, exist_ok=True)
                handle = tf.extractfile(member)
                assert handle is not None
                target.write_bytes(handle.read())
    return tree


def find_python(version: str) -> str | None:
    """A working interpreter of ``version`` (``3.12``): pyenv's, else one on PATH."""
    candidates = [
        str(p) for p in sorted(Path.home().glob(f".pyenv/versions/{version}*/bin/python{version}"))
    ]
    found = shutil.which(f"python{version}")
    if found:
        candidates.append(found)
    for candidate in candidates:
        probe = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if probe.returncode == 0 and probe.stdout.strip() == version:
            return candidate
    return None


def usable(scenario: dict[str, Any], folder: str) -> str | None:
    """Why a scenario is left out (None: it runs)."""
    if folder in LEFT_OUT_FOLDERS:
        return f"{folder} scenarios need a universal resolver"
    options = scenario.get("resolver_options", {})
    for key in ("python", "python_platform", "required_environments"):
        if options.get(key):
            return f"resolver option {key}"
    if scenario.get("environment", {}).get("additional_python"):
        return "needs several interpreters"
    return None


def _sdist_pyproject(name: str, version: str, meta: dict[str, Any]) -> str:
    deps = ", ".join(json.dumps(r) for r in meta.get("requires", []))
    out = (
        '[build-system]\nrequires = ["setuptools>=70"]\n'
        'build-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = [{deps}]\n'
    )
    rp = meta.get("requires_python", ">=3.12")
    if rp:
        out += f"requires-python = {json.dumps(rp)}\n"
    extras = meta.get("extras", {})
    if extras:
        out += "\n[project.optional-dependencies]\n"
        for extra, reqs in extras.items():
            out += f"{json.dumps(extra)} = [{', '.join(json.dumps(r) for r in reqs)}]\n"
    module = name.replace("-", "_").replace(".", "_")
    out += f'\n[tool.setuptools]\npy-modules = ["{module}"]\n'
    return out


def materialise(scenario: dict[str, Any], out: Path, backends: Path) -> None:
    yanked: dict[str, str] = {}
    for wheel in backends.glob("*.whl"):
        shutil.copy(wheel, out / wheel.name)
    for name, package in scenario.get("packages", {}).items():
        for version, meta in package.get("versions", {}).items():
            meta = meta or {}
            made: list[Path] = []
            rp = meta.get("requires_python", ">=3.12")
            if meta.get("wheel", True):
                for tag in meta.get("wheel_tags") or ["py3-none-any"]:
                    made.append(
                        make_wheel(
                            out,
                            name,
                            version,
                            requires=meta.get("requires", []),
                            extras=meta.get("extras"),
                            requires_python=rp,
                            tag=tag,
                            files={f"{name.replace('-', '_')}_pkg.py": "BUILD = 'wheel'\n"},
                        )
                    )
            if meta.get("sdist", True):
                module = name.replace("-", "_").replace(".", "_")
                made.append(
                    make_sdist(
                        out,
                        name,
                        version,
                        files={
                            "pyproject.toml": _sdist_pyproject(name, version, meta),
                            f"{module}.py": "BUILD = 'sdist'\n",
                        },
                    )
                )
            if meta.get("yanked"):
                yanked.update({p.name: "" for p in made})
    (out / ".yanked.json").write_text(json.dumps(yanked))


def _pins_from_report(text: str) -> dict[str, str]:
    report = json.loads(text)
    return {
        canonicalize_name(item.get("name") or item["metadata"]["name"]): item.get("version")
        or item["metadata"]["version"]
        for item in report["install"]
    }


def run_tool(
    tool: str, index: str, python: str, scenario: dict[str, Any], work: Path
) -> tuple[bool, dict[str, str]]:
    """(succeeded, the versions it would install)."""
    options = scenario.get("resolver_options", {})
    requires = scenario.get("root", {}).get("requires", [])
    flags: list[str] = []
    if options.get("prereleases"):
        flags.append("--pre")
    for name in options.get("no_build", []):
        flags += ["--only-binary", name]
    for name in options.get("no_binary", []):
        flags += ["--no-binary", name]
    env = clean_env(FITWHEEL_CACHE_DIR=str(work / "fitwheel-cache"), UV_CACHE_DIR=str(work / "uv"))
    env["PIP_NO_CACHE_DIR"] = "1"
    if tool == "fitwheel":
        cmd = [*FITWHEEL, "install", "--no-variants", "--python", python, "--dry-run"]
        cmd += ["--report", "-", "--index-url", index, *flags, *requires]
    elif tool == "pip":
        cmd = [sys.executable, "-m", "pip", "--python", python, "install", "--dry-run"]
        cmd += ["--ignore-installed", "--report", "-", "-q", "--index-url", index]
        cmd += [*flags, *requires]
    else:
        cmd = [str(UV), "pip", "install", "--dry-run", "--python", python, "--index-url", index]
        cmd += ["--index-strategy", "first-index", *flags, *requires]
    try:
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=env, timeout=300, check=False
        )
    except subprocess.TimeoutExpired:
        return False, {}
    if os.environ.get("FITWHEEL_PACKSE_DEBUG"):
        print(f"--- {tool} (exit {proc.returncode}):\n{proc.stdout[-1500:]}{proc.stderr[-1500:]}")
    if proc.returncode != 0:
        return False, {}
    if tool == "uv":
        pins = {
            canonicalize_name(m.group(1)): m.group(2)
            for m in re.finditer(r"^ \+ ([^=\s]+)==(\S+)", proc.stderr + proc.stdout, re.M)
        }
        return True, pins
    try:
        return True, _pins_from_report(proc.stdout)
    except (ValueError, KeyError):
        return False, {}


def passed(scenario: dict[str, Any], result: tuple[bool, dict[str, str]]) -> bool:
    expected = scenario.get("expected", {})
    ok, pins = result
    if not expected.get("satisfiable", False):
        return not ok
    if not ok:
        return False
    if "packages" not in expected:
        return True  # the scenario only says that a solution exists
    want = {canonicalize_name(k): v for k, v in expected.get("packages", {}).items()}
    from packaging.version import Version

    return set(pins) == set(want) and all(Version(pins[k]) == Version(v) for k, v in want.items())


@pytest.fixture(scope="module")
def backends() -> Path:
    try:
        return backend_wheels()
    except BackendsUnavailable as exc:
        pytest.skip(str(exc))


def _scenarios(tree: Path) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path in sorted(tree.rglob("*.toml")):
        folder = path.relative_to(tree).parts[0]
        data = tomllib.loads(path.read_text())
        yield folder, data.get("name", path.stem), data


def test_packse_scenarios_fitwheel_passes_at_least_as_many_as_uv_and_pip(
    tmp_path: Path, backends: Path
) -> None:
    tree = scenario_files()
    venvs: dict[str, str] = {}
    counts = {"fitwheel": 0, "uv": 0, "pip": 0}
    rows = []
    left_out: dict[str, str] = {}
    only = os.environ.get("FITWHEEL_PACKSE_FILTER", "")
    for folder, name, scenario in _scenarios(tree):
        if only not in f"{folder}/{name}":
            continue
        why = usable(scenario, folder)
        version = scenario.get("environment", {}).get("python", "3.12")
        if why is None and version not in venvs:
            python = find_python(version)
            if python is not None:
                venv = tmp_path / f"venv{version}"
                subprocess.run(
                    [str(UV), "venv", "-q", "--python", python, str(venv)],
                    check=True,
                    env=clean_env(),
                )
                venvs[version] = str(venv / "bin" / "python")
        if why is None and version not in venvs:
            why = f"no Python {version} here"
        if why is not None:
            left_out[name] = why
            continue
        work = tmp_path / name
        dists = work / "dists"
        dists.mkdir(parents=True)
        materialise(scenario, dists, backends)
        yanked = json.loads((dists / ".yanked.json").read_text())
        simple = build_simple_index(dists, work / "site", yanked=yanked)
        row = {"scenario": f"{folder}/{name}"}
        with serve(simple.parent) as (url, _state):
            for tool in counts:
                ok = passed(
                    scenario, run_tool(tool, f"{url}/simple/", venvs[version], scenario, work)
                )
                counts[tool] += ok
                row[tool] = ok
        rows.append(row)
        shutil.rmtree(work, ignore_errors=True)
    summary = {"ran": len(rows), "passed": counts, "left_out": left_out, "scenarios": rows}
    target = os.environ.get("FITWHEEL_PACKSE_REPORT")
    if target:
        Path(target).write_text(json.dumps(summary, indent=2))
    print(f"\npackse scenarios run: {len(rows)}, left out: {len(left_out)}; passed: {counts}")
    for row in rows:
        if not all(row[t] for t in counts):
            print("  " + row["scenario"] + ": " + ", ".join(f"{t}={row[t]}" for t in counts))
    if not rows:
        pytest.skip(f"no scenario could run here: {sorted(set(left_out.values()))}")
    assert counts["fitwheel"] >= counts["uv"] and counts["fitwheel"] >= counts["pip"], counts
