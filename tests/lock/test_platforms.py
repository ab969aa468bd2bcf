"""One lock, from this Linux machine, for every platform PyTorch serves: a Windows box with an
RTX 4090 (two of them: a driver that takes CUDA 13 builds and one below CUDA 13's Windows
minimum, which Linux's would let through), a Mac (arm64, no CUDA), a Graviton (aarch64, CPU)
and a Linux H100, against a loopback mirror of PyTorch's per-backend indexes with the builds
of each platform. Each target's torch comes from the backend its own platform and driver call
for, the other projects' wheels by its tags, dependencies by its markers; ``lock --check``,
``export``, ``bundle`` and the host's selection (what ``sync`` installs there) agree."""

from __future__ import annotations

import json
import tomllib
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from fitwheel.errors import InputError, ResolutionError
from fitwheel.lock.document import read_lock
from fitwheel.lock.selection import Host, select
from fitwheel.lock.targets import driver_cuda, make_target
from fitwheel.platform.policy import target_from_profile
from fitwheel.platform.profile import load_profile
from tests.kit import build_torch_mirror, make_venv, serve, sha256_of, torch_like
from tests.kit.torch_mirror import PY, TorchMirror, add_platform_builds
from tests.lock.conftest import MACHINES, fitwheel, profile_of

PROFILES = Path(__file__).resolve().parents[1] / "data" / "profiles"
WIN = f"{PY}-{PY}-win_amd64"
#: target -> the file of each project it locks (None: it does not use the project)
EXPECTED: dict[str, dict[str, str | None]] = {
    "windows-rtx4090": {
        "torch": f"torch-2.10.0+cu130-{WIN}.whl",
        "torchvision": f"torchvision-0.25.0+cu130-{WIN}.whl",
        "psutil": "psutil-7.0.0-cp37-abi3-win_amd64.whl",
        "colorama": "colorama-0.4.6-py2.py3-none-any.whl",
        "pywin32": f"pywin32-311-{WIN}.whl",
        "triton": None,
        "nvidia-cuda-runtime-cu12": None,
    },
    # a driver of CUDA 13's Linux minimum (580.65.06) but below its Windows one (580.88)
    "windows-580": {
        "torch": f"torch-2.10.0+cu128-{WIN}.whl",
        "torchvision": f"torchvision-0.25.0+cu128-{WIN}.whl",
        "psutil": "psutil-7.0.0-cp37-abi3-win_amd64.whl",
        "pywin32": f"pywin32-311-{WIN}.whl",
        "triton": None,
        "nvidia-cuda-runtime-cu12": None,
    },
    "macos-arm64": {
        "torch": f"torch-2.10.0-{PY}-none-macosx_11_0_arm64.whl",
        "torchvision": f"torchvision-0.25.0-{PY}-{PY}-macosx_11_0_arm64.whl",
        "psutil": "psutil-7.0.0-cp36-abi3-macosx_11_0_arm64.whl",
        "colorama": None,
        "pywin32": None,
    },
    "graviton": {
        "torch": f"torch-2.10.0+cpu-{PY}-{PY}-manylinux_2_28_aarch64.whl",
        "torchvision": f"torchvision-0.25.0+cpu-{PY}-{PY}-manylinux_2_28_aarch64.whl",
        "psutil": "psutil-7.0.0-cp36-abi3-manylinux_2_17_aarch64.manylinux2014_aarch64.whl",
        "colorama": None,
        "pywin32": None,
    },
    "h100": {  # a 550 driver (CUDA 12.4): cu128
        "torch": f"torch-2.10.0+cu128-{PY}-{PY}-manylinux_2_28_x86_64.whl",
        "psutil": "psutil-7.0.0-cp36-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
        "triton": f"triton-3.6.0-{PY}-{PY}-manylinux_2_28_x86_64.whl",
        "nvidia-cuda-runtime-cu12": "nvidia_cuda_runtime_cu12-12.8.90-py3-none-any.whl",
        "pywin32": None,
    },
}
BACKENDS = {
    "windows-rtx4090": "cu130",
    "windows-580": "cu128",
    "macos-arm64": "cpu",
    "graviton": "cpu",
    "h100": "cu128",
}
REQUIREMENTS = ("torch", "torchvision", "tqdm", "portalocker", "psutil")


@dataclass
class Locked:
    mirror: TorchMirror
    url: str
    root: Path
    profiles: dict[str, Path]
    lock: Path
    report: dict[str, Any]

    def served(self, url: str) -> str:
        assert url.startswith(self.url + "/")
        return sha256_of(self.mirror.root / urllib.parse.unquote(url[len(self.url) + 1 :]))

    def index(self) -> list[str]:
        return ["--index-url", self.mirror.default_index(self.url)]


def _profiles(root: Path) -> dict[str, Path]:
    older = json.loads((PROFILES / "windows-rtx4090.json").read_text())
    older["devices"][0]["driver_version"] = "580.70"
    (root / "windows-580.json").write_text(json.dumps(older))
    return {
        "windows-rtx4090": PROFILES / "windows-rtx4090.json",
        "windows-580": root / "windows-580.json",
        "macos-arm64": PROFILES / "macos-arm64.json",
        "graviton": PROFILES / "graviton.json",
        "h100": profile_of(MACHINES / "gpu-h100-open", root / "h100.json"),
    }


@pytest.fixture(scope="module")
def locked(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Locked]:
    root = tmp_path_factory.mktemp("platforms")
    mirror = add_platform_builds(build_torch_mirror(root / "mirror", variant_versions=()))
    profiles = _profiles(root)
    with serve(mirror.root) as (url, _state):
        it = Locked(mirror, url, root, profiles, root / "pylock.toml", {})
        args = ["lock", *REQUIREMENTS, "-o", str(it.lock), *it.index()]
        args += ["--torch-backend", "auto", "--torch-index-url", mirror.torch_index(url)]
        args += ["--cache-dir", str(root / "cache"), "--report", str(root / "report.json")]
        for path in profiles.values():
            args += ["--profile", str(path)]
        done = fitwheel(*args)
        assert done.returncode == 0, done.stderr
        it.report = json.loads((root / "report.json").read_text())
        yield it


def _locked_files(lock: Path) -> dict[str, dict[str, str]]:
    """target -> project -> the file it locks."""
    out: dict[str, dict[str, str]] = {}
    for p in tomllib.loads(lock.read_text())["packages"]:
        for target, filename in p["tool"]["fitwheel"]["targets"].items():
            out.setdefault(target, {})[p["name"]] = filename
    return out


def test_each_target_locks_its_platforms_files(locked: Locked) -> None:
    files = _locked_files(locked.lock)
    assert list(files) == list(EXPECTED)
    for target, expected in EXPECTED.items():
        for project, filename in expected.items():
            assert files[target].get(project) == filename, (target, project)
    # the CUDA runtime and triton are Linux-only dependencies of the CUDA torch builds
    for target in ("windows-rtx4090", "windows-580", "macos-arm64", "graviton"):
        assert not [n for n in files[target] if n.startswith("nvidia-") or "triton" in n]
    data = tomllib.loads(locked.lock.read_text())
    records = {t["name"]: t for t in data["tool"]["fitwheel"]["targets"]}
    assert {n: r["torch-backend"] for n, r in records.items()} == BACKENDS
    windows = records["windows-rtx4090"]["marker"]
    assert windows == (
        f'python_version == "{records["h100"]["python-version"]}" and sys_platform == "win32" '
        'and platform_machine == "AMD64"'
    )
    assert records["macos-arm64"]["marker"].endswith(
        'sys_platform == "darwin" and platform_machine == "arm64"'
    )
    assert records["graviton"]["marker"].endswith(
        'sys_platform == "linux" and platform_machine == "aarch64"'
    )
    base = locked.mirror.torch_index(locked.url)
    for p in data["packages"]:
        for wheel in p["wheels"]:
            assert wheel["hashes"]["sha256"] == locked.served(wheel["url"])
        if p["name"] in ("pywin32", "colorama"):
            # Windows-only dependencies (sys_platform / platform_system markers)
            assert p["marker"] == windows
        if p["name"] == "torch":
            backend = BACKENDS[next(iter(p["tool"]["fitwheel"]["targets"]))]
            assert p["index"] == f"{base}/{backend}/"
    # the Mac's torch is the cpu index's plain-version build
    mac = next(p for p in data["packages"] if p["tool"]["fitwheel"]["targets"].get("macos-arm64")
               and p["name"] == "torch")  # fmt: skip
    assert mac["version"] == "2.10.0" and mac["index"] == f"{base}/cpu/"


def test_each_targets_backend_choice_reads_its_platform_and_windows_driver(locked: Locked) -> None:
    by_name = {t["name"]: t["torch_backend"] for t in locked.report["targets"]}
    verdicts = {
        name: {v["backend"]: v["reason"] for v in t["considered"] if v["torch"] == "2.10"}
        for name, t in by_name.items()
    }
    win = verdicts["windows-rtx4090"]
    assert win["cu130"] is None and win["cu128"] is None
    # an NVIDIA box considers NVIDIA's backends only (the platform rule shows on the Mac's)
    assert win and not any(b.startswith(("rocm", "xpu")) for b in win)
    old = verdicts["windows-580"]
    assert old["cu130"] == (
        "needs an NVIDIA driver for CUDA 13.0 or newer (>= 580.88); the driver here supports "
        "CUDA 12.0"
    )
    # a machine without a GPU considers the cpu backend alone, built for its platform
    for name in ("macos-arm64", "graviton"):
        assert verdicts[name] == {"cpu": None}, (name, verdicts[name])


def test_lock_check_is_stable(locked: Locked, tmp_path: Path) -> None:
    # without torch settings: the backends and index root the lock records
    done = fitwheel(
        "lock", "--check", "-o", str(locked.lock), *locked.index(),
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr + done.stdout


def _export(locked: Locked, target: str, tmp_path: Path) -> dict[str, tuple[str, str]]:
    """project -> (URL, sha256) of the lines ``export`` writes for ``target``."""
    out = tmp_path / f"{target}.txt"
    done = fitwheel("export", str(locked.lock), "--profile", str(locked.profiles[target]),
                    "-o", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = [line.strip() for line in out.read_text().splitlines() if not line.startswith("#")]
    pairs = {}
    for head, tail in zip(lines[::2], lines[1::2], strict=True):
        name, _, url = head.removesuffix(" \\").partition(" @ ")
        pairs[name] = (url, tail.removeprefix("--hash=sha256:"))
    return pairs


@pytest.mark.parametrize("target", list(EXPECTED))
def test_export_writes_each_targets_files(locked: Locked, target: str, tmp_path: Path) -> None:
    lines = _export(locked, target, tmp_path)
    assert {n: urllib.parse.unquote(u.rsplit("/", 1)[1]) for n, (u, _h) in lines.items()} == (
        _locked_files(locked.lock)[target]
    )
    for url, sha256 in lines.values():
        assert sha256 == locked.served(url)
    torch_url, torch_file = lines["torch"][0], EXPECTED[target]["torch"]
    assert torch_file is not None and f"/whl/{BACKENDS[target]}/" in torch_url
    # the URL as PyTorch's index writes it: a local version's + percent-encoded
    assert torch_url.endswith("/" + urllib.parse.quote(torch_file))


def test_bundle_holds_each_targets_files(locked: Locked, tmp_path: Path) -> None:
    out = tmp_path / "bundle"
    args = ["bundle", str(locked.lock), "-o", str(out), "--cache-dir", str(tmp_path / "cache")]
    for path in locked.profiles.values():
        args += ["--profile", str(path)]
    done = fitwheel(*args)
    assert done.returncode == 0, done.stderr
    wanted = {f for files in _locked_files(locked.lock).values() for f in files.values()}
    data = tomllib.loads((out / "pylock.toml").read_text())
    paths = {w["name"]: w.get("path") for p in data["packages"] for w in p["wheels"]}
    assert {name for name, path in paths.items() if path} == wanted
    for name in wanted:
        assert sha256_of(out / paths[name]) == locked.served(
            next(w["url"] for p in data["packages"] for w in p["wheels"] if w["name"] == name)
        )
    assert (out / "simple" / "pywin32" / "index.html").is_file()


def _host(path: Path) -> Host:
    profile = load_profile(path)
    made = make_target("host", profile, target_from_profile(profile), python_version=None)
    return Host(made.target, profile.devices, made.environment, made.tags, f"profile {path}")


@pytest.mark.parametrize("target", list(EXPECTED))
def test_select_picks_each_hosts_files(locked: Locked, target: str) -> None:
    lock = read_lock(str(locked.lock))
    selection = select(lock, _host(locked.profiles[target]))
    assert selection.target is not None and selection.target.name == target
    assert {p.name: w.filename for p, w in selection.files} == _locked_files(locked.lock)[target]


def test_a_windows_driver_is_read_by_the_windows_minima() -> None:
    # CUDA 13: Linux 580.65.06, Windows 580.88; CUDA 12: Linux 525.60.13, Windows 528.33
    assert driver_cuda("580.70", "Windows") == (12, 0)
    assert driver_cuda("580.70", "Linux") == (13, 0)
    assert driver_cuda("580.88", "Windows") == (13, 0)
    assert driver_cuda("527.41", "Windows") == (11, 0)
    assert driver_cuda("528.33", "Windows") == (12, 0)
    assert driver_cuda("400.1", "Windows") is None


def _target(tmp_path: Path, data: dict[str, Any], platforms: tuple[str, ...] = ()) -> Any:
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(data))
    profile = load_profile(path)
    return make_target(
        "t", profile, target_from_profile(profile), python_version="3.12", platforms=platforms,
        source=str(path),
    )  # fmt: skip


def test_a_profile_of_another_os_is_one_machines(tmp_path: Path) -> None:
    win = _target(tmp_path, {"properties": {}, "environment": {"sys_platform": "win32"}})
    env = win.environment
    assert (env["platform_system"], env["os_name"], env["platform_release"]) == (
        "Windows",
        "nt",
        "",
    )
    assert env["platform_machine"] in ("AMD64", "ARM64")
    assert str(win.tags[0]) == f"cp312-cp312-win_{env['platform_machine'].lower()}"
    # the machine as Windows spells it, and the OS from a --platform tag
    spelled = _target(tmp_path, {"properties": {}, "environment": {
        "sys_platform": "win32", "platform_machine": "x86_64"}})  # fmt: skip
    assert spelled.environment["platform_machine"] == "AMD64"
    tagged = _target(tmp_path, {"properties": {}}, ("win_amd64",))
    assert tagged.marker == (
        'python_version == "3.12" and sys_platform == "win32" and platform_machine == "AMD64"'
    )
    # a Mac without a release: macOS 14, not this machine's kernel version read as Darwin's
    mac = _target(tmp_path, {"properties": {}, "environment": {
        "sys_platform": "darwin", "platform_machine": "aarch64"}})  # fmt: skip
    assert mac.environment["platform_system"] == "Darwin"
    assert str(mac.tags[0]) == "cp312-cp312-macosx_14_0_arm64"
    # one glibc named: that one and every older one down to 2.17
    arm = _target(tmp_path, {"properties": {"libc": {"glibc": ["2.34"]}}, "environment": {
        "platform_machine": "aarch64"}})  # fmt: skip
    names = [str(t) for t in arm.tags]
    assert names[0] == "cp312-cp312-manylinux_2_34_aarch64"
    assert "cp312-cp312-manylinux_2_28_aarch64" in names
    assert "cp312-abi3-manylinux2014_aarch64" in names


def test_a_linux_profile_made_a_windows_one(tmp_path: Path) -> None:
    data = json.loads((PROFILES / "h100.json").read_text())
    data["environment"]["sys_platform"] = "win32"
    with pytest.raises(InputError, match="sys_platform 'win32' but platform_system 'Linux'"):
        _target(tmp_path, data)
    data["environment"] = {"sys_platform": "win32", "platform_machine": "AMD64"}
    # detected on Linux with a CUDA 13 driver; the Windows box's driver is older
    assert data["properties"]["nvidia"]["cuda_version_lower_bound"][0] == "13.0"
    data["devices"][0]["driver_version"] = "576.02"
    made = _target(tmp_path, data)
    assert made.target.supported["nvidia"]["cuda_version_lower_bound"][0] == "12.0"
    assert made.target.supported["nvidia"]["sm_arch"] == ("90_real", "90_virtual")
    data["devices"][0]["driver_version"] = "latest"
    with pytest.raises(InputError, match="driver_version 'latest' is not a version"):
        _target(tmp_path, data)


def test_sync_with_the_windows_profile_takes_the_windows_targets_files(
    locked: Locked, tmp_path: Path
) -> None:
    # what a Windows box shows with its profile (detection reads no GPU there): the target,
    # and its files, chosen with the Windows driver minima (dry run: nothing is installed)
    venv = make_venv(tmp_path / "venv")
    done = fitwheel(
        "sync", str(locked.lock), "--python", str(venv), "--dry-run", "--report", "-",
        "--profile", str(locked.profiles["windows-580"]), "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["target"] == "windows-580"
    files = {item["name"]: item["filename"] for item in report["install"]}
    assert files == _locked_files(locked.lock)["windows-580"]


def test_a_windows_host_without_its_gpu_is_refused_naming_the_cuda_build(
    locked: Locked, tmp_path: Path
) -> None:
    data = json.loads((PROFILES / "windows-rtx4090.json").read_text())
    data["devices"], data["properties"] = [], {}
    path = tmp_path / "windows-no-gpu.json"
    path.write_text(json.dumps(data))
    with pytest.raises(ResolutionError) as caught:
        select(read_lock(str(locked.lock)), _host(path))
    message = str(caught.value)
    assert "windows-rtx4090: its torch 2.10.0+cu130 is the cu130 build, which does not run" in (
        message
    )
    assert "macos-arm64: its environment" in message


def test_variant_wheels_follow_the_windows_driver_minima_too(tmp_path: Path) -> None:
    # torch's variant wheels (one per build, labels cuda12.8, cuda13.0, ..., null): the same
    # driver reading chooses among them
    wheels = torch_like(tmp_path / "wheels")
    profiles = _profiles(tmp_path)
    lock = tmp_path / "pylock.toml"
    args = ["lock", "torch==2.9.0", "-o", str(lock), "--no-index", "-f", str(wheels)]
    for name in ("windows-rtx4090", "windows-580", "macos-arm64"):
        args += ["--profile", str(profiles[name])]
    done = fitwheel(*args, "--cache-dir", str(tmp_path / "cache"))
    assert done.returncode == 0, done.stderr
    assert {t: files["torch"] for t, files in _locked_files(lock).items()} == {
        "windows-rtx4090": "torch-2.9.0-py3-none-any-cuda13.0.whl",
        "windows-580": "torch-2.9.0-py3-none-any-cuda12.8.whl",
        "macos-arm64": "torch-2.9.0-py3-none-any-null.whl",
    }
