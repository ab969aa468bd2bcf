"""A build for hardware the machine lacks: ``warn`` where the machine has no GPU at all (the
build runs, on the CPU only), ``fail`` where it has another vendor's GPUs; doctor, ``--verify``
and install's GPU-build warning judge it by one rule
(:func:`fitwheel.torchbackend.gpubuild.host_fit`)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from fitwheel.doctor.inventory import read_inventory
from fitwheel.doctor.static import static_checks
from fitwheel.index.simple import Link
from fitwheel.platform.profile import Profile
from fitwheel.resolve.candidates import Candidate
from fitwheel.torchbackend.gpubuild import gpu_build_warnings, host_fit
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.names import canonicalize_name
from tests.doctor.envs import (
    CUDA_128,
    FITWHEEL,
    MACHINES,
    by_name,
    doctor,
    environment,
    failed,
    plain_wheel,
    torch_wheel,
)
from tests.kit import clean_env, make_venv
from tests.torchbackend.machines import machine_profile

PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"
NO_GPU = PROFILES / "no-gpu.json"
TRITON = 'triton==3.5.0; platform_system == "Linux"'
RUNTIMES = ["nvidia-cublas-cu13", "nvidia-cuda-runtime-cu13", "nvidia-nccl-cu13"]


@pytest.fixture(scope="module")
def cuda_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A CUDA 13.0 torch with its torchvision, triton and CUDA runtime wheels."""
    tmp = tmp_path_factory.mktemp("cuda")
    folder = tmp / "w"
    wheels = [
        torch_wheel(
            folder, "2.9.0+cu130", cuda="13.0", archs=["90_real"], requires=[TRITON, *RUNTIMES]
        ),
        torch_wheel(
            folder, "0.24.0+cu130", cuda="13.0", project="torchvision", requires=["torch==2.9.0"]
        ),
        plain_wheel(folder, "triton", "3.5.0"),
        *(plain_wheel(folder, name, "13.0.0") for name in RUNTIMES),
    ]
    return environment(tmp, wheels)


def test_cuda_build_on_a_cpu_only_machine_is_a_warning(cuda_venv: Path) -> None:
    code, report, err = doctor(cuda_venv, profile=NO_GPU)
    assert code == 0 and report["ok"] is True, err
    assert failed(report) == []
    warned = [c for c in report["checks"] if c["status"] == "warn"]
    assert [(c["name"], c["package"]) for c in warned] == [("build", "torch")]
    (build,) = warned
    assert "2.9.0+cu130 is a CUDA 13.0 build" in build["detail"]
    assert "no NVIDIA GPU" in build["detail"] and "CPU only" in build["detail"]
    # its companions share its verdict: named in it, with no check of their own
    assert "torchvision" in build["detail"] and "triton" in build["detail"]
    assert "3 CUDA runtime wheels (nvidia-cublas-cu13, " in build["detail"]
    for name in ("torchvision", *RUNTIMES):
        assert by_name(report, "build", name) == []
    assert not any(
        "runs on the CPU only" in c["detail"] for c in report["checks"] if c is not build
    )
    assert build["fix"] == (
        "fitwheel install 'torch==2.9.0' 'torchvision==0.24.0' --torch-backend cpu "
        "--force-reinstall && fitwheel uninstall " + " ".join(sorted([*RUNTIMES, "triton"]))
    )


def test_cuda_build_on_an_amd_machine_still_fails(cuda_venv: Path) -> None:
    code, report, _ = doctor(cuda_venv, profile=PROFILES / "mi300x.json")
    assert code == 1 and report["ok"] is False
    (build,) = failed(report)
    assert build["name"] == "build" and build["package"] == "torch"
    assert "no NVIDIA GPU" in build["detail"] and "AMD Instinct MI300X" in build["detail"]
    assert "--torch-backend rocm6.4" in build["fix"]
    assert [c for c in report["checks"] if c["status"] == "warn"] == []


def test_the_checklist_shows_the_warning_and_its_fix(cuda_venv: Path) -> None:
    proc = subprocess.run(
        [*FITWHEEL, "doctor", "--python", str(cuda_venv), "--profile", str(NO_GPU)],
        capture_output=True, text=True, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("[warn] build: torch: "))
    assert lines[at + 1].startswith("       fix: fitwheel install 'torch==2.9.0'")
    assert "[ok  ] build: nvidia-nccl-cu13" not in proc.stdout
    assert lines[-1].startswith("no problem, 1 warning (") and " 1 warned, 0 failed," in lines[-1]


def test_a_cuda_variant_wheel_on_a_cpu_only_machine(tmp_path: Path) -> None:
    """The variant recorded for an NVIDIA GPU is judged by the build check, as a warning, not
    as a variant today's detection rejects."""
    wheel = torch_wheel(tmp_path / "w", "2.9.0", label="cuda12.8", archs=CUDA_128)
    venv = environment(tmp_path, [wheel])
    code, report, err = doctor(venv, profile=NO_GPU)
    assert code == 0 and failed(report) == [], err
    (build,) = by_name(report, "build", "torch")
    assert build["status"] == "warn"
    assert "--torch-backend cpu" in build["fix"]
    assert by_name(report, "variant", "torch") == []


def test_a_runtime_wheel_without_a_framework_is_a_warning(tmp_path: Path) -> None:
    venv = environment(tmp_path, [plain_wheel(tmp_path / "w", "nvidia-nccl-cu13", "2.27.7")])
    code, report, _ = doctor(venv, profile=NO_GPU)
    assert code == 0 and report["ok"] is True
    (build,) = by_name(report, "build", "nvidia-nccl-cu13")
    assert build["status"] == "warn" and "no NVIDIA GPU, so nothing can use it" in build["detail"]


def test_install_verify_warns_and_succeeds(tmp_path: Path) -> None:
    venv = make_venv(tmp_path / "venv")
    wheel = torch_wheel(tmp_path / "w", archs=CUDA_128)
    proc = subprocess.run(
        [*FITWHEEL, "install", "--no-index", "--python", str(venv), "--cache-dir",
         str(tmp_path / "cache"), "--sysroot", str(MACHINES / "nogpu-server"), "--verify",
         str(wheel)],
        capture_output=True, text=True, env=clean_env(),
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "warning:" in line]
    # install's own warning and --verify's say the same of the same build
    assert any("is a CUDA build, but the target has no NVIDIA GPU" in w for w in warnings)
    (verified,) = [w for w in warnings if "--verify: torch:" in w]
    assert "no NVIDIA GPU" in verified and "--torch-backend cpu" in verified
    assert "Verified:" in proc.stdout and "1 warned" in proc.stdout


#: (machine, build kind) -> the verdict of the one rule
_TABLE = {
    ("nogpu-server", "cuda"): "no-gpu",
    ("nogpu-server", "rocm"): "no-gpu",
    ("nogpu-server", "xpu"): "no-gpu",
    ("gpu-h100-open", "cuda"): "fits",
    ("gpu-h100-open", "rocm"): "other-gpu",
    ("gpu-mi300x", "cuda"): "other-gpu",
    ("gpu-mi300x", "rocm"): "fits",
    ("gpu-radeon-igpu", "rocm"): "fits",  # the discrete card; the iGPU beside it does not count
    ("gpu-intel-max", "xpu"): "fits",
    ("gpu-intel-max", "cuda"): "other-gpu",
    ("gpu-rtx5090-igpu", "cuda"): "fits",
    ("gpu-rtx5090-igpu", "xpu"): "other-gpu",  # only an integrated Intel GPU
    ("gpu-intel-arc-igpu", "xpu"): "fits",
}
_BUILDS = {
    "cuda": {"version": "2.9.0+cu128", "cuda": "12.8", "archs": CUDA_128},
    "rocm": {"version": "2.9.0+rocm6.4", "cuda": None, "hip": "6.4.43482", "gfx": ["gfx942"]},
    "xpu": {"version": "2.9.0+xpu", "cuda": None, "xpu": "20250101"},
}


@pytest.fixture(scope="module")
def builds(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, Path]]:
    """Each kind of torch build: its wheel and a venv it is installed in."""
    out = {}
    for kind, how in _BUILDS.items():
        tmp = tmp_path_factory.mktemp(kind)
        wheel = torch_wheel(tmp / "w", **how)  # type: ignore[arg-type]
        out[kind] = (wheel, environment(tmp, [wheel]))
    return out


def _install_warns(wheel: Path, profile: Profile) -> bool:
    return bool(_install_warnings(wheel, profile))


def _install_warnings(wheel: Path, profile: Profile) -> list[str]:
    name = WheelFilename.parse(wheel.name)
    cand = Candidate(
        canonicalize_name(name.name),
        name.parsed_version,
        Link(filename=wheel.name, url=wheel.as_uri()),
        name,
    )
    return gpu_build_warnings([cand], {"torch"}, profile, lambda c: 1, lambda: None)


def _doctor_status(venv: Path, profile: Profile) -> str:
    """The torch build check's status; "pass" where a GPU build fits (judged by the driver and
    gpu archs checks, which have no build check)."""
    sites = [str(p) for p in venv.glob("lib/python*/site-packages")]
    checks = static_checks(read_inventory(sites), profile)
    found = [c.status for c in checks if c.name == "build" and c.package == "torch"]
    return found[0] if found else "pass"


@pytest.mark.parametrize(("machine", "kind"), sorted(_TABLE))
def test_install_and_doctor_agree(
    builds: dict[str, tuple[Path, Path]], machine: str, kind: str
) -> None:
    profile = machine_profile(machine)
    verdict = host_fit(kind, profile).verdict
    assert verdict == _TABLE[machine, kind]
    wheel, venv = builds[kind]
    assert _install_warns(wheel, profile) is (verdict != "fits")
    expected = {"fits": "pass", "no-gpu": "warn", "other-gpu": "fail"}[verdict]
    assert _doctor_status(venv, profile) == expected


def test_a_profile_with_properties_only_has_the_gpu_it_names(
    builds: dict[str, tuple[Path, Path]],
) -> None:
    profile = Profile({"nvidia": {"sm_arch": ("90_real",)}})
    assert host_fit("cuda", profile).verdict == "fits"
    assert host_fit("rocm", profile).verdict == "other-gpu"
    wheel, venv = builds["cuda"]
    assert not _install_warns(wheel, profile)
    assert _doctor_status(venv, profile) == "pass"


def test_install_names_the_gpus_a_build_cannot_use(builds: dict[str, tuple[Path, Path]]) -> None:
    (warning,) = _install_warnings(builds["cuda"][0], machine_profile("gpu-mi300x"))
    assert "is a CUDA build, but the target has no NVIDIA GPU (only AMD GPUs" in warning
    (warning,) = _install_warnings(builds["xpu"][0], machine_profile("nogpu-server"))
    assert "is an XPU build, but the target has no Intel GPU:" in warning
    assert "--torch-backend cpu installs the build that fits" in warning
