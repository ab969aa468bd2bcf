"""``fitwheel detect`` end to end, as a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

MACHINES = Path(__file__).parents[1] / "platform" / "machines"
PROFILE_KEYS = ["fitwheel_profile", "properties", "devices", "environment", "sources"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("FITWHEEL_")}
    clean["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    clean["FITWHEEL_CACHE_DIR"] = str(tmp_path / "cache")
    return clean


def fitwheel(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "fitwheel", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def detect_json(machine: str, env: dict[str, str], *extra: str) -> dict:
    proc = fitwheel("detect", "--sysroot", str(MACHINES / machine), "--json", *extra, env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert list(data) == PROFILE_KEYS
    assert data["fitwheel_profile"] == 1
    return data


@pytest.mark.parametrize(
    ("machine", "expected"),
    [
        (
            "arm-grace-neoverse-v2",
            {"aarch64": ("version", "9.0a"), "libc": ("glibc", "2.35")},
        ),
        ("arm-ampere-altra-alpine", {"aarch64": ("version", "8.2a"), "libc": ("musl", "1.2")}),
        ("x86-v4-kvm-epyc-guest", {"x86_64": ("level", "v4")}),
        ("x86-kvm-qemu64-guest", {"x86_64": ("level", "v1")}),
        ("x86-v3-haswell-centos7", {"x86_64": ("level", "v3"), "libc": ("glibc", "2.17")}),
    ],
)
def test_sysroot_json(machine: str, expected: dict, env: dict[str, str]) -> None:
    data = detect_json(machine, env)
    assert set(data["properties"]) == set(expected)
    for ns, (feature, first) in expected.items():
        assert data["properties"][ns][feature][0] == first
        assert ns in data["sources"]
    assert data["devices"] == []
    assert data["environment"]["platform_system"] == "Linux"


def test_feature_order_is_kept(env: dict[str, str]) -> None:
    data = detect_json("x86-v4-sapphire-rapids", env)
    features = list(data["properties"]["x86_64"])
    assert features[0] == "level"
    assert features.index("amx_bf16") < features.index("avx2") < features.index("sse2")
    assert data["properties"]["x86_64"]["level"] == ["v4", "v3", "v2", "v1"]


def test_gpu_machine_with_two_cards(env: dict[str, str]) -> None:
    root = MACHINES / "gpu-rtx4090-gtx1080ti"
    if not root.is_dir():
        pytest.skip("GPU fixture not present")
    data = detect_json("gpu-rtx4090-gtx1080ti", env)
    if "nvidia" not in data["properties"]:
        pytest.skip("no NVIDIA provider installed")
    nvidia = [d for d in data["devices"] if d["vendor"] == "nvidia"]
    assert len(nvidia) == 2
    assert all("sm_arch" in d["properties"]["nvidia"] for d in nvidia)
    # device=N writes that device alone
    one = detect_json("gpu-rtx4090-gtx1080ti", env, "--gpu-policy", "device=1")
    assert len(one["devices"]) == 1
    assert (
        one["properties"]["nvidia"]["sm_arch"]
        == one["devices"][0]["properties"]["nvidia"]["sm_arch"]
    )


def test_env_sysroot_and_output_file(tmp_path: Path, env: dict[str, str]) -> None:
    env["FITWHEEL_SYSROOT"] = str(MACHINES / "arm-graviton3-neoverse-v1")
    out = tmp_path / "profile.json"
    proc = fitwheel("detect", "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert data["properties"]["aarch64"]["version"][0] == "8.4a"
    # the human report went to stdout
    assert "Properties" in proc.stdout and "8.4a" in proc.stdout
    assert f"Profile written to {out}" in proc.stdout


def test_human_report(env: dict[str, str]) -> None:
    proc = fitwheel("detect", "--sysroot", str(MACHINES / "arm-qemu-user-on-x86"), env=env)
    assert proc.returncode == 0, proc.stderr
    text = proc.stdout
    for heading in ("Devices", "Properties", "Capabilities", "Notes", "Environment"):
        assert heading in text
    assert "/proc/self/auxv AT_HWCAP/AT_HWCAP2" in text  # where the values came from
    assert "no Features line" in text
    assert "platform_machine" in text and "aarch64" in text


def test_overrides_reach_the_profile(env: dict[str, str]) -> None:
    env["FITWHEEL_FORCE_X86_64_LEVEL"] = "v2,v1"
    env["FITWHEEL_FORCE_LIBC"] = "off"
    data = detect_json("x86-v4-sapphire-rapids", env)
    assert data["properties"]["x86_64"]["level"] == ["v2", "v1"]
    assert "libc" not in data["properties"]


def test_config_file_overrides(tmp_path: Path, env: dict[str, str]) -> None:
    config = tmp_path / "fw.toml"
    config.write_text("[detect.override]\naarch64.sve = []\n")
    env["FITWHEEL_CONFIG"] = str(config)
    data = detect_json("arm-graviton3-neoverse-v1", env)
    assert "sve" not in data["properties"]["aarch64"]
    assert "bf16" in data["properties"]["aarch64"]


def test_profile_input_fills_the_environment(tmp_path: Path, env: dict[str, str]) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"properties": {"x86_64": {"level": ["v2", "v1"]}}}))
    proc = fitwheel("detect", "--profile", str(path), "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["properties"] == {"x86_64": {"level": ["v2", "v1"]}}
    assert data["environment"]["python_version"] == "{}.{}".format(*sys.version_info[:2])
    assert data["sources"] == {"x86_64": f"profile {path}"}


def test_this_machine(env: dict[str, str]) -> None:
    proc = fitwheel("detect", "--json", "--no-cache", env=env)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["environment"]["sys_platform"] == sys.platform
    assert not (Path(env["FITWHEEL_CACHE_DIR"])).exists()
    proc = fitwheel("detect", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["properties"] == data["properties"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--sysroot", "/nonexistent/root"], 2, "sysroot /nonexistent/root is not a directory"),
        (["--sysroot", "/tmp", "--profile", "x.json"], 2, "not allowed with"),
        (["--gpu-policy", "most"], 2, "unknown GPU policy"),
        (["--profile", "/nonexistent/p.json"], 1, "cannot read profile"),
    ],
)
def test_failures(args: list[str], code: int, message: str, env: dict[str, str]) -> None:
    proc = fitwheel("detect", *args, env=env)
    assert proc.returncode == code
    assert message in proc.stderr
    assert "Traceback" not in proc.stderr


def test_bad_override_is_one_paragraph(env: dict[str, str]) -> None:
    env["FITWHEEL_FORCE_NVIDIA"] = "perhaps"
    proc = fitwheel("detect", "--sysroot", str(MACHINES / "x86-v1-core2"), env=env)
    assert proc.returncode == 1
    assert proc.stderr.startswith("fitwheel: error: FITWHEEL_FORCE_NVIDIA")
    assert "Traceback" not in proc.stderr


def test_json_path_imports_no_rich(env: dict[str, str]) -> None:
    code = (
        "import sys; from fitwheel.cli.main import main; "
        "sys.argv=['fitwheel','detect','--json','--no-cache']; rc = main(); "
        "print('rich' in sys.modules, file=sys.stderr); raise SystemExit(rc)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.strip().endswith("False")


@pytest.mark.parametrize("cache", [["--no-cache"], []])
def test_json_path_leaves_heavy_modules_unloaded(env: dict[str, str], cache: list[str]) -> None:
    # dataclasses (with inspect and ast) and pathlib (with urllib.parse and ipaddress) each cost
    # more than a detection; what the interpreter itself loaded before fitwheel does not count
    heavy = (
        "packaging",
        "rich",
        "urllib3",
        "resolvelib",
        "variantlib",
        "logging",
        "dataclasses",
        "pathlib",
    )
    code = (
        "import sys; before = set(sys.modules); from fitwheel.cli.main import main; "
        f"rc = main(['detect', '--json', *{cache!r}]); "
        f"print(sorted(m for m in {heavy!r} if m in sys.modules and m not in before), "
        "file=sys.stderr); raise SystemExit(rc)"
    )
    for _ in range(2):  # the second run of the cached form answers from the cache
        proc = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=False
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr.strip() == "[]"
        assert json.loads(proc.stdout)["fitwheel_profile"] == 1


def test_second_run_answers_from_the_cache_identically(env: dict[str, str]) -> None:
    first = fitwheel("detect", "--json", env=env)
    second = fitwheel("detect", "--json", env=env)
    assert first.returncode == second.returncode == 0, first.stderr + second.stderr
    assert second.stdout == first.stdout
    assert list(Path(env["FITWHEEL_CACHE_DIR"]).iterdir())  # the first run stored it


@pytest.mark.parametrize(
    ("machine", "vendors"),
    [
        ("gpu-h100-open", {"nvidia"}),
        ("gpu-mi300x", {"amd"}),
        ("gpu-intel-max", {"intel"}),
        ("gpu-rtx5090-igpu", {"nvidia", "intel"}),
    ],
)
def test_gpu_machines(machine: str, vendors: set[str], env: dict[str, str]) -> None:
    if not (MACHINES / machine).is_dir():
        pytest.skip("GPU fixture not present")
    data = detect_json(machine, env)
    missing = vendors - set(data["properties"])
    if missing:
        pytest.skip(f"no provider for {', '.join(sorted(missing))}")
    assert vendors <= set(data["sources"])
    for device in data["devices"]:
        assert set(device["properties"]) <= {device["vendor"]}
    assert {d["vendor"] for d in data["devices"]} >= vendors


def test_saved_gpu_profile_selects_torch_for_both_cards(
    tmp_path: Path, env: dict[str, str]
) -> None:
    machine = "gpu-rtx4090-gtx1080ti"
    torch = Path(__file__).parents[1] / "variants/data/published/torch-2.9.0-variants.json"
    if not (MACHINES / machine).is_dir() or not torch.exists():
        pytest.skip("fixtures not present")
    reading = pytest.importorskip("fitwheel.variants.reading")
    from fitwheel.platform.policy import target_from_profile
    from fitwheel.platform.profile import load_profile
    from fitwheel.variants.ordering import order_variants

    out = tmp_path / "profile.json"
    proc = fitwheel("detect", "--sysroot", str(MACHINES / machine), "-o", str(out), env=env)
    assert proc.returncode == 0, proc.stderr
    profile = load_profile(out)
    if "nvidia" not in profile.properties:
        pytest.skip("no NVIDIA provider installed")
    info = reading.loads_variant_info(torch.read_bytes(), str(torch), "index")
    gpu = {"cuda12.6", "cuda12.8", "cuda13.0"}
    both = order_variants(info, target_from_profile(profile, "all")).labels
    either = order_variants(info, target_from_profile(profile, "any")).labels
    assert [label for label in both if label in gpu] == ["cuda12.6"]
    assert "cuda12.8" in either


TORCH = Path(__file__).parents[1] / "variants" / "data" / "published"


def test_check_lists_the_builds_each_gpu_runs(env: dict[str, str]) -> None:
    proc = fitwheel(
        "detect",
        "--sysroot",
        str(MACHINES / "gpu-rtx4090-gtx1080ti"),
        "--check",
        str(TORCH / "torch-2.9.0-variants.json"),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    rows = {line.split(")")[0]: line for line in proc.stdout.splitlines() if "nvidia GPU" in line}
    assert (
        "cuda12.8, cuda12.6"
        in rows["  nvidia GPU 0 (NVIDIA GeForce RTX 4090, compute capability 8.9"]
    )
    gtx = rows["  nvidia GPU 1 (NVIDIA GeForce GTX 1080 Ti, compute capability 6.1"]
    assert gtx.split()[-3:] == ["cuda12.6", "cuda12.8,", "cuda13.0"]
    assert "chosen for this machine (GPU policy all): cuda12.6" in proc.stdout
    assert "warning" not in proc.stderr


def test_check_warns_about_a_gpu_no_build_supports(env: dict[str, str], tmp_path: Path) -> None:
    sm = ["37_real", "36_real", "35_real", "30_real", "30_virtual"]
    profile = tmp_path / "k80.json"
    profile.write_text(
        json.dumps(
            {
                "properties": {"nvidia": {"cuda_version_lower_bound": ["12.4"], "sm_arch": sm}},
                "devices": [
                    {
                        "vendor": "nvidia",
                        "index": 0,
                        "name": "Tesla K80",
                        "compute_capability": "3.7",
                        "properties": {"nvidia": {"sm_arch": sm}},
                    }
                ],
            }
        )
    )
    proc = fitwheel(
        "detect",
        "--profile",
        str(profile),
        "--check",
        str(TORCH / "torch-2.10.0-variants.json"),
        env=env,
    )
    assert proc.returncode == 0, proc.stderr
    assert "chosen for this machine (GPU policy all): null" in proc.stdout
    assert "warning:" in proc.stderr and "Tesla K80, compute capability 3.7" in proc.stderr
    assert "cuda12.6: nvidia ::" in proc.stderr
    assert "built for nvidia :: sm_arch 50_real 60_real" in proc.stderr
