"""``fitwheel uninstall``, ``list``, ``freeze``, ``show`` and ``check`` on real virtual
environments, variant installs included."""

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.kit import clean_env, make_wheel, snapshot

FITWHEEL = [sys.executable, "-m", "fitwheel"]
CUDA = {"nvidia": {"cuda_version_lower_bound": ["12.0"]}}


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("wheels")
    make_wheel(folder, "accel", "1.0", label="cu12", variant=CUDA)
    make_wheel(folder, "accel", "1.0")
    make_wheel(
        folder, "app", "2.0", requires=["accel>=1", "helper<2"], entry_points={"app-run": "a:b"}
    )
    make_wheel(folder, "helper", "1.0")
    make_wheel(folder / "later", "helper", "3.0")
    (folder / "cpu.json").write_text('{"properties": {}}')
    (folder / "later" / "cpu.json").write_text('{"properties": {}}')
    return folder


def fitwheel(
    *args: str, stdin: str | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*FITWHEEL, *args],
        capture_output=True,
        text=True,
        input=stdin,
        env=env or clean_env(),
        timeout=120,
    )


def install(venv: Path, wheels: Path, *args: str) -> None:
    done = fitwheel(
        "install", "-q", "--python", str(venv), "--no-index", "-f", str(wheels),
        "--profile", str(wheels / "cpu.json"), *args,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


def site(venv: Path) -> Path:
    (found,) = venv.glob("lib/python*/site-packages")
    return found


def user_files(venv: Path) -> dict[str, str]:
    return {k: v for k, v in snapshot(venv).items() if not k.startswith(".fitwheel")}


def test_list_show_and_freeze_show_the_variant_install(venv: Path, wheels: Path) -> None:
    install(venv, wheels, "app", "--variant", "accel=cu12")
    listed = fitwheel("list", "--python", str(venv))
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()
    assert lines[0].split() == ["Package", "Version", "Variant"]
    assert lines[2].split() == ["accel", "1.0", "cu12"]
    assert lines[3].split() == ["app", "2.0"]
    verbose = fitwheel("list", "-v", "--python", str(venv)).stdout
    assert "nvidia :: cuda_version_lower_bound :: 12.0" in verbose
    entries = json.loads(fitwheel("list", "--format", "json", "--python", str(venv)).stdout)
    assert entries == [
        {"name": "accel", "version": "1.0", "variant_label": "cu12", "variant_properties": CUDA},
        {"name": "app", "version": "2.0", "variant_label": None, "variant_properties": {}},
        {"name": "helper", "version": "1.0", "variant_label": None, "variant_properties": {}},
    ]
    shown = fitwheel("show", "--python", str(venv), "accel", "app")
    assert shown.returncode == 0, shown.stderr
    accel, app = shown.stdout.split("\n---\n")
    assert "Name: accel\nVersion: 1.0\n" in accel
    assert "Required-by: app" in accel
    assert (
        "Variant: cu12\nVariant-properties:\n  nvidia :: cuda_version_lower_bound :: 12.0" in accel
    )
    assert "Requires: accel, helper" in app and "Variant" not in app
    assert f"Location: {site(venv)}" in app
    as_json = json.loads(fitwheel("show", "--json", "--python", str(venv), "accel").stdout)
    assert as_json[0]["variant_label"] == "cu12"
    assert as_json[0]["variant_properties"] == CUDA
    missing = fitwheel("show", "--python", str(venv), "accel", "nosuch")
    assert missing.returncode == 1 and "not found: nosuch" in missing.stderr
    frozen = fitwheel("freeze", "--python", str(venv)).stdout.splitlines()
    assert frozen == ["accel==1.0 --variant=cu12", "app==2.0", "helper==1.0"]
    assert fitwheel("list", "--format", "freeze", "--python", str(venv)).stdout.splitlines() == (
        frozen
    )


def test_freeze_then_install_r_reproduces_the_variant_install(
    venv: Path, wheels: Path, tmp_path: Path
) -> None:
    install(venv, wheels, "app", "--variant", "accel=cu12")
    before = fitwheel("list", "--format", "json", "--python", str(venv)).stdout
    frozen = tmp_path / "frozen.txt"
    frozen.write_text(fitwheel("freeze", "--python", str(venv)).stdout)
    removed = fitwheel("uninstall", "-y", "--python", str(venv), "-r", str(frozen))
    assert removed.returncode == 0, removed.stderr
    assert json.loads(fitwheel("list", "--format", "json", "--python", str(venv)).stdout) == []
    # the CPU profile alone would choose the non-variant accel; the frozen file keeps cu12
    install(venv, wheels, "-r", str(frozen))
    assert fitwheel("list", "--format", "json", "--python", str(venv)).stdout == before
    plain = tmp_path / "plain.txt"
    plain.write_text("accel==1.0\n")
    install(venv, wheels, "--force-reinstall", "-r", str(plain))
    (accel,) = [
        e
        for e in json.loads(fitwheel("list", "--format", "json", "--python", str(venv)).stdout)
        if e["name"] == "accel"
    ]
    assert accel["variant_label"] is None


def test_check_reports_missing_conflicting_and_foreign_platform(venv: Path, wheels: Path) -> None:
    install(venv, wheels, "app")
    clean = fitwheel("check", "--python", str(venv))
    assert (clean.returncode, clean.stdout) == (0, "No broken requirements found.\n")
    assert fitwheel("uninstall", "-y", "-q", "--python", str(venv), "accel").returncode == 0
    install(venv, wheels / "later", "--no-deps", "helper==3.0")
    wheel_file = site(venv) / "helper-3.0.dist-info" / "WHEEL"
    wheel_file.write_text(wheel_file.read_text().replace("py3-none-any", "cp39-cp39-win_amd64"))
    broken = fitwheel("check", "--python", str(venv))
    assert broken.returncode == 1
    assert broken.stdout.splitlines() == [
        "app 2.0 requires accel, which is not installed.",
        "app 2.0 has requirement helper<2, but you have helper 3.0.",
        "helper 3.0 is not supported on this platform",
    ]
    report = json.loads(fitwheel("check", "--json", "--python", str(venv)).stdout)
    assert report["ok"] is False
    assert [p["kind"] for p in report["problems"]] == ["missing", "conflict", "platform"]


def test_uninstall_asks_first_as_pip_does(venv: Path, wheels: Path) -> None:
    install(venv, wheels, "app")
    before = user_files(venv)
    declined = fitwheel("uninstall", "--python", str(venv), "app", stdin="n\n")
    assert declined.returncode == 0
    assert "Would remove:" in declined.stdout and f"{venv}/bin/app-run" in declined.stdout
    assert "Proceed (Y/n)?" in declined.stdout and "Nothing was removed." in declined.stdout
    assert user_files(venv) == before
    unanswered = fitwheel("uninstall", "--python", str(venv), "app", stdin="")
    assert unanswered.returncode == 1 and "pass -y" in unanswered.stderr
    assert user_files(venv) == before
    accepted = fitwheel("uninstall", "--python", str(venv), "app", stdin="y\n")
    assert accepted.returncode == 0, accepted.stderr
    assert "Successfully uninstalled app-2.0" in accepted.stdout
    assert not (venv / "bin" / "app-run").exists()
    assert not (site(venv) / "app").exists() and not (site(venv) / "app-2.0.dist-info").exists()
    assert (site(venv) / "helper").is_dir()
    skipped = fitwheel("uninstall", "-y", "--python", str(venv), "nosuch")
    assert skipped.returncode == 0 and "skipping nosuch: it is not installed" in skipped.stderr


def test_uninstall_without_record_is_refused_and_removes_nothing(venv: Path, wheels: Path) -> None:
    install(venv, wheels, "app")
    (site(venv) / "helper-1.0.dist-info" / "RECORD").unlink()
    before = user_files(venv)
    refused = fitwheel("uninstall", "-y", "--python", str(venv), "app", "helper")
    assert refused.returncode == 1
    assert refused.stderr.startswith("fitwheel: error: helper is installed without a RECORD file")
    assert "nothing was removed" in refused.stderr and "Traceback" not in refused.stderr
    # all or nothing: app, which has its RECORD, is still there too
    assert user_files(venv) == before


def test_a_bad_installed_distribution_is_named_and_the_rest_is_read(
    venv: Path, wheels: Path
) -> None:
    install(venv, wheels, "app")
    bad = site(venv) / "broken-1.0.dist-info"
    bad.mkdir()
    (bad / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: caf\xe9\nVersion: 1.0\n\n")
    empty = site(venv) / "empty-1.0.dist-info"
    empty.mkdir()
    for command in (["list"], ["freeze"], ["check"], ["show", "app"]):
        done = fitwheel(*command, "--python", str(venv))
        assert done.returncode == 0, (command, done.stderr)
        assert f"warning: {bad}: skipped, its METADATA cannot be read" in done.stderr
        assert f"warning: {empty}: skipped, it has no METADATA file" in done.stderr
        assert ("app" in done.stdout) if command != ["check"] else ("No broken" in done.stdout)
    # install and uninstall carry on too
    install(venv, wheels, "helper")
    assert fitwheel("uninstall", "-y", "--python", str(venv), "app").returncode == 0


def test_the_environment_comes_from_python_or_the_active_venv(venv: Path, wheels: Path) -> None:
    install(venv, wheels, "helper")
    active = fitwheel("freeze", env=clean_env(VIRTUAL_ENV=str(venv)))
    assert active.stdout == "helper==1.0\n"
    by_interpreter = fitwheel("freeze", "--python", str(venv / "bin" / "python"))
    assert by_interpreter.stdout == "helper==1.0\n"
    none = fitwheel("list")
    assert none.returncode == 1 and "--python PATH" in none.stderr


def test_check_evaluates_variant_markers_for_the_installed_build(
    venv: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "wheels"
    needs = ["cudart; 'nvidia' in variant_namespaces"]
    make_wheel(folder, "gpu", "1.0", label="cu12", variant=CUDA, requires=needs)
    make_wheel(folder, "gpu", "1.0", requires=needs)
    (folder / "cpu.json").write_text('{"properties": {}}')
    install(venv, folder, "--no-deps", "gpu")
    assert fitwheel("check", "--python", str(venv)).returncode == 0
    install(venv, folder, "--no-deps", "--variant", "gpu=cu12", "gpu")
    broken = fitwheel("check", "--python", str(venv))
    assert broken.stdout == "gpu 1.0 requires cudart, which is not installed.\n"


def test_an_egg_info_install_is_listed_and_its_uninstall_refused(venv: Path, wheels: Path) -> None:
    install(venv, wheels, "helper")
    egg = site(venv) / "legacy-0.5-py3.11.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 1.1\nName: legacy\nVersion: 0.5\n")
    assert fitwheel("freeze", "--python", str(venv)).stdout == "helper==1.0\nlegacy==0.5\n"
    before = user_files(venv)
    refused = fitwheel("uninstall", "-y", "--python", str(venv), "legacy", "helper")
    assert refused.returncode == 1 and "legacy is installed without a RECORD" in refused.stderr
    assert user_files(venv) == before


def test_freeze_writes_a_local_wheel_install_as_pip_does(venv: Path, wheels: Path) -> None:
    (wheel,) = (wheels / "later").glob("helper-3.0-*.whl")
    install(venv, wheels, "--no-deps", str(wheel))
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    expected = f"helper @ {wheel.resolve().as_uri()}#sha256={digest}\n"
    assert fitwheel("freeze", "--python", str(venv)).stdout == expected
