"""What the stages of an install (plan, fetch, build, place) share: the request's settings
they read, the target environment, the indexes and the caches, in one
:class:`InstallContext`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from collections.abc import Mapping

    from fitwheel.index.config import IndexConfig
    from fitwheel.index.http import Session
    from fitwheel.install.building import SourceBuilds
    from fitwheel.install.env.interpreter import TargetEnvironment
    from fitwheel.install.env.session import EnvironmentSession
    from fitwheel.install.fetch.fetcher import Fetcher
    from fitwheel.options import PlacementOptions, ResolutionOptions, SourceOptions
    from fitwheel.platform.profile import Profile
    from fitwheel.reporter import Recorder
    from fitwheel.resolve.candidates import CandidateSource
    from fitwheel.resolve.requirements import UserInput
    from fitwheel.torchbackend.routing import Router
    from fitwheel.torchbackend.settings import TorchSettings


class StageSettings(Protocol):
    """The settings of an install request that its stages read (see
    :class:`fitwheel.install.workflow.InstallRequest`)."""

    @property
    def dry_run(self) -> bool: ...
    @property
    def remember(self) -> bool: ...
    @property
    def torch(self) -> TorchSettings | None: ...
    @property
    def sources(self) -> SourceOptions: ...
    @property
    def resolution(self) -> ResolutionOptions: ...
    @property
    def placement(self) -> PlacementOptions: ...
    @property
    def env(self) -> Mapping[str, str]: ...


class InstallContext:
    """One install's settings, environment, indexes, caches and environment session."""

    __slots__ = (
        "config",
        "env",
        "envs",
        "fetcher",
        "profile",
        "reporter",
        "request",
        "router",
        "session",
        "source",
        "sources",
        "user",
    )

    def __init__(
        self,
        request: StageSettings,
        env: TargetEnvironment,
        envs: EnvironmentSession,
        *,
        config: IndexConfig,
        source: CandidateSource,
        session: Session,
        user: UserInput,
        profile: Profile | None,
        fetcher: Fetcher,
        sources: SourceBuilds,
        router: Router | None,
        reporter: Recorder,
    ) -> None:
        self.request = request
        self.env = env
        #: the environment session: its lock, recovery and inventory
        self.envs = envs
        self.config = config
        self.source = source
        #: the HTTP session the indexes are read with
        self.session = session
        self.user = user
        self.profile = profile
        self.fetcher = fetcher
        self.sources = sources
        self.router = router
        #: what the stages tell the user; the warnings are kept for the outcome (and a
        #: remembered install)
        self.reporter = reporter
