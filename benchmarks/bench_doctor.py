"""``fitwheel doctor`` (static checks, no ``--run``) on a 40-package environment.

The environment: a CUDA 12.8 torch stand-in (``torch/version.py``, a ``libtorch_cuda.so`` with
three fat binary containers), torchvision, torchaudio, triton, four ``nvidia-*-cu12`` runtime
wheels, a CUDA 12 CuPy and 31 plain packages with requirements between them, installed by
fitwheel into a fresh virtual environment. Cases, whole process: ``fitwheel doctor --json
--profile h100.json`` with fitwheel as users install it (the baseline; target: under 0.3 s) and
``pip check`` on the same environment (the nearest peer: requirement consistency only).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks.harness import Case, compare, smoke
from benchmarks.peers import isolated_environ, mirror_module

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "tests" / "data" / "profiles" / "h100.json"
TARGET_S = 0.3
PLAIN = 31


def _environment(work: Path) -> Path:
    mirror_module()  # puts the test kit on the path
    from tests.doctor.envs import CUDA_128, environment, plain_wheel, torch_wheel

    folder = work / "wheels"
    wheels = [
        torch_wheel(folder, archs=CUDA_128, requires=['triton==3.5.0; platform_system == "Linux"']),
        torch_wheel(folder, "0.24.0+cu128", project="torchvision", requires=["torch==2.9.0"]),
        torch_wheel(folder, "2.9.0+cu128", project="torchaudio", requires=["torch==2.9.0"]),
        plain_wheel(folder, "triton", "3.5.0"),
        plain_wheel(folder, "cupy-cuda12x", "13.6.0", ["nvidia-cublas-cu12"]),
    ]
    for runtime in ("cublas", "cudnn", "cufft", "nccl"):
        wheels.append(plain_wheel(folder, f"nvidia-{runtime}-cu12", "12.8.0"))
    for i in range(PLAIN):
        needs = [f"pkg{j:02d}>=1.0" for j in range(max(0, i - 3), i)]
        wheels.append(plain_wheel(folder, f"pkg{i:02d}", "1.0", needs))
    return environment(work, wheels)


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="fw-bench-doctor-") as tmp, isolated_environ():
        work = Path(tmp)
        venv = _environment(work)
        count = len(list(venv.glob("lib/python*/site-packages/*.dist-info")))
        from benchmarks.user_install import program

        fitwheel = program()
        argv = [str(fitwheel), "doctor", "--json", "--python", str(venv), "--profile", str(PROFILE)]
        # byte-compiled modules, as an installed fitwheel has them; a private cache folder,
        # which the first run fills with the interpreter's answers (as a user's second run)
        env = {"PYTHONDONTWRITEBYTECODE": "", "FITWHEEL_CACHE_DIR": str(work / "cache")}
        check = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env})
        if check.returncode != 0:
            raise SystemExit(f"doctor found problems in the benchmark environment:\n{check.stdout}")
        cases = [Case.command(f"fitwheel doctor ({count} packages)", argv, env=env)]
        pip = shutil.which("pip", path=str(Path(sys.executable).parent))
        if pip is not None:
            cases.append(
                Case.command("pip check", [pip, "--python", str(venv / "bin" / "python"), "check"])
            )
        results = compare(f"doctor without --run, {count} installed packages", cases, repeat=15)
        if not smoke():
            median = results[0].median
            verdict = "met" if median < TARGET_S else "NOT met"
            print(f"target: under {TARGET_S} s: {verdict} (median {median:.3f} s)")


if __name__ == "__main__":
    main()
