"""``fitwheel select``: the contract's output shapes, exit codes and options."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fitwheel.cli.main import main

FIXTURES = Path(__file__).resolve().parents[1] / "variants" / "data" / "published"
TORCH29 = FIXTURES / "torch-2.9.0-variants.json"
PROFILES = Path(__file__).resolve().parent.parent / "data" / "profiles"
H100 = PROFILES / "h100.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    code = main(["select", *map(str, argv)])
    out, err = capsys.readouterr()
    return code, out, err


def write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def current_form(providers: dict[str, object], variants: dict[str, object]) -> dict[str, object]:
    return {
        "$schema": "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json",
        "default-priorities": {"namespace": list(providers)},
        "providers": providers,
        "variants": variants,
    }


def test_json_output_is_the_contract_shape(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, TORCH29, "--profile", H100, "--json")
    assert code == 0, err
    payload = json.loads(out)
    assert set(payload) == {"ordered", "rejected"}
    assert payload["ordered"] == ["cuda13.0", "cuda12.8", "cuda12.6", "null"]
    assert payload["rejected"] == {
        "xpu": "intel :: device_ip: none of 12.55.8, 12.60.7, ... is supported here",
        "rocm6.3": "amd :: gfx_arch: none of gfx1030, gfx1100, ... is supported here",
        "rocm6.4": "amd :: gfx_arch: none of gfx1030, gfx1100, ... is supported here",
    }


@pytest.mark.parametrize(
    ("profile", "first"),
    [("h100", "cuda13.0"), ("rtx5090", "cuda12.8"), ("mi300x", "rocm6.4"), ("max1550", "xpu")],
)
def test_each_machine_gets_its_build(
    capsys: pytest.CaptureFixture[str], profile: str, first: str
) -> None:
    code, out, _ = run(capsys, TORCH29, "--profile", PROFILES / f"{profile}.json", "--json")
    assert code == 0
    assert json.loads(out)["ordered"][0] == first


def test_human_output_names_the_choice_the_reason_and_the_rejected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run(capsys, TORCH29, "--profile", H100)
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"torch-2.9.0-variants.json for profile {H100}:"
    assert lines[1].split() == ["1.", "cuda13.0", "<-", "chosen"]
    assert [line.split()[1] for line in lines[2:5]] == ["cuda12.8", "cuda12.6", "null"]
    assert lines[5] == (
        "  why: nvidia :: cuda_version_lower_bound :: 13.0 is preferred to 12.0 (cuda12.8)"
    )
    assert lines[6] == "rejected:"
    assert lines[7].split(None, 1) == [
        "xpu",
        "intel :: device_ip: none of 12.55.8, 12.60.7, ... is supported here",
    ]
    assert len(lines) == 10


def test_nothing_compatible_is_still_a_successful_query(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    variants = write(
        tmp_path / "pkg-1.0-variants.json",
        current_form(
            {"nvidia": {"requires": ["nvidia-variant-provider"]}},
            {"cu13": {"nvidia": {"cuda_version_lower_bound": ["13.0"]}}},
        ),
    )
    profile = write(tmp_path / "cpu.json", {"properties": {"x86_64": {"level": ["v3"]}}})
    code, out, _ = run(capsys, variants, "--profile", profile, "--json")
    assert code == 0
    assert json.loads(out) == {
        "ordered": [],
        "rejected": {"cu13": "nvidia :: cuda_version_lower_bound: 13.0 is not supported here"},
    }
    code, out, _ = run(capsys, variants, "--profile", profile)
    assert code == 0
    assert "no variant is compatible" in out


def test_optional_providers_need_enabling(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    variants = write(
        tmp_path / "pkg-1.0-variants.json",
        current_form(
            {
                "debug": {"static-properties": {"build": ["on"]}, "optional": True},
                "amd": {"requires": ["amd-variant-provider"], "optional": True},
            },
            {
                "dbg": {"debug": {"build": ["on"]}},
                "rocm": {"amd": {"gfx_arch": ["gfx942"]}},
                "null": {},
            },
        ),
    )
    # A profile states what the hardware supports; it does not enable optional providers.
    profile = write(tmp_path / "p.json", {"properties": {"amd": {"gfx_arch": ["gfx942"]}}})
    code, out, _ = run(capsys, variants, "--profile", profile, "--json")
    assert code == 0
    assert json.loads(out) == {
        "ordered": ["null"],
        "rejected": {
            "dbg": "debug: provider is optional and not enabled",
            "rocm": "amd: provider is optional and not enabled",
        },
    }
    _, out, _ = run(capsys, variants, "--profile", profile, "--json", "--enable-optional", "amd")
    assert json.loads(out)["ordered"] == ["rocm", "null"]
    _, out, _ = run(
        capsys,
        variants,
        "--profile",
        profile,
        "--json",
        "--enable-optional",
        "amd",
        "--enable-optional",
        "debug",
    )
    assert json.loads(out)["ordered"] == ["dbg", "rocm", "null"]
    _, out, _ = run(capsys, variants, "--profile", profile, "--json", "--enable-optional-all")
    assert json.loads(out)["ordered"] == ["dbg", "rocm", "null"]


def test_profile_with_properties_only_is_enough(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    profile = write(
        tmp_path / "bare.json",
        {"properties": {"intel": {"device_ip": ["12.60.7"]}}},
    )
    code, out, _ = run(capsys, TORCH29, "--profile", profile, "--json")
    assert code == 0
    # The enable-if of the file is judged by the running interpreter's values here.
    expected = ["xpu", "null"] if sys.platform in ("linux", "win32") else ["null"]
    assert json.loads(out)["ordered"] == expected


# --- failures -----------------------------------------------------------------------------------


def test_missing_file_is_a_clean_error(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    missing = tmp_path / "nope-1.0-variants.json"
    code, out, err = run(capsys, missing, "--profile", H100)
    assert code == 1
    assert out == ""
    assert str(missing) in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "content",
    [
        b"{not json",
        b"[]",
        b'{"$schema": "https://variants-schema.wheelnext.dev/peps/850/v0.2.0.json"}',
        json.dumps(
            current_form({"x": {"requires": ["x-provider"]}}, {"Bad Label": {"x": {"f": ["1"]}}})
        ).encode(),
    ],
)
def test_malformed_file_is_a_clean_error_naming_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes
) -> None:
    path = tmp_path / "pkg-1.0-variants.json"
    path.write_bytes(content)
    code, out, err = run(capsys, path, "--profile", H100, "--json")
    assert code == 1
    assert out == ""
    assert str(path) in err
    assert "Traceback" not in err


def test_bad_profile_is_a_clean_error(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    bad = write(tmp_path / "bad.json", {"properties": {"nvidia": {"sm_arch": "90_real"}}})
    code, _, err = run(capsys, TORCH29, "--profile", bad)
    assert code == 1
    assert str(bad) in err


def test_usage_errors_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path):
    with pytest.raises(SystemExit) as exc:
        main(["select"])
    assert exc.value.code == 2
    with pytest.raises(SystemExit) as exc:
        main(["select", str(TORCH29), "--profile", str(H100), "--sysroot", str(tmp_path)])
    assert exc.value.code == 2
    capsys.readouterr()


def test_unknown_gpu_policy_is_a_usage_error(capsys: pytest.CaptureFixture[str]):
    code, _, err = run(capsys, TORCH29, "--profile", H100, "--gpu-policy", "most")
    assert code == 2
    assert "policy" in err


@pytest.mark.skipif(
    importlib.util.find_spec("fitwheel.platform.policy") is None,
    reason="this build has no multi-GPU policy",
)
def test_gpu_policy_decides_for_a_mixed_machine(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    h100 = json.loads(H100.read_text())
    gtx = {
        "vendor": "nvidia",
        "index": 1,
        "name": "NVIDIA GeForce GTX 1080 Ti",
        "compute_capability": "6.1",
        "properties": {"nvidia": {"sm_arch": ["61_real", "60_real", "60_virtual"]}},
    }
    h100["devices"].append(gtx)
    sm = h100["properties"]["nvidia"]["sm_arch"]
    h100["properties"]["nvidia"]["sm_arch"] = [*sm, "61_real", "60_real", "60_virtual"]
    profile = write(tmp_path / "mixed.json", h100)
    # Default (every GPU): only cuda12.6 has kernels for both the H100 and the Pascal card.
    code, out, _ = run(capsys, TORCH29, "--profile", profile, "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["ordered"] == ["cuda12.6", "null"]
    assert "no value runs on" in payload["rejected"]["cuda13.0"]
    _, out, _ = run(capsys, TORCH29, "--profile", profile, "--json", "--gpu-policy", "any")
    assert json.loads(out)["ordered"][0] == "cuda13.0"


def test_sysroot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run(capsys, TORCH29, "--sysroot", tmp_path, "--json")
    if importlib.util.find_spec("fitwheel.platform.detect") is None:
        assert code == 2
        assert "detection is not available" in err
        return
    # An empty tree is a machine with no GPU: only the null variant fits.
    assert code == 0, err
    assert json.loads(out)["ordered"] == ["null"]
    code, _, err = run(capsys, TORCH29, "--sysroot", tmp_path / "missing", "--json")
    assert code == 2
    assert f"sysroot {tmp_path / 'missing'} is not a directory" in err


def test_select_loads_no_http_resolver_or_rich(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from fitwheel.cli.main import main\n"
        f"code = main(['select', {str(TORCH29)!r}, '--profile', {str(H100)!r}, '--json'])\n"
        "heavy = sorted(m for m in ('rich', 'urllib3', 'resolvelib', 'variantlib')"
        " if m in sys.modules)\n"
        "print(code, heavy, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert proc.stderr.strip() == "0 []"
    assert json.loads(proc.stdout)["ordered"][0] == "cuda13.0"


def test_select_start_up_leaves_packaging_and_process_machinery_unloaded() -> None:
    # The torch 2.9 file has requires and enable-if in their common forms: checking them must
    # not load packaging (which brings subprocess, logging and platform with it).
    script = (
        "import sys\n"
        "from fitwheel.cli.main import main\n"
        f"code = main(['select', {str(TORCH29)!r}, '--profile', {str(H100)!r}, '--json'])\n"
        "names = ('packaging', 'subprocess', 'logging', 'platform', 'rich', 'urllib3')\n"
        "print(code, sorted(m for m in names if m in sys.modules), file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert proc.stderr.strip() == "0 []"
    assert json.loads(proc.stdout)["ordered"][0] == "cuda13.0"


def test_the_installed_command_runs(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("fitwheel")
    proc = subprocess.run(
        [str(exe), "select", str(tmp_path / "none.json"), "--profile", str(H100)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 1
    assert proc.stderr.startswith("fitwheel: error: ")
    assert "Traceback" not in proc.stderr


def test_without_profile_this_machine_is_detected(tmp_path: Path) -> None:
    exe = Path(sys.executable).with_name("fitwheel")
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
        "FITWHEEL_CACHE_DIR": str(tmp_path / "cache"),
        "XDG_CONFIG_HOME": str(tmp_path / "config"),
    }
    proc = subprocess.run(
        [str(exe), "select", str(TORCH29), "--json"], capture_output=True, text=True, env=env
    )
    if importlib.util.find_spec("fitwheel.platform.detect") is None:
        assert proc.returncode == 2
        return
    assert proc.returncode == 0, proc.stderr
    payload = json.loads(proc.stdout)
    assert payload["ordered"][-1] == "null"
    assert set(payload["ordered"]) | set(payload["rejected"]) == {
        "null",
        "cuda12.6",
        "cuda12.8",
        "cuda13.0",
        "xpu",
        "rocm6.3",
        "rocm6.4",
    }


def test_an_unserved_gpu_is_never_a_silent_fallback(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    sm = ["37_real", "36_real", "35_real", "30_real", "30_virtual"]
    k80 = write(
        tmp_path / "k80.json",
        {
            "properties": {"nvidia": {"cuda_version_lower_bound": ["12.4", "12.0"], "sm_arch": sm}},
            "devices": [
                {
                    "vendor": "nvidia",
                    "index": 0,
                    "name": "Tesla K80",
                    "compute_capability": "3.7",
                    "properties": {"nvidia": {"sm_arch": sm}},
                }
            ],
        },
    )
    code, out, err = run(capsys, TORCH29, "--profile", k80, "--json")
    assert code == 0
    payload = json.loads(out)
    assert payload["ordered"] == ["null"]
    assert payload["unsupported_devices"] == ["nvidia GPU 0 (Tesla K80, compute capability 3.7)"]
    assert "warning:" in err and "Tesla K80" in err and "cuda12.6:" in err
    assert "falls back to null" in err


def test_abi_dependency_builds_are_ordered_not_rejected(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """``select`` has no resolution to read a torch version from: every build of the reserved
    namespace runs, newest dependency first, as the resolver would try them."""
    data = current_form(
        {},
        {
            "t29": {"abi_dependency": {"torch": ["2.9"]}},
            "t210": {"abi_dependency": {"torch": ["2.10"]}},
            "null": {},
        },
    )
    data["default-priorities"] = {"namespace": ["abi_dependency"]}
    code, out, err = run(
        capsys, write(tmp_path / "variants.json", data), "--profile", H100, "--json"
    )
    assert code == 0, err
    payload = json.loads(out)
    assert payload["ordered"] == ["t210", "t29", "null"]
    assert payload["rejected"] == {}
