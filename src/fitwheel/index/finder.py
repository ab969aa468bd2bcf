"""All the files a project has, across the configured indexes and find-links.

Indexes are searched in the order :meth:`IndexConfig.search_order` gives: those named on the
command line before the configured ones, and within each the extra indexes (earlier ones first)
before the main one, as uv does; find-links always count (a route may hold back some of them
for the projects it routes: :class:`ProjectRoute`). Which indexes' files count for a
project is the index strategy's choice (uv's names and meaning):

- ``first-index`` (default): only the first index that has the project; a name that a private
  index serves cannot be taken over by an index searched later (dependency confusion);
- ``unsafe-first-match``: every index, but the versions of an earlier index are preferred to any
  version of a later one;
- ``unsafe-best-match``: every index; the best version wins wherever it is.

With either unsafe strategy, a version offered by several indexes takes its files from the first
of them only. Each index is asked with PEP 691 JSON preferred, HTML accepted. A 404 for a project
that an index does not carry is normal (the project is simply absent there), but an index root that
answers 401/403/5xx is an error naming the URL: fitwheel never silently falls back from one index
to another.

An index that cannot be reached at all (DNS failure, refused connection, TLS failure, time-out:
:class:`~fitwheel.index.http.UnreachableError`) stops the run by default
(:class:`UnreachableIndexError`, naming the index and ``--unreachable-index warn``): going on
would hand its projects to another index, which is what ``first-index`` prevents. With
``unreachable_index="warn"`` (pip's way) it is left out of the search for the rest of the run,
with one warning naming it and the error (:attr:`Finder.skipped` keeps them for the reports).
This applies to the indexes searched in order only: a project a route sends to its own index
(a torch backend index, a variant index) stops the run when that index cannot be reached, and
so does a torch backend index among the user's own (:attr:`Finder.vital`).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Protocol

from fitwheel.errors import FitwheelError
from fitwheel.index.auth import redact
from fitwheel.index.config import IndexConfig
from fitwheel.index.findlinks import FindLinksError, folder_links, local_path
from fitwheel.index.http import HttpError, Session, TimedOutError, UnreachableError
from fitwheel.index.simple import (
    ACCEPT,
    Link,
    parse_html,
    parse_page,
    project_url,
    variants_json_key,
)
from fitwheel.options import INDEX_STRATEGIES, UNREACHABLE_INDEX
from fitwheel.reporter import SILENT, Reporter
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import SdistFilename, WheelFilename, is_sdist_filename
from fitwheel.variants.names import canonicalize_name

if TYPE_CHECKING:
    from pathlib import Path

#: the rank of find-links files: after every index, and never dropped by the strategy
FIND_LINKS_RANK = 1 << 30


class ProjectRoute(Protocol):
    """Where some projects come from instead of the configured indexes (variant indexes, the
    torch backend index): ``links`` returns the project's links and the index they came from,
    or None to search the configured indexes as usual. Find-links files are added either way:
    for a project ``links`` routed, those ``local_files`` keeps."""

    def links(self, finder: Finder, key: str) -> tuple[list[Link], str] | None: ...

    def local_files(self, key: str, links: list[Link]) -> list[Link]: ...


class UnreachableIndexError(UnreachableError):
    """An index in the search order (or a find-links page) cannot be reached, and
    ``--unreachable-index`` is ``error`` (the default)."""

    def __init__(
        self,
        index_url: str,
        origin: str,
        exc: UnreachableError,
        *,
        vital: bool = False,
        kind: str = "index",
    ) -> None:
        check = "check the URL, the network and the proxy settings" + (
            " (or allow more time with --timeout SECONDS)" if isinstance(exc, TimedOutError) else ""
        )
        way_on = (
            "it is a torch backend index, which --unreachable-index warn never leaves out "
            f"(another index would hand over another build of torch): {check}."
            if vital
            else f"{check}, or go on without it as pip does with --unreachable-index warn "
            "(also the setting: fitwheel config set unreachable-index warn)."
        )
        super().__init__(
            index_url,
            exc.reason,
            f"the {kind} {redact(index_url)} ({origin}) cannot be reached: {redact(exc.url)}: "
            f"{exc.reason}. fitwheel stops rather than take its packages from elsewhere: "
            f"{way_on}",
        )


def search_order(config: IndexConfig) -> tuple[str, ...]:
    """The indexes in the order they are searched: those the command line names, then the
    configured ones (each group: extra indexes first, then the main one, as in uv)."""
    return config.search_order()


class Finder:
    __slots__ = (
        "_checked_roots",
        "_find_links",
        "_lock",
        "_pages",
        "_ranks",
        "config",
        "index_strategy",
        "reporter",
        "route",
        "served_by",
        "session",
        "skipped",
        "unreachable_index",
        "vital",
    )

    def __init__(
        self,
        config: IndexConfig,
        session: Session | None = None,
        index_strategy: str = "first-index",
        *,
        served_by: dict[str, list[str]] | None = None,
        route: ProjectRoute | None = None,
        unreachable_index: str = "error",
        skipped: dict[str, str] | None = None,
        reporter: Reporter = SILENT,
        vital: frozenset[str] = frozenset(),
    ) -> None:
        if index_strategy not in INDEX_STRATEGIES:
            raise FitwheelError(
                f"unknown index strategy {index_strategy!r}: use one of "
                f"{', '.join(INDEX_STRATEGIES)}."
            )
        if unreachable_index not in UNREACHABLE_INDEX:
            raise FitwheelError(
                f"unknown --unreachable-index {unreachable_index!r}: use one of "
                f"{', '.join(UNREACHABLE_INDEX)}."
            )
        #: "error" (an index that cannot be reached stops the run) or "warn" (left out)
        self.unreachable_index = unreachable_index
        #: index URL -> why it could not be reached: the indexes left out (``warn``); finders
        #: that share one dict leave an index out (and warn) once
        self.skipped: dict[str, str] = {} if skipped is None else skipped
        #: where the warning about an index left out goes
        self.reporter = reporter
        #: indexes never left out, whatever ``unreachable_index`` says (torch backend indexes
        #: among the user's)
        self.vital = vital
        self.config = config
        self.session = session
        self.index_strategy = index_strategy
        #: project -> the indexes whose page for it listed files (more than one: a pooled choice)
        self.served_by: dict[str, list[str]] = {} if served_by is None else served_by
        self.route = route
        self._pages: dict[str, list[Link]] = {}
        self._find_links: dict[str, list[Link]] | None = None
        self._checked_roots: set[str] = set()
        self._lock = threading.Lock()
        #: link URL -> the position of its index in the search order (find-links: FIND_LINKS_RANK)
        self._ranks: dict[str, int] = {}

    def rank(self, link: Link) -> int:
        """Where ``link``'s index comes in the search order (0: first)."""
        return self._ranks.get(link.url, 0)

    def _require_session(self) -> Session:
        if self.session is None:
            import os

            from fitwheel.index.session import open_session
            from fitwheel.options import SourceOptions

            # a finder made without one: the environment's and pip's settings, no page cache
            self.session = open_session(SourceOptions(cert=self.config.cert), os.environ)
        return self.session

    def _find_links_files(self, key: str) -> list[Link]:
        """The find-links files of project ``key`` (every location is listed once)."""
        if self._find_links is None:
            links: list[Link] = []
            for location in self.config.find_links:
                path = local_path(location)
                if path is not None:
                    self._note_local(path)
                    links += folder_links(path)
                else:
                    links += self._find_links_page(location)
            by_project: dict[str, list[Link]] = {}
            for link in links:
                project = _project_of(link.filename)
                if project is not None:
                    by_project.setdefault(project, []).append(link)
            self._find_links = by_project
        return self._find_links.get(key, [])

    def _note_local(self, path: Path) -> None:
        """A local file or folder read for the resolution (a remembered install checks it)."""
        if self.session is not None:
            self.session.note_local(path)

    def _find_links_page(self, location: str) -> list[Link]:
        """The links of a find-links page on the web; one that cannot be reached is handled
        as an unreachable index is (:meth:`_left_out`)."""
        if location in self.skipped:
            return []
        try:
            resp = self._require_session().get(location, accept="text/html", what="find-links page")
        except UnreachableError as exc:
            self._left_out(location, exc, "find-links", kind="find-links page")
            return []
        assert resp is not None
        return parse_html(resp.body.decode("utf-8", "replace"), resp.url)

    def _left_out(
        self, url: str, exc: UnreachableError, origin: str | None, *, kind: str = "index"
    ) -> None:
        """Stop the run for ``url``, which cannot be reached, or (``warn``, and not a vital
        index) leave it out from now on with one warning."""
        vital = url in self.vital
        if self.unreachable_index != "warn" or vital:
            shown = self.config.origin_of(url) if origin is None else origin
            raise UnreachableIndexError(url, shown, exc, vital=vital, kind=kind) from None
        with self._lock:
            first = url not in self.skipped
            self.skipped.setdefault(url, exc.reason)
        if first:
            self.reporter.warning(skipped_warning(url, exc.reason, kind))

    def _check_root(self, index_url: str) -> None:
        """A 404 for a project page is meaningful only if the index itself exists."""
        if index_url in self._checked_roots:
            return
        session = self._require_session()
        resp = session.get(
            index_url.rstrip("/") + "/", accept=ACCEPT, what="index root", allow_404=True
        )
        if resp is None:
            raise HttpError(index_url, 404, "index root")
        self._checked_roots.add(index_url)

    def links(self, name: str) -> list[Link]:
        """Every file of project ``name`` (wheels, sdists, variants.json), indexes first."""
        key = canonicalize_name(name)
        with self._lock:
            if key in self._pages:
                return self._pages[key]
        links: list[Link] = []
        served: list[str] = []
        ranks: dict[str, int] = {}
        routed = self.route.links(self, key) if self.route is not None else None
        if routed is not None:
            links = list(routed[0])
            served = [routed[1]] if any(link.is_wheel for link in links) else []
            ranks = dict.fromkeys((link.url for link in links), 0)
        for rank, index_url in enumerate(search_order(self.config) if routed is None else ()):
            page = self._searched_page(index_url, key)
            if page is None:
                continue
            found = page
            if any(link.is_wheel for link in found):
                served.append(index_url)
            for link in found:
                ranks.setdefault(link.url, rank)
            links += found
            if found and self.index_strategy == "first-index":
                break
        local = self._find_links_files(key)
        if routed is not None and self.route is not None:
            local = self.route.local_files(key, local)
        for link in local:
            ranks.setdefault(link.url, FIND_LINKS_RANK)
        links += local
        with self._lock:
            self._pages[key] = links
            self.served_by[key] = served
            self._ranks.update(ranks)
        return links

    def _searched_page(self, index_url: str, key: str) -> list[Link] | None:
        """:meth:`page`, for an index in the search order: one that cannot be reached stops
        the run, or (``warn``) is left out from then on, with one warning."""
        if index_url in self.skipped:
            return None
        try:
            return self.page(index_url, key)
        except UnreachableError as exc:
            self._left_out(index_url, exc, None)
            return None

    def page(self, index_url: str, key: str) -> list[Link] | None:
        """The files of project ``key`` on one index (None: the index does not carry it)."""
        if index_url.startswith("file:"):
            return self._local_index(index_url, key)
        session = self._require_session()
        url = project_url(index_url, key)
        what = f"project page of {key}"
        resp = session.get(url, accept=ACCEPT, what=what, allow_404=True)
        if resp is None:
            self._check_root(index_url)
            return None
        return parse_page(resp.body, resp.content_type, resp.url)

    def _local_index(self, index_url: str, key: str) -> list[Link]:
        """A simple index in a folder (``file://``): ``{project}/index.html`` pages, or, as pip
        reads them, plain folders of files."""
        root = local_path(index_url)
        assert root is not None
        if not root.is_dir():
            raise FindLinksError(f"the index folder {root} ({index_url}) does not exist.")
        folder = root / key
        self._note_local(folder)  # its listing: the page, or the files a plain folder holds
        page = folder / "index.html"
        if page.is_file():
            try:
                text = page.read_text(encoding="utf-8", errors="replace")
            except OSError as exc:
                raise FindLinksError(f"cannot read {page}: {exc.strerror}.") from exc
            return parse_html(text, folder.as_uri() + "/")
        if folder.is_dir():
            return [link for link in folder_links(folder) if _project_of(link.filename) == key]
        return []

    def variants_json_link(self, name: str, version: str) -> Link | None:
        """The ``{name}-{version}-variants.json`` link for a release, found by filename."""
        from packaging.version import InvalidVersion, Version

        key = canonicalize_name(name)
        try:
            wanted = Version(version)
        except InvalidVersion:
            return None
        for link in self.links(name):
            found = variants_json_key(link.filename)
            if found is None or found[0] != key:
                continue
            try:
                if Version(found[1]) == wanted:
                    return link
            except InvalidVersion:
                continue
        return None

    def read(self, link: Link, what: str = "") -> bytes:
        """The content of a small file (variants.json, a page); local files read directly."""
        path = local_path(link.url)
        if path is not None:
            self._note_local(path)
            try:
                return path.read_bytes()
            except OSError as exc:
                raise FitwheelError(f"cannot read {path}: {exc.strerror}.") from exc
        resp = self._require_session().get(
            link.url, what=what or link.filename, hashes=dict(link.hashes) or None
        )
        assert resp is not None
        return resp.body


def skipped_warning(index_url: str, reason: str, kind: str = "index") -> str:
    """The warning for an index (or a find-links page) left out because it cannot be
    reached."""
    return (
        f"the {kind} {redact(index_url)} cannot be reached ({reason}); going on without it "
        "(--unreachable-index warn)"
    )


def _project_of(filename: str) -> str | None:
    """The canonical project name a distribution file belongs to (None: not a distribution)."""
    if filename.endswith(".whl"):
        try:
            return WheelFilename.parse(filename).normalized_name
        except VariantFormatError:
            return None
    found = variants_json_key(filename)
    if found is not None:
        return found[0]
    if is_sdist_filename(filename):
        try:
            return SdistFilename.parse(filename).normalized_name
        except VariantFormatError:
            return None
    return None
