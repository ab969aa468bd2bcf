"""The newest version of each installed project that an install would take here
(``fitwheel list --outdated`` / ``--uptodate``).

pip asks its finder for the best candidate of each project; fitwheel asks the candidates an
install would see (:func:`fitwheel.install.workflow.index_source`): the indexes in their order
under the index strategy, the wheels whose tags fit the interpreter, for a project with variants
only the variants that run on the target (a newer release whose only builds are for another
platform or another GPU is not "newer" here), and with ``--torch-backend`` the torch projects
from their backend index. A version is a candidate through an sdist as well (as in pip: its
``Type`` is then ``sdist``). Yanked files never count, pre-releases only with ``--pre`` (as in
pip). For a project from a torch backend index, versions are compared without their local
label (``2.9.0+cu128`` is not newer than an installed ``2.9.0+cu126``: that is another build of
the same release, which the route chooses).
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

from packaging.version import InvalidVersion, Version

from fitwheel._values import Frozen
from fitwheel.variants.errors import VariantError
from fitwheel.variants.names import canonicalize_name

if TYPE_CHECKING:
    from fitwheel.install.request import InstallRequest
    from fitwheel.platform.profile import Profile
    from fitwheel.reporter import Reporter
    from fitwheel.resolve.candidates import Candidate, CandidateSource
    from fitwheel.torchbackend.routing import Router
    from fitwheel.variants.ordering import Target


class Latest(Frozen):
    """The newest installable version of a project: its version, ``wheel`` or ``sdist``, the
    variant label an install would take (None: none), and the torch backend it comes from."""

    __slots__ = ("backend", "filetype", "label", "version")
    version: Version
    filetype: str
    label: str | None
    backend: str | None

    def __init__(
        self, version: Version, filetype: str, label: str | None, backend: str | None
    ) -> None:
        _set = object.__setattr__
        _set(self, "version", version)
        _set(self, "filetype", filetype)
        _set(self, "label", label)
        _set(self, "backend", backend)

    def newer_than(self, installed: str) -> bool:
        """Whether this is a newer version than ``installed`` (a backend build: its release
        without the local label)."""
        try:
            current = Version(installed)
        except InvalidVersion:
            return True  # pip's rule: an invalid installed version is older than any
        if self.backend is not None:
            return Version(self.version.public) > Version(current.public)
        return self.version > current


def latest_versions(
    request: InstallRequest,
    names: Sequence[str],
    *,
    target: Target | None,
    profile: Profile | None,
    reporter: Reporter,
) -> dict[str, Latest | None]:
    """name -> the newest version an install of it would take for ``request``'s environment
    and the target (None: no index or find-links folder has one that fits)."""
    from fitwheel.index.config import load_pip_settings
    from fitwheel.index.session import open_session
    from fitwheel.install.env.interpreter import inspect_environment
    from fitwheel.install.workflow import cache_dir, index_source
    from fitwheel.paths import CacheLayout

    layout = CacheLayout(cache_dir(request))
    env = inspect_environment(request.python, request.env, cache_dir=layout.envs)
    settings = load_pip_settings(env=request.env, site_prefix=str(env.prefix))
    request = request.with_pip_settings(settings)
    session = open_session(request.sources, request.env, layout=layout, settings=settings)
    _config, source, router = index_source(request, env, session, target, profile, reporter)
    pre = request.resolution.pre

    def one(name: str) -> Latest | None:
        try:
            return _latest(source, router, name, pre)
        except VariantError as exc:
            # one project's broken variant metadata does not hide the others' answers
            reporter.warning(f"{name}: its newest version is not known here ({exc})")
            return None

    with ThreadPoolExecutor(max_workers=max(1, min(8, request.placement.jobs * 2))) as pool:
        found = list(pool.map(one, names))
    return dict(zip(names, found, strict=True))


def _latest(source: CandidateSource, router: Router | None, name: str, pre: bool) -> Latest | None:
    key = canonicalize_name(name)
    for version, _files in source.versions(key):
        if version.is_prerelease and not pre:
            continue
        chosen = _first_fitting(source.version_candidates(key, version))
        if chosen is None:
            continue
        backend = router.index_backend(key, chosen.link.url) if router is not None else None
        filetype = "sdist" if chosen.is_sdist else "wheel"
        return Latest(version, filetype, chosen.label, backend)
    return None


def _first_fitting(candidates: Sequence[Candidate]) -> Candidate | None:
    """The candidate an install would take first, yanked files left out."""
    for cand in candidates:
        if cand.link.yanked is None:
            return cand
    return None
