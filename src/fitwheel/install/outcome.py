"""What an install planned and did: :class:`Planned` (one pinned distribution and what happens
to it) and :class:`InstallOutcome` (everything :func:`fitwheel.install.workflow.run_install`
hands back for the command line to render)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fitwheel.index.config import IndexConfig
    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.fetch.download import Downloaded
    from fitwheel.install.place.core import InstallResult
    from fitwheel.resolve.candidates import Candidate
    from fitwheel.resolve.resolver import Resolution
    from fitwheel.torchbackend.routing import Router


class Planned:
    __slots__ = ("action", "candidate", "downloaded", "requested", "sha256")

    def __init__(
        self,
        candidate: Candidate,
        requested: bool,
        action: str,
        downloaded: Downloaded | None = None,
        sha256: str | None = None,
    ) -> None:
        self.candidate = candidate
        self.requested = requested
        #: "install", "keep" (already installed as chosen) or "reinstall"
        self.action = action
        self.downloaded = downloaded
        self.sha256 = sha256


class InstallOutcome:
    __slots__ = (
        "config",
        "environment",
        "files_read",
        "gpu_builds",
        "installed",
        "installed_before",
        "pages_read",
        "passed_over",
        "planned",
        "remember_blocked",
        "resolution",
        "router",
        "skipped_indexes",
        "speculative",
        "warnings",
    )

    def __init__(
        self,
        environment: TargetEnvironment,
        config: IndexConfig,
        resolution: Resolution,
        planned: list[Planned],
        installed: InstallResult | None,
        warnings: list[str] | None = None,
    ) -> None:
        self.environment = environment
        self.config = config
        self.resolution = resolution
        self.planned = planned
        self.installed = installed
        self.warnings: list[str] = [] if warnings is None else warnings
        #: where the torch-ecosystem projects (and variant-index projects) came from
        self.router: Router | None = None
        #: GPU builds resolved for a target without that GPU (also among the warnings)
        self.gpu_builds: list[str] = []
        #: one line per project the first-index strategy took from an earlier index although
        #: a later one has a newer allowed version (said as one summary; ``--explain`` lists them)
        self.passed_over: list[str] = []
        #: index URL -> why it could not be reached: the indexes left out
        #: (``--unreachable-index warn``)
        self.skipped_indexes: dict[str, str] = {}
        #: with ``InstallRequest.remember``: the URLs the resolution read (None: a read no
        #: cached page stands for), the requirements files read, the installed set it saw
        #: (:func:`fitwheel.install.remembered.installed_state`), and why it cannot be
        #: remembered at all (None: nothing against it)
        self.pages_read: list[str | None] = []
        self.files_read: list[str] = []
        self.installed_before: list[object] | None = None
        self.remember_blocked: str | None = None
        #: what fetching the likely picks before they were pinned did (``--report``'s
        #: ``speculative``; None: nothing was fetched early)
        self.speculative: dict[str, int] | None = None
