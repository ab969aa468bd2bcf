"""The source builds of one install: sdists downloaded by the fetcher's downloader (hashes
checked) and built by one :class:`fitwheel.sdist.builder.SourceBuilder`, whose build
environments a nested install fills (``install_requirements``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from fitwheel.errors import FitwheelError
from fitwheel.install.fetch.download import Downloaded, DownloadItem
from fitwheel.integrity import HashRequiredError
from fitwheel.reporter import Reporter

if TYPE_CHECKING:
    from packaging.utils import NormalizedName

    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.fetch.fetcher import Fetcher
    from fitwheel.paths import CacheLayout
    from fitwheel.resolve.candidates import Candidate
    from fitwheel.sdist.builder import SourceBuilder

#: installs build requirements into a build environment: (its interpreter, the requirements,
#: the name of the project being built)
InstallBuildRequirements = Callable[[Path, Sequence[str], str], None]


class SourceBuilds:
    """Source builds for one install: sdists downloaded by the fetcher's downloader (hashes
    checked), built by one :class:`SourceBuilder` whose build environments are filled by
    ``install_requirements``."""

    def __init__(
        self,
        layout: CacheLayout,
        env: TargetEnvironment,
        fetcher: Fetcher,
        install_requirements: InstallBuildRequirements,
        *,
        environ: Mapping[str, str],
        build_timeout: float | None,
        building: frozenset[str],
        require_hashes: bool,
        reporter: Reporter,
    ) -> None:
        self.layout = layout
        self.env = env
        self.fetcher = fetcher
        self._install = install_requirements
        self.environ = environ
        #: seconds each build backend hook may run (None: the default)
        self.build_timeout = build_timeout
        #: the projects whose build environment this install fills (a cycle guard)
        self.building = building
        self.require_hashes = require_hashes
        self.reporter = reporter
        self._builder: SourceBuilder | None = None
        #: a wheel given directly or built from what was (a path, a URL, a checkout) -> its
        #: PEP 610 record
        self.origins: dict[Path, dict[str, object]] = {}
        #: --hash pins by project: an sdist is checked against them before any of its code runs
        self.pinned: dict[NormalizedName, Mapping[str, frozenset[str]]] = {}
        self._downloads: dict[tuple[str, str], Downloaded] = {}

    @property
    def built(self) -> bool:
        """Whether a source build was set up (a build's environment is resolved apart)."""
        return self._builder is not None

    def builder(self) -> SourceBuilder:
        from fitwheel.sdist.builder import DEFAULT_BUILD_TIMEOUT, SourceBuilder

        if self._builder is None:
            self._builder = SourceBuilder(
                self.layout.built,
                python=self.env.python,
                tags=self.env.tags,
                install_requirements=self._install_requirements,
                env=self.environ,
                timeout=self.build_timeout or DEFAULT_BUILD_TIMEOUT,
                reporter=self.reporter,
            )
        return self._builder

    def _guard(self, cand: Candidate) -> str:
        what = f"{cand.name} {cand.version} ({cand.link.filename})"
        if cand.name in self.building:
            from fitwheel.errors import BuildError

            chain = " -> ".join([*sorted(self.building), str(cand.name)])
            raise BuildError(
                f"building {what} needs {cand.name} itself to build ({chain}): a build "
                f"requirement cannot be built from its own sdist; add an index or find-links "
                f"folder that has a wheel of {cand.name}."
            )
        return what

    def _install_requirements(self, python: Path, requirements: Sequence[str], what: str) -> None:
        self.reporter.notice(
            f"fitwheel: installing the build requirements of {what}: {', '.join(requirements)}"
        )
        try:
            self._install(python, requirements, what.split(" ", 1)[0])
        except FitwheelError as exc:
            from fitwheel.errors import BuildError

            raise BuildError(f"cannot set up the build environment of {what}: {exc}") from None

    def download(
        self, cand: Candidate, hashes: Mapping[str, frozenset[str]] | None = None
    ) -> Downloaded:
        """The sdist, checked against ``hashes`` (default: the published ones)."""
        wanted = (
            hashes
            if hashes is not None
            else {a: frozenset({h}) for a, h in cand.link.hashes.items()}
        )
        key = (cand.link.url, repr(sorted((a, sorted(d)) for a, d in wanted.items())))
        done = self._downloads.get(key)
        if done is None:
            item = DownloadItem(cand.link.filename, cand.link.url, wanted)
            done = self.fetcher.downloader.fetch(item, self.fetcher.reporter)
            self._downloads[key] = done
        return done

    def metadata(self, cand: Candidate) -> bytes:
        what = self._guard(cand)
        pinned = self.pinned.get(cand.name)
        if pinned is None and self.require_hashes:
            raise HashRequiredError(
                f"--require-hashes is on, but {cand.name} {cand.version} has no --hash in the "
                "requirements, and its sdist would have to be built (running its code) to "
                "resolve: list it with a pinned version and its hashes."
            )
        done = self.download(cand, pinned)
        return self.builder().metadata(done.path, done.sha256, what)

    def wheel(self, cand: Candidate, done: Downloaded) -> Path:
        what = self._guard(cand)
        return self.builder().wheel(done.path, done.sha256, what)

    def close(self) -> None:
        if self._builder is not None:
            self._builder.close()
