import sys
from pathlib import Path
from typing import Any

import pytest
from packaging import tags
from packaging.markers import default_environment

from fitwheel.errors import ResolutionError
from fitwheel.index.config import IndexConfig
from fitwheel.index.finder import Finder
from fitwheel.platform.policy import target_from_profile
from fitwheel.platform.profile import parse_profile
from fitwheel.resolve.candidates import CandidateSource, Options
from fitwheel.resolve.requirements import collect
from fitwheel.resolve.resolver import Resolution, UnsupportedDeviceError, resolve
from tests.kit import H100, KEPLER, make_wheel, torch_like

PY = ".".join(map(str, sys.version_info[:3]))

CPU_ONLY: dict[str, Any] = {"properties": {}}


def torch_folder(root: Path, *, variants_json: bool = True) -> Path:
    torch_like(root, variants_json=variants_json)
    make_wheel(root, "torch", "2.8.0", requires=["filelock"])
    return root


def run(
    folder: Path, reqs: list[str], profile: dict[str, Any] | None = None, **kw: Any
) -> Resolution:
    prof = parse_profile(profile if profile is not None else CPU_ONLY, "test profile")
    opts = Options(
        target_from_profile(prof),
        PY,
        list(tags.sys_tags()),
        pre=kw.pop("pre", False),
        no_variants=kw.pop("no_variants", False),
        forced=kw.pop("forced", {}),
    )
    source = CandidateSource(Finder(IndexConfig(None, (), (str(folder),))), opts)
    user = collect(reqs, constraint_files=kw.pop("constraint_files", ()))
    return resolve(
        user, source, session=None, environment=default_environment(), devices=prof.devices, **kw
    )


def pins(res: Resolution) -> dict[str, str]:
    return {c.name: f"{c.version}" + (f"-{c.label}" if c.label else "") for c in res.pins}


def test_plain_resolution_with_deps_extras_and_markers(tmp_path: Path) -> None:
    make_wheel(
        tmp_path,
        "app",
        "1.0",
        requires=["lib>=1", "never; python_version < '3'"],
        extras={"fast": ["speedup"]},
    )
    make_wheel(tmp_path, "app", "2.0", requires=["lib>=2"], requires_python=">=3.99")
    make_wheel(tmp_path, "lib", "1.0")
    make_wheel(tmp_path, "lib", "2.0")
    make_wheel(tmp_path, "lib", "3.0b1")
    make_wheel(tmp_path, "speedup", "0.1")
    res = run(tmp_path, ["app[fast]"])
    assert pins(res) == {"app": "1.0", "lib": "2.0", "speedup": "0.1"}
    assert res.requested == {"app"}
    assert any(line.startswith("pinned") for line in res.decisions)
    assert pins(run(tmp_path, ["app", "lib"], pre=True))["lib"] == "3.0b1"
    assert pins(run(tmp_path, ["lib>=3.0b1"]))["lib"] == "3.0b1"
    assert pins(run(tmp_path, ["app"], no_deps=True)) == {"app": "1.0"}


def test_local_versions_match_public_pins(tmp_path: Path) -> None:
    make_wheel(tmp_path, "torch", "2.8.0+cu126")
    make_wheel(tmp_path, "torch", "2.7.0")
    assert pins(run(tmp_path, ["torch==2.8.0"])) == {"torch": "2.8.0+cu126"}
    assert pins(run(tmp_path, ["torch==2.8.0+cu126"])) == {"torch": "2.8.0+cu126"}
    assert pins(run(tmp_path, ["torch<2.8"])) == {"torch": "2.7.0"}


def test_constraints_and_conflicts(tmp_path: Path) -> None:
    make_wheel(tmp_path, "a", "1.0", requires=["c<2"])
    make_wheel(tmp_path, "b", "1.0", requires=["c>=2"])
    make_wheel(tmp_path, "c", "1.0")
    make_wheel(tmp_path, "c", "2.0")
    cfile = tmp_path / "constraints.txt"
    cfile.write_text("c<2\n")
    assert pins(run(tmp_path, ["c"], constraint_files=[str(cfile)])) == {"c": "1.0"}
    with pytest.raises(ResolutionError) as info:
        run(tmp_path, ["a", "b"])
    message = str(info.value)
    assert "c<2" in message and "c>=2" in message and "2.0, 1.0" in message


def test_yanked_only_when_pinned(tmp_path: Path) -> None:
    from fitwheel.index.http import Session
    from tests.kit import build_simple_index, serve

    make_wheel(tmp_path / "w", "y", "1.0")
    make_wheel(tmp_path / "w", "y", "2.0")
    build_simple_index(tmp_path / "w", tmp_path / "site", yanked={"y-2.0-py3-none-any.whl": "bad"})
    with serve(tmp_path / "site") as (url, _):
        opts = Options(None, PY, list(tags.sys_tags()))
        finder = Finder(IndexConfig(f"{url}/simple/"), Session(retries=0, env={}))
        src = CandidateSource(finder, opts)
        env = default_environment()
        assert pins(resolve(collect(["y"]), src, session=finder.session, environment=env)) == {
            "y": "1.0"
        }
        assert pins(resolve(collect(["y==2.0"]), src, session=finder.session, environment=env)) == {
            "y": "2.0"
        }


def test_variant_order_for_a_gpu_and_markers_of_the_chosen_variant(tmp_path: Path) -> None:
    folder = torch_folder(tmp_path)
    res = run(folder, ["torch"], H100)
    assert pins(res) == {
        "torch": "2.9.0-cuda13.0",
        "filelock": "1.0",
        "nvidia-runtime": "1.0",
        "cuda13-extras": "1.0",
    }
    torch = next(c for c in res.pins if c.name == "torch")
    trace = res.trace_of(torch)
    assert trace is not None
    assert trace.ordered[0] == "cuda13.0"
    assert trace.ordered.index("cuda12.8") < trace.ordered.index("cuda12.6")
    assert trace.ordered[-1] == "null"
    assert {"xpu", "rocm6.3", "rocm6.4"} <= trace.rejected.keys()
    assert trace.variants_source is not None and trace.variants_source.endswith(
        "torch-2.9.0-variants.json"
    )
    candidates = CandidateSource(
        Finder(IndexConfig(None, (), (str(folder),))),
        Options(target_from_profile(parse_profile(H100, "p")), PY, list(tags.sys_tags())),
    ).candidates("torch")
    labels = [c.label for c in candidates if str(c.version) == "2.9.0"]
    assert labels == [*trace.ordered, None], "variants in order, then the plain wheel"


def test_cpu_machine_gets_null_or_plain_and_no_gpu_deps(tmp_path: Path) -> None:
    res = run(torch_folder(tmp_path), ["torch"], CPU_ONLY)
    assert pins(res) == {"torch": "2.9.0-null", "filelock": "1.0"}


def test_unsupported_gpu_fails_loudly(tmp_path: Path) -> None:
    folder = torch_folder(tmp_path)
    with pytest.raises(UnsupportedDeviceError) as info:
        run(folder, ["torch"], KEPLER)
    message = str(info.value)
    assert "Tesla K40" in message and "35_real" in message
    for label in ("cuda12.6", "cuda12.8", "cuda13.0"):
        assert label in message
    assert "--allow-fallback" in message
    res = run(folder, ["torch"], KEPLER, allow_fallback=True)
    assert pins(res)["torch"] == "2.9.0-null"


def test_no_variants_and_forced_variant(tmp_path: Path) -> None:
    folder = torch_folder(tmp_path)
    assert pins(run(folder, ["torch"], H100, no_variants=True))["torch"] == "2.9.0"
    forced = run(folder, ["torch"], CPU_ONLY, forced={"torch": "cuda12.6"})
    assert pins(forced)["torch"] == "2.9.0-cuda12.6"
    assert "nvidia-runtime" in pins(forced)
    # a forced label limits every version to that label: older versions without it do not count
    with pytest.raises(ResolutionError, match="--variant torch=cuda99"):
        run(folder, ["torch"], CPU_ONLY, forced={"torch": "cuda99"})
    assert (
        pins(run(folder, ["torch==2.9.0"], H100, forced={"torch": "null"}))["torch"] == "2.9.0-null"
    )


def test_without_variants_json_the_wheels_variant_json_is_used(tmp_path: Path) -> None:
    folder = torch_folder(tmp_path, variants_json=False)
    res = run(folder, ["torch"], H100)
    assert pins(res)["torch"] == "2.9.0-cuda13.0"
    torch = next(c for c in res.pins if c.name == "torch")
    trace = res.trace_of(torch)
    assert trace is not None and trace.variants_source == (
        "the wheels' own variant.json (the index serves no torch-2.9.0-variants.json)"
    )


def test_unknown_label_is_incompatible(tmp_path: Path) -> None:
    folder = torch_folder(tmp_path)
    make_wheel(
        folder, "torch", "2.9.0", label="mystery", variant={"nvidia": {"sm_arch": ["90_real"]}}
    )
    res = run(folder, ["torch"], H100)
    torch = next(c for c in res.pins if c.name == "torch")
    trace = res.trace_of(torch)
    assert trace is not None and "mystery" in trace.rejected
    assert "mystery" not in trace.ordered


def test_installed_versions_are_kept_unless_upgrading(tmp_path: Path) -> None:
    from packaging.version import Version

    make_wheel(tmp_path, "app", "1.0", requires=["lib"])
    make_wheel(tmp_path, "lib", "1.0")
    make_wheel(tmp_path, "lib", "2.0")
    installed = {"lib": Version("1.0")}
    assert pins(run(tmp_path, ["app"], installed=installed))["lib"] == "1.0"
    assert pins(run(tmp_path, ["lib"], installed=installed))["lib"] == "1.0"
    assert pins(run(tmp_path, ["lib"], installed=installed, upgrade=True))["lib"] == "2.0"
    # --upgrade applies to what was named: a dependency stays as installed
    assert pins(run(tmp_path, ["app"], installed=installed, upgrade=True))["lib"] == "1.0"
    assert pins(run(tmp_path, ["lib>=2"], installed=installed))["lib"] == "2.0"


def test_variant_metadata_is_read_only_for_versions_the_resolver_tries(tmp_path: Path) -> None:
    folder = torch_folder(tmp_path)
    make_wheel(
        folder, "torch", "2.7.0", label="cuda12.6", variant={"nvidia": {"sm_arch": ["90_real"]}}
    )
    (folder / "torch-2.7.0-variants.json").write_text("{ not json")
    res = run(folder, ["torch"], H100)
    assert pins(res)["torch"] == "2.9.0-cuda13.0"
    assert {version for _name, version in res.traces} == {"2.9.0"}
    with pytest.raises(Exception, match=r"torch-2\.7\.0-variants\.json"):
        run(folder, ["torch==2.7.0"], H100)


def test_a_newer_release_without_a_fitting_build_is_skipped_with_a_note(tmp_path: Path) -> None:
    from fitwheel.resolve.resolver import skipped_versions

    folder = torch_folder(tmp_path)
    make_wheel(
        folder,
        "torch",
        "3.0.0",
        label="cuda14.0",
        variant={"nvidia": {"cuda_version_lower_bound": ["14.0"], "sm_arch": ["100_real"]}},
        variant_doc={
            "default-priorities": {"namespace": ["nvidia"]},
            "providers": {"nvidia": {"requires": ["nvidia-provider"]}},
        },
    )
    res = run(folder, ["torch"], H100)
    assert pins(res)["torch"] == "2.9.0-cuda13.0"
    (note,) = skipped_versions(res)
    assert note.startswith("torch 3.0.0 has no build that runs here (cuda14.0: nvidia")
    assert note.endswith("so 2.9.0 was chosen")
