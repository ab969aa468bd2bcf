"""Which smoke tests apply where, and that every script doctor would run is valid Python."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.doctor import smoke
from fitwheel.doctor.builds import Build
from fitwheel.doctor.inventory import Installed
from fitwheel.platform.detect import detect_profile
from fitwheel.platform.probe import Probe

MACHINES = Path(__file__).resolve().parents[1] / "platform" / "machines"


def _build(kind: str, version: str = "") -> Build:
    dist = Installed("torch", f"2.9.0+{kind}", Path("/nowhere"), Path("/nowhere"))
    return Build(dist, kind, version, "test")


@pytest.mark.parametrize(
    ("machine", "kind", "runs", "not_applicable"),
    [
        ("gpu-h100-open", "cuda", {"devices", "flexattention", "p2p"}, {"mx formats"}),
        ("gpu-rtx5090-igpu", "cuda", {"devices", "mx formats"}, {"p2p"}),
        ("gpu-mi300x", "rocm", {"devices", "p2p"}, {"mx formats"}),
        ("gpu-mi355x-rocm7", "rocm", {"mx formats"}, {"p2p"}),
        ("gpu-intel-max", "xpu", {"devices", "flexattention"}, {"p2p", "mx formats"}),
        ("nogpu-server", "cpu", set(), {"devices", "flexattention", "mx formats", "p2p"}),
        ("gpu-h100-open", "cpu", set(), {"devices", "flexattention", "mx formats", "p2p"}),
    ],
)
def test_plans(machine: str, kind: str, runs: set[str], not_applicable: set[str]) -> None:
    profile = detect_profile(Probe.for_sysroot(str(MACHINES / machine), env={}))
    plans, na = smoke.plan_torch(_build(kind, "12.8" if kind == "cuda" else ""), profile)
    planned = {name for plan in plans for name in plan.names}
    assert {"import", "matmul", "torch.compile", "cpu kernels"} <= planned
    assert runs <= planned
    assert not_applicable <= {c.name for c in na} and not planned & {c.name for c in na}
    assert all(c.status == "n/a" and c.detail for c in na)
    for plan in plans:  # every script, as substituted for this machine, is valid Python
        compile(smoke._PRELUDE + plan.script, plan.names[0], "exec")


def test_jax_and_cupy_scripts_compile() -> None:
    for script in (smoke._JAX, smoke._CUPY):
        compile(smoke._PRELUDE + script.replace("EXPECTED", "2"), "script", "exec")


def test_a_child_that_reports_then_dies(tmp_path: Path) -> None:
    import sys

    script = 'report("import", "pass", "half way")\nimport os\nos._exit(3)\n'
    outcome = smoke.run_script(sys.executable, script, 30, smoke.clean_environment())
    assert [r["name"] for r in outcome.reports] == ["import"]
    assert outcome.failure == "exit status 3"


def test_the_child_environment_is_clean(tmp_path: Path) -> None:
    import sys

    env = {"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "1", "PYTHONPATH": "/elsewhere"}
    script = 'import os\nreport("env", "pass", ",".join(sorted(os.environ)))\n'
    outcome = smoke.run_script(sys.executable, script, 30, smoke.clean_environment(env))
    seen = str(outcome.reports[0]["detail"]).split(",")
    assert "CUDA_VISIBLE_DEVICES" not in seen and "PYTHONPATH" not in seen and "PATH" in seen


def test_a_hung_child_is_stopped_with_its_own_children_and_its_reports_kept(
    tmp_path: Path,
) -> None:
    import sys
    import time

    from tests.kit.env import process_gone

    marker = tmp_path / "grandchild.pid"
    script = (
        'report("import", "pass", "before the hang")\n'
        "import subprocess, time\n"
        "child = subprocess.Popen(['sleep', '60'])\n"
        f"open({str(marker)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    started = time.monotonic()
    outcome = smoke.run_script(sys.executable, script, 2, smoke.clean_environment())
    assert time.monotonic() - started < 40  # the 2 s bound, with room for a loaded machine
    assert [r["name"] for r in outcome.reports] == ["import"]
    assert outcome.failure == "did not finish within 2 s (hung); the child was killed"
    # the script's own child went with its process group
    assert process_gone(int(marker.read_text()))
