"""The override scheme: environment and config file, namespaces and features, precedence."""

from __future__ import annotations

from pathlib import Path

import pytest

from fitwheel.platform.detect import detect
from fitwheel.platform.overrides import (
    OverrideError,
    Overrides,
    from_config,
    from_env,
    load_overrides,
    split_env_name,
)
from fitwheel.platform.probe import Probe
from fitwheel.platform.profile import Device
from fitwheel.platform.result import ProviderResult

KNOWN = ["nvidia", "amd", "intel", "x86_64", "aarch64", "libc"]


class Recorder:
    """Providers that answer fixed results and record that they ran."""

    def __init__(self) -> None:
        self.ran: list[str] = []

    def x86(self, probe: Probe) -> ProviderResult:
        self.ran.append("x86_64")
        return ProviderResult(
            "x86_64",
            "ok",
            properties={"level": ("v3", "v2", "v1"), "avx2": ("on",), "avx512f": ("on",)},
            sources={"*": "/proc/cpuinfo flags"},
        )

    def nvidia(self, probe: Probe) -> ProviderResult:
        self.ran.append("nvidia")
        sm = {"nvidia": {"sm_arch": ("89_real", "80_real")}}
        return ProviderResult(
            "nvidia",
            "ok",
            properties={"cuda_version_lower_bound": ("12.8", "12.0"), "sm_arch": ("89_real",)},
            devices=[Device("nvidia", 0, properties=sm)],
            sources={"*": "sysfs"},
        )

    def nothing(self, probe: Probe) -> ProviderResult:
        self.ran.append("amd")
        return ProviderResult("amd", "absent", reason="no AMD GPU")

    def providers(self) -> dict:
        return {"nvidia": self.nvidia, "amd": self.nothing, "x86_64": self.x86}


def run(env: dict[str, str], config: dict | None = None, recorder: Recorder | None = None):
    recorder = recorder or Recorder()
    overrides = from_env(env, KNOWN)
    if config is not None:
        from fitwheel.platform.overrides import merge

        overrides = merge(from_config(config, "config.toml"), overrides)
    detection = detect(
        Probe.for_sysroot("/nonexistent"),
        providers=recorder.providers(),
        overrides=overrides,
        use_cache=False,
    )
    return detection, recorder


@pytest.mark.parametrize("value", ["off", "", "OFF"])
def test_hide_namespace_from_env(value: str) -> None:
    detection, recorder = run({"FITWHEEL_FORCE_NVIDIA": value})
    assert "nvidia" not in recorder.ran
    assert "nvidia" not in detection.profile().properties
    assert detection.profile().devices == ()
    assert "FITWHEEL_FORCE_NVIDIA" in detection.results["nvidia"].reason


def test_force_feature_replaces_values_in_place() -> None:
    detection, _ = run({"FITWHEEL_FORCE_X86_64_LEVEL": "v2,v1"})
    props = detection.profile().properties["x86_64"]
    assert props["level"] == ("v2", "v1")
    assert list(props) == ["level", "avx2", "avx512f"]
    assert detection.results["x86_64"].sources["level"] == "override:FITWHEEL_FORCE_X86_64_LEVEL"


def test_double_underscore_form_and_spaces() -> None:
    detection, _ = run({"FITWHEEL_FORCE_X86_64__LEVEL": " v4  v3 "})
    assert detection.profile().properties["x86_64"]["level"] == ("v4", "v3")


def test_empty_feature_value_hides_the_feature() -> None:
    detection, _ = run({"FITWHEEL_FORCE_X86_64_AVX512F": ""})
    assert "avx512f" not in detection.profile().properties["x86_64"]
    assert "avx2" in detection.profile().properties["x86_64"]


def test_forced_feature_creates_an_undetected_namespace() -> None:
    detection, _ = run({"FITWHEEL_FORCE_AMD_GFX_ARCH": "gfx942"})
    assert detection.results["amd"].status == "ok"
    assert detection.profile().properties["amd"] == {"gfx_arch": ("gfx942",)}
    assert detection.profile().sources["amd"] == "override:FITWHEEL_FORCE_AMD_GFX_ARCH"


def test_forcing_a_per_device_feature_drops_the_device_constraint() -> None:
    detection, _ = run({"FITWHEEL_FORCE_NVIDIA_SM_ARCH": "90_real"})
    profile = detection.profile()
    assert profile.properties["nvidia"]["sm_arch"] == ("90_real",)
    assert profile.devices[0].properties["nvidia"] == {}


def test_namespace_off_wins_over_its_forced_features() -> None:
    detection, _ = run({"FITWHEEL_FORCE_NVIDIA": "off", "FITWHEEL_FORCE_NVIDIA_SM_ARCH": "90_real"})
    assert "nvidia" not in detection.profile().properties


def test_detection_off_runs_nothing_but_keeps_forced_features() -> None:
    detection, recorder = run({"FITWHEEL_DETECT": "off", "FITWHEEL_FORCE_X86_64_LEVEL": "v1"})
    assert recorder.ran == []
    assert detection.profile().properties == {"x86_64": {"level": ("v1",)}}


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"FITWHEEL_FORCE_NVIDIA": "maybe"}, "expected 'off'"),
        ({"FITWHEEL_FORCE_X86_64_LEVEL": "V3"}, "FITWHEEL_FORCE_X86_64_LEVEL"),
        ({"FITWHEEL_FORCE_X86_64_LEVEL": "v3;v2"}, "must be non-empty"),
        ({"FITWHEEL_DETECT": "sometimes"}, "FITWHEEL_DETECT"),
    ],
)
def test_invalid_env_values(env: dict[str, str], message: str) -> None:
    with pytest.raises(OverrideError, match=message):
        from_env(env, KNOWN)


@pytest.mark.parametrize(
    ("suffix", "expected"),
    [
        ("NVIDIA", ("nvidia", None)),
        ("X86_64", ("x86_64", None)),
        ("X86_64_LEVEL", ("x86_64", "level")),
        ("NVIDIA_CUDA_VERSION_LOWER_BOUND", ("nvidia", "cuda_version_lower_bound")),
        ("MY_NS__MY_FEATURE", ("my_ns", "my_feature")),
        ("BLAS_PROVIDER", ("blas", "provider")),
    ],
)
def test_env_name_splitting(suffix: str, expected: tuple[str, str | None]) -> None:
    assert split_env_name(suffix, KNOWN) == expected


CONFIG = {
    "detect": {
        "override": {
            "nvidia": "off",
            "x86_64": {"level": ["v2", "v1"], "avx2": "", "avx512f": []},
        }
    }
}


def test_config_file_table() -> None:
    detection, recorder = run({}, CONFIG)
    assert "nvidia" not in recorder.ran
    assert detection.profile().properties == {"x86_64": {"level": ("v2", "v1")}}
    assert (
        "config.toml [detect.override] x86_64.level" in detection.results["x86_64"].sources["level"]
    )


def test_env_wins_over_file_key_by_key() -> None:
    env = {"FITWHEEL_FORCE_NVIDIA": "detect", "FITWHEEL_FORCE_X86_64_LEVEL": "v4"}
    detection, recorder = run(env, CONFIG)
    assert "nvidia" in recorder.ran
    props = detection.profile().properties
    assert props["x86_64"] == {"level": ("v4",)}  # avx2/avx512f still hidden by the file
    assert "nvidia" in props


def test_config_detection_off() -> None:
    detection, recorder = run({}, {"detect": {"detection": "off"}})
    assert recorder.ran == []
    assert detection.profile().properties == {}


@pytest.mark.parametrize(
    "config",
    [
        {"detect": []},
        {"detect": {"override": {"nvidia": 3}}},
        {"detect": {"override": {"x86_64": {"level": 3}}}},
        {"detect": {"override": {"x86_64": {"level": ["v 3"]}}}},
        {"detect": {"override": {"Bad-NS": "off"}}},
        {"detect": {"detection": "maybe"}},
    ],
)
def test_invalid_config(config: dict) -> None:
    with pytest.raises(OverrideError, match=r"config\.toml"):
        from_config(config, "config.toml")


def test_load_from_file_and_env(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[detect.override]\nnvidia = "off"\nx86_64.level = "v3, v2"\n')
    overrides = load_overrides({"FITWHEEL_CONFIG": str(path), "FITWHEEL_FORCE_AMD": "off"}, KNOWN)
    assert overrides.skip_reason("nvidia").startswith(str(path))
    assert overrides.skip_reason("amd") == "FITWHEEL_FORCE_AMD"
    assert overrides.features[("x86_64", "level")].values == ("v3", "v2")


def test_user_config_dir_is_used(tmp_path: Path) -> None:
    (tmp_path / "fitwheel").mkdir()
    (tmp_path / "fitwheel/config.toml").write_text('[detect.override]\nintel = "off"\n')
    overrides = load_overrides({"XDG_CONFIG_HOME": str(tmp_path)}, KNOWN)
    assert overrides.skip_reason("intel")


def test_missing_explicit_config_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(OverrideError, match="does not exist"):
        load_overrides({"FITWHEEL_CONFIG": str(tmp_path / "none.toml")}, KNOWN)


def test_bad_toml_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[detect.override\n")
    with pytest.raises(OverrideError, match="not valid TOML"):
        load_overrides({"FITWHEEL_CONFIG": str(path)}, KNOWN)


def test_no_overrides_is_falsy() -> None:
    assert not Overrides()
    assert not from_env({"PATH": "/bin"}, KNOWN)
