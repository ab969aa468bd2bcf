"""The source, resolution and placement options, declared once (:mod:`fitwheel.cli._sources`)
and read into the same records by every command that takes them."""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path

import pytest

from fitwheel.cli._sources import placement_from, resolution_from, sources_from
from fitwheel.cli.main import main
from fitwheel.errors import UsageError
from fitwheel.options import PlacementOptions, ResolutionOptions, SourceOptions


def _parse(command: str, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"fitwheel {command}")
    importlib.import_module(f"fitwheel.cli.{command}_cmd").configure(parser)
    first = {"install": ["pkg"], "lock": ["pkg"], "sync": ["pylock.toml"]}
    first["bundle"] = ["pylock.toml", "-o", "out"]
    return parser.parse_args([*first[command], *argv])


@pytest.mark.parametrize("command", ["install", "lock", "sync", "bundle"])
def test_every_command_with_sources_reads_them_into_one_record(command: str) -> None:
    args = _parse(command, "--cert", "ca.pem", "--cache-dir", "cache")
    assert sources_from(args) == SourceOptions(cert="ca.pem", cache_dir=Path("cache"))


@pytest.mark.parametrize("command", ["install", "lock"])
def test_resolving_commands_take_the_same_source_flags(command: str) -> None:
    args = _parse(
        command, "-i", "https://a.test/simple/", "--extra-index-url", "https://b.test/simple/",
        "-f", "wheels", "--trusted-host", "a.test", "--timeout", "2.5", "--retries", "0",
        "--index-strategy", "unsafe-best-match",
    )  # fmt: skip
    assert sources_from(args) == SourceOptions(
        index_url="https://a.test/simple/",
        extra_index_urls=("https://b.test/simple/",),
        find_links=("wheels",),
        trusted_hosts=("a.test",),
        timeout=2.5,
        retries=0,
        index_strategy="unsafe-best-match",
    )
    assert resolution_from(_parse(command, "--pre", "-U")) == ResolutionOptions(
        pre=True, upgrade=True
    )


def test_install_reads_every_record() -> None:
    args = _parse(
        "install", "--no-cache-dir", "--refresh", "--no-deps", "--only-binary", ":all:",
        "--variant", "torch=cu128", "--link-mode", "copy", "--compile", "-j", "2",
        "--break-system-packages", "--allow-overwrite",
    )  # fmt: skip
    sources = sources_from(args)
    assert sources.no_cache and sources.refresh
    resolution = resolution_from(args)
    assert resolution.no_deps and resolution.only_binary == (":all:",)
    assert resolution.forced_variants == (("torch", "cu128"),)
    assert placement_from(args) == PlacementOptions(
        link_mode="copy",
        compile_bytecode=True,
        jobs=2,
        break_system_packages=True,
        allow_overwrite=True,
    )


def test_sync_places_files_as_install_does() -> None:
    args = _parse("sync", "--link-mode", "copy", "-j", "3", "--offline")
    assert placement_from(args) == PlacementOptions(link_mode="copy", jobs=3)
    assert sources_from(args).offline


@pytest.mark.parametrize(
    "argv",
    [
        ["--timeout", "0"],
        ["--retries", "-1"],
        ["-j", "0"],
        ["--build-timeout", "0"],
        ["--variant", "torch"],
    ],
)
def test_bad_values_are_usage_errors(argv: list[str]) -> None:
    args = _parse("install", *argv)
    with pytest.raises(UsageError):
        sources_from(args)
        resolution_from(args)
        placement_from(args)
    assert main(["install", "pkg", "--no-index", *argv]) == 2


def test_lock_rejects_a_bad_timeout_as_install_does(tmp_path: Path) -> None:
    profile = tmp_path / "box.json"
    profile.write_text('{"properties": {}}')
    argv = ["lock", "pkg", "--no-index", "--profile", str(profile), "-o", str(tmp_path / "l")]
    assert main([*argv, "--timeout", "-1"]) == 2
