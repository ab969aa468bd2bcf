"""What one install asks for: the requirements, the environment and the shared option records
(:mod:`fitwheel.options`), in one :class:`InstallRequest`.

Loaded on the short path of a remembered install too (the key is made from it): no ``typing``,
no resolver, no HTTP client.
"""

from __future__ import annotations

import os

from fitwheel.options import PlacementOptions, ResolutionOptions, SourceOptions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from fitwheel.index.config import PipSettings
    from fitwheel.resolve.reqfile import FileOptions
    from fitwheel.torchbackend.settings import TorchSettings


class InstallRequest:
    """What the command line asks for: the requirements, the environment, and the shared
    option records (:mod:`fitwheel.options`)."""

    def __init__(
        self,
        *,
        requirements: Sequence[str] = (),
        requirement_files: Sequence[str] = (),
        constraint_files: Sequence[str] = (),
        editables: Sequence[str] = (),
        python: str | None = None,
        dry_run: bool = False,
        sources: SourceOptions | None = None,
        resolution: ResolutionOptions | None = None,
        placement: PlacementOptions | None = None,
        env: Mapping[str, str] | None = None,
        torch: TorchSettings | None = None,
        building: frozenset[str] = frozenset(),
        remember: bool = False,
        target_dir: str | None = None,
        prefix: str | None = None,
    ) -> None:
        self.requirements = requirements
        self.requirement_files = requirement_files
        self.constraint_files = constraint_files
        #: ``-e PATH``: local projects installed in editable mode (PEP 660)
        self.editables = editables
        self.python = python
        self.dry_run = dry_run
        #: indexes, find-links, trust, time limits and the cache
        self.sources = SourceOptions() if sources is None else sources
        #: versions, builds and variants
        self.resolution = ResolutionOptions() if resolution is None else resolution
        #: link mode, byte-compiling, overwriting, PEP 668, parallel downloads
        self.placement = PlacementOptions() if placement is None else placement
        self.env: Mapping[str, str] = dict(os.environ) if env is None else env
        #: --torch-backend, --torch-index-url, --variant-index-url and their settings
        self.torch = torch
        #: the projects whose build environment this install fills (a cycle guard)
        self.building = building
        #: note what the resolution reads, so that it can be remembered
        #: (:mod:`fitwheel.install.remembered`)
        self.remember = remember
        #: ``--target DIR``: install into DIR as pip does (:mod:`fitwheel.install.targetdir`)
        self.target_dir = target_dir
        #: ``--prefix DIR``: the interpreter's install scheme with DIR as its base
        self.prefix = prefix

    def with_pip_settings(self, settings: PipSettings) -> InstallRequest:
        """This request with pip's configuration under it (each record's rule: a yes/no
        setting is on when the configuration or the flag says so, lists are the
        configuration's and then the flags', a value given as a flag wins). The sources are
        merged where the session is made (:func:`fitwheel.index.session.open_session`)."""
        import copy

        merged = copy.copy(self)
        merged.constraint_files = [*settings.constraint_files, *self.constraint_files]
        merged.resolution = self.resolution.with_pip_settings(settings)
        merged.placement = self.placement.with_pip_settings(settings)
        return merged

    def with_file_options(self, options: FileOptions) -> InstallRequest:
        """This request with what its requirements files say on top (each record's
        ``with_file_options``: pip's rules)."""
        import copy

        merged = copy.copy(self)
        merged.sources = self.sources.with_file_options(options)
        merged.resolution = self.resolution.with_file_options(options)
        return merged
