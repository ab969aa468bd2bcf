"""Requirements files read by fitwheel and by pip's own parser (the pip installed next to the
tests) give the same requirements, in the same order from the same lines, and the same options.

The sample files under tests/data/requirements are written as real projects write them; their
index hosts are ``${INDEX_HOST}`` placeholders, set here in the environment."""

from __future__ import annotations

import optparse
import os
from pathlib import Path
from typing import Any

import pytest

from fitwheel.resolve.formats import FormatControl
from fitwheel.resolve.reqfile import RequirementsReader
from fitwheel.resolve.reqforms import Named, Url, Vcs
from fitwheel.variants.names import canonicalize_name

pytest.importorskip("pip")

DATA = Path(__file__).resolve().parent.parent / "data" / "requirements"
SAMPLES = sorted(str(p.relative_to(DATA)) for p in DATA.rglob("*.txt") if p.parent.name != "wheels")
DEFAULT_INDEX = "https://default.invalid/simple"
ENV = {"INDEX_HOST": "mirror.internal.invalid"}


def _where(filename: str, line: int) -> tuple[str, int]:
    return os.path.normpath(os.path.abspath(filename)), line


def pip_reads(path: Path) -> dict[str, Any]:
    from pip._internal.index.collector import LinkCollector
    from pip._internal.index.package_finder import PackageFinder
    from pip._internal.models.format_control import FormatControl as PipFormats
    from pip._internal.models.search_scope import SearchScope
    from pip._internal.models.selection_prefs import SelectionPreferences
    from pip._internal.network.session import PipSession
    from pip._internal.req.req_file import parse_requirements

    session = PipSession()
    scope = SearchScope.create(find_links=[], index_urls=[DEFAULT_INDEX], no_index=False)
    finder = PackageFinder.create(
        link_collector=LinkCollector(session, scope),
        selection_prefs=SelectionPreferences(allow_yanked=True, format_control=PipFormats()),
    )
    options = optparse.Values(
        {"require_hashes": False, "no_require_hashes": False, "features_enabled": []}
    )
    lines = []
    for parsed in parse_requirements(str(path), session, finder=finder, options=options):
        _kind, rest = parsed.comes_from.split(" ", 1)
        filename, _, number = rest.rpartition(" (line ")
        hashes = (parsed.options or {}).get("hashes", {})
        lines.append(
            (
                parsed.requirement.strip(),
                parsed.is_editable,
                parsed.constraint,
                {k: sorted(v) for k, v in hashes.items()},
                _where(filename, int(number.rstrip(")"))),
            )
        )
    formats = finder.format_control
    release = finder.release_control
    return {
        "lines": lines,
        "index_urls": list(finder.index_urls),
        "find_links": list(finder.find_links),
        "no_binary": set(formats.no_binary),
        "only_binary": set(formats.only_binary),
        "prefer_binary": finder._candidate_prefs.prefer_binary,
        "pre": bool(release and ":all:" in release.all_releases),
        "require_hashes": bool(options.require_hashes),
        "trusted": [(h, p) for h, p in session.pip_trusted_origins],
    }


def fitwheel_reads(path: Path) -> tuple[dict[str, Any], RequirementsReader]:
    reader = RequirementsReader(env=dict(os.environ))
    reader.parse(str(path))
    opts = reader.options
    lines = []
    for line in reader.lines:
        filename, _, number = line.origin.rpartition(":")
        hashes = {k: sorted(v) for k, v in line.hashes.items()}
        lines.append(
            (line.text, line.editable, line.constraint, hashes, _where(filename, int(number)))
        )
    if opts.no_index is not None:
        indexes = []
    else:
        first = opts.index_url.value if opts.index_url is not None else DEFAULT_INDEX
        indexes = [first, *(v.value for v in opts.extra_index_urls)]
    formats = FormatControl()
    for option, value in opts.formats:
        if option == "--no-binary":
            FormatControl.add(option, value.value, formats.no_binary, formats.only_binary)
        else:
            FormatControl.add(option, value.value, formats.only_binary, formats.no_binary)
    trusted = []
    for host in opts.trusted_hosts:
        name, _, port = host.value.partition(":")
        trusted.append((name, int(port) if port else None))
    return {
        "lines": lines,
        "index_urls": indexes,
        "find_links": [v.value for v in opts.find_links],
        "no_binary": formats.no_binary,
        "only_binary": formats.only_binary,
        "prefer_binary": opts.prefer_binary is not None,
        "pre": opts.pre is not None,
        "require_hashes": opts.require_hashes is not None,
        "trusted": trusted,
    }, reader


def test_the_corpus_is_large_enough() -> None:
    assert len(SAMPLES) >= 10


@pytest.mark.parametrize("sample", SAMPLES)
def test_fitwheel_and_pip_read_the_same(sample: str, monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    for name in ("INDEX_USER", "INDEX_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    path = DATA / sample
    ours, _reader = fitwheel_reads(path)
    theirs = pip_reads(path)
    assert ours == theirs
    assert ours["lines"], f"{sample} lists no requirement"


@pytest.mark.parametrize("sample", SAMPLES)
def test_requirement_forms_match_pips(sample: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What each named, URL or VCS requirement names (pip's own constructors, which read
    these forms without touching the file system)."""
    from pip._internal.req.constructors import install_req_from_editable, install_req_from_line

    for name, value in ENV.items():
        monkeypatch.setenv(name, value)
    _ours, reader = fitwheel_reads(DATA / sample)
    for line in reader.lines:
        form = line.form
        if isinstance(form, Named):
            ireq = install_req_from_line(line.text)
            assert ireq.req is not None
            ours = form.requirement
            assert (ireq.req.name, ireq.req.extras) == (ours.name, ours.extras)
            assert str(ireq.req.specifier) == str(ours.specifier)
            assert str(ireq.markers) == str(ours.marker)
        elif isinstance(form, (Url, Vcs)):
            make = install_req_from_editable if line.editable else install_req_from_line
            ireq = make(line.text)
            assert ireq.link is not None
            assert ireq.link.url == form.url
            expected = None if ireq.name is None else canonicalize_name(ireq.name)
            assert (None if form.name is None else canonicalize_name(form.name)) == expected


@pytest.mark.parametrize(
    "line",
    [
        "--frobnicate",
        "-x foo",
        "-i",
        "--pre=yes",
        "x --hash=md5:abc",
        "x --hash=nocolon",
        "x --config-settings novalue",
        "--index-url 'unclosed",
        "not a req!!",
    ],
)
def test_lines_pip_refuses_fitwheel_refuses(tmp_path: Path, line: str) -> None:
    """Bad lines: pip refuses them too (its parser or its requirement constructor)."""
    from pip._internal.exceptions import PipError
    from pip._internal.req.constructors import install_req_from_line

    from fitwheel.resolve.reqforms import RequirementError

    path = tmp_path / "r.txt"
    path.write_text(f"ok\n{line}\n")
    with pytest.raises(RequirementError, match=f"{path}:2"):
        RequirementsReader().parse(str(path))
    with pytest.raises(PipError):
        for parsed in pip_reads_lines(path):
            install_req_from_line(parsed)


def pip_reads_lines(path: Path) -> list[str]:
    from pip._internal.network.session import PipSession
    from pip._internal.req.req_file import parse_requirements

    return [p.requirement for p in parse_requirements(str(path), PipSession())]
