"""The environment to install into: its interpreter, install scheme, markers, tags and contents.

One short run of the target interpreter answers everything that differs between interpreters
(paths, version, ABI); tags and installed distributions are then computed here.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fitwheel._values import Frozen
from fitwheel.errors import InstallationError
from fitwheel.fs import atomic_write
from fitwheel.reporter import SILENT, Reporter
from fitwheel.variants.names import canonicalize_name

if TYPE_CHECKING:
    # loaded where used: ``doctor`` reads an environment without either
    from importlib import metadata as importlib_metadata

    from packaging import tags as packaging_tags
    from packaging.utils import NormalizedName

SCHEME_KEYS = ("purelib", "platlib", "scripts", "data", "headers")

# What an interpreter says of itself: run by the target interpreter (``-c``), or, for a venv of
# the very interpreter running fitwheel, here (see _probe).
_PROBE_FUNCTION = r"""
def probe():
  import os, platform, sys, sysconfig
  paths = sysconfig.get_paths()
  impl = sys.implementation
  def fmt(info):
    v = "{0.major}.{0.minor}.{0.micro}".format(info)
    if info.releaselevel != "final":
        v += info.releaselevel[0] + str(info.serial)
    return v
  return {
    "executable": sys.executable,
    "prefix": sys.prefix,
    "base_prefix": sys.base_prefix,
    "paths": {k: paths[k] for k in ("purelib", "platlib", "scripts", "data", "include", "stdlib")},
    "version": list(sys.version_info[:3]),
    "cache_tag": impl.cache_tag,
    "soabi": sysconfig.get_config_var("SOABI"),
    "gil_disabled": bool(sysconfig.get_config_var("Py_GIL_DISABLED")),
    "platform": sysconfig.get_platform(),
    "markers": {
        "implementation_name": impl.name,
        "implementation_version": fmt(impl.version),
        "os_name": os.name,
        "platform_machine": platform.machine(),
        "platform_release": platform.release(),
        "platform_system": platform.system(),
        "platform_version": platform.version(),
        "python_full_version": platform.python_version(),
        "platform_python_implementation": platform.python_implementation(),
        "python_version": ".".join(platform.python_version_tuple()[:2]),
        "sys_platform": sys.platform,
    },
  }
"""
_PROBE = _PROBE_FUNCTION + "import json\nprint(json.dumps(probe()))\n"


def _probe_here() -> dict[str, Any]:
    """:data:`_PROBE`'s answer for the interpreter running fitwheel."""
    namespace: dict[str, Any] = {}
    exec(_PROBE_FUNCTION, namespace)
    data: dict[str, Any] = namespace["probe"]()
    return data


class EnvironmentError_(InstallationError):
    pass


class TargetEnvironment(Frozen):
    """An environment to install into (a plain slotted class: every install builds one, and
    ``dataclasses`` costs milliseconds to import)."""

    __slots__ = (
        "cache_tag",
        "externally_managed",
        "is_venv",
        "markers",
        "prefix",
        "python",
        "scheme",
        "tags",
        "version",
    )
    python: str
    prefix: Path
    scheme: Mapping[str, str]
    version: tuple[int, int, int]
    markers: Mapping[str, str]
    cache_tag: str | None
    tags: tuple[packaging_tags.Tag, ...]
    is_venv: bool
    #: PEP 668: the distribution manages this interpreter's packages
    externally_managed: bool

    def __init__(
        self,
        python: str,
        prefix: Path,
        scheme: Mapping[str, str],
        version: tuple[int, int, int],
        markers: Mapping[str, str],
        cache_tag: str | None,
        tags: tuple[packaging_tags.Tag, ...] = (),
        is_venv: bool = True,
        externally_managed: bool = False,
    ) -> None:
        _set = object.__setattr__
        _set(self, "python", python)
        _set(self, "prefix", prefix)
        _set(self, "scheme", scheme)
        _set(self, "version", version)
        _set(self, "markers", markers)
        _set(self, "cache_tag", cache_tag)
        _set(self, "tags", tags)
        _set(self, "is_venv", is_venv)
        _set(self, "externally_managed", externally_managed)

    def __repr__(self) -> str:
        return f"TargetEnvironment(python={self.python!r}, prefix={self.prefix!r})"

    @property
    def site_dirs(self) -> list[str]:
        dirs = [self.scheme["purelib"]]
        if self.scheme["platlib"] != self.scheme["purelib"]:
            dirs.append(self.scheme["platlib"])
        return dirs

    @property
    def python_version(self) -> str:
        return ".".join(str(p) for p in self.version)

    def installed(
        self, *, reporter: Reporter = SILENT
    ) -> dict[NormalizedName, importlib_metadata.Distribution]:
        """Installed distributions by canonical name (the first found on the path wins); a
        record that cannot be read is skipped with a warning to ``reporter``."""
        if not self._has_metadata_folders():
            return {}  # nothing installed: no need to load the metadata reader
        from importlib import metadata as importlib_metadata

        found: dict[NormalizedName, importlib_metadata.Distribution] = {}
        for dist in importlib_metadata.distributions(path=self.site_dirs):
            try:
                name = dist.metadata["Name"]
            except (UnicodeDecodeError, OSError) as exc:
                # one bad folder must not stop the work on the rest (see install.inventory)
                folder = getattr(dist, "_path", "a .dist-info folder")
                reporter.warning(f"{folder}: skipped, its METADATA cannot be read ({exc})")
                continue
            if name and canonicalize_name(name) not in found:
                found[canonicalize_name(name)] = dist
        return found

    def _has_metadata_folders(self) -> bool:
        """Whether a site folder has any ``.dist-info`` or ``.egg-info`` entry at all."""
        for folder in self.site_dirs:
            try:
                entries = os.listdir(folder)
            except OSError:
                continue
            if any(entry.lower().endswith((".dist-info", ".egg-info")) for entry in entries):
                return True
        return False

    def maybe_installed(self, names: Iterable[str]) -> bool:
        """Whether any of ``names`` (canonical) may be installed, from the site folders'
        ``.dist-info``/``.egg-info`` entry names alone (a name it cannot read counts as a
        yes): a cheap way to know that :meth:`installed` need not be read."""
        wanted = set(names)
        if not wanted:
            return False
        for folder in self.site_dirs:
            try:
                entries = os.listdir(folder)
            except OSError:
                continue
            for entry in entries:
                if not entry.endswith((".dist-info", ".egg-info")):
                    continue
                project, dash, rest = entry.rsplit(".", 1)[0].partition("-")
                if not project or (dash and not rest[:1].isdigit()):
                    return True  # not NAME-VERSION: cannot tell whose it is
                if canonicalize_name(project) in wanted:
                    return True
        return False

    def tag_priority(self) -> dict[packaging_tags.Tag, int]:
        return {tag: index for index, tag in enumerate(self.tags)}


def find_interpreter(python: str | None, env: Mapping[str, str]) -> str:
    """The interpreter ``--python`` names (a file or an environment folder), or the active venv."""
    if python is None:
        venv = env.get("VIRTUAL_ENV")
        if not venv:
            raise EnvironmentError_(
                "no virtual environment is active, so fitwheel does not know where to install: "
                "activate one or pass --python PATH (an interpreter or a venv folder)."
            )
        python = venv
    path = Path(python).expanduser()
    if path.is_dir():
        for candidate in (path / "bin" / "python", path / "Scripts" / "python.exe"):
            if candidate.exists():
                return str(candidate)
        raise EnvironmentError_(f"{path} is not a virtual environment: it has no bin/python.")
    if not path.exists():
        raise EnvironmentError_(f"the interpreter {path} does not exist: fix --python.")
    return str(path)


def _compute_tags(data: Mapping[str, Any]) -> tuple[packaging_tags.Tag, ...]:
    from packaging import tags as packaging_tags

    version = list(data["version"])
    major_minor = (int(version[0]), int(version[1]))
    platform = str(data["platform"]).replace("-", "_").replace(".", "_")
    ours = sysconfig_platform()
    platforms = list(packaging_tags.platform_tags()) if platform == ours else [platform]
    impl = str(data["markers"]["implementation_name"])
    tags: list[packaging_tags.Tag] = []
    if impl == "cpython":
        soabi = str(data.get("soabi") or "")
        abis = []
        if soabi.startswith("cpython-"):
            abis.append("cp" + soabi.split("-")[1])
        tags += packaging_tags.cpython_tags(major_minor, abis=abis, platforms=platforms)
        interp = f"cp{major_minor[0]}{major_minor[1]}"
    else:
        short = packaging_tags.INTERPRETER_SHORT_NAMES.get(impl, impl)
        interp = f"{short}{major_minor[0]}{major_minor[1]}"
        tags += packaging_tags.generic_tags(interp, ["none"], platforms)
    tags += packaging_tags.compatible_tags(major_minor, interp, platforms)
    return tuple(dict.fromkeys(tags))


def sysconfig_platform() -> str:
    import sysconfig

    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _cache_key(interpreter: str) -> str | None:
    """Changes whenever the interpreter or its environment's configuration changes."""
    parts = [os.path.abspath(interpreter)]
    try:
        for path in (interpreter, os.path.realpath(interpreter)):
            st = os.stat(path)
            parts.append(f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}")
        cfg = Path(interpreter).parent.parent / "pyvenv.cfg"
        if cfg.exists():
            st = cfg.stat()
            parts.append(f"{st.st_mtime_ns}:{st.st_size}")
    except OSError:
        return None
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _venv_of(interpreter: str) -> str | None:
    """The virtual environment folder ``interpreter`` runs in (the one holding ``pyvenv.cfg``)."""
    prefix = os.path.dirname(os.path.dirname(os.path.abspath(interpreter)))
    return prefix if os.path.isfile(os.path.join(prefix, "pyvenv.cfg")) else None


def _template_key(interpreter: str, venv: str) -> str | None:
    """Shared by every virtual environment made the same way from one base interpreter: its
    answers differ only by the folder (``pyvenv.cfg`` minus the line that names the folder)."""
    try:
        real = os.path.realpath(interpreter)
        st = os.stat(real)
        with open(os.path.join(venv, "pyvenv.cfg"), encoding="utf-8") as handle:
            config = sorted(
                line.strip() for line in handle if not line.lstrip().startswith("command")
            )
    except (OSError, UnicodeDecodeError):
        return None
    if real.startswith(venv + os.sep):
        return None  # a copied interpreter (venv --copies): nothing to share
    parts = ["venv-template-1", real, f"{st.st_mtime_ns}:{st.st_size}:{st.st_ino}", *config]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


_PLACEHOLDER = "\0prefix\0"


def _to_template(data: dict[str, Any], venv: str) -> dict[str, Any] | None:
    """``data`` with the venv folder replaced by a placeholder in the values that name it;
    None when the folder shows up anywhere else (then nothing is shared)."""

    def swap(value: str) -> str:
        if value == venv or value.startswith(venv + os.sep):
            return _PLACEHOLDER + value[len(venv) :]
        return value

    if data.get("prefix") != venv:
        return None
    template = {
        **data,
        "executable": swap(str(data.get("executable") or "")),
        "prefix": _PLACEHOLDER,
        "paths": {k: swap(str(v)) for k, v in data["paths"].items()},
    }
    rest = {k: v for k, v in template.items() if k not in ("executable", "prefix", "paths")}
    if venv in json.dumps(rest):
        return None
    return template


def _from_template(template: dict[str, Any], venv: str) -> dict[str, Any]:
    def fill(value: str) -> str:
        return venv + value[len(_PLACEHOLDER) :] if value.startswith(_PLACEHOLDER) else value

    return {
        **template,
        "executable": fill(template["executable"]),
        "prefix": venv,
        "paths": {k: fill(v) for k, v in template["paths"].items()},
    }


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_json(path: Path, data: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the cache only saves one interpreter start
        atomic_write(path, json.dumps(data).encode("utf-8"))


def _probe(interpreter: str, cache_dir: Path | None) -> dict[str, Any]:
    """What the interpreter says of itself; from the cache when this interpreter (or, for a
    new virtual environment, one made the same way from the same base) was asked before."""
    key = _cache_key(interpreter) if cache_dir is not None else None
    cached = cache_dir / f"{key}.json" if cache_dir is not None and key else None
    if cached is not None and (known := _read_json(cached)) is not None:
        return known
    venv = _venv_of(interpreter) if cache_dir is not None else None
    template_key = _template_key(interpreter, venv) if venv is not None else None
    shared = (
        cache_dir / f"venv-{template_key}.json" if cache_dir is not None and template_key else None
    )
    if shared is not None and venv is not None and (template := _read_json(shared)) is not None:
        try:
            return _from_template(template, venv)
        except (KeyError, TypeError, AttributeError):
            pass  # an unreadable entry: ask the interpreter
    if shared is not None and venv is not None:
        # a venv made the same way from the interpreter running fitwheel: its answers are ours,
        # with the folder swapped, and need no interpreter start at all
        ours = _venv_of(sys.executable)
        if (
            ours is not None
            and os.path.basename(interpreter) == os.path.basename(sys.executable)
            and _template_key(sys.executable, ours) == template_key
            and (template := _to_template(_probe_here(), ours)) is not None
        ):
            _write_json(shared, template)
            return _from_template(template, venv)
    from fitwheel import proc

    try:
        done = proc.run([interpreter, "-I", "-c", _PROBE], timeout=60)
        if done.timed_out:
            raise ValueError("it did not finish within 60 s")
        if done.returncode != 0:
            said = done.text(stream="stderr").strip().splitlines()
            raise ValueError(f"exit status {done.returncode}" + (f": {said[-1]}" if said else ""))
        data: dict[str, Any] = json.loads(done.stdout)
    except (OSError, ValueError) as exc:
        raise EnvironmentError_(f"cannot run the interpreter {interpreter}: {exc}") from exc
    if cached is not None:
        _write_json(cached, data)
    if shared is not None and venv is not None:
        template = _to_template(data, venv)
        if template is not None:
            _write_json(shared, template)
    return data


def describe_interpreter(
    python: str | None, env: Mapping[str, str], cache_dir: Path | None
) -> tuple[str, dict[str, Any]]:
    """The interpreter ``python`` names and what it says of itself (see :func:`_probe`)."""
    interpreter = find_interpreter(python, env)
    return interpreter, _probe(interpreter, cache_dir)


def environment_of(interpreter: str, data: Mapping[str, Any], *, tags: bool) -> TargetEnvironment:
    """The environment of ``interpreter`` from its answers (:func:`describe_interpreter`)."""
    paths = data["paths"]
    scheme = {
        "purelib": paths["purelib"],
        "platlib": paths["platlib"],
        "scripts": paths["scripts"],
        "data": paths["data"],
        # sysconfig's include folder is shared; per-distribution headers go below it
        "headers": paths["include"],
    }
    version = tuple(int(v) for v in data["version"])
    return TargetEnvironment(
        python=data["executable"] or interpreter,
        prefix=Path(data["prefix"]),
        scheme=scheme,
        version=(version[0], version[1], version[2]),
        markers=dict(data["markers"]),
        cache_tag=data.get("cache_tag"),
        tags=_compute_tags(data) if tags else (),
        is_venv=data["prefix"] != data["base_prefix"],
        externally_managed=data["prefix"] == data["base_prefix"]
        and bool(paths.get("stdlib"))
        and (Path(paths["stdlib"]) / "EXTERNALLY-MANAGED").exists(),
    )


def inspect_environment(
    python: str | None = None,
    env: Mapping[str, str] | None = None,
    *,
    cache_dir: Path | None = None,
    tags: bool = True,
) -> TargetEnvironment:
    """Describe the environment ``python`` names; ``cache_dir`` keeps the interpreter's answers
    (keyed by the identity of the interpreter and ``pyvenv.cfg``): later runs start no process.
    ``tags=False`` leaves the wheel tags out (for reading an environment, not installing)."""
    interpreter, data = describe_interpreter(python, os.environ if env is None else env, cache_dir)
    return environment_of(interpreter, data, tags=tags)


# pip's choice of install scheme for ``--prefix`` and for the ``home`` scheme its ``--target``
# stages in: the interpreter's preferred scheme of that kind, with every base set to the folder
_SCHEME_PROBE = r"""
import json, os, sys, sysconfig
kind, base = sys.argv[1], sys.argv[2]
preferred = getattr(sysconfig, "get_preferred_scheme", None)
if preferred is not None:
    name = preferred(kind)
elif os.name == "nt":
    name = "nt"
else:
    name = "posix_home" if kind == "home" else "posix_prefix"
if name == "osx_framework_library":
    name = "posix_prefix"
keys = ("installed_base", "base", "installed_platbase", "platbase", "prefix", "exec_prefix")
paths = sysconfig.get_paths(scheme=name, vars=dict.fromkeys(keys, base))
print(json.dumps({k: paths[k] for k in ("purelib", "platlib", "scripts", "data", "include")}))
"""


def environment_at(env: TargetEnvironment, kind: str, base: Path) -> TargetEnvironment:
    """``env``'s interpreter installing under ``base`` instead of its own prefix, as pip does:
    ``kind`` "prefix" is ``--prefix`` (the interpreter's prefix scheme), "home" the scheme
    ``--target`` stages in (``lib/python``, ``bin``, ...). Its markers and tags are ``env``'s;
    what is installed is what ``base`` holds."""
    from fitwheel import proc

    base = base.absolute()
    try:
        done = proc.run([env.python, "-I", "-c", _SCHEME_PROBE, kind, str(base)], timeout=60)
        if done.timed_out or done.returncode != 0:
            said = done.text(stream="stderr").strip().splitlines()
            raise ValueError(said[-1] if said else f"exit status {done.returncode}")
        paths = json.loads(done.stdout)
    except (OSError, ValueError) as exc:
        raise EnvironmentError_(
            f"cannot ask the interpreter {env.python} for its install scheme under {base}: {exc}"
        ) from exc
    scheme = {key: str(paths[key]) for key in ("purelib", "platlib", "scripts", "data")}
    scheme["headers"] = str(paths["include"])
    return env.replace(prefix=base, scheme=scheme, externally_managed=False)


def running_environment() -> TargetEnvironment:
    """This interpreter (used when a command needs markers but no target)."""
    return inspect_environment(sys.executable, {})
