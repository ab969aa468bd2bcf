"""The lock against packaging's own pylock reader, and the exact TOML writer against tomllib."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from packaging import pylock
from packaging.pylock import Pylock

from fitwheel.cli._lockhosts import lock_targets
from fitwheel.lock.document import loads_lock
from fitwheel.toml import dumps
from fitwheel.variants.filenames import WheelFilename
from tests.lock.conftest import TARGETS, Fleet


def _without_label(filename: str) -> Any:
    return ORIGINAL(WheelFilename.parse(filename).without_label().format())


ORIGINAL = pylock.parse_wheel_filename


def _plain_part(data: dict[str, Any]) -> dict[str, Any]:
    """The lock as a tool without wheel variants sees it: the entries without variant wheels."""
    packages = [p for p in data["packages"] if "variants-json" not in p]
    return {**data, "packages": packages}


def test_packaging_reads_the_lock(fleet: Fleet, monkeypatch: pytest.MonkeyPatch) -> None:
    data = tomllib.loads(fleet.lock.read_text())
    # the entries without variant wheels are valid as they are
    Pylock.from_dict(_plain_part(data)).validate()
    # packaging's filename parser predates PEP 825's label; taught it, the whole lock is valid
    with pytest.raises(pylock.PylockValidationError, match="Invalid wheel filename"):
        Pylock.from_dict(data)
    monkeypatch.setattr(pylock, "parse_wheel_filename", _without_label)
    lock = Pylock.from_dict(data)
    lock.validate()
    assert lock.environments is not None and len(lock.environments) == 2
    torch = next(p for p in lock.packages if p.name == "torch")
    assert torch.marker is None and len(torch.wheels or []) == 4


def test_packaging_selects_the_same_plain_files_per_target(fleet: Fleet) -> None:
    data = tomllib.loads(fleet.lock.read_text())
    ours = loads_lock(fleet.lock.read_text(), str(fleet.lock))
    plain = Pylock.from_dict(_plain_part(data))
    targets = lock_targets(
        [str(fleet.profiles[name]) for name in TARGETS],
        python_version=None,
        platforms=(),
        gpu_policy=None,
        enabled=False,
    )
    for target in targets:
        picked = {
            package.name: wheel.filename
            for package, wheel in plain.select(environment=target.environment, tags=target.tags)
        }
        locked = {
            p.name: p.targets[target.name]
            for p in ours.packages
            if p.info is None and target.name in p.targets
        }
        # every plain file fitwheel installs for the target, packaging selects too
        assert {k: picked.get(k) for k in locked} == locked, target.name
        # and where packaging selects more, it is an entry only a variant's own dependencies
        # need: plain markers cannot tell two targets of the same machine kind apart
        for name in picked.keys() - locked.keys():
            entry = next(p for p in ours.packages if p.name == name)
            users = set(entry.targets)
            same_env = {t.name for t in targets if t.marker == target.marker}
            assert users < same_env | users and users & same_env, (target.name, name)


def test_fastops_is_the_aarch64_build_for_graviton_only(fleet: Fleet) -> None:
    ours = loads_lock(fleet.lock.read_text(), str(fleet.lock))
    fastops = next(p for p in ours.packages if p.name == "fastops")
    assert fastops.targets["graviton"].endswith("manylinux_2_17_aarch64.whl")
    assert fastops.targets["cpu-x86"].endswith("manylinux_2_17_x86_64.whl")


_keys = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=8)
_scalars = st.one_of(
    st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=12),
    st.integers(-(2**40), 2**40),
    st.booleans(),
)
_values = st.recursive(
    st.one_of(_scalars, st.lists(_scalars, max_size=3)),
    lambda inner: st.dictionaries(_keys, inner, max_size=3),
    max_leaves=12,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=5))
def test_the_writer_reads_back_exactly(document: dict[str, Any]) -> None:
    text = dumps(document)
    assert tomllib.loads(text) == document
    assert dumps(tomllib.loads(text)) == text


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.dictionaries(_keys, _values, min_size=1, max_size=3), min_size=1, max_size=3),
    st.sampled_from(["", "x.*", "x.*.*"]),
)
def test_arrays_of_tables_and_inline_tables_read_back(
    packages: list[dict[str, Any]], inline: str
) -> None:
    document = {"v": "1.0", "packages": packages, "tool": {"x": {"y": [{"a": 1}, {"b": [2]}]}}}
    text = dumps(document, inline=[inline] if inline else [])
    assert tomllib.loads(text) == document


def test_a_hand_edited_lock_is_refused_naming_the_entry(fleet: Fleet, tmp_path: Path) -> None:
    from fitwheel.lock.document import LockFileError

    text = fleet.lock.read_text()
    broken = text.replace('marker = "python_version', 'marker = "variant_namespaces', 1)
    if broken != text:
        with pytest.raises(LockFileError, match=r"packages\[\d+\] \(cuda13-extras 1\.0\)"):
            loads_lock(broken, "edited.toml")
    with pytest.raises(LockFileError, match="not valid TOML"):
        loads_lock(text.replace("[[packages]]", "[[packages]", 1), "edited.toml")


def test_a_lock_without_fitwheels_target_table_is_read_the_generic_way(
    fleet: Fleet, tmp_path: Path
) -> None:
    from tests.kit import make_venv
    from tests.lock.conftest import builds, fitwheel

    data = tomllib.loads(fleet.lock.read_text())
    del data["tool"]
    for package in data["packages"]:
        package.pop("tool", None)
    lock = tmp_path / "pylock.toml"
    lock.write_text(dumps(data, inline=["packages.variants-json.*.*"]))
    venv = make_venv(tmp_path / "venv")
    done = fitwheel(
        "sync", str(lock), "--python", str(venv), "--sysroot", str(fleet.machine("mi300x")),
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    got = builds(venv)
    # each entry whose marker holds, with the host's own choice of build
    assert got["torch"] == got["torchvision"] == "rocm6.4" and got["fastops"] == "x86_64"
