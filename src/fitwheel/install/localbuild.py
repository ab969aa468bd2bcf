"""A project given directly (a source tree, an sdist, a checkout) built into the wheel that
stands in for it before resolution, with the PEP 610 record of where it came from."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import FitwheelError
from fitwheel.install.fetch.download import DownloadItem
from fitwheel.integrity import HashRequiredError
from fitwheel.resolve.requirements import UserRequirement

if TYPE_CHECKING:
    from fitwheel.install.sourcebuilds import SourceBuilds


def build_source(
    item: UserRequirement,
    path: Path,
    sources: SourceBuilds,
    *,
    key: str | None = None,
    record: dict[str, object] | None = None,
    what: str | None = None,
) -> UserRequirement:
    """The requirement on the wheel built from the source tree or sdist file ``path``, recorded
    with ``record`` (PEP 610; default: the path's own); ``key`` is its build cache key (default:
    the sdist's sha256, or the tree's stamps); ``what`` names it in messages (default: the path).
    With ``--require-hashes`` an sdist must be pinned with ``--hash`` (checked before any of
    its code runs); a source tree cannot be."""
    from fitwheel.install.place.directurl import direct_url_record
    from fitwheel.integrity import file_sha256
    from fitwheel.sdist.builder import source_key

    what = what or str(path)
    if sources.require_hashes and (item.editable or path.is_dir() or not item.hashes):
        raise HashRequiredError(
            f"{item.origin}: --require-hashes is on (one --hash turns it on, as in pip), but "
            f"{what} is {_unhashable(item, path)}: install it in another run, or pin an "
            "archive of it with --hash."
        )
    if key is None:
        key = source_key(path) if path.is_dir() else file_sha256(path)
    if item.editable:
        wheel = sources.builder().editable(path, key, f"{what} (editable)")
        sources.origins[wheel.resolve()] = record or direct_url_record(path, editable=True)
        return _built(item, wheel, path, editable=True)
    if item.hashes and not path.is_dir():
        # --hash pins on a local sdist are checked as on any download
        checked = DownloadItem(path.name, path.as_uri(), item.hashes)
        sources.fetcher.downloader.fetch(checked)
    wheel = sources.builder().wheel(path, key, what)
    sources.origins[wheel.resolve()] = record or direct_url_record(path, sha256=key)
    return _built(item, wheel, path)


def _unhashable(item: UserRequirement, path: Path) -> str:
    if item.editable:
        return "an editable install, which has no hash to check"
    if path.is_dir():
        return "a folder (or a checkout), which has no hash to check"
    return "not pinned with --hash"


def _built(
    item: UserRequirement, wheel: Path, path: Path, *, editable: bool = False
) -> UserRequirement:
    """The requirement on ``wheel``, built for ``item``: the project must be the one named."""
    from fitwheel.resolve.requirements import PLACEHOLDER, named_like
    from fitwheel.variants.filenames import WheelFilename

    parsed = WheelFilename.parse(wheel.name)
    if item.requirement.name != PLACEHOLDER and parsed.normalized_name != item.name:
        raise FitwheelError(
            f"{item.origin}: {path} built {wheel.name}, which is not {item.requirement.name}: "
            "name the project it builds (or fix the name in the requirement)."
        )
    return UserRequirement(
        named_like(item.requirement, parsed.name, parsed.version),
        {},
        wheel.resolve(),
        item.origin,
        source_path=path,
        editable=editable,
        direct=item.direct,
    )
