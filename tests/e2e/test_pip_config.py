"""pip's configuration honoured as pip honours it: a pip.conf (hermetic: its own HOME and
PIP_CONFIG_FILE) with a partial mirror as an extra index, a main index and a constraints file,
against two real index servers on 127.0.0.1. fitwheel's choice is compared with real pip's
(``pip install --dry-run --report``, the pip of the test environment), and where the
first-index strategy makes it differ, a one-line notice says why."""

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.kit import build_simple_index, clean_env, make_venv, make_wheel, serve
from tests.kit.env import pip_choice as pip_report_choice

FITWHEEL = [sys.executable, "-m", "fitwheel"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """``mirror`` (a partial mirror: torch 2.13.0 and 2.14.1, pandaslike 1.0) and ``main``
    (torch 2.9.0 to 2.15.0, pandaslike 1.0 and 2.0, numpyish 1.0); a pip.conf naming the
    mirror as an extra index, main as the index and a constraints file capping torch."""
    root = tmp_path_factory.mktemp("pipconf")
    for version in ("2.13.0", "2.14.1"):
        make_wheel(root / "mirror", "torch", version, requires=["numpyish"])
    make_wheel(root / "mirror", "pandaslike", "1.0", requires=["numpyish"])
    make_wheel(root / "mirror", "scipylike", "1.0")
    for version in ("2.9.0", "2.13.0", "2.14.1", "2.15.0"):
        make_wheel(root / "main", "torch", version, requires=["numpyish"])
    for version in ("1.0", "2.0"):
        make_wheel(root / "main", "pandaslike", version, requires=["numpyish"])
    make_wheel(root / "main", "numpyish", "1.0")
    for version in ("1.0", "3.0"):
        make_wheel(root / "main", "scipylike", version)
    build_simple_index(root / "mirror", root / "mirror-site")
    build_simple_index(root / "main", root / "main-site")
    (root / "constraints.txt").write_text("torch<=2.14.1\n")
    home = root / "home"
    home.mkdir()
    with serve(root / "mirror-site") as (mirror, _), serve(root / "main-site") as (main, _):
        conf = root / "pip.conf"
        conf.write_text(
            f"[global]\nindex-url = {main}/simple/\nextra-index-url = {mirror}/simple/\n"
            f"constraint = {root / 'constraints.txt'}\n"
        )
        env = clean_env(
            PIP_CONFIG_FILE=str(conf),
            HOME=str(home),
            XDG_CONFIG_HOME=str(home / ".config"),
            XDG_CONFIG_DIRS=str(home / "xdg"),
            PIP_NO_INPUT="1",
        )
        yield {
            "root": root,
            "conf": conf,
            "env": env,
            "mirror": f"{mirror}/simple/",
            "main": f"{main}/simple/",
            "venv": make_venv(root / "venv"),
        }


def pip_choice(setup: dict[str, Any], *args: str) -> dict[str, str]:
    return pip_report_choice(setup["root"], setup["env"], *args)


def fitwheel(setup: dict[str, Any], *args: str) -> tuple[dict[str, str], Any, str]:
    report = setup["root"] / "fitwheel-report.json"
    done = subprocess.run(
        [*FITWHEEL, "install", "--dry-run", "--no-variants", "--python", str(setup["venv"]),
         "--report", str(report), *args],
        capture_output=True, text=True, env=setup["env"], timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    data = json.loads(report.read_text())
    return {e["name"]: e["version"] for e in data["install"]}, data, done.stderr


def test_configured_indexes_and_constraint_give_pips_choice(setup: dict[str, Any]) -> None:
    # the configured constraint caps torch for both; the mirror has the capped best version
    ours, report, stderr = fitwheel(setup, "torch")
    assert ours == pip_choice(setup, "torch") == {"torch": "2.14.1", "numpyish": "1.0"}
    assert "notice" not in stderr and "warning" not in stderr
    # the report lists the indexes in the order searched, with where each came from
    assert report["indexes"] == [setup["mirror"], setup["main"]]
    origin = f"{setup['conf']} [global]"
    assert report["index_origins"] == [
        {"url": setup["mirror"], "origin": origin},
        {"url": setup["main"], "origin": origin},
    ]


def test_an_index_on_the_command_line_comes_before_the_configured_mirror(
    setup: dict[str, Any],
) -> None:
    # the mirror has only 2.13.0 and 2.14.1: searched first, it would hide 2.9.0
    args = ("torch==2.9.0", "--index-url", setup["main"])
    ours, report, _ = fitwheel(setup, *args)
    assert ours == pip_choice(setup, *args) == {"torch": "2.9.0", "numpyish": "1.0"}
    assert report["index_origins"][0] == {"url": setup["main"], "origin": "--index-url"}


def test_a_shadowed_newer_version_gets_a_notice_and_best_match_gives_pips(
    setup: dict[str, Any],
) -> None:
    pips = pip_choice(setup, "pandaslike")
    assert pips["pandaslike"] == "2.0"
    ours, _, stderr = fitwheel(setup, "pandaslike")
    assert ours["pandaslike"] == "1.0"
    (notice,) = [line for line in stderr.splitlines() if "pandaslike" in line]
    assert notice.startswith("fitwheel: warning: pandaslike 1.0 is from " + setup["mirror"])
    assert f"{setup['main']} ({setup['conf']} [global]) has the newer 2.0" in notice
    assert "--index-strategy unsafe-best-match" in notice
    best, _, stderr = fitwheel(setup, "pandaslike", "--index-strategy", "unsafe-best-match")
    assert best == pips
    assert "pip would install" not in stderr


def test_several_passed_over_projects_are_one_summary_and_explain_lists_each(
    setup: dict[str, Any],
) -> None:
    ours, _, stderr = fitwheel(setup, "pandaslike", "scipylike")
    assert ours["pandaslike"] == "1.0" and ours["scipylike"] == "1.0"
    said = [line for line in stderr.splitlines() if "pip would install" in line]
    assert len(said) == 1, stderr
    assert said[0].startswith("fitwheel: warning: 2 projects came from the first index")
    assert "(pandaslike, scipylike)" in said[0] and "--explain lists each" in said[0]
    done = subprocess.run(
        [*FITWHEEL, "install", "pandaslike", "scipylike", "--python", str(setup["venv"]),
         "--dry-run", "--explain"],
        capture_output=True, text=True, env=setup["env"], timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    listed = done.stdout.split("passed over by --index-strategy first-index:", 1)[1]
    assert f"pandaslike 1.0 is from {setup['mirror']}" in listed
    assert f"scipylike 1.0 is from {setup['mirror']}" in listed
    assert "has the newer 3.0" in listed
    quiet = subprocess.run(
        [*FITWHEEL, "install", "pandaslike", "scipylike", "--python", str(setup["venv"]),
         "--dry-run", "-qq"],
        capture_output=True, text=True, env=setup["env"], timeout=300,
    )  # fmt: skip
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr


def test_pip_constraint_in_the_environment_replaces_the_configured_one(
    setup: dict[str, Any],
) -> None:
    looser = setup["root"] / "looser.txt"
    looser.write_text("torch<2.14\n")
    env = {**setup["env"], "PIP_CONSTRAINT": str(looser)}
    ours, _, _ = fitwheel({**setup, "env": env}, "torch")
    assert ours == pip_choice({**setup, "env": env}, "torch")
    assert ours["torch"] == "2.13.0"


def test_not_found_lists_the_configured_indexes(setup: dict[str, Any]) -> None:
    done = subprocess.run(
        [*FITWHEEL, "install", "--dry-run", "--python", str(setup["venv"]), "nosuchthing"],
        capture_output=True, text=True, env=setup["env"], timeout=300,
    )  # fmt: skip
    assert done.returncode == 1
    origin = f"{setup['conf']} [global]"
    assert (
        f"nosuchthing is not on any index searched: {setup['mirror']} ({origin}), "
        f"{setup['main']} ({origin})"
    ) in done.stderr


def test_a_missing_configured_constraints_file_names_the_setting(
    setup: dict[str, Any], tmp_path: Path
) -> None:
    env = {**setup["env"], "PIP_CONSTRAINT": str(tmp_path / "gone.txt")}
    done = subprocess.run(
        [*FITWHEEL, "install", "--dry-run", "--python", str(setup["venv"]), "torch"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1
    assert "'constraint' setting names (PIP_CONSTRAINT) does not exist" in done.stderr


def test_explain_lists_the_indexes_in_the_order_searched(setup: dict[str, Any]) -> None:
    done = subprocess.run(
        [*FITWHEEL, "install", "--dry-run", "--no-variants", "--explain", "--python",
         str(setup["venv"]), "--extra-index-url", setup["main"], "torch"],
        capture_output=True, text=True, env={**setup["env"], "PIP_INDEX_URL": setup["main"]},
        timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    start = lines.index("indexes, in the order searched:")
    assert lines[start + 1 : start + 3] == [
        f"  1. {setup['main']} (--extra-index-url)",
        f"  2. {setup['mirror']} ({setup['conf']} [global])",
    ]


def test_no_deps_and_require_hashes_from_the_configuration(setup: dict[str, Any]) -> None:
    env = {**setup["env"], "PIP_NO_DEPS": "yes"}
    ours, _, _ = fitwheel({**setup, "env": env}, "torch")
    assert ours == pip_choice({**setup, "env": env}, "torch") == {"torch": "2.14.1"}
    env = {**setup["env"], "PIP_REQUIRE_HASHES": "1"}
    done = subprocess.run(
        [*FITWHEEL, "install", "--dry-run", "--python", str(setup["venv"]), "torch"],
        capture_output=True, text=True, env=env, timeout=300,
    )  # fmt: skip
    assert done.returncode == 1 and "--require-hashes is on" in done.stderr


def test_index_strategy_is_a_setting(setup: dict[str, Any], tmp_path: Path) -> None:
    """``fitwheel config set index-strategy unsafe-best-match`` gives pip's choice from then
    on; the environment variable and the flag win over it; a wrong value is refused."""
    config = tmp_path / "config.toml"
    env = {**setup["env"], "FITWHEEL_CONFIG": str(config)}
    done = subprocess.run(
        [*FITWHEEL, "config", "set", "index-strategy", "unsafe-best-match"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = tmp_path / "report.json"

    def chosen(extra_env: dict[str, str], *args: str) -> str:
        run = subprocess.run(
            [*FITWHEEL, "install", "pandaslike", "--dry-run", "--no-variants",
             "--python", str(setup["venv"]), "--report", str(report), *args],
            capture_output=True, text=True, env={**env, **extra_env}, timeout=300,
        )  # fmt: skip
        assert run.returncode == 0, run.stderr
        data = json.loads(report.read_text())
        return next(e["version"] for e in data["install"] if e["name"] == "pandaslike")

    assert chosen({}) == pip_choice(setup, "pandaslike")["pandaslike"] == "2.0"
    assert chosen({"FITWHEEL_INDEX_STRATEGY": "first-index"}) == "1.0"
    assert chosen({}, "--index-strategy", "first-index") == "1.0"
    bad = subprocess.run(
        [*FITWHEEL, "config", "set", "index-strategy", "best"],
        capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert bad.returncode != 0 and "index-strategy must be one of" in bad.stderr
