"""Direct references, made into wheels before resolution, as pip prepares them.

- An archive URL (``name @ https://host/x-1.0.tar.gz``, a bare wheel URL, ``file:`` URLs):
  downloaded into the wheel cache (``http``/``https``) or read in place (``file:``), checked
  against its ``#sha256=`` fragment and its ``--hash`` pins; a wheel stands in for itself, an
  sdist is built. A ``file:`` URL of a folder is built as a local project.
- A version-control URL (``git+https://host/repo@v1#subdirectory=pkg``): checked out into a
  temporary folder (:mod:`fitwheel.sdist.vcs`), resolved to a commit, built; the wheel is kept
  in the build cache by repository, commit and subdirectory, so that the same commit is not
  built twice. ``-e git+...#egg=name`` checks the repository out into the environment's
  ``src`` folder (pip's place) and installs it in editable mode.

Each wheel gets the PEP 610 record pip writes for the same requirement
(:mod:`fitwheel.install.place.directurl`); the URL's credentials are used, never shown or
recorded.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import FitwheelError, InputError
from fitwheel.index.auth import redact, split_credentials
from fitwheel.index.simple import split_fragment
from fitwheel.install.fetch.download import Downloaded, DownloadItem
from fitwheel.install.localbuild import build_source
from fitwheel.install.place.directurl import (
    archive_record,
    direct_url_record,
    folder_record,
    vcs_record,
)
from fitwheel.integrity import HashRequiredError
from fitwheel.resolve.reqfile import HASH_ALGORITHMS
from fitwheel.resolve.reqforms import Url, Vcs, file_url_path
from fitwheel.resolve.requirements import PLACEHOLDER, UserRequirement, named_like

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fitwheel.install.sourcebuilds import SourceBuilds


def prepare_direct(
    item: UserRequirement, form: Url | Vcs, sources: SourceBuilds
) -> UserRequirement:
    """The requirement on the wheel ``form`` stands for (downloaded, or built); an error names
    the requirement's place."""
    try:
        if isinstance(form, Vcs):
            return _vcs(item, form, sources)
        return _archive(item, form, sources)
    except FitwheelError as exc:
        if str(exc).startswith(item.origin):
            raise
        try:
            placed = type(exc)(f"{item.origin}: {exc}")
        except TypeError:
            placed = FitwheelError(f"{item.origin}: {exc}")
        raise placed from None


def _fragment_hashes(form: Url, origin: str) -> tuple[str, dict[str, frozenset[str]]]:
    """An archive URL without its fragment, and the ``#sha256=...`` (sha384, sha512) the
    fragment pins; a weaker hash there is refused, as fitwheel would not check it."""
    url, found = split_fragment(form.url)
    for algo in found:
        if algo not in HASH_ALGORITHMS:
            raise InputError(
                f"{origin}: {redact(form.url)} pins a {algo} hash, which fitwheel does not "
                "check: pin its sha256 (#sha256=HEX or --hash=sha256:HEX)."
            )
    return url, {algo: frozenset({digest}) for algo, digest in found.items()}


def _archive(item: UserRequirement, form: Url, sources: SourceBuilds) -> UserRequirement:
    url, fragment = _fragment_hashes(form, item.origin)
    shown = redact(url)
    if form.is_file:
        path = file_url_path(url)
        if path.is_dir():
            subdirectory = form.subdirectory
            tree = _inside(path, subdirectory, shown, item.origin)
            record = folder_record(url, subdirectory=subdirectory)
            return build_source(item, tree, sources, record=record, what=shown)
    else:
        path = None
        session = sources.fetcher.downloader.session
        if session is not None:  # the URL's credentials go with the request, not the record
            url = session.add_credentials(url)
    filename = path.name if path is not None else _filename(form, item.origin)
    # the --hash pins where there are any (then the fragment is checked too), else the fragment
    hashes = dict(item.hashes) if item.hashes else fragment
    download = DownloadItem(filename, path.as_uri() if path is not None else url, hashes)
    done = _fetch(download, sources, shown)
    if fragment and item.hashes:
        _check(fragment, done.sha256, done.path, shown, item.origin)
    record = archive_record(url, done.sha256)
    if filename.lower().endswith(".whl"):
        return _downloaded_wheel(item, form, done.path, record, sources)
    return build_source(
        item,
        done.path,
        sources,
        key=done.sha256,
        record=record,
        what=f"{shown} ({item.origin})",
    )


def _fetch(download: DownloadItem, sources: SourceBuilds, shown: str) -> Downloaded:
    """The archive, downloaded (or read in place) and checked; a failure says what to fix in
    the requirement."""
    from fitwheel.errors import NetworkError
    from fitwheel.integrity import HashMismatchError

    try:
        return sources.fetcher.downloader.fetch(download, sources.fetcher.reporter)
    except HashMismatchError as exc:
        raise HashMismatchError(
            f"{exc.fact}: fix the hash the requirement pins (#sha256= or --hash), or its URL. "
            "Nothing was installed.",
            exc.url,
            actual=exc.actual,
            fact=exc.fact,
        ) from None
    except NetworkError as exc:
        said = str(exc).split(": check the index URL")[0].rstrip(".")
        raise NetworkError(
            f"cannot download {shown}: {said}: check the URL in the requirement."
        ) from None


def _check(
    fragment: Mapping[str, frozenset[str]], sha256: str, path: Path, shown: str, origin: str
) -> None:
    from fitwheel.integrity import HashMismatchError

    for algo, digests in fragment.items():
        digest = sha256 if algo == "sha256" else hashlib.new(algo, path.read_bytes()).hexdigest()
        if digest not in digests:
            raise HashMismatchError(
                f"{origin}: {shown} has {algo} {digest}, not the {next(iter(digests))} its URL "
                "pins: fix the #hash in the URL, or the file. Nothing was installed."
            )


def _filename(form: Url, origin: str) -> str:
    from fitwheel.index.urlnames import url_filename

    name = url_filename(form.url)
    if not name:
        raise InputError(
            f"{origin}: {redact(form.url)} names no file (its path ends in a folder): name the "
            "wheel or sdist itself."
        )
    return name


def _downloaded_wheel(
    item: UserRequirement,
    form: Url,
    wheel: Path,
    record: dict[str, object],
    sources: SourceBuilds,
) -> UserRequirement:
    from fitwheel.variants.filenames import WheelFilename

    parsed = WheelFilename.parse(wheel.name)
    if item.requirement.name != PLACEHOLDER and parsed.normalized_name != item.name:
        raise InputError(
            f"{item.origin}: {wheel.name} is a wheel of {parsed.name}, not of "
            f"{item.requirement.name}: fix the name before ' @ '."
        )
    sources.origins[wheel.resolve()] = record
    return UserRequirement(
        named_like(item.requirement, parsed.name, parsed.version),
        item.hashes,
        wheel.resolve(),
        item.origin,
        item.variant,
        direct=form,
    )


def _inside(root: Path, subdirectory: str | None, shown: str, origin: str) -> Path:
    """``root``'s ``subdirectory`` (which must stay inside it and be a project)."""
    if not subdirectory:
        return root
    tree = (root / subdirectory).resolve()
    if not tree.is_relative_to(root.resolve()) or not tree.is_dir():
        raise InputError(
            f"{origin}: {shown} has no folder {subdirectory!r}: fix #subdirectory= to name the "
            "project's folder in the repository."
        )
    return tree


def _vcs(item: UserRequirement, form: Vcs, sources: SourceBuilds) -> UserRequirement:
    from fitwheel.sdist.vcs import checkout, is_commit, refuse_other

    shown = redact(form.repository)
    where = f"{item.origin}: {form.vcs}+{shown}"
    if form.vcs != "git":
        refuse_other(form.vcs, where)
    if sources.require_hashes:
        raise HashRequiredError(
            f"{item.origin}: --require-hashes is on (one --hash turns it on, as in pip), but "
            f"{form.vcs}+{shown} is a repository, which has no hash to check: install it in "
            "another run, or pin an archive of it with --hash."
        )
    if item.editable:
        return _editable_vcs(item, form, sources, where)
    work = Path(tempfile.mkdtemp(prefix="fitwheel-vcs-"))
    try:
        dest = work / "checkout"
        if is_commit(form.revision) and form.revision is not None:
            # a whole commit id: a wheel built from it before needs no checkout at all (the
            # build below finds it in the cache and never reads the folder)
            commit = form.revision.lower()
            if sources.builder().cached_wheel(_build_key(form, commit)) is not None:
                record = vcs_record(form.vcs, form.repository, commit, commit, form.subdirectory)
                key = _build_key(form, commit)
                return build_source(item, dest, sources, key=key, record=record, what=where)
        commit = checkout(
            form.repository,
            form.revision,
            dest,
            shown=where,
            url_shown=redact(form.repository),
            env=sources.environ,
        )
        tree = _inside(dest, form.subdirectory, where, item.origin)
        record = vcs_record(form.vcs, form.repository, commit, form.revision, form.subdirectory)
        key = _build_key(form, commit)
        return build_source(item, tree, sources, key=key, record=record, what=where)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _build_key(form: Vcs, commit: str) -> str:
    """What a checkout's build is cached under: the repository (without credentials), the
    commit and the subdirectory."""
    repository = split_credentials(form.repository)[0]
    text = f"{form.vcs}\0{repository}\0{commit}\0{form.subdirectory or ''}"
    return hashlib.sha256(text.encode()).hexdigest()


def _editable_vcs(
    item: UserRequirement, form: Vcs, sources: SourceBuilds, where: str
) -> UserRequirement:
    """``-e git+URL#egg=name``: a checkout in the environment's ``src`` folder, installed in
    editable mode (an existing checkout there is replaced, as pip replaces it)."""
    from fitwheel.sdist.vcs import checkout
    from fitwheel.variants.names import canonicalize_name

    assert form.name is not None
    src = Path(sources.env.prefix) / "src"
    dest = src / canonicalize_name(form.name)
    src.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=src))
    try:
        checkout(
            form.repository,
            form.revision,
            staging / "tree",
            shown=where,
            url_shown=redact(form.repository),
            env=sources.environ,
        )
        tree = _inside(staging / "tree", form.subdirectory, where, item.origin)
        # the subdirectory is checked before an earlier checkout there is replaced
        if dest.exists():
            shutil.rmtree(dest)
        (staging / "tree").replace(dest)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    tree = dest / form.subdirectory if form.subdirectory else dest
    record = direct_url_record(tree, editable=True)
    return build_source(item, tree, sources, record=record, what=where)
