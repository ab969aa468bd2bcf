"""The build stage of an install: source distributions (pinned by the resolver, or given as
local paths, URLs or version-control URLs) built into wheels by the install's
:class:`~fitwheel.install.sourcebuilds.SourceBuilds`. What the user gave directly is fetched
and built before resolution (:func:`build_local_sources`), each wheel with its PEP 610 record."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.install.fetch.download import Downloaded, DownloadItem
from fitwheel.install.sourcebuilds import InstallBuildRequirements, SourceBuilds
from fitwheel.resolve.requirements import UserInput

if TYPE_CHECKING:
    from fitwheel.install.outcome import Planned
    from fitwheel.resolve.candidates import Candidate

__all__ = [
    "InstallBuildRequirements",
    "SourceBuilds",
    "build_local_sources",
    "build_stage",
]


def build_local_sources(user: UserInput, sources: SourceBuilds) -> UserInput:
    """Local source trees and sdist files, archive URLs and version-control checkouts, built
    (or fetched) into wheels that stand in for them; a requirement whose marker does not apply
    to the target is left out, as pip leaves it."""
    if not any(i.source_path is not None or i.direct is not None for i in user.requirements):
        return user
    from fitwheel.install.direct import prepare_direct
    from fitwheel.install.localbuild import build_source

    out = UserInput(constraints=user.constraints)
    out.files = user.files
    out.options = user.options
    out.pending = user.pending
    markers = {**sources.env.markers, "extra": ""}
    for item in user.requirements:
        marker = item.requirement.marker
        if (item.source_path or item.direct) and marker and not marker.evaluate(markers):
            sources.reporter.notice(
                f"fitwheel: ignoring {item.origin}: the marker {marker} does not apply here"
            )
            continue
        if item.direct is not None:
            item = prepare_direct(item, item.direct, sources)
        elif item.source_path is not None:
            item = build_source(item, item.source_path, sources)
        out.requirements.append(item)
    return out


def _check_built(cand: Candidate, wheel: Path) -> None:
    from fitwheel.errors import BuildError
    from fitwheel.variants.filenames import WheelFilename

    parsed = WheelFilename.parse(wheel.name)
    if parsed.normalized_name != cand.name or parsed.parsed_version != cand.version:
        raise BuildError(
            f"building {cand.link.filename} made {wheel.name}, which is not {cand.name} "
            f"{cand.version}: the sdist's name or version does not match what it builds."
        )


def build_stage(pending: Sequence[tuple[Planned, DownloadItem]], sources: SourceBuilds) -> None:
    """Build each pinned sdist of ``pending`` into a wheel: the sdist's hashes (published or
    pinned) are checked, then the wheel built from it must be the pinned name and version."""
    from fitwheel.integrity import file_sha256

    for p, item in pending:
        sdist = sources.download(p.candidate, dict(item.hashes))
        built = sources.wheel(p.candidate, sdist)
        _check_built(p.candidate, built)
        p.downloaded = Downloaded(item, built, file_sha256(built), sdist.from_cache)
        p.sha256 = p.downloaded.sha256
