"""The per-boot cache: keys, invalidation, corruption, expiry, and its use by detect()."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fitwheel.platform.cache import FILE_NAME, DetectionCache, cache_key, default_dir
from fitwheel.platform.detect import detect
from fitwheel.platform.overrides import Overrides
from fitwheel.platform.probe import Probe
from fitwheel.platform.profile import Device
from fitwheel.platform.result import ProviderResult

MACHINES = Path(__file__).parent / "machines"
NAMESPACES = ["nvidia", "x86_64"]


@pytest.fixture
def machine(tmp_path: Path) -> Path:
    root = tmp_path / "machine"
    shutil.copytree(MACHINES / "x86-v4-sapphire-rapids", root, symlinks=True)
    (root / "sys/module/nvidia").mkdir(parents=True)
    (root / "sys/module/nvidia/version").write_text("550.54.14\n")
    (root / "sys/bus/pci/devices/0000:01:00.0").mkdir(parents=True)
    (root / "dev").mkdir()
    (root / "dev/nvidia0").write_text("")
    return root


def key_of(root: Path) -> dict:
    key = cache_key(Probe.for_sysroot(root), NAMESPACES)
    assert key is not None
    return key


RESULTS = {
    "nvidia": ProviderResult(
        "nvidia",
        "ok",
        properties={"sm_arch": ("90_real", "90_virtual")},
        devices=[
            Device(
                "nvidia",
                0,
                name="H100",
                pci_id="10de:2330",
                properties={"nvidia": {"sm_arch": ("90_real",)}},
                extra={"compute_capability": "9.0"},
            )
        ],
        capabilities={"driver": "550.54.14"},
        sources={"*": "sysfs+nvml"},
    ),
    "x86_64": ProviderResult("x86_64", "ok", properties={"level": ("v4", "v3", "v2", "v1")}),
}


class Clock:
    def __init__(self, now: float = 1_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_round_trip(tmp_path: Path, machine: Path) -> None:
    cache = DetectionCache(tmp_path / "c")
    key = key_of(machine)
    assert cache.load(key) is None
    assert cache.store(key, RESULTS)
    assert cache.load(key) == RESULTS


def test_no_boot_id_no_key(tmp_path: Path, machine: Path) -> None:
    (machine / "proc/sys/kernel/random/boot_id").unlink()
    assert cache_key(Probe.for_sysroot(machine), NAMESPACES) is None


@pytest.mark.parametrize(
    "change",
    [
        lambda root: (root / "proc/sys/kernel/random/boot_id").write_text("new-boot\n"),
        lambda root: (root / "sys/module/nvidia/version").write_text("560.28.03\n"),
        lambda root: (root / "dev/nvidia1").write_text(""),
        lambda root: (root / "sys/bus/pci/devices/0000:02:00.0").mkdir(),
        lambda root: (
            (root / "sys/module/amdgpu").mkdir()
            or (root / "sys/module/amdgpu/version").write_text("6.8.5\n")
        ),
    ],
    ids=["boot-id", "nvidia-driver", "device-node", "pci-device", "amdgpu-driver"],
)
def test_changes_invalidate(tmp_path: Path, machine: Path, change) -> None:
    cache = DetectionCache(tmp_path / "c")
    cache.store(key_of(machine), RESULTS)
    change(machine)
    assert cache.load(key_of(machine)) is None


def test_gpu_environment_is_part_of_the_key(machine: Path) -> None:
    plain = cache_key(Probe.for_sysroot(machine, {}), NAMESPACES)
    steered = cache_key(Probe.for_sysroot(machine, {"CUDA_VISIBLE_DEVICES": "1"}), NAMESPACES)
    unrelated = cache_key(Probe.for_sysroot(machine, {"HOME": "/root"}), NAMESPACES)
    assert plain != steered
    assert plain == unrelated


@pytest.mark.parametrize(
    "content",
    [b"", b"{not json", b"[]", b'{"version": 1}', b"\xff\xfe", json.dumps({"x": 1}).encode()],
)
def test_corrupt_file_is_ignored_and_rewritten(
    tmp_path: Path, machine: Path, content: bytes
) -> None:
    cache = DetectionCache(tmp_path / "c")
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / FILE_NAME).write_bytes(content)
    key = key_of(machine)
    assert cache.load(key) is None
    assert cache.store(key, RESULTS)
    assert cache.load(key) == RESULTS


def test_results_with_bad_fields_are_ignored(tmp_path: Path, machine: Path) -> None:
    cache = DetectionCache(tmp_path / "c")
    key = key_of(machine)
    cache.store(key, RESULTS)
    path = Path(cache.path)
    assert path == tmp_path / "c" / FILE_NAME
    data = json.loads(path.read_text())
    data["results"]["x86_64"]["status"] = "great"
    path.write_text(json.dumps(data))
    assert cache.load(key) is None


def test_expiry_and_clock_skew(tmp_path: Path, machine: Path) -> None:
    clock = Clock()
    cache = DetectionCache(tmp_path / "c", clock=clock)
    key = key_of(machine)
    cache.store(key, RESULTS)
    clock.now += 23 * 3600
    assert cache.load(key) == RESULTS
    clock.now += 2 * 3600
    assert cache.load(key) is None
    clock.now -= 2 * 86400  # the file now claims to come from the future
    assert cache.load(key) is None


def test_partial_results_expire_sooner(tmp_path: Path, machine: Path) -> None:
    clock = Clock()
    cache = DetectionCache(tmp_path / "c", clock=clock)
    key = key_of(machine)
    partial = {**RESULTS, "nvidia": ProviderResult("nvidia", "unknown", reason="NVML timed out")}
    cache.store(key, partial)
    clock.now += 300
    assert cache.load(key) == partial
    clock.now += 600
    assert cache.load(key) is None


def test_unwritable_directory_is_not_an_error(tmp_path: Path, machine: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    assert DetectionCache(blocker / "sub").store(key_of(machine), RESULTS) is False


def test_unserialisable_capabilities_are_not_stored(tmp_path: Path, machine: Path) -> None:
    bad = {"x86_64": ProviderResult("x86_64", "ok", capabilities={"x": object()})}
    assert DetectionCache(tmp_path / "c").store(key_of(machine), bad) is False


def test_default_dir(tmp_path: Path) -> None:
    assert default_dir({"FITWHEEL_CACHE_DIR": str(tmp_path)}) == str(tmp_path / "detect")
    assert default_dir({"XDG_CACHE_HOME": str(tmp_path)}) == str(tmp_path / "fitwheel" / "detect")


class Counting:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, probe: Probe) -> ProviderResult:
        self.calls += 1
        return ProviderResult("x86_64", "ok", properties={"level": ("v2", "v1")})


def host_detect(provider: Counting, cache_dir: Path, **kwargs):
    return detect(
        Probe(),
        providers={"x86_64": provider},
        overrides=Overrides(),
        cache_dir=cache_dir,
        **kwargs,
    )


def test_detect_uses_the_cache_on_this_machine(tmp_path: Path) -> None:
    if not Path("/proc/sys/kernel/random/boot_id").exists():
        pytest.skip("this machine has no boot id")
    provider = Counting()
    first = host_detect(provider, tmp_path)
    second = host_detect(provider, tmp_path)
    assert (first.cache, second.cache) == ("miss", "hit")
    assert provider.calls == 1
    assert second.profile().properties == first.profile().properties
    third = host_detect(provider, tmp_path, use_cache=False)
    assert third.cache == "off" and provider.calls == 2


def test_detect_rewrites_a_corrupt_cache(tmp_path: Path) -> None:
    if not Path("/proc/sys/kernel/random/boot_id").exists():
        pytest.skip("this machine has no boot id")
    (tmp_path / FILE_NAME).write_text("garbage")
    provider = Counting()
    assert host_detect(provider, tmp_path).cache == "miss"
    assert host_detect(provider, tmp_path).cache == "hit"
    assert provider.calls == 1


def test_sysroot_never_uses_the_cache(tmp_path: Path, machine: Path) -> None:
    provider = Counting()
    for _ in range(2):
        result = detect(
            Probe.for_sysroot(machine),
            providers={"x86_64": provider},
            overrides=Overrides(),
            cache_dir=tmp_path / "c",
        )
        assert result.cache == "off"
    assert provider.calls == 2
    assert not (tmp_path / "c").exists()


def test_a_cache_hit_loads_no_provider(tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    if not Path("/proc/sys/kernel/random/boot_id").exists():
        pytest.skip("this machine has no boot id")
    env = {k: v for k, v in os.environ.items() if not k.startswith("FITWHEEL_")}
    env["FITWHEEL_CACHE_DIR"] = str(tmp_path / "cache")
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    code = (
        "import sys\n"
        "from fitwheel.platform.detect import detect\n"
        "from fitwheel.platform.probe import Probe\n"
        "d = detect(Probe())\n"
        "loaded = sorted(m for m in sys.modules if m in {"
        "'fitwheel.platform.x86_64', 'fitwheel.platform.aarch64', 'fitwheel.platform.libc'})\n"
        "print(d.cache, loaded)\n"
    )
    runs = [
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
        ).stdout.split(" ", 1)
        for _ in range(2)
    ]
    assert runs[0][0] == "miss" and runs[0][1].strip() != "[]"
    assert runs[1][0] == "hit" and runs[1][1].strip() == "[]"
