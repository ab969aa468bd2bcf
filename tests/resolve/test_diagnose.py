"""Errors that name the cause: a project on no index, only yanked versions, a Requires-Python
that excludes the interpreter, no wheel for this platform, a conflict; and the one-line notice
when the first-index strategy passes over a newer version on a later index."""

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from packaging import tags
from packaging.markers import default_environment

from fitwheel.errors import ResolutionError
from fitwheel.index.config import load_index_config
from fitwheel.index.finder import Finder
from fitwheel.index.http import Session
from fitwheel.resolve.candidates import CandidateSource, Options
from fitwheel.resolve.diagnose import shadowed
from fitwheel.resolve.requirements import collect
from fitwheel.resolve.resolver import Resolution, resolve
from tests.kit import build_simple_index, free_port, make_wheel

PY = ".".join(map(str, sys.version_info[:3]))


@pytest.fixture(scope="module")
def sites(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str, str]]:
    """``conf_index`` (an extra index from a pip.conf) and ``cli_index`` (given as
    --index-url); returns the pip.conf and both index URLs."""
    root = tmp_path_factory.mktemp("diagnose")
    a = root / "a"
    make_wheel(a, "yanky", "1.0")
    make_wheel(a, "yanky", "1.1")
    make_wheel(a, "newpy", "1.0")
    make_wheel(a, "newpy", "2.0", requires_python=">=3.99")
    make_wheel(a, "winonly", "1.0", tag="py3-none-win_amd64")
    make_wheel(a, "winonly", "1.0", tag="cp312-cp312-macosx_11_0_arm64")
    make_wheel(a, "app", "1.0", requires=["lib<1"])
    make_wheel(a, "lib", "0.5")
    make_wheel(a, "lib", "2.0")
    make_wheel(a, "shadow", "1.0")
    yanked = {
        "yanky-1.0-py3-none-any.whl": "broken build",
        "yanky-1.1-py3-none-any.whl": "",
    }
    conf_index = build_simple_index(a, root / "conf-site", yanked=yanked).as_uri() + "/"
    b = root / "b"
    make_wheel(b, "other", "1.0")
    make_wheel(b, "shadow", "3.0")
    cli_index = build_simple_index(b, root / "cli-site").as_uri() + "/"
    conf = root / "pip.conf"
    conf.write_text(f"[global]\nextra-index-url = {conf_index}\n")
    yield conf, conf_index, cli_index


def run(
    sites: tuple[Path, str, str],
    reqs: list[str],
    *,
    cli: bool = True,
    strategy: str = "first-index",
) -> tuple[Resolution, CandidateSource]:
    conf, _conf_index, cli_index = sites
    config = load_index_config(
        index_url=cli_index if cli else None,
        env={},
        files=[conf],
        interpreter=sys.executable,
    )
    source = CandidateSource(
        Finder(config, None, strategy), Options(None, PY, list(tags.sys_tags()))
    )
    return resolve(collect(reqs), source, session=None, environment=default_environment()), source


def failure(sites: tuple[Path, str, str], reqs: list[str], **kw: bool) -> str:
    with pytest.raises(ResolutionError) as info:
        run(sites, reqs, **kw)
    return str(info.value)


def test_a_project_on_no_index_lists_the_indexes_in_the_order_searched(
    sites: tuple[Path, str, str],
) -> None:
    conf, conf_index, cli_index = sites
    message = failure(sites, ["nosuchproject"])
    assert "nosuchproject is not on any index searched" in message
    # the command line's index first, then the configured one, each with its origin
    first = message.index(f"{cli_index} (--index-url)")
    second = message.index(f"{conf_index} ({conf} [global])")
    assert first < second
    assert "Loosen a pin" not in message


def test_only_yanked_versions(sites: tuple[Path, str, str]) -> None:
    message = failure(sites, ["yanky"])
    assert "every version of yanky matching the requirement is yanked" in message
    assert "broken build" in message and "yanky==1.1" in message
    # an exact pin takes a yanked version (PEP 592)
    resolution, _ = run(sites, ["yanky==1.0"])
    assert [str(p.version) for p in resolution.pins] == ["1.0"]


def test_requires_python_names_the_version_that_fits(sites: tuple[Path, str, str]) -> None:
    message = failure(sites, ["newpy>=2"])
    assert "newpy 2.0 requires Python >=3.99" in message
    assert f"the environment has Python {PY}" in message
    assert f"newpy 1.0 is the newest version that supports Python {PY}" in message


def test_no_wheel_for_this_platform_names_the_wheels_platforms(
    sites: tuple[Path, str, str],
) -> None:
    message = failure(sites, ["winonly"])
    assert "no wheel of winonly is for this interpreter and platform" in message
    assert "macosx_11_0_arm64, win_amd64" in message


def test_no_matching_version_says_which_index_had_the_project(
    sites: tuple[Path, str, str],
) -> None:
    conf, conf_index, _cli_index = sites
    message = failure(sites, ["newpy>=5"], cli=False)
    assert "no version of newpy matches >=5: the versions are 2.0, 1.0" in message
    assert f"from {conf_index} ({conf} [global])" in message
    # pip's default index comes after the configured one and was not searched for newpy
    assert "was not searched for it (--index-strategy unsafe-best-match" in message


def test_a_conflict_keeps_the_chain_of_requirements(sites: tuple[Path, str, str]) -> None:
    message = failure(sites, ["app", "lib>=2"])
    assert "no set of versions satisfies the requirements" in message
    assert "lib<1 (needed by app 1.0)" in message


def test_shadowed_newer_version_on_a_later_index_gets_a_notice(
    sites: tuple[Path, str, str],
) -> None:
    conf, conf_index, cli_index = sites
    # the configured extra index is searched before the configured main one: shadow 1.0 comes
    # from it, while the main index has 3.0
    conf2 = conf.with_name("pip2.conf")
    conf2.write_text(f"[global]\nindex-url = {cli_index}\nextra-index-url = {conf_index}\n")
    config = load_index_config(env={}, files=[conf2])
    assert config.search_order() == (conf_index, cli_index)
    source = CandidateSource(Finder(config), Options(None, PY, list(tags.sys_tags())))
    resolution = resolve(
        collect(["shadow"]), source, session=None, environment=default_environment()
    )
    (line,) = shadowed(resolution.pins, resolution.specifiers, source)
    assert line.startswith(f"shadow 1.0 is from {conf_index} ({conf2} [global])")
    assert f"{cli_index} ({conf2} [global]) has the newer 3.0, which pip would" in line
    assert "--index-strategy unsafe-best-match" in line
    # a requirement that excludes the newer version: nothing to say
    resolution = resolve(
        collect(["shadow<3"]), source, session=None, environment=default_environment()
    )
    assert shadowed(resolution.pins, resolution.specifiers, source) == []


def test_a_later_index_that_does_not_answer_costs_no_failure(
    sites: tuple[Path, str, str], tmp_path: Path
) -> None:
    _conf, conf_index, _cli_index = sites
    dead = f"http://127.0.0.1:{free_port()}/simple/"
    conf = tmp_path / "pip.conf"
    conf.write_text(f"[global]\nindex-url = {dead}\nextra-index-url = {conf_index}\n")
    config = load_index_config(env={}, files=[conf])
    session = Session(retries=2, env={})
    source = CandidateSource(Finder(config, session), Options(None, PY, list(tags.sys_tags())))
    resolution = resolve(
        collect(["shadow", "lib"]), source, session=session, environment=default_environment()
    )
    assert shadowed(resolution.pins, resolution.specifiers, source) == []
