"""Install a set of wheel files into an environment, all of them or none.

A wheel whose content hash is known is unpacked once into the unpacked-wheel cache, and its files
are linked (or copied) from there into place (:mod:`fitwheel.install.linked`). Other wheels, and
byte-compiled installs, go through the PyPA ``installer`` library into one transaction's staging
folder (:class:`StagingDestination`). The files of replaced versions are planned for removal;
then the transaction commits (see :mod:`fitwheel.install.transaction`). Before any of it, each
wheel is checked to be what was resolved (:mod:`fitwheel.install.resolved`).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from fitwheel.errors import FitwheelError, InvalidWheelError
from fitwheel.install.environment import TargetEnvironment
from fitwheel.install.linked import LinkPlanError, plan_cached_wheel
from fitwheel.install.resolved import Resolved, check_wheel
from fitwheel.install.transaction import (
    LinkGroup,
    Operation,
    Transaction,
    environment_lock,
    recover,
)
from fitwheel.install.uninstall import owned_files
from fitwheel.install.unpacked import UnpackedCache, UnpackError
from fitwheel.variants.errors import VariantFormatError
from fitwheel.variants.filenames import WheelFilename
from fitwheel.variants.names import canonicalize_name

INSTALLER_NAME = b"fitwheel\n"


class InstallError(FitwheelError):
    pass


class WheelToInstall:
    __slots__ = ("direct_url", "name", "path", "requested", "resolved", "sha256", "version")

    def __init__(
        self,
        path: Path,
        name: str,
        version: str,
        requested: bool = True,
        direct_url: dict[str, Any] | None = None,
        sha256: str | None = None,
        resolved: Resolved | None = None,
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

    def __repr__(self) -> str:
        return f"WheelToInstall({self.path.name!r}, {self.name!r}, {self.version!r})"

    @classmethod
    def from_path(
        cls, path: Path, *, requested: bool = True, direct: bool = False
    ) -> WheelToInstall:
        name, version = _parse_name(path.name)
        direct_url = None
        if direct:
            direct_url = {"url": path.resolve().as_uri(), "archive_info": {}}
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
    return str(env.prefix / "include" / "site" / f"python{major}.{minor}" / canonicalize_name(name))


def install_wheels(
    env: TargetEnvironment,
    wheels: Sequence[WheelToInstall],
    *,
    compile_bytecode: bool = False,
    unpacked: UnpackedCache | None = None,
    link_mode: str = "copy",
    notice: TextIO | None = None,
    lock: bool = True,
    commit_hook: Callable[[Operation], None] | None = None,
    remove: Sequence[str] = (),
) -> InstallResult:
    """Install ``wheels`` into ``env``; replaced versions of the same names are removed, and
    so are the installed distributions named in ``remove``, in the same transaction.

    ``lock=False``: the caller already holds the environment's lock."""
    with environment_lock(env.prefix, notice=notice) if lock else contextlib.nullcontext():
        notes = recover(env.prefix)
        numbers = itertools.count()
        txn = Transaction(env.prefix, link_mode=link_mode)
        try:
            # final path -> staged file (a later wheel's replaces an earlier one's), and trees
            # of cached files to link (where a staged file or a later tree has the same path,
            # that one wins)
            placed: dict[str, str] = {}
            groups: list[LinkGroup] = []
            for wheel in wheels:
                scheme = {**env.scheme, "headers": _headers_scheme(env, wheel.name)}
                extra = {"INSTALLER": INSTALLER_NAME}
                if wheel.requested:
                    extra["REQUESTED"] = b""
                if wheel.direct_url is not None:
                    extra["direct_url.json"] = json.dumps(wheel.direct_url).encode()
                try:
                    check_wheel(
                        wheel.path, wheel.path.name, wheel.name, wheel.version, wheel.resolved
                    )
                    if unpacked is not None and wheel.sha256 is not None and not compile_bytecode:
                        plan = plan_cached_wheel(
                            unpacked.get(wheel.path, wheel.sha256),
                            scheme,
                            interpreter=env.python,
                            extra_metadata=extra,
                        )
                        groups.extend(plan.groups)
                        for final, content, executable in plan.written:
                            placed[final] = txn.stage_bytes(content, executable=executable)
                        continue
                    staged = _stage_with_installer(
                        env,
                        wheel,
                        scheme,
                        txn,
                        extra,
                        compile_bytecode,
                        numbers,
                        unpacked,
                        link_mode,
                    )
                except (UnpackError, InvalidWheelError) as exc:
                    raise InstallError(f"{exc}. Nothing was changed in {env.prefix}.") from exc
                except (LinkPlanError, ValueError, OSError, KeyError) as exc:
                    raise InstallError(
                        f"cannot install {wheel.path.name}: {exc}. Nothing was changed in "
                        f"{env.prefix}."
                    ) from exc
                placed.update(staged)
            installed = env.installed()
            removed_names: list[str] = []
            removed: set[str] = set()
            replaced = [canonicalize_name(wheel.name) for wheel in wheels]
            for name in [*replaced, *(canonicalize_name(n) for n in remove)]:
                old = installed.get(name)
                if old is not None:
                    removed.update(str(path) for path in owned_files(old, env.prefix))
                    removed_names.append(f"{old.metadata['Name']} {old.version}")
            txn.plan(placed, removed, groups)
        except BaseException:
            txn.abandon()
            raise
        txn.commit(hook=commit_hook)
    return InstallResult(list(wheels), removed_names, notes)


def _stage_with_installer(
    env: TargetEnvironment,
    wheel: WheelToInstall,
    scheme: dict[str, str],
    txn: Transaction,
    extra: dict[str, bytes],
    compile_bytecode: bool,
    numbers: itertools.count[int],
    unpacked: UnpackedCache | None,
    link_mode: str,
) -> dict[str, str]:
    """The general path: the PyPA ``installer`` library writes the wheel into staging."""
    from installer import install
    from installer.exceptions import InstallerError
    from installer.sources import WheelFile

    from fitwheel.install.staging import StagingDestination, UnpackedWheelSource

    destination = StagingDestination(
        scheme,
        prefix=env.prefix,
        stage_root=txn.stage_root,
        interpreter=env.python,
        compile_bytecode=compile_bytecode,
        numbers=numbers,
        link_mode=link_mode,
    )
    try:
        if unpacked is not None and wheel.sha256 is not None:
            install(UnpackedWheelSource(unpacked.get(wheel.path, wheel.sha256)), destination, extra)
        else:
            from fitwheel.wheel.archive import verify_wheel

            # the one reader checks the archive, RECORD and every hash before installer reads it
            for problem in verify_wheel(wheel.path):
                warnings.warn(f"{wheel.path.name}: {problem}", stacklevel=2)
            with WheelFile.open(wheel.path) as source:
                install(source, destination, extra)
    except InvalidWheelError as exc:
        raise InstallError(f"{exc}. Nothing was changed in {env.prefix}.") from exc
    except InstallerError as exc:
        raise InstallError(
            f"cannot install {wheel.path.name}: {exc}. Nothing was changed in {env.prefix}."
        ) from exc
    return destination.placed
