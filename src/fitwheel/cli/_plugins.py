"""Allowed variant provider plugins for the commands that detect this machine: ``--allow-plugin
NAME[==VERSION]`` and the ``[plugins.allow.NAME]`` tables of fitwheel's configuration.

Each allowed plugin and its requirements are installed by fitwheel's own install machinery into
an isolated virtual environment under the cache (``plugins/envs/{key}``, the key made from the
sha256 of its files and the interpreter), from the indexes in use. Pinned files are installed
with their hashes required; a plugin allowed without pins has the hashes of its files recorded
in the user's configuration on its first use (trust on first use), and a changed file is
refused from then on. :mod:`fitwheel.plugins` runs it; its answer goes into the profile
(:func:`fitwheel.platform.supplements.supplement`).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fitwheel.errors import IntegrityError, UsageError
from fitwheel.options import SourceOptions
from fitwheel.paths import CacheLayout
from fitwheel.plugins.errors import PluginError
from fitwheel.plugins.runner import PluginEnv
from fitwheel.proc import VenvError, make_venv, venv_python
from fitwheel.reporter import SILENT, Reporter
from fitwheel.userconfig import PluginAllowance

if TYPE_CHECKING:
    from fitwheel.lock.document import LockedPlugin
    from fitwheel.platform.profile import Profile

MARKER = "fitwheel-plugin.json"


def _parse_flag(given: str) -> tuple[str, str]:
    from packaging.requirements import InvalidRequirement, Requirement

    from fitwheel.variants.names import canonicalize_name

    try:
        req = Requirement(given)
    except InvalidRequirement:
        req = None
    if req is None or req.extras or req.marker or req.url:
        raise UsageError(f"--allow-plugin {given}: give a project name, optionally ==VERSION")
    return canonicalize_name(req.name), str(req.specifier)


def allowed_plugins(
    flags: Sequence[str], env: Mapping[str, str], *, configured: bool = True
) -> list[PluginAllowance]:
    """The plugins ``--allow-plugin`` names, then those the configuration allows (with
    ``configured``), each with the configuration's pins."""
    from fitwheel.userconfig import plugin_allowances

    tables = plugin_allowances(env)
    out: dict[str, PluginAllowance] = {}
    for given in flags:
        name, spec = _parse_flag(given)
        table = tables.get(name)
        pins, origin = (table.sha256, table.origin) if table else ({}, "")
        out[name] = PluginAllowance(name, spec or (table.version if table else ""), pins, origin)
    if configured:
        for name, table in tables.items():
            out.setdefault(name, PluginAllowance(name, table.version, table.sha256, table.origin))
    return list(out.values())


# -- the isolated environment -----------------------------------------------------------------


def _env_key(files: Mapping[str, str]) -> str:
    ident = {
        "files": sorted((k, v.lower()) for k, v in files.items()),
        "python": [os.path.realpath(sys.executable), list(sys.version_info[:3])],
    }
    return hashlib.sha256(json.dumps(ident).encode()).hexdigest()[:32]


def _load_marker(folder: Path) -> PluginEnv | None:
    try:
        data = json.loads((folder / MARKER).read_text(encoding="utf-8"))
        return PluginEnv(
            str(data["name"]),
            str(data["version"]),
            Path(venv_python(folder)),
            {str(k): str(v) for k, v in data["files"].items()},
            {str(k): str(v) for k, v in data["namespaces"].items()},
            {str(k): str(v) for k, v in data.get("urls", {}).items()},
        )
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return None


def _pinned_lines(plugin: PluginAllowance) -> list[str]:
    from fitwheel.variants.filenames import WheelFilename

    lines = []
    for filename, digest in sorted(plugin.sha256.items()):
        try:
            wheel = WheelFilename.parse(filename)
        except ValueError:
            raise PluginError(
                plugin.name, f"{plugin.origin} pins {filename!r}, which is not a wheel file name"
            ) from None
        lines.append(f"{wheel.name}=={wheel.version} --hash=sha256:{digest}")
    return lines


def _check_spec(plugin: PluginAllowance) -> None:
    """Pins for another version than the one asked for are the user's to remove."""
    if not (plugin.sha256 and plugin.version):
        return
    from packaging.specifiers import SpecifierSet

    from fitwheel.variants.filenames import WheelFilename
    from fitwheel.variants.names import canonicalize_name

    wanted = SpecifierSet(plugin.version)
    for filename in plugin.sha256:
        wheel = WheelFilename.parse(filename)
        own = canonicalize_name(wheel.name) == plugin.name
        if own and not wanted.contains(wheel.version, prereleases=True):
            raise PluginError(
                plugin.name,
                f"{plugin.origin} pins the files of version {wheel.version}, not {plugin.version}",
                "remove the hashes table there to trust the other version on its first use",
            )


def _make_venv(folder: Path, what: str) -> Path:
    try:
        return Path(make_venv(sys.executable, folder, timeout=300))
    except VenvError as exc:
        raise PluginError(
            what, f"cannot create its isolated environment in {folder}: {exc}"
        ) from None


def _install(
    plugin: PluginAllowance, python: Path, sources: SourceOptions, layout: CacheLayout, env: Any
) -> dict[str, tuple[str, str, str]]:
    """Install the plugin into ``python``'s environment; file name -> (sha256, version of its
    project, URL), the plugin's own first."""
    from fitwheel.errors import FitwheelError
    from fitwheel.install.request import InstallRequest
    from fitwheel.install.workflow import run_install

    with tempfile.TemporaryDirectory(prefix="fitwheel-plugin-req-") as scratch:
        files: list[str] = []
        requirements = [f"{plugin.name}{plugin.version}"]
        if plugin.sha256:
            reqfile = Path(scratch) / "requirements.txt"
            reqfile.write_text("\n".join(_pinned_lines(plugin)) + "\n", encoding="utf-8")
            files, requirements = [str(reqfile)], []
        request = InstallRequest(
            requirements=requirements,
            requirement_files=files,
            python=str(python),
            sources=sources.replace(cache_dir=layout.root, no_cache=False),
            env=env,
        )
        try:
            outcome = run_install(request, target=None, profile=None)
        except IntegrityError as exc:
            raise _changed(plugin, exc) from None
        except FitwheelError as exc:
            raise PluginError(
                plugin.name,
                f"cannot be installed into its isolated environment: {exc}",
                "nothing was installed; check the plugin's name and version and the indexes in "
                "use, or stop allowing it (remove --allow-plugin, or its [plugins.allow] table)",
            ) from None
    out: dict[str, tuple[str, str, str]] = {}
    for item in sorted(outcome.planned, key=lambda p: p.candidate.name != plugin.name):
        if item.downloaded is None or item.sha256 is None:
            continue
        out[item.downloaded.path.name] = (
            item.sha256,
            str(item.candidate.version),
            item.candidate.link.url,
        )
    return out


def _changed(plugin: PluginAllowance, exc: IntegrityError) -> PluginError:
    """The refusal of a pinned file that the index now serves with another hash (``exc``: the
    install's own refusal, naming the file's URL and the digest found)."""
    from fitwheel.index.urlnames import url_filename
    from fitwheel.integrity import HashMismatchError

    filename = actual = None
    if isinstance(exc, HashMismatchError) and exc.url:
        filename, actual = url_filename(exc.url), exc.actual
    pinned = plugin.sha256.get(filename) if filename else None
    if pinned is not None and actual is not None:
        problem = (
            f"its file {filename} has sha256 {actual}, but {plugin.origin} pins sha256 {pinned}"
        )
    else:
        problem = f"a file differs from its pin in {plugin.origin} ({exc})"
    return PluginError(
        plugin.name,
        problem,
        "nothing was installed; the file changed after it was pinned: find out why before "
        "trusting it, then update or remove the pin",
    )


def plugin_environment(
    plugin: PluginAllowance,
    *,
    sources: SourceOptions,
    layout: CacheLayout,
    env: Mapping[str, str],
    timeout: float,
    reporter: Reporter = SILENT,
    record: bool = True,
) -> PluginEnv:
    """The isolated environment of ``plugin``: cached by its pinned files' hashes, else
    installed (and, without pins and with ``record``, its files' hashes recorded in the user's
    configuration: trust on first use)."""
    from fitwheel.plugins.runner import describe
    from fitwheel.plugins.trust import check_pins

    _check_spec(plugin)
    envs = layout.plugins / "envs"
    if plugin.sha256:
        cached = _load_marker(envs / _env_key(plugin.sha256))
        if cached is not None:
            check_pins(plugin.name, cached.files, plugin.sha256, plugin.origin)
            return cached
    envs.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".new-", dir=envs))
    try:
        python = _make_venv(work, plugin.name)
        installed = _install(plugin, python, sources, layout, env)
        files = {name: digest for name, (digest, _v, _u) in installed.items()}
        urls = {name: url for name, (_d, _v, url) in installed.items()}
        check_pins(plugin.name, files, plugin.sha256, plugin.origin)
        version = next(iter(installed.values()))[1] if installed else "?"
        namespaces = describe(plugin.name, python, env=env, timeout=timeout)
        marker = {
            "name": plugin.name,
            "version": version,
            "files": files,
            "namespaces": namespaces,
            "urls": urls,
        }
        (work / MARKER).write_text(json.dumps(marker, indent=2), encoding="utf-8")
        final = envs / _env_key(files)
        if not (final / MARKER).exists():
            shutil.rmtree(final, ignore_errors=True)
            try:
                os.replace(work, final)
            except OSError:
                if not (final / MARKER).exists():  # another run put the same one in place
                    raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if not plugin.sha256 and record:
        _record(plugin, version, files, env, reporter)
    ready = _load_marker(final)
    if ready is None:
        raise PluginError(plugin.name, f"its isolated environment {final} cannot be read")
    return ready


def _record(
    plugin: PluginAllowance,
    version: str,
    files: Mapping[str, str],
    env: Mapping[str, str],
    reporter: Reporter,
) -> None:
    from fitwheel.userconfig import record_plugin_pins

    path = record_plugin_pins(env, plugin.name, plugin.version or f"=={version}", files)
    if path is not None:
        reporter.notice(
            f"plugin {plugin.name}=={version} is trusted from now on with the sha256 of its "
            f"files, recorded in {path} [plugins.allow.{plugin.name}]; a changed file is refused"
        )


# -- answers into the profile ------------------------------------------------------------------


def refused_namespaces(profile: Profile) -> frozenset[str]:
    """The namespaces no plugin answers: fitwheel's own providers', and those the profile
    already answers (statically)."""
    from fitwheel.platform.detect import PROVIDER_MODULES

    return frozenset(PROVIDER_MODULES) | frozenset(profile.properties)


def with_plugin_answers(
    profile: Profile,
    plugins: Sequence[PluginEnv],
    *,
    env: Mapping[str, str],
    timeout: float,
    layout: CacheLayout,
) -> Profile:
    """``profile`` with what each plugin answers (its supported values; none: nothing)."""
    from fitwheel.platform.supplements import supplement
    from fitwheel.plugins.answer import supported
    from fitwheel.plugins.answers import cached_ask

    refused = refused_namespaces(profile)
    for plugin in plugins:
        answer = cached_ask(
            plugin, env=env, timeout=timeout, refused=refused, directory=layout.plugins / "answers"
        )
        extra = {ns: fs for ns, fs in supported(answer).items() if fs}
        if extra:
            profile = supplement(profile, extra, f"plugin {plugin.label}")
    return profile


def _sources(args: argparse.Namespace) -> SourceOptions:
    if hasattr(args, "index_url"):
        from fitwheel.cli._sources import sources_from

        return sources_from(args)
    return SourceOptions()


def machine_profile(
    args: argparse.Namespace, profile: Profile, cache_dir: Path | None = None
) -> Profile:
    """This machine's ``profile`` with the answers of the plugins allowed here (none allowed:
    ``profile`` itself). For ``sync`` (``args.locked_plugins``: the lock's plugins and its
    path), only the lock's plugins run, and only with the lock's files."""
    env = dict(os.environ)
    allowed = allowed_plugins(getattr(args, "allow_plugin", None) or (), env)
    locked = getattr(args, "locked_plugins", None)
    if not allowed and not locked:
        return profile
    from fitwheel.cli._reporting import reporter_for
    from fitwheel.paths import cache_root
    from fitwheel.userconfig import plugin_timeout

    sources = _sources(args)
    layout = CacheLayout(cache_root(cache_dir or sources.cache_dir, env))
    timeout = plugin_timeout(env)
    reporter = reporter_for(args)
    if locked is not None:
        allowed, sources = _as_locked(allowed, locked[0], locked[1], sources, reporter)
    ready = [
        plugin_environment(
            p, sources=sources, layout=layout, env=env, timeout=timeout, reporter=reporter
        )
        for p in allowed
    ]
    return with_plugin_answers(profile, ready, env=env, timeout=timeout, layout=layout)


# -- locks: the plugins that answered for the targets, and sync running only those ------------


def plugins_named(profiles: Iterable[Profile]) -> list[tuple[str, str]]:
    """The (name, version) of each plugin whose answer a profile holds (``sources`` says
    ``plugin NAME==VERSION``), in order, once each."""
    import re

    from fitwheel.variants.names import canonicalize_name

    found: dict[tuple[str, str], None] = {}
    for profile in profiles:
        for source in profile.sources.values():
            match = re.fullmatch(r"plugin (\S+)==(\S+)", source)
            if match:
                found[(canonicalize_name(match[1]), match[2])] = None
    return list(found)


def _pins_for(pins: Mapping[str, str], name: str, version: str) -> bool:
    from fitwheel.variants.filenames import WheelFilename

    for filename in pins:
        wheel = WheelFilename.parse(filename)
        if wheel.normalized_name == name and str(wheel.parsed_version) == version:
            return True
    return False


def locked_plugins(
    profiles: Sequence[Profile], *, sources: SourceOptions, env: Mapping[str, str]
) -> tuple[LockedPlugin, ...]:
    """The plugins whose answers the targets' profiles hold, with their files: the files the
    configuration pins for that version, else those the indexes serve now (installed into the
    plugin's isolated environment either way, hash-checked; nothing is recorded)."""
    from fitwheel.lock.document import LockedPlugin, LockedWheel
    from fitwheel.lock.locking import public_url
    from fitwheel.paths import cache_root
    from fitwheel.userconfig import plugin_allowances, plugin_timeout

    named = plugins_named(profiles)
    if not named:
        return ()
    tables = plugin_allowances(env)
    layout = CacheLayout(cache_root(sources.cache_dir, env))
    out = []
    for name, version in named:
        table = tables.get(name)
        pinned = table is not None and _pins_for(table.sha256, name, version)
        allowed = PluginAllowance(
            name,
            f"=={version}",
            table.sha256 if table is not None and pinned else {},
            table.origin if table is not None and pinned else "",
        )
        ready = plugin_environment(
            allowed,
            sources=sources,
            layout=layout,
            env=env,
            timeout=plugin_timeout(env),
            record=False,
        )
        wheels = tuple(
            LockedWheel(filename, public_url(ready.urls.get(filename, "")), {"sha256": digest})
            for filename, digest in sorted(ready.files.items())
        )
        out.append(LockedPlugin(name, ready.version, wheels, tuple(sorted(ready.namespaces))))
    return tuple(out)


def _as_locked(
    allowed: Sequence[PluginAllowance],
    plugins: Sequence[LockedPlugin],
    lock_path: str,
    sources: SourceOptions,
    reporter: Reporter,
) -> tuple[list[PluginAllowance], SourceOptions]:
    """The lock's plugins this host allows, pinned to the lock's files (a host pinning other
    files is refused); the bundle's own files when the lock names them by path."""
    from fitwheel.plugins.trust import same_files

    by_name = {a.name: a for a in allowed}
    origin = f"{lock_path} [tool.fitwheel.plugins]"
    out = []
    local: list[Path] = []
    for plugin in plugins:
        host = by_name.get(plugin.name)
        if host is None:
            reporter.notice(
                f"the lock's answers for {', '.join(plugin.namespaces)} came from plugin "
                f"{plugin.label}, which this host does not allow, so it does not run here and "
                f"those builds count as unsupported: pass --allow-plugin {plugin.name} to run it"
            )
            continue
        if host.sha256 and not same_files(host.sha256, plugin.sha256):
            raise PluginError(
                plugin.label,
                f"{host.origin} pins other files for it than {origin} records",
                "nothing was installed; lock again with the pinned files, or update the pins",
            )
        out.append(PluginAllowance(plugin.name, f"=={plugin.version}", plugin.sha256, origin))
        base = Path(lock_path).parent
        local += [base / w.path for w in plugin.wheels if w.path is not None]
    wanted = sum(len(p.wheels) for p in plugins if p.name in by_name)
    if out and len(local) == wanted and all(p.is_file() for p in local):
        folders = tuple(dict.fromkeys(str(p.parent) for p in local))
        sources = SourceOptions(find_links=folders, no_index=True, cache_dir=sources.cache_dir)
    return out, sources
