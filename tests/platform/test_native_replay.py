"""NVML and Level Zero query sequences against recorded library answers, and the time bound."""

from __future__ import annotations

import ctypes
import json
import threading
from pathlib import Path

import pytest

from fitwheel.platform.native import level_zero, nvml
from fitwheel.platform.native.bounded import NativeTimeout, run_bounded, timeout_from_env
from fitwheel.platform.native.replay import RecordingTransport, ReplayTransport
from fitwheel.platform.native.runner import choose_source, run_query
from fitwheel.platform.native.transport import LibraryUnavailable, NativeError
from fitwheel.platform.probe import Probe

REPLAYS = Path(__file__).parent / "replays"


def replay(library: str, name: str) -> ReplayTransport:
    return ReplayTransport.load(REPLAYS / library / f"{name}.json")


def functions(transport: ReplayTransport) -> list[str]:
    return [f for f, _ in transport.log]


# -- NVML ---------------------------------------------------------------------------------------


def test_nvml_success_reads_every_device_and_shuts_down() -> None:
    t = replay("nvml", "rtx4090-gtx1080ti")
    report = nvml.query(t)
    assert report.cuda_version == (12, 8)
    assert [(d.index, d.compute_capability) for d in report.devices] == [(0, (8, 9)), (1, (6, 1))]
    assert report.devices[0].name == "NVIDIA GeForce RTX 4090"
    assert report.devices[1].uuid == "GPU-bbbbbbbb-1111-2222-3333-444444444444"
    assert report.devices[0].bus_id == "00000000:01:00.0"
    assert report.devices[0].pci_device_id == 0x268410DE
    assert report.devices[0].nvlinks_active == 0  # the first link is "not supported"
    assert functions(t)[0] == "nvmlInit_v2"
    assert functions(t)[-1] == "nvmlShutdown"


def test_nvml_cuda_version_v2_missing_falls_back_to_v1() -> None:
    t = replay("nvml", "v2-missing")
    report = nvml.query(t)
    assert report.cuda_version == (12, 8)
    assert "nvmlSystemGetCudaDriverVersion" in functions(t)
    assert "nvmlSystemGetCudaDriverVersion_v2" not in functions(t)


def test_nvml_init_v2_missing_uses_init() -> None:
    t = replay("nvml", "init-v1-only")
    assert nvml.query(t).cuda_version == (12, 8)
    assert functions(t)[0] == "nvmlInit"


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("driver-not-loaded", 9),
        ("library-not-found", 12),
        ("no-permission", 4),
        ("version-mismatch", 18),
    ],
)
def test_nvml_init_errors_carry_their_code_and_skip_shutdown(name: str, code: int) -> None:
    t = replay("nvml", name)
    with pytest.raises(NativeError) as info:
        nvml.query(t)
    assert info.value.code == code
    assert functions(t) == ["nvmlInit_v2"]


def test_nvml_count_zero_gives_no_devices() -> None:
    report = nvml.query(replay("nvml", "count-zero"))
    assert report.cuda_version == (12, 4)
    assert report.devices == []


def test_nvml_capability_failure_is_per_device() -> None:
    report = nvml.query(replay("nvml", "capability-failure"))
    first, second = report.devices
    assert first.compute_capability is None and first.capability_error == 3
    assert second.compute_capability == (6, 1)
    assert any("GPU 0: compute capability: not supported (3)" in n for n in report.notes)


def test_nvml_shutdown_failure_keeps_the_answers() -> None:
    report = nvml.query(replay("nvml", "shutdown-failure"))
    assert [d.compute_capability for d in report.devices] == [(8, 9), (6, 1)]


def test_nvml_nonsense_cuda_version_is_an_error() -> None:
    t = replay("nvml", "garbage-answers")
    with pytest.raises(NativeError):
        nvml.query(t)
    assert functions(t)[-1] == "nvmlShutdown"  # shut down even when an answer is unusable


def test_nvml_counts_active_nvlinks() -> None:
    report = nvml.query(replay("nvml", "h100-nvlink"))
    assert [d.nvlinks_active for d in report.devices] == [18, 18, 18, 18]


def test_nvml_version_decoding() -> None:
    assert nvml.decode_cuda_version(12080) == (12, 8)
    assert nvml.decode_cuda_version(13000) == (13, 0)
    assert nvml.decode_cuda_version(11040) == (11, 4)
    assert nvml.describe(9) == "driver not loaded (9)"
    assert nvml.describe(None) == "no answer"


def test_nvml_library_load_failure_is_reported_as_unavailable() -> None:
    with pytest.raises(LibraryUnavailable):
        replay("nvml", "load-failure")
    with pytest.raises(LibraryUnavailable):
        nvml.CtypesNvml(("/nonexistent/libnvidia-ml.so.1",))


# -- Level Zero ---------------------------------------------------------------------------------


def test_level_zero_reads_ip_versions() -> None:
    report = level_zero.query(replay("level_zero", "arc-a770"))
    (dev,) = report.devices
    assert (dev.vendor_id, dev.device_id, dev.ip_version) == (0x8086, 0x56A0, 0x030DC008)
    assert level_zero.decode_ip(dev.ip_version or 0) == "12.55.8"


@pytest.mark.parametrize(
    ("word", "ip"),
    [(0x030DC008, "12.55.8"), (0x030F0007, "12.60.7"), ((20 << 22) | (1 << 14), "20.1.0")],
)
def test_level_zero_ip_decoding(word: int, ip: str) -> None:
    assert level_zero.decode_ip(word) == ip


def test_level_zero_init_failure() -> None:
    with pytest.raises(NativeError) as info:
        level_zero.query(replay("level_zero", "uninitialized"))
    assert info.value.code == 0x78000001


def test_level_zero_load_failure() -> None:
    with pytest.raises(LibraryUnavailable):
        level_zero.CtypesLevelZero(("/nonexistent/libze_loader.so.1",))


# -- replay, recording, bounds ------------------------------------------------------------------


def test_replay_without_a_record_fails_without_code() -> None:
    t = ReplayTransport({"library": "nvml", "calls": []})
    with pytest.raises(NativeError) as info:
        t.call("nvmlInit_v2")
    assert info.value.code is None


def test_recording_round_trips_through_replay() -> None:
    recorder = RecordingTransport(replay("nvml", "capability-failure"), "nvml")
    first = nvml.query(recorder)
    again = nvml.query(ReplayTransport(json.loads(json.dumps(recorder.recording))))
    assert again == first


def test_run_bounded_returns_and_raises() -> None:
    assert run_bounded("t-ok", lambda: 42, 5) == 42
    with pytest.raises(ZeroDivisionError):
        run_bounded("t-err", lambda: 1 // 0, 5)


def test_run_bounded_gives_up_on_a_hung_call_and_blocks_that_key_until_it_returns() -> None:
    release = threading.Event()
    with pytest.raises(NativeTimeout):
        run_bounded("t-hang", release.wait, 0.05)
    with pytest.raises(NativeTimeout, match="has not returned yet"):
        run_bounded("t-hang", lambda: 1, 5)
    release.set()
    for _ in range(200):  # the abandoned call ends; the key frees up
        try:
            assert run_bounded("t-hang", lambda: 1, 5) == 1
            break
        except NativeTimeout:
            threading.Event().wait(0.01)
    else:
        pytest.fail("the key stayed busy after the hung call returned")


def test_run_query_reports_timeout_for_a_delayed_reply() -> None:
    probe = Probe(Path("/nonexistent"), {"FITWHEEL_NATIVE_TIMEOUT": "0.05"}, allow_native=True)
    t = replay("nvml", "timeout")
    key, source = choose_source(probe, t, "X", lambda: t, "nvml")
    try:
        outcome = run_query(probe, key, source, nvml.query)
    finally:
        t.close()
    assert outcome.report is None and outcome.failure == "timeout"
    assert "0.05" in outcome.detail


def test_run_query_uses_a_recording_named_in_the_environment() -> None:
    path = REPLAYS / "nvml" / "count-zero.json"
    probe = Probe(Path("/"), {"FITWHEEL_NVML_REPLAY": str(path)}, allow_native=True)
    key, source = choose_source(
        probe, None, "FITWHEEL_NVML_REPLAY", lambda: pytest.fail("real"), "nvml"
    )
    outcome = run_query(probe, key, source, nvml.query)
    assert outcome.report is not None and outcome.report.cuda_version == (12, 4)


def test_run_query_turns_a_broken_recording_into_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    probe = Probe(tmp_path, {"FITWHEEL_NVML_REPLAY": str(bad)}, allow_native=True)
    key, source = choose_source(
        probe, None, "FITWHEEL_NVML_REPLAY", lambda: pytest.fail("real"), "nvml"
    )
    outcome = run_query(probe, key, source, nvml.query)
    assert outcome.failure == "error" and "JSONDecodeError" in outcome.detail


@pytest.mark.parametrize(
    ("value", "expected"), [(None, 2.5), ("", 2.5), ("0.5", 0.5), ("nope", 2.5), ("-1", 2.5)]
)
def test_timeout_from_env(value: str | None, expected: float) -> None:
    assert timeout_from_env(value) == expected


def test_ctypes_nvml_binding_on_this_machine() -> None:
    """Where NVML exists, the real binding answers the same shape the recordings have."""
    try:
        ctypes.CDLL(nvml.SONAME)
    except OSError:
        pytest.skip("no NVML on this machine")
    probe = Probe(Path("/"), {}, allow_native=True)
    outcome = run_query(probe, "native:test", nvml.CtypesNvml, nvml.query)
    if outcome.report is None:
        assert outcome.failure == "error"
    else:
        assert outcome.report.cuda_version >= (11, 0)
