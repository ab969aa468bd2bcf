"""The fetch stage of an install: wheels downloaded into the wheel cache, each unpacked into
the unpacked-wheel cache as soon as it is there (while the others still download), some of
them started while the resolver is still pinning."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from fitwheel.install.fetch.download import DownloadItem
from fitwheel.integrity import HashMismatchError

if TYPE_CHECKING:
    from packaging.utils import NormalizedName
    from packaging.version import Version

    from fitwheel.install.fetch.fetcher import Fetcher
    from fitwheel.install.outcome import Planned
    from fitwheel.resolve.candidates import Candidate
    from fitwheel.resolve.requirements import UserRequirement


def start_on_pin(
    fetcher: Fetcher, installed: Mapping[NormalizedName, Version], *, force_reinstall: bool
) -> Callable[[Candidate], None]:
    """What the resolver calls as it pins each candidate: its wheel starts downloading (and
    unpacking) while the resolution goes on, unless it is most likely kept as installed."""

    def on_pin(cand: Candidate) -> None:
        if installed.get(cand.name) == cand.version and not force_reinstall:
            return  # most likely kept as installed
        if not cand.is_sdist:
            fetcher.start(cand)

    return on_pin


def download_item(planned: Planned, pinned: UserRequirement | None) -> DownloadItem:
    """What to download for ``planned``, checked against the ``--hash`` values pinned for it
    when there are any (the published hashes otherwise). A published hash that none of the
    pins matches stops the install before anything is downloaded."""
    link = planned.candidate.link
    hashes: dict[str, frozenset[str]] = {a: frozenset({h}) for a, h in link.hashes.items()}
    if pinned is not None:
        for algo, digests in pinned.hashes.items():
            published = link.hashes.get(algo)
            if published is not None and published not in digests:
                raise HashMismatchError(
                    f"{link.filename}: the index publishes {algo} {published}, "
                    f"which is none of the --hash values pinned for {planned.candidate.name}. "
                    "Nothing was installed.",
                    link.url,
                    actual=published,
                )
        if pinned.hashes:
            # the pins are what is checked: the strongest published hash must not stand in
            # for them
            hashes = dict(pinned.hashes)
    return DownloadItem(link.filename, link.url, hashes)


def fetch_stage(
    to_fetch: Sequence[Planned],
    user_hashes: Mapping[NormalizedName, UserRequirement],
    fetcher: Fetcher,
) -> list[tuple[Planned, DownloadItem]]:
    """Download every wheel of ``to_fetch`` (each one's hashes checked); returns the source
    distributions left for the build stage, each with what to download for it."""
    items = [download_item(p, user_hashes.get(p.candidate.name)) for p in to_fetch]
    wheels = [(p, i) for p, i in zip(to_fetch, items, strict=True) if not p.candidate.is_sdist]
    fetched = fetcher.fetch_all([i for _p, i in wheels])
    for (p, _item), done in zip(wheels, fetched, strict=True):
        p.downloaded = done
        p.sha256 = done.sha256
    return [(p, i) for p, i in zip(to_fetch, items, strict=True) if p.candidate.is_sdist]
