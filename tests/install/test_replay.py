"""Whether an install may be answered from a remembered resolution, and the options' part of
its key (:mod:`fitwheel.install.replay`): made of the typed option records, field by field."""

from __future__ import annotations

from typing import Any

import pytest

from fitwheel.install.remembered import digest
from fitwheel.install.replay import options_key, rememberable
from fitwheel.install.request import InstallRequest
from fitwheel.options import PlacementOptions, ResolutionOptions, SourceOptions


def _rememberable(*requirements: str, **changes: Any) -> bool:
    sources = SourceOptions(index_url="https://index.test/simple/")
    resolution = ResolutionOptions()
    env: dict[str, str] = changes.pop("env", {})
    editables: list[str] = changes.pop("editables", [])
    files: list[str] = changes.pop("files", [])
    for name, value in changes.items():
        if name in SourceOptions.__slots__:
            sources = sources.replace(**{name: value})
        else:
            resolution = resolution.replace(**{name: value})
    request = InstallRequest(
        requirements=requirements or ("app",), requirement_files=files, editables=editables,
        sources=sources, resolution=resolution,
    )  # fmt: skip
    return rememberable(request, env)


def test_a_plain_install_from_an_index_is_rememberable() -> None:
    assert _rememberable("app[more]>=1", "lib==2.0")
    assert _rememberable(env={"FITWHEEL_NO_REMEMBER": "0"})
    assert _rememberable(files=["reqs.txt", "file:///srv/constraints.txt"])
    # a find-links folder is remembered by its state (a pick from it is ruled out later)
    assert _rememberable(find_links=("wheels",))


@pytest.mark.parametrize(
    "changes",
    [
        {"no_index": True},
        {"no_cache": True},
        {"refresh": True},
        {"force_reinstall": True},
        {"require_hashes": True},
        {"editables": ["."]},
        {"files": ["reqs.txt", "https://index.test/reqs.txt"]},
        {"env": {"FITWHEEL_NO_REMEMBER": "1"}},
    ],
)
def test_what_cannot_be_remembered(changes: dict[str, Any]) -> None:
    assert not _rememberable(**changes)


@pytest.mark.parametrize(
    "requirement",
    ["./proj", "/tmp/app-1.0-py3-none-any.whl", "app @ https://x.test/app.whl", "~/src/app",
     "app-1.0.tar.gz", "APP.ZIP"],
)  # fmt: skip
def test_local_requirements_are_not_remembered(requirement: str) -> None:
    assert not _rememberable(requirement)


def _key(**changes: Any) -> str:
    parts: dict[str, Any] = {"requirements": ["app"], "env": {}}
    parts.update(changes)
    return digest(options_key(InstallRequest(**parts)))


def test_the_key_changes_with_every_field_of_every_record() -> None:
    base = _key()
    assert _key() == base
    changed = [
        _key(sources=SourceOptions(timeout=5.0)),
        _key(sources=SourceOptions(trusted_hosts=("a.test",))),
        _key(sources=SourceOptions(index_strategy="unsafe-best-match")),
        _key(resolution=ResolutionOptions(no_deps=True)),
        _key(resolution=ResolutionOptions(forced_variants=(("torch", "cu128"),))),
        _key(placement=PlacementOptions(link_mode="copy")),
        _key(placement=PlacementOptions(compile_bytecode=True)),
        _key(dry_run=True),
        _key(python="/venv"),
        _key(constraint_files=["c.txt"]),
        _key(torch=("auto", "--torch-backend")),
    ]
    assert len({base, *changed}) == len(changed) + 1
