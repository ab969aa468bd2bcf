"""Install a set of wheel files into an environment, all of them or none.

Every wheel takes one path. It is unpacked by the one reader, which checks the archive, RECORD and
every member's hash as it writes (:mod:`fitwheel.install.cache.unpacking`): once into the
unpacked-wheel cache when its content hash is known and a cache is given, else into a private entry
inside the install's transaction folder, removed with that folder whatever happens (commit, failure,
interrupt; a killed run's folder goes at the next run's recovery). Each wheel is checked to be what
was resolved (:mod:`fitwheel.install.place.resolved`); its files are planned from the entry
(:mod:`fitwheel.install.place.linked`): linked or copied into place, and RECORD, INSTALLER and
scripts written. The files of replaced versions are planned for removal; then the transaction
commits (see :mod:`fitwheel.install.place.transaction`). Byte-compiling (``compile_bytecode``)
follows the commit, under the environment's lock (:mod:`fitwheel.install.place.bytecode`): the
install stands whatever the compiler does.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from fitwheel.errors import InstallationError, InvalidWheelError
from fitwheel.fs import storage_error
from fitwheel.install.cache.layout import UnpackError
from fitwheel.install.cache.unpacked import UnpackedCache, UnpackedWheel, unpack_entry
from fitwheel.install.env.interpreter import TargetEnvironment
from fitwheel.install.env.recovery import JOURNAL
from fitwheel.install.env.session import EnvironmentSession
from fitwheel.install.env.signals import deferred
from fitwheel.install.place.directurl import direct_url_record
from fitwheel.install.place.linked import CachedWheelPlan, LinkPlanError, plan_cached_wheel
from fitwheel.install.place.resolved import Resolved, check_unpacked
from fitwheel.install.place.transaction import LinkGroup, Operation, Transaction
from fitwheel.install.place.uninstall import owned_files
from fitwheel.reporter import SILENT, Reporter
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.names import canonicalize_name

INSTALLER_NAME = b"fitwheel\n"


class InstallError(InstallationError):
    pass


class WheelToInstall:
    __slots__ = (
        "checked",
        "direct_url",
        "name",
        "path",
        "requested",
        "resolved",
        "sha256",
        "version",
    )

    def __init__(
        self,
        path: Path,
        name: str,
        version: str,
        requested: bool = True,
        direct_url: dict[str, object] | None = None,
        sha256: str | None = None,
        resolved: Resolved | None = None,
        checked: bool = False,
    ) -> None:
        self.path = path
        #: the distribution name and version (from the resolver, else from the filename)
        self.name = name
        self.version = version
        self.requested = requested
        #: PEP 610 data for a wheel given by path or URL rather than found on an index
        self.direct_url = direct_url
        #: the file's content hash, when known (enables the unpacked-wheel cache)
        self.sha256 = sha256
        #: what the resolver took the wheel to be (checked against the wheel before installing)
        self.resolved = resolved
        #: this very file (by ``sha256``) passed that check for this name and version before,
        #: against the same resolution (a remembered install): it is not checked again
        self.checked = checked and sha256 is not None

    def __repr__(self) -> str:
        return f"WheelToInstall({self.path.name!r}, {self.name!r}, {self.version!r})"

    @classmethod
    def from_path(
        cls, path: Path, *, requested: bool = True, direct: bool = False
    ) -> WheelToInstall:
        name, version = _parse_name(path.name)
        direct_url = direct_url_record(path.resolve()) if direct else None
        return cls(path, name, version, requested, direct_url)


def _parse_name(filename: str) -> tuple[str, str]:
    """Name and version of a wheel filename, with or without a variant label."""
    try:
        wheel = WheelFilename.parse(filename)
    except VariantFormatError as exc:
        raise InstallError(f"{filename} is not a valid wheel filename: {exc}") from exc
    return canonicalize_name(wheel.name), str(wheel.parsed_version)


class InstallResult:
    __slots__ = ("installed", "notes", "removed")

    def __init__(
        self, installed: list[WheelToInstall], removed: list[str], notes: list[str]
    ) -> None:
        self.installed = installed
        self.removed = removed
        self.notes = notes


def _headers_scheme(env: TargetEnvironment, name: str) -> str:
    major, minor, _ = env.version
    return os.path.join(
        env.prefix, "include", "site", f"python{major}.{minor}", canonicalize_name(name)
    )


def install_wheels(
    env: TargetEnvironment,
    wheels: Sequence[WheelToInstall],
    *,
    compile_bytecode: bool = False,
    unpacked: UnpackedCache | None = None,
    link_mode: str = "copy",
    reporter: Reporter = SILENT,
    lock: bool = True,
    commit_hook: Callable[[Operation], None] | None = None,
    allow_overwrite: bool = False,
    remove: Sequence[str] = (),
    compile_timeout: float | None = None,
) -> InstallResult:
    """Install ``wheels`` into ``env``; replaced versions of the same names are removed, and
    so are the installed distributions named in ``remove``, in the same transaction.

    ``unpacked``: the cache that wheels with a known ``sha256`` are unpacked into (the others are
    unpacked into a private entry, removed after). ``lock=False``: the caller's
    :class:`~fitwheel.install.env.session.EnvironmentSession` holds the environment already.
    ``allow_overwrite``: a file another installed distribution owns may be replaced (the new one's
    RECORD lists it); the environment's own files never are. ``compile_bytecode``: the installed
    modules are byte-compiled once the install has committed, within ``compile_timeout`` seconds
    (None: the default bound; see :mod:`fitwheel.install.place.bytecode`)."""
    with EnvironmentSession(reporter=reporter) as envs:
        # the caller's session holds the environment (and recovered it) unless ``lock``
        notes = envs.hold(env) if lock else []
        if unpacked is None or all(wheel.sha256 is None for wheel in wheels):
            # every file comes from a private entry, removed after: a link is a move there
            link_mode = "hardlink"
        with deferred():  # a signal waits until the transaction is held (and abandoned)
            txn = Transaction(env.prefix, link_mode=link_mode)
        try:
            plans, removed_names, clash_notes = _plan(
                env, wheels, txn, unpacked, remove, allow_overwrite, reporter
            )
            txn.commit(hook=commit_hook)
        except BaseException as exc:
            if not (txn.folder / JOURNAL).exists():
                # it never touched the environment (stopped while planning, or before its
                # journal was whole): dropped with its private entries; once the journal is
                # written, the commit rolls back itself (or the next run's recovery does)
                txn.abandon()
            full = _storage(exc, env, None) if isinstance(exc, OSError) else None
            if full is None:
                raise
            raise full from exc
        notes += clash_notes
        if compile_bytecode:
            _compile(env, plans, compile_timeout, reporter)
    return InstallResult(list(wheels), removed_names, notes)


#: which wheel each group and each written file comes from (for error messages)
_Sources = list[tuple[WheelToInstall, list[LinkGroup], list[str]]]


def _plan(
    env: TargetEnvironment,
    wheels: Sequence[WheelToInstall],
    txn: Transaction,
    unpacked: UnpackedCache | None,
    remove: Sequence[str],
    allow_overwrite: bool,
    reporter: Reporter,
) -> tuple[list[tuple[WheelToInstall, CachedWheelPlan]], list[str], list[str]]:
    """Plan the transaction: every wheel's files, and the files of the distributions it
    replaces or removes. Returns each wheel's plan, the distributions removed and the notes."""
    # final path -> staged file (a later wheel's replaces an earlier one's), and trees of files
    # to link (where a staged file or a later tree has the same path, that one wins)
    placed: dict[str, str] = {}
    groups: list[LinkGroup] = []
    sources: _Sources = []
    plans: list[tuple[WheelToInstall, CachedWheelPlan]] = []
    for number, wheel in enumerate(wheels):
        private = txn.folder / "unpacked" / str(number)
        plan = _plan_wheel(env, wheel, unpacked, private, reporter)
        groups.extend(plan.groups)
        for final, content, executable in plan.written:
            placed[final] = txn.stage_bytes(content, executable=executable)
        sources.append((wheel, plan.groups, [w[0] for w in plan.written]))
        plans.append((wheel, plan))
    removed_names: list[str] = []
    removed: set[str] = set()
    replaced = [canonicalize_name(wheel.name) for wheel in wheels]
    names = [*replaced, *(canonicalize_name(n) for n in remove)]
    # reading every installed distribution costs more than installing a few small wheels: only
    # when one of these names may be among them
    installed = env.installed(reporter=reporter) if env.maybe_installed(names) else {}
    for name in names:
        old = installed.get(name)
        if old is not None:
            removed.update(str(path) for path in owned_files(old, env.prefix))
            removed_names.append(f"{old.metadata['Name']} {old.version}")
    _refuse_environment_files(env, placed, groups, sources)
    txn.plan(placed, removed, groups, whole=env.site_dirs)
    notes: list[str] = []
    clashes = [final for final in txn.replaced if final not in removed]
    if clashes:
        if not installed:
            installed = env.installed(reporter=reporter)
        notes = _check_owners(env, clashes, sources, installed, allow_overwrite)
    return plans, removed_names, notes


def _plan_wheel(
    env: TargetEnvironment,
    wheel: WheelToInstall,
    unpacked: UnpackedCache | None,
    private: Path,
    reporter: Reporter,
) -> CachedWheelPlan:
    """Where the files of ``wheel`` go, from its entry in ``unpacked`` (when its hash is
    known), else from a private entry unpacked into the folder ``private``."""
    scheme = {**env.scheme, "headers": _headers_scheme(env, wheel.name)}
    extra = {"INSTALLER": INSTALLER_NAME}
    if wheel.requested:
        extra["REQUESTED"] = b""
    if wheel.direct_url is not None:
        extra["direct_url.json"] = json.dumps(wheel.direct_url).encode()
    try:
        entry = _entry(wheel, unpacked, private, reporter)
        if not wheel.checked:
            # its members checked when unpacked; the archive is not read again
            check_unpacked(
                entry, wheel.path, wheel.path.name, wheel.name, wheel.version, wheel.resolved
            )
        return plan_cached_wheel(entry, scheme, interpreter=env.python, extra_metadata=extra)
    except (UnpackError, InvalidWheelError) as exc:
        raise InstallError(f"{exc}. Nothing was changed in {env.prefix}.") from exc
    except (LinkPlanError, ValueError, OSError, KeyError) as exc:
        full = _storage(exc, env, unpacked)
        if full is not None:
            raise full from exc
        raise InstallError(
            f"cannot install {wheel.path.name}: {exc}. Nothing was changed in {env.prefix}."
        ) from exc


def _entry(
    wheel: WheelToInstall, unpacked: UnpackedCache | None, private: Path, reporter: Reporter
) -> UnpackedWheel:
    if unpacked is not None and wheel.sha256 is not None:
        return unpacked.get(wheel.path, wheel.sha256)
    private.mkdir(parents=True)
    return unpack_entry(wheel.path, private, reporter)


def _compile(
    env: TargetEnvironment,
    plans: list[tuple[WheelToInstall, CachedWheelPlan]],
    timeout: float | None,
    reporter: Reporter,
) -> None:
    from fitwheel.install.place.bytecode import COMPILE_TIMEOUT, ToCompile, compile_installed

    dists = []
    for wheel, plan in plans:
        record, content = plan.record
        dists.append(ToCompile(f"{wheel.name} {wheel.version}", record, content, plan.modules()))
    bound = COMPILE_TIMEOUT if timeout is None else timeout
    compile_installed(env.python, dists, timeout=bound, reporter=reporter)


def _storage(
    exc: BaseException, env: TargetEnvironment, unpacked: UnpackedCache | None
) -> Exception | None:
    """A full (or read-only) disk, named: the cache's when the failed path is in it."""
    path = getattr(exc, "filename", None)
    if unpacked is not None and path and str(path).startswith(str(unpacked.root)):
        return storage_error(
            exc,
            "the unpacked-wheel cache",
            unpacked.root,
            "free some space there or choose another cache with --cache-dir; nothing was "
            f"changed in {env.prefix}",
        )
    state = str(env.prefix / ".fitwheel") + os.sep
    if isinstance(exc, OSError) and path and str(path).startswith(state):
        # a folder being built in the transaction: name the path it was built for (none for
        # the transaction's other files: a private entry, a staged file)
        _txn, build, final = [*str(path)[len(state) :].split(os.sep, 2), "", ""][:3]
        exc.filename = os.sep + final if build == "build" and final else None
    return storage_error(
        exc, "the environment", env.prefix, "free some space there; nothing was changed in it"
    )


#: the files of a virtual environment's own, in its scripts folder
_ENV_SCRIPTS = re.compile(
    r"(python|pythonw|python3|python3\.\d+|python3\.\d+t|pypy3?|pypy3\.\d+)(\.exe)?"
    r"|activate(\.\w+)?|activate_this\.py|Activate\.ps1|deactivate(\.\w+)?",
    re.IGNORECASE,
)


def environment_files(env: TargetEnvironment, final: str) -> str | None:
    """What ``final`` is to the environment itself (its interpreter, ``pyvenv.cfg``, an
    activation script, fitwheel's own state), or None when it is none of these."""
    prefix = str(env.prefix)
    if final == os.path.join(prefix, "pyvenv.cfg"):
        return "the virtual environment's configuration"
    state = os.path.join(prefix, ".fitwheel")
    if final == state or final.startswith(state + os.sep):
        return "fitwheel's own state"
    folder, name = os.path.split(final)
    if folder == os.path.abspath(env.scheme["scripts"]) and _ENV_SCRIPTS.fullmatch(name):
        what = "activation script" if "activ" in name.lower() else "interpreter"
        return f"the environment's {what}"
    if final == os.path.abspath(env.python):
        return "the environment's interpreter"
    return None


def _origin(sources: list[tuple[WheelToInstall, list[LinkGroup], list[str]]], final: str) -> str:
    for wheel, groups, staged in reversed(sources):
        if final in staged or any(
            final.startswith(g.dst) and final[len(g.dst) :] in g.names for g in groups
        ):
            return wheel.path.name
    return "a wheel"


def _refuse_environment_files(
    env: TargetEnvironment,
    placed: dict[str, str],
    groups: list[LinkGroup],
    sources: list[tuple[WheelToInstall, list[LinkGroup], list[str]]],
) -> None:
    """A wheel may not write over the environment's own files (its ``bin/python``, ...)."""
    prefix = str(env.prefix)
    scripts = os.path.abspath(env.scheme["scripts"])
    state = os.path.join(prefix, ".fitwheel") + os.sep
    near = (prefix, scripts)
    candidates = [f for f in placed if os.path.dirname(f) in near or f.startswith(state)]
    for group in groups:
        # only the scripts folder and the prefix (the data scheme's folder) hold such files
        for folder in near:
            base = folder + os.sep
            if base.startswith(group.dst):
                rel = base[len(group.dst) :].replace(os.sep, "/")
                candidates += [
                    group.dst + n
                    for n in group.names
                    if n.startswith(rel) and "/" not in n[len(rel) :]
                ]
        if state.startswith(group.dst):
            rel = state[len(group.dst) :].replace(os.sep, "/")
            candidates += [group.dst + n for n in group.names if n.startswith(rel)]
    for final in candidates:
        what = environment_files(env, final)
        if what is not None:
            raise InstallError(
                f"cannot install {_origin(sources, final)}: it ships {final}, which is {what}; "
                "fitwheel never lets a wheel replace the environment's own files (report it to "
                f"the wheel's publisher). Nothing was changed in {env.prefix}."
            )


def _check_owners(
    env: TargetEnvironment,
    clashes: list[str],
    sources: list[tuple[WheelToInstall, list[LinkGroup], list[str]]],
    installed: dict[Any, Any],
    allow_overwrite: bool,
) -> list[str]:
    """Existing files the install replaces that the replaced versions do not own: another
    installed distribution's are refused (``allow_overwrite``: replaced, with a note);
    files nobody owns are replaced, as pip does."""
    from fitwheel.install.place.uninstall import UninstallError

    replacing = {canonicalize_name(w.name) for w, _g, _s in sources}
    left = set(clashes)
    owners: dict[str, str] = {}
    for name, dist in installed.items():
        if name in replacing or not left:
            continue
        try:
            files = {str(p) for p in owned_files(dist, env.prefix)}
        except UninstallError:
            continue
        for final in left & files:
            owners[final] = f"{dist.metadata['Name']} {dist.version}"
        left -= files
    notes = []
    for final in sorted(owners):
        owner = owners[final]
        wheel = _origin(sources, final)
        if not allow_overwrite:
            raise InstallError(
                f"cannot install {wheel}: it ships {final}, which belongs to {owner} "
                "(installed); fitwheel does not replace another distribution's files. "
                f"Uninstall {owner.split()[0]} first, or pass --allow-overwrite to replace the "
                f"file anyway. Nothing was changed in {env.prefix}."
            )
        notes.append(f"{wheel} replaced {final}, which belonged to {owner} (--allow-overwrite)")
    return notes
