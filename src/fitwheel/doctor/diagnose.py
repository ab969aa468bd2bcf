"""The doctor as a function: an environment and a machine in, checks out."""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from fitwheel.doctor.inventory import Inventory, read_inventory
from fitwheel.doctor.report import FAIL, Check
from fitwheel.doctor.static import static_checks
from fitwheel.errors import InstallationError
from fitwheel.platform.profile import Profile

TYPE_CHECKING = False
if TYPE_CHECKING:
    from fitwheel.install.env.interpreter import TargetEnvironment

__all__ = ["VerifyError", "diagnose", "verify_installed", "verify_or_raise"]

DEFAULT_TIMEOUT_S = 120.0


class _Site:
    """Where the environment's packages are, and its marker values."""

    def __init__(
        self, python: str, sites: list[str], markers: Mapping[str, str], problem: Check | None
    ) -> None:
        self.python = python
        self.sites = sites
        self.markers = markers
        self.problem = problem


def _guess_sites(path: str) -> list[str]:
    """site-packages of a virtual environment found from its folder alone (the interpreter
    could not tell)."""
    p = Path(path)
    root = p if p.is_dir() else p.parent.parent
    return sorted(glob.glob(str(root / "lib" / "python*" / "site-packages"))) + sorted(
        glob.glob(str(root / "Lib" / "site-packages"))
    )


def _locate(python: str | None, env: Mapping[str, str], cache_dir: Path | None) -> _Site:
    from fitwheel.install.env.interpreter import find_interpreter, inspect_environment

    interpreter = find_interpreter(python, env)  # a missing path is a usage problem: raises
    try:
        target = inspect_environment(interpreter, env, cache_dir=cache_dir, tags=False)
    except Exception as exc:  # an interpreter that cannot run is a finding, not a crash
        sites = _guess_sites(python or interpreter)
        problem = Check(
            "interpreter",
            None,
            FAIL,
            f"{interpreter} does not run ({exc}); "
            + (
                f"checking the packages in {', '.join(sites)} from their files alone"
                if sites
                else "no site-packages folder found beside it"
            ),
            f"recreate the environment: python3 -m venv --clear {Path(interpreter).parent.parent}",
        )
        return _Site(interpreter, sites, {}, problem)
    return _Site(target.python, target.site_dirs, target.markers, None)


def _cache_dir(env: Mapping[str, str]) -> Path | None:
    try:
        from fitwheel.paths import CacheLayout

        return CacheLayout.locate(None, env).envs
    except Exception:
        return None


def diagnose(
    python: str | None,
    profile: Profile,
    *,
    env: Mapping[str, str] | None = None,
    run: bool = False,
    timeout: float = DEFAULT_TIMEOUT_S,
    skip: Sequence[str] = (),
    gpu_policy: str = "all",
) -> list[Check]:
    """Every check for the environment of ``python`` (an interpreter or a venv folder; None:
    the active virtual environment) on the machine ``profile`` describes."""
    env = os.environ if env is None else env
    site = _locate(python, env, _cache_dir(env))
    checks: list[Check] = [site.problem] if site.problem is not None else []
    inventory = read_inventory(site.sites)
    checks += static_checks(inventory, profile, site.markers, gpu_policy=gpu_policy)
    if run:
        checks += _smoke(site, inventory, profile, timeout, skip, env)
    return checks


def _smoke(
    site: _Site,
    inventory: Inventory,
    profile: Profile,
    timeout: float,
    skip: Sequence[str],
    env: Mapping[str, str],
) -> list[Check]:
    from fitwheel.doctor.builds import build_of
    from fitwheel.doctor.report import NA
    from fitwheel.doctor.smoke import smoke_checks

    if site.problem is not None:
        return [Check("smoke tests", None, NA, "the interpreter does not run")]
    builds = {d.key: b for d in inventory.dists.values() if (b := build_of(d)) is not None}
    installed = set(inventory.dists)
    checks = smoke_checks(
        site.python, builds, installed, profile, timeout=timeout, skip=skip, env=env
    )
    if not checks:
        checks.append(
            Check("smoke tests", None, NA, "no torch, JAX or CuPy installed: nothing to run")
        )
    return checks


def verify_installed(
    environment: TargetEnvironment,
    profile: Profile,
    names: Iterable[str],
    *,
    gpu_policy: str = "all",
    requirements: bool = True,
) -> list[Check]:
    """The static checks for the distributions ``names`` just installed into ``environment``
    (what ``install --verify`` and ``sync --verify`` run); failures are the checks with status
    ``fail``. ``requirements=False`` (an install with ``--no-deps``) leaves out the
    requirement consistency checks."""
    inventory = read_inventory(environment.site_dirs)
    checks = static_checks(
        inventory, profile, environment.markers, gpu_policy=gpu_policy, only=list(names)
    )
    return checks if requirements else [c for c in checks if c.name != "requirements"]


class VerifyError(InstallationError):
    """``--verify`` found installed builds that do not fit the machine."""


def verify_or_raise(
    environment: TargetEnvironment,
    profile: Profile,
    names: Iterable[str],
    *,
    gpu_policy: str = "all",
    requirements: bool = True,
    action: str = "install",
) -> list[Check]:
    """:func:`verify_installed`, raising :class:`VerifyError` (one paragraph naming every
    failed check and its fix, and the ``action`` that finished: "install", "sync") when one
    fails; returns the checks (passed, warned and not applicable ones) when none does."""
    checks = verify_installed(
        environment, profile, names, gpu_policy=gpu_policy, requirements=requirements
    )
    failed = [c for c in checks if c.status == FAIL]
    if failed:
        problems = " ".join(
            f"{c.package or c.name}: {c.detail}" + (f" (fix: {c.fix})" if c.fix else "") + "."
            for c in failed
        )
        raise VerifyError(
            f"the {action} finished, but --verify found {len(failed)} problem"
            f"{'s' * (len(failed) != 1)} in {environment.prefix}: {problems} Run 'fitwheel "
            f"doctor --python {environment.prefix}' for the whole checklist."
        )
    return checks
