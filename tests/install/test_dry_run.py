"""``fitwheel install --dry-run`` resolves and reports without loading what installs."""

import subprocess
import sys
from pathlib import Path

from tests.kit import clean_env, make_venv, make_wheel

#: what only placing files into an environment needs
INSTALL_ONLY = ("fitwheel.install.place.core", "fitwheel.install.place.linked", "installer")


def test_dry_run_leaves_the_installer_unloaded(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    make_wheel(wheels, "app", "2.0", requires=["helper<2"], entry_points={"app-run": "a:b"})
    make_wheel(wheels, "helper", "1.0")
    venv = make_venv(tmp_path / "venv")
    env = clean_env(FITWHEEL_CACHE_DIR=str(tmp_path / "cache"))
    args = ["install", "--dry-run", "--no-index", "--find-links", str(wheels)]
    args += ["--python", str(venv), "app"]
    code = (
        "import sys; from fitwheel.cli.main import main; "
        f"rc = main({args!r}); "
        f"print(sorted(m for m in {INSTALL_ONLY!r} if m in sys.modules), file=sys.stderr); "
        "raise SystemExit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().splitlines()[-1] == "[]"
    assert "app" in proc.stdout and "helper" in proc.stdout
    assert not list((venv / "lib").glob("python*/site-packages/app*"))
