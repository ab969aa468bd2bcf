"""``fitwheel install`` against the loopback mirror of PyTorch's download root when the user's
requirements name a backend (a ``+cpu`` pin, a per-backend index line): ``auto`` follows them,
a backend named by hand that contradicts them is an error, ``freeze`` then ``install -r``
reproduces a routed build, and a routed project's errors name the index it came from."""

# ruff: noqa: F811

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from fitwheel.cli.main import main
from tests.kit import build_torch_mirror, make_venv, serve

# the fixtures of the backend install tests (their mirror, profiles and in-process
# ``fitwheel install``), taken as pytest takes imported fixtures; ``url`` and ``venv`` are the
# folder's (conftest)
from tests.torchbackend.test_install import fitwheel, mirror, profiles  # noqa: F401

H100 = "gpu-h100-open"  # auto alone: cu128 (a 550 driver: no cu130)


def requirements(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "requirements.txt"
    path.write_text(text)
    return path


def test_a_pin_names_the_backend_auto_follows(
    fitwheel: Any, url: str, profiles: dict[str, str], tmp_path: Path
) -> None:
    req = requirements(tmp_path, "torchvision\ntorch==2.9.0+cpu\n")
    common = ["-r", str(req), "--torch-index-url", f"{url}/whl", "--profile", profiles[H100]]
    run = fitwheel(*common, "--torch-backend", "auto", "--dry-run", "--explain")
    assert run.rc == 0, run.err
    lines = run.out.splitlines()
    assert f"torch backend: auto (from --torch-backend) -> cpu, index {url}/whl/cpu/" in lines
    assert f"  cpu: named by {req}:2 (torch==2.9.0+cpu)" in lines
    assert f"  torch: from the cpu index {url}/whl/cpu/" in lines
    assert "torch 2.9.0+cpu" in run.out and "torchvision 0.24.0+cpu" in run.out
    report = fitwheel(*common, "--torch-backend", "auto", "--dry-run", "--report", "-")
    assert report.report()["torch_backend"]["named_by"] == f"{req}:2 (torch==2.9.0+cpu)"
    assert report.report()["torch_backend"]["requested"] == "auto"
    # a backend named by hand that the pin contradicts: an error naming both
    clash = fitwheel(*common, "--torch-backend", "cu130", "--dry-run")
    assert clash.rc == 1
    assert (
        f"--torch-backend cu130 conflicts with torch==2.9.0+cpu at {req}:2, which names the cpu "
        "build"
    ) in clash.err
    assert "Traceback" not in clash.err
    # the same backend by hand: as asked
    same = fitwheel(*common, "--torch-backend", "cpu", "--dry-run")
    assert same.rc == 0 and "torch 2.9.0+cpu" in same.out
    # no torch-backend setting: the pin is looked for in the user's indexes, as before
    plain = fitwheel(*common, "--dry-run")
    assert plain.rc == 1 and "no version of torch matches ==2.9.0+cpu" in plain.err


def test_an_index_line_names_the_backend(
    fitwheel: Any, url: str, profiles: dict[str, str], tmp_path: Path
) -> None:
    req = requirements(tmp_path, f"--extra-index-url {url}/whl/cu126\ntorch\n")
    run = fitwheel(
        "-r",
        str(req),
        "--torch-backend",
        "auto",
        "--torch-index-url",
        f"{url}/whl",
        "--profile",
        profiles[H100],
        "--dry-run",
        "--explain",
    )
    assert run.rc == 0, run.err
    assert f"  cu126: named by {req}:1 (--extra-index-url {url}/whl/cu126)" in run.out
    assert "torch 2.10.0+cu126" in run.out
    # and one that disagrees with a pin: both places named
    both = requirements(tmp_path, f"--extra-index-url {url}/whl/cu126\ntorch==2.9.0+cpu\n")
    clash = fitwheel(
        "-r", str(both), "--torch-backend", "auto", "--torch-index-url", f"{url}/whl",
        "--profile", profiles[H100], "--dry-run",
    )  # fmt: skip
    assert clash.rc == 1
    assert f"torch==2.9.0+cpu at {both}:2 names cpu" in clash.err
    assert f"--extra-index-url {url}/whl/cu126 at {both}:1 names cu126" in clash.err


def _build(python: Path) -> str:
    return subprocess.run(
        [str(python / "bin" / "python"), "-c", "import torch; print(torch.BUILD)"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()


def test_freeze_then_install_r_reproduces_the_routed_build(
    fitwheel: Any,
    url: str,
    profiles: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    first = make_venv(tmp_path / "first")
    torch = ["--torch-index-url", f"{url}/whl", "--profile", profiles[H100]]
    run = fitwheel("torch", "--torch-backend", "cu130", *torch, python=first)
    assert run.rc == 0, run.err
    assert _build(first) == "cu130"
    capsys.readouterr()
    assert main(["freeze", "--python", str(first)]) == 0
    frozen = capsys.readouterr().out
    assert "torch==2.10.0+cu130\n" in frozen.splitlines(keepends=True)
    (tmp_path / "frozen.txt").write_text(frozen)
    # a fresh venv, the same machine, and auto (which alone would take cu128 here)
    second = make_venv(tmp_path / "second")
    again = fitwheel(
        "-r", str(tmp_path / "frozen.txt"), "--torch-backend", "auto", *torch, python=second
    )
    assert again.rc == 0, again.err
    assert _build(second) == "cu130"
    capsys.readouterr()
    assert main(["freeze", "--python", str(second)]) == 0
    assert capsys.readouterr().out == frozen


def test_no_match_names_the_backend_index_as_the_source(
    fitwheel: Any, url: str, profiles: dict[str, str]
) -> None:
    run = fitwheel(
        "torch==2.99",
        "--torch-backend",
        "cu130",
        "--torch-index-url",
        f"{url}/whl",
        "--profile",
        profiles[H100],
        "--dry-run",
    )
    assert run.rc == 1
    assert "no version of torch matches ==2.99: the versions are 2.10.0+cu130, 2.9.0+cu130, " in (
        run.err
    )
    assert (
        f"from {url}/whl/cu130/ (the cu130 backend index, of torch-backend cu130 (from "
        "--torch-backend); the only index searched for torch)"
    ) in run.err
    assert "--index-url" not in run.err and "was not searched" not in run.err


def test_a_routed_pin_is_not_said_to_be_shadowed_by_the_users_indexes(
    tmp_path: Path, fitwheel: Any, profiles: dict[str, str]
) -> None:
    # the cu130 index lacks torch 2.10.0, which the default index has: under first-index a
    # project from the user's first index would be flagged, but torch came from neither
    partial = build_torch_mirror(
        tmp_path / "partial", ("2.9.0", "2.10.0"), skip=[("cu130", "2.10.0")], variant_versions=()
    )
    with serve(partial.root) as (base, _state):
        run = fitwheel(
            "torch",
            "--torch-backend",
            "cu130",
            "--torch-index-url",
            f"{base}/whl",
            "--index-url",
            partial.default_index(base),
            "--extra-index-url",
            partial.default_index(base).replace("/simple/", "/simple"),
            "--profile",
            profiles[H100],
            "--dry-run",
            index=False,
        )
    assert run.rc == 0, run.err
    assert "torch 2.9.0+cu130" in run.out
    assert "which pip would install" not in run.err, run.err


def test_a_pinned_build_that_does_not_run_here_is_explained_not_refused(
    fitwheel: Any, url: str, profiles: dict[str, str]
) -> None:
    run = fitwheel(
        "torch==2.10.0+cu128",
        "--torch-backend",
        "auto",
        "--torch-index-url",
        f"{url}/whl",
        "--profile",
        profiles["gpu-rtx4090-gtx1080ti"],  # auto alone: cu126 (the GTX 1080 Ti is sm_61)
        "--dry-run",
        "--explain",
    )
    assert run.rc == 0, run.err
    assert "torch 2.10.0+cu128" in run.out
    assert "  cu128: named by the command line (torch==2.10.0+cu128)" in run.out
    assert "  cu128 does not run here: torch 2.10 cu128: ships sm_70" in run.out
    assert "named by hand" not in run.err  # the warning for --torch-backend cu128 by hand
