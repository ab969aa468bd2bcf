"""Where fitwheel's files are: its configuration files, its cache root and the cache's subfolders.

Configuration: the user file is ``FITWHEEL_CONFIG`` when set, else ``config.toml`` in the user
config folder; the site file is ``config.toml`` in the site config folder (``FITWHEEL_CONFIG=
/dev/null`` turns both off, see :mod:`fitwheel.userconfig`).

Cache root: ``--cache-dir``, else ``FITWHEEL_CACHE_DIR``, else the user cache folder. Every cache
has a fixed subfolder there (:class:`CacheLayout`): ``wheels`` (downloads, by sha256),
``unpacked`` (unpacked wheels), ``http`` (index pages), ``envs`` (interpreter answers),
``detect`` (the per-boot detection result), ``built`` (wheels and metadata built from source
distributions, by the sdist's sha256), ``remembered`` (remembered resolutions) and ``plugins``
(the isolated environments of allowed variant provider plugins, and their answers); beside them,
``torch_backends.json`` is the torch backend table ``fitwheel torch refresh`` last wrote.

The folders are the ones ``platformdirs`` gives ``fitwheel``. On Linux and the BSDs that is the
XDG base-directory rule, computed here from the environment passed in (hermetic, and cheaper
than importing platformdirs); elsewhere platformdirs answers. pip's configuration files
(:mod:`fitwheel.index.configfiles`) follow the same XDG rule, through :func:`xdg_config_home`
and :func:`xdg_config_dirs`.

``fitwheel detect`` imports this module on its start-up path, so it imports nothing at module
level beyond ``os`` and ``sys`` (``pathlib`` and ``platformdirs`` are imported where needed), and
the string-path helpers need no ``pathlib``.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # ``typing`` is not imported at run time (start-up cost)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    StrPath = str | os.PathLike[str]

ENV_CONFIG = "FITWHEEL_CONFIG"
CONFIG_FILE = "config.toml"
ENV_CACHE_DIR = "FITWHEEL_CACHE_DIR"
APP_NAME = "fitwheel"

WHEELS = "wheels"
UNPACKED = "unpacked"
HTTP = "http"
ENVS = "envs"
DETECT = "detect"
BUILT = "built"
REMEMBERED = "remembered"
PLUGINS = "plugins"
#: the torch backend table ``fitwheel torch refresh`` wrote, at the cache root
TORCH_BACKENDS = "torch_backends.json"


# -- the XDG base-directory rule (Linux and the BSDs) ----------------------------------------


def uses_xdg() -> bool:
    """Whether this platform places user and site folders by the XDG rule."""
    return sys.platform.startswith(("linux", "freebsd", "openbsd", "netbsd"))


def home(env: Mapping[str, str]) -> str:
    """The home folder: ``HOME`` in ``env``, else the process's own."""
    return env.get("HOME") or os.path.expanduser("~")


def xdg_config_home(env: Mapping[str, str]) -> str:
    """``XDG_CONFIG_HOME``, else ``~/.config`` (an empty or blank variable is no setting)."""
    return env.get("XDG_CONFIG_HOME", "").strip() or os.path.join(home(env), ".config")


def xdg_cache_home(env: Mapping[str, str]) -> str:
    """``XDG_CACHE_HOME``, else ``~/.cache``."""
    return env.get("XDG_CACHE_HOME", "").strip() or os.path.join(home(env), ".cache")


def xdg_config_dirs(env: Mapping[str, str]) -> list[str]:
    """The site configuration folders, most important first: ``XDG_CONFIG_DIRS``, else
    ``/etc/xdg``."""
    listed = env.get("XDG_CONFIG_DIRS", "").strip() or "/etc/xdg"
    return [d for d in listed.split(os.pathsep) if d]


# -- fitwheel's folders ----------------------------------------------------------------------


def user_config_dir(env: Mapping[str, str]) -> str:
    """``platformdirs.user_config_dir("fitwheel", appauthor=False)``."""
    if uses_xdg():
        return os.path.join(xdg_config_home(env), APP_NAME)
    import platformdirs

    return platformdirs.user_config_dir(APP_NAME, appauthor=False)


def site_config_dir(env: Mapping[str, str]) -> str:
    """``platformdirs.site_config_dir("fitwheel", appauthor=False)``: on Linux the first folder
    of ``XDG_CONFIG_DIRS``."""
    if uses_xdg():
        dirs = xdg_config_dirs(env)
        return os.path.join(dirs[0] if dirs else "/etc/xdg", APP_NAME)
    import platformdirs

    return platformdirs.site_config_dir(APP_NAME, appauthor=False)


def user_cache_dir(env: Mapping[str, str]) -> str:
    """``platformdirs.user_cache_dir("fitwheel")``."""
    if uses_xdg():
        return os.path.join(xdg_cache_home(env), APP_NAME)
    import platformdirs

    return platformdirs.user_cache_dir(APP_NAME)


def config_path(env: Mapping[str, str]) -> str:
    """The user configuration file: ``FITWHEEL_CONFIG``, else ``config.toml`` in the user
    config folder."""
    explicit = env.get(ENV_CONFIG)
    if explicit:
        return explicit
    return os.path.join(user_config_dir(env), CONFIG_FILE)


def site_config_path(env: Mapping[str, str]) -> str:
    """The site configuration file: ``config.toml`` in the site config folder."""
    return os.path.join(site_config_dir(env), CONFIG_FILE)


# -- the cache -------------------------------------------------------------------------------


def cache_root_str(flag: StrPath | None, env: Mapping[str, str]) -> str:
    """The cache root as a string: ``flag``, else ``FITWHEEL_CACHE_DIR``, else the user cache."""
    if flag is not None and os.fspath(flag):
        return os.fspath(flag)
    explicit = env.get(ENV_CACHE_DIR)
    if explicit:
        return explicit
    return user_cache_dir(env)


def cache_root(flag: StrPath | None, env: Mapping[str, str]) -> Path:
    """The cache root: ``flag`` (``--cache-dir``), else ``FITWHEEL_CACHE_DIR``, else the user
    cache folder."""
    from pathlib import Path

    return Path(cache_root_str(flag, env))


def detect_dir(env: Mapping[str, str], flag: StrPath | None = None) -> str:
    """The detection cache's folder (a string: the detect start-up path has no ``pathlib``)."""
    return os.path.join(cache_root_str(flag, env), DETECT)


def torch_table_path(env: Mapping[str, str], flag: StrPath | None = None) -> str:
    """The cached torch backend table (``fitwheel torch refresh`` writes it)."""
    return os.path.join(cache_root_str(flag, env), TORCH_BACKENDS)


class CacheLayout:
    """The fixed subfolders of one cache root, as every cache uses them (read-only)."""

    __slots__ = ("root",)
    root: Path

    def __init__(self, root: Path) -> None:
        object.__setattr__(self, "root", root)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CacheLayout is read-only: cannot set {name}")

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CacheLayout) and other.root == self.root

    def __hash__(self) -> int:
        return hash(self.root)

    def __repr__(self) -> str:
        return f"CacheLayout(root={self.root!r})"

    @classmethod
    def locate(cls, flag: StrPath | None, env: Mapping[str, str]) -> CacheLayout:
        return cls(cache_root(flag, env))

    @property
    def wheels(self) -> Path:
        """Downloaded wheels, ``{sha[:2]}/{sha}/{filename}``."""
        return self.root / WHEELS

    @property
    def unpacked(self) -> Path:
        """Unpacked wheels, ``{sha[:2]}/{sha}/``."""
        return self.root / UNPACKED

    @property
    def http(self) -> Path:
        """Index pages by URL."""
        return self.root / HTTP

    @property
    def envs(self) -> Path:
        """What each interpreter said of itself."""
        return self.root / ENVS

    @property
    def detect(self) -> Path:
        """The per-boot detection result."""
        return self.root / DETECT

    @property
    def built(self) -> Path:
        """What source builds made, ``{sha[:2]}/{sha}/`` by the sdist's sha256: the wheels
        built from it, and the metadata prepared for each interpreter."""
        return self.root / BUILT

    @property
    def remembered(self) -> Path:
        """Remembered resolutions, ``{key[:2]}/{key}.json`` (see
        :mod:`fitwheel.install.remembered`)."""
        return self.root / REMEMBERED

    @property
    def plugins(self) -> Path:
        """Allowed variant provider plugins: ``envs/{key}/``, an isolated environment per set
        of pinned files, and ``answers/``, their answers kept per boot."""
        return self.root / PLUGINS

    def wheel_file(self, sha256: str, filename: str) -> str:
        """Where the downloaded wheel ``filename`` with that sha256 is kept."""
        return cached_wheel(self.wheels, sha256, filename)


def cached_wheel(folder: StrPath, sha256: str, filename: str) -> str:
    """The place of a wheel in a wheel cache folder: ``{sha[:2]}/{sha}/{filename}``."""
    return os.path.join(folder, sha256[:2], sha256, filename)
