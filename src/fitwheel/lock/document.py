"""The ``pylock.toml`` document (PEP 751, with PEP 825's inline ``[packages.variants-json]``).

:class:`Lock` is the model; :meth:`Lock.dumps` writes it (byte-identical for the same model) and
:func:`loads_lock` reads and checks a file, with every problem naming the entry. Layout::

    lock-version = "1.0"
    environments = [...]            one marker per target (python, OS, machine)
    requires-python = ">=3.11"
    created-by = "fitwheel"

    [[packages]]                    one per project version; wheels of every target using it
    name, version, marker?, requires-python?, index?
    wheels = [{ name, url, path?, size?, hashes = { sha256 } }, ...]
    [packages.variants-json]        the version's variant metadata, pruned to the labels listed
    [packages.tool.fitwheel.targets]   target name -> the file that target installs

    [tool.fitwheel]
    requirements, constraints, torch-index-url?,
    targets = [{ name, marker, summary, ..., torch-backend?, torch-backend-requested?,
                 answers? = { namespace = "plugin NAME==VERSION" or a static answer } }]
    plugins = [{ name, version, namespaces, wheels = [{ name, url, path?, hashes }] }]

``answers`` says, for each namespace no built-in provider answers, where the target's profile
got its answer; ``plugins`` lists each variant provider plugin that answered (its files, so that
``sync`` runs only those files, and ``bundle`` carries them).

``packages.marker`` holds plain PEP 508 markers only (PEP 825 keeps variant markers out of it):
the targets using an entry, when their markers tell them from the others. Which build a host
takes is the variant selection over ``variants-json``; the per-target table says what each
target took, so that a package pulled in by a variant's own dependencies (say, a CUDA runtime
only the CUDA builds need) is installed exactly where that build is.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from fitwheel.errors import InputError
from fitwheel.index.urlnames import names_file, url_filename
from fitwheel.lock.markers import simple_marker
from fitwheel.toml import TomlReadError, dumps, loads
from fitwheel.variants.errors import VariantError
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.model import VariantInfo
from fitwheel.variants.names import canonicalize_name

LOCK_VERSION = "1.0"
CREATED_BY = "fitwheel"
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_INLINE = ("packages.variants-json.*.*",)


class LockFileError(InputError):
    """A lock file that cannot be used as it is (unreadable, invalid, incomplete)."""


@dataclass(frozen=True, slots=True)
class LockedWheel:
    filename: str
    url: str | None
    hashes: Mapping[str, str]
    path: str | None = None
    size: int | None = None

    @property
    def sha256(self) -> str:
        return self.hashes["sha256"]

    @property
    def parsed(self) -> WheelFilename:
        return WheelFilename.parse(self.filename)

    @property
    def label(self) -> str | None:
        return self.parsed.variant_label

    def to_toml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.filename}
        if self.url is not None:
            out["url"] = self.url
        if self.path is not None:
            out["path"] = self.path
        if self.size is not None:
            out["size"] = self.size
        out["hashes"] = dict(sorted(self.hashes.items()))
        return out


@dataclass(frozen=True, slots=True)
class LockedPackage:
    name: str
    version: str
    wheels: tuple[LockedWheel, ...]
    marker: str | None = None
    requires_python: str | None = None
    index: str | None = None
    #: the inline variant metadata as written (None: no variant wheels)
    variants_json: Mapping[str, Any] | None = None
    #: target name -> the filename that target installs
    targets: Mapping[str, str] = field(default_factory=dict)
    #: read from the file: the metadata checked, and where the entry is (for messages)
    info: VariantInfo | None = None
    where: str = ""

    def describe(self) -> str:
        return self.where or f"{self.name} {self.version}"

    def wheel(self, filename: str) -> LockedWheel:
        for w in self.wheels:
            if w.filename == filename:
                return w
        raise KeyError(filename)

    def to_toml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "version": self.version}
        if self.marker:
            out["marker"] = self.marker
        if self.requires_python:
            out["requires-python"] = self.requires_python
        if self.index:
            out["index"] = self.index
        out["wheels"] = [w.to_toml() for w in self.wheels]
        if self.variants_json is not None:
            out["variants-json"] = self.variants_json
        if self.targets:
            out["tool"] = {"fitwheel": {"targets": dict(self.targets)}}
        return out


@dataclass(frozen=True, slots=True)
class TargetRecord:
    name: str
    marker: str
    summary: str
    python_version: str
    profile: str = ""
    #: the sha256 of the profile's JSON (lock --check notices a changed profile)
    profile_sha256: str = ""
    #: the torch backend whose index the target's torch projects came from ("" for none), and
    #: what was asked for ("auto", or the backend named)
    torch_backend: str = ""
    torch_backend_requested: str = ""
    #: namespace -> where the profile's answer came from, for each namespace no built-in
    #: provider answers (a plugin, ``plugin NAME==VERSION``, or a static answer)
    answers: Mapping[str, str] = field(default_factory=dict)

    def to_toml(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "marker": self.marker,
            "python-version": self.python_version,
            "summary": self.summary,
        }
        if self.profile:
            out["profile"] = self.profile
        if self.profile_sha256:
            out["profile-sha256"] = self.profile_sha256
        if self.torch_backend:
            out["torch-backend"] = self.torch_backend
        if self.torch_backend_requested:
            out["torch-backend-requested"] = self.torch_backend_requested
        if self.answers:
            out["answers"] = dict(sorted(self.answers.items()))
        return out

    def describe(self) -> str:
        return f"{self.name} ({self.summary})"


@dataclass(frozen=True, slots=True)
class LockedPlugin:
    """A variant provider plugin that answered for a target: its project, version, namespaces
    and files (its own wheel and its requirements', each with its sha256)."""

    name: str
    version: str
    wheels: tuple[LockedWheel, ...]
    namespaces: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        return f"{self.name}=={self.version}"

    @property
    def sha256(self) -> dict[str, str]:
        """file name -> sha256 of every file."""
        return {w.filename: w.sha256 for w in self.wheels}

    def to_toml(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "version": self.version,
            "namespaces": list(self.namespaces),
            "wheels": [w.to_toml() for w in self.wheels],
        }


@dataclass(frozen=True, slots=True)
class Lock:
    packages: tuple[LockedPackage, ...]
    targets: tuple[TargetRecord, ...] = ()
    requirements: tuple[str, ...] = ()
    constraints: tuple[str, ...] = ()
    requires_python: str | None = None
    environments: tuple[str, ...] = ()
    source: str = "pylock.toml"
    #: the root of the per-backend indexes the torch projects came from (None: none did)
    torch_index_url: str | None = None
    #: the variant provider plugins that answered for the targets
    plugins: tuple[LockedPlugin, ...] = ()

    def torch_backend_requested(self) -> str | None:
        """The ``--torch-backend`` the lock was made with ("auto" or a backend), if any."""
        return next((t.torch_backend_requested for t in self.targets if t.torch_backend), None)

    def to_toml(self) -> dict[str, Any]:
        out: dict[str, Any] = {"lock-version": LOCK_VERSION}
        if self.environments:
            out["environments"] = list(self.environments)
        if self.requires_python:
            out["requires-python"] = self.requires_python
        out["created-by"] = CREATED_BY
        out["packages"] = [p.to_toml() for p in self.packages]
        tool: dict[str, Any] = {"requirements": list(self.requirements)}
        if self.constraints:
            tool["constraints"] = list(self.constraints)
        if self.torch_index_url:
            tool["torch-index-url"] = self.torch_index_url
        tool["targets"] = [t.to_toml() for t in self.targets]
        if self.plugins:
            tool["plugins"] = [p.to_toml() for p in self.plugins]
        out["tool"] = {"fitwheel": tool}
        return out

    def dumps(self) -> str:
        return dumps(self.to_toml(), inline=_INLINE)

    def covers(self) -> str:
        """The targets, for messages: ``h100 (NVIDIA H100; python 3.11, linux x86_64), ...``."""
        if not self.targets:
            return "no recorded targets"
        return "; ".join(t.describe() for t in self.targets)

    def with_paths(self, paths: Mapping[str, str]) -> Lock:
        """The same lock with ``path`` set on the wheels named in ``paths`` (filename -> path),
        the plugins' included."""

        def placed(wheels: tuple[LockedWheel, ...]) -> tuple[LockedWheel, ...]:
            return tuple(
                replace(w, path=paths[w.filename]) if w.filename in paths else w for w in wheels
            )

        packages = tuple(replace(p, wheels=placed(p.wheels)) for p in self.packages)
        plugins = tuple(replace(p, wheels=placed(p.wheels)) for p in self.plugins)
        return replace(self, packages=packages, plugins=plugins)


# -- reading ----------------------------------------------------------------------------------


def _fail(source: str, where: str, problem: str) -> LockFileError:
    return LockFileError(
        f"{source}: {where}: {problem}. The lock was refused and nothing was changed; run "
        "'fitwheel lock' again to write a valid one."
    )


def _str(table: Mapping[str, Any], key: str, source: str, where: str, *, required: bool) -> Any:
    value = table.get(key)
    if value is None:
        if required:
            raise _fail(source, where, f"'{key}' is missing")
        return None
    if not isinstance(value, str):
        raise _fail(source, where, f"'{key}' must be a string")
    return value


def _wheel(raw: Any, source: str, where: str, name: str, version: str) -> LockedWheel:
    if not isinstance(raw, Mapping):
        raise _fail(source, where, "a wheel entry must be a table")
    url = _str(raw, "url", source, where, required=False)
    path = _str(raw, "path", source, where, required=False)
    filename = _str(raw, "name", source, where, required=False)
    if url is None and path is None:
        raise _fail(source, where, "the wheel has neither 'url' nor 'path'")
    if filename is None:
        filename = url_filename(url) if url is not None else path.rsplit("/", 1)[-1]
        if not filename:
            named = f"the URL {url}" if url is not None else f"the path {path!r}"
            raise _fail(source, where, f"{named} names no file: give the wheel's 'name'")
    where = f"{where} {filename}"
    hashes = raw.get("hashes")
    if not isinstance(hashes, Mapping) or not hashes:
        raise _fail(source, where, "the file has no hashes (every locked file needs a sha256)")
    sha256 = hashes.get("sha256")
    if not isinstance(sha256, str) or not _SHA256.match(sha256):
        raise _fail(source, where, "the file has no valid sha256 hash (64 lower-case hex digits)")
    for algo, digest in hashes.items():
        if not isinstance(digest, str):
            raise _fail(source, where, f"the {algo} hash must be a string")
    size = raw.get("size")
    if size is not None and (not isinstance(size, int) or isinstance(size, bool) or size < 0):
        raise _fail(source, where, "'size' must be a non-negative integer")
    try:
        parsed = WheelFilename.parse(filename)
    except VariantError as exc:
        raise _fail(source, where, f"not a wheel filename: {exc}") from None
    if parsed.normalized_name != name or str(parsed.parsed_version) != version:
        raise _fail(source, where, f"the file is not a wheel of {name} {version}")
    if url is not None and not names_file(url, filename):
        raise _fail(
            source,
            where,
            f"the URL {url} does not name this file (the last part of its path, decoded, "
            "must be the file's name): fix the entry, or lock again",
        )
    return LockedWheel(filename, url, dict(hashes), path, size)


def _package(raw: Any, index: int, source: str) -> LockedPackage:
    where = f"packages[{index}]"
    if not isinstance(raw, Mapping):
        raise _fail(source, where, "a package entry must be a table")
    name = _str(raw, "name", source, where, required=True)
    where = f"packages[{index}] ({name})"
    version = _str(raw, "version", source, where, required=True)
    where = f"packages[{index}] ({name} {version})"
    if canonicalize_name(name) != name:
        raise _fail(source, where, "the name must be normalized")
    for direct in ("vcs", "directory", "archive", "sdist"):
        if direct in raw:
            raise _fail(source, where, f"fitwheel installs wheels only, not a '{direct}' entry")
    raw_wheels = raw.get("wheels")
    if not isinstance(raw_wheels, list) or not raw_wheels:
        raise _fail(source, where, "the entry lists no wheels")
    wheels = tuple(_wheel(w, source, where, name, version) for w in raw_wheels)
    info = None
    variants = raw.get("variants-json")
    if variants is not None:
        from fitwheel.variants.reading import read_variant_info

        if not isinstance(variants, Mapping):
            raise _fail(source, where, "'variants-json' must be a table")
        try:
            info = read_variant_info(variants, f"{source} {where} variants-json")
        except VariantError as exc:
            raise _fail(source, where, f"invalid variants-json: {exc}") from None
    for w in wheels:
        label = w.label
        if label is not None and (info is None or label not in info.variants):
            raise _fail(
                source, f"{where} {w.filename}", f"variants-json does not describe label {label}"
            )
    tool = raw.get("tool", {})
    targets = tool.get("fitwheel", {}).get("targets", {}) if isinstance(tool, Mapping) else {}
    if not isinstance(targets, Mapping) or not all(isinstance(v, str) for v in targets.values()):
        raise _fail(source, where, "tool.fitwheel.targets must map target names to filenames")
    names = {w.filename for w in wheels}
    for target, filename in targets.items():
        if filename not in names:
            raise _fail(source, where, f"target {target} names {filename}, which is not listed")
    for key in ("marker", "requires-python", "index"):
        _str(raw, key, source, where, required=False)
    marker = raw.get("marker")
    if marker is not None:
        if simple_marker(marker) is None:
            from packaging.markers import InvalidMarker, Marker

            try:
                Marker(marker)
            except InvalidMarker as exc:
                raise _fail(source, where, f"invalid marker: {exc}") from None
        if "variant_" in marker:
            raise _fail(source, where, "variant markers do not belong in packages.marker")
    return LockedPackage(
        name,
        version,
        wheels,
        marker=marker,
        requires_python=raw.get("requires-python"),
        index=raw.get("index"),
        variants_json=variants,
        targets=dict(targets),
        info=info,
        where=where,
    )


def _targets(raw: Any, source: str) -> tuple[TargetRecord, ...]:
    if not isinstance(raw, list):
        raise _fail(source, "tool.fitwheel.targets", "must be an array of tables")
    out = []
    for i, item in enumerate(raw):
        where = f"tool.fitwheel.targets[{i}]"
        if not isinstance(item, Mapping):
            raise _fail(source, where, "must be a table")
        out.append(
            TargetRecord(
                _str(item, "name", source, where, required=True),
                _str(item, "marker", source, where, required=True),
                _str(item, "summary", source, where, required=False) or "",
                _str(item, "python-version", source, where, required=False) or "",
                _str(item, "profile", source, where, required=False) or "",
                _str(item, "profile-sha256", source, where, required=False) or "",
                _str(item, "torch-backend", source, where, required=False) or "",
                _str(item, "torch-backend-requested", source, where, required=False) or "",
                _answers(item.get("answers"), source, f"{where}.answers"),
            )
        )
    return tuple(out)


def _answers(raw: Any, source: str, where: str) -> dict[str, str]:
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or not all(isinstance(v, str) for v in raw.values()):
        raise _fail(source, where, "must map namespaces to where their answer came from")
    return {str(k): v for k, v in raw.items()}


def _plugins(raw: Any, source: str) -> tuple[LockedPlugin, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise _fail(source, "tool.fitwheel.plugins", "must be an array of tables")
    out = []
    for i, item in enumerate(raw):
        where = f"tool.fitwheel.plugins[{i}]"
        if not isinstance(item, Mapping):
            raise _fail(source, where, "must be a table")
        name = _str(item, "name", source, where, required=True)
        version = _str(item, "version", source, where, required=True)
        where = f"{where} ({name} {version})"
        raw_wheels = item.get("wheels")
        if not isinstance(raw_wheels, list) or not raw_wheels:
            raise _fail(source, where, "the plugin lists no wheels")
        wheels = []
        for w in raw_wheels:
            filename = w.get("name") if isinstance(w, Mapping) else None
            try:
                parsed = WheelFilename.parse(str(filename))
            except VariantError:
                raise _fail(source, where, f"{filename!r} is not a wheel file name") from None
            wheels.append(
                _wheel(w, source, where, parsed.normalized_name, str(parsed.parsed_version))
            )
        namespaces = _strings(item.get("namespaces"), source, f"{where}.namespaces")
        out.append(LockedPlugin(canonicalize_name(name), version, tuple(wheels), namespaces))
    return tuple(out)


def _strings(raw: Any, source: str, where: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(v, str) for v in raw):
        raise _fail(source, where, "must be an array of strings")
    return tuple(raw)


def loads_lock(text: str, source: str) -> Lock:
    try:
        data = loads(text, source)
    except TomlReadError as exc:
        raise LockFileError(
            f"{exc}. Nothing was changed; restore the file or run 'fitwheel lock' again."
        ) from None
    version = data.get("lock-version")
    if not isinstance(version, str) or version.split(".")[0] != "1":
        raise _fail(
            source, "lock-version", f"{version!r} is not a lock version fitwheel reads (1.x)"
        )
    raw_packages = data.get("packages")
    if not isinstance(raw_packages, list):
        raise _fail(source, "packages", "the lock has no packages array")
    packages = tuple(_package(p, i, source) for i, p in enumerate(raw_packages))
    tool = data.get("tool", {})
    ours = tool.get("fitwheel", {}) if isinstance(tool, Mapping) else {}
    if not isinstance(ours, Mapping):
        raise _fail(source, "tool.fitwheel", "must be a table")
    targets = _targets(ours.get("targets", []), source)
    known = {t.name for t in targets}
    for p in packages:
        for name in p.targets:
            if known and name not in known:
                raise _fail(source, p.describe(), f"names target {name}, which the lock lacks")
    return Lock(
        packages,
        targets,
        _strings(ours.get("requirements"), source, "tool.fitwheel.requirements"),
        _strings(ours.get("constraints"), source, "tool.fitwheel.constraints"),
        _str(data, "requires-python", source, "requires-python", required=False),
        _strings(data.get("environments"), source, "environments"),
        source,
        _str(ours, "torch-index-url", source, "tool.fitwheel", required=False),
        _plugins(ours.get("plugins"), source),
    )


def read_lock(path: str) -> Lock:
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise LockFileError(f"cannot read the lock file {path}: {exc.strerror or exc}.") from None
    except UnicodeDecodeError:
        raise LockFileError(f"{path} is not UTF-8 text, so it is not a pylock.toml.") from None
    return loads_lock(text, path)


def prune_variants(raw: Mapping[str, Any], labels: Sequence[str]) -> dict[str, Any]:
    """The variants document with only ``labels`` in ``variants`` (each kept whole)."""
    out = dict(raw)
    variants = raw.get("variants", {})
    out["variants"] = {k: v for k, v in variants.items() if k in set(labels)}
    return out
