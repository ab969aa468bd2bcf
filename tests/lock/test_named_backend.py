"""``fitwheel lock --torch-backend auto`` when the requirements name the backend: every target
whose markers take the pin locks that build (not the one its profile alone would get), the
lock records ``auto`` as asked, and a pin the marker keeps from a target names nothing there."""

from __future__ import annotations

import tomllib
from pathlib import Path

from tests.kit import build_torch_mirror, serve
from tests.lock.conftest import MACHINES, fitwheel, profile_of


def test_auto_follows_the_pin_on_every_target_it_applies_to(tmp_path: Path) -> None:
    mirror = build_torch_mirror(tmp_path / "mirror", ("2.9.0",), variant_versions=())
    h100 = profile_of(MACHINES / "gpu-h100-open", tmp_path / "h100.json")
    cpu = profile_of(MACHINES / "nogpu-server", tmp_path / "cpu.json")
    req = tmp_path / "requirements.txt"
    req.write_text("torch==2.9.0+cu126\n")
    lock = tmp_path / "pylock.toml"
    with serve(mirror.root) as (url, _state):
        done = fitwheel(
            "lock", "-r", str(req), "-o", str(lock), "--cache-dir", str(tmp_path / "cache"),
            "--index-url", mirror.default_index(url),
            "--torch-backend", "auto", "--torch-index-url", mirror.torch_index(url),
            "--profile", str(h100), "--profile", str(cpu), "--explain",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"    cu126: named by {req}:1 (torch==2.9.0+cu126)" in done.stdout.splitlines()
        data = tomllib.loads(lock.read_text())
        versions = {p["version"] for p in data["packages"] if p["name"] == "torch"}
        assert versions == {"2.9.0+cu126"}
        records = data["tool"]["fitwheel"]["targets"]
        assert {r["torch-backend"] for r in records} == {"cu126"}
        assert {r["torch-backend-requested"] for r in records} == {"auto"}
        # by hand, another backend: an error naming both
        clash = fitwheel(
            "lock", "-r", str(req), "-o", str(tmp_path / "other.toml"),
            "--cache-dir", str(tmp_path / "cache"), "--index-url", mirror.default_index(url),
            "--torch-backend", "cu128", "--torch-index-url", mirror.torch_index(url),
            "--profile", str(h100),
        )  # fmt: skip
        assert clash.returncode == 1
        assert f"--torch-backend cu128 conflicts with torch==2.9.0+cu126 at {req}:1" in clash.stderr
