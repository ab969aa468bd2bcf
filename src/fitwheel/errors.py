"""User-facing errors outside the format core, by the kind of action they call for.

Every error fitwheel reports derives from one of the categories below. The CLI prints each as
one paragraph and exits with its ``exit_code`` (2 for :class:`UsageError`, 1 for the others).
Code that raises picks the category that tells the user what to do about it; a module defines
a narrower class only where a caller has a reason to catch it, or where it carries more than a
message.

==========================  ============================================================
category                    what the user does about it
==========================  ============================================================
:class:`UsageError`         fix the command line
:class:`InputError`         fix the named file, setting or option
:class:`NetworkError`       check the index, the URL or the connection
:class:`IntegrityError`     find out why content differs from its hash
:class:`InvalidWheelError`  rebuild or download the wheel again, or report it
:class:`BuildError`         fix the source build (its output is in the message)
:class:`ResolutionError`    relax the requirements, or pick another target
:class:`InstallationError`  fix the environment or the disk fitwheel writes to
==========================  ============================================================
"""

from __future__ import annotations


class FitwheelError(Exception):
    """A failure the user can act on: ``str(error)`` says what failed, why, and what to do."""

    exit_code = 1


class UsageError(FitwheelError):
    """Options or arguments this invocation cannot honour; reported like bad usage (exit 2)."""

    exit_code = 2


class InputError(FitwheelError):
    """What this run was given to read cannot be used as given: a configuration file or
    setting (fitwheel's, pip's, detection overrides), a requirement or requirements file, a
    lock file, a target profile, a variants config, a find-links folder, wheels to publish, or
    options that together ask for something no command can do. The message names the file,
    setting or option, and what to change there."""


class NetworkError(FitwheelError):
    """An index or file server could not be reached, or answered with an error or with a page
    fitwheel cannot read."""


class IntegrityError(FitwheelError):
    """Content that does not match the hash it must have, or has no hash where one is required."""


class InvalidWheelError(FitwheelError):
    """A wheel that fitwheel refuses to read, install or rewrite: malformed, unsafe or lying.

    ``str()`` names the file and the problem, then says what to do about it."""

    #: what a user can do about any wheel fitwheel refuses
    HINT = (
        "fitwheel uses no wheel it cannot trust: rebuild it, download it again, or report it "
        "to its publisher"
    )

    def __init__(self, path: str, problem: str) -> None:
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem.rstrip('.')} ({self.HINT})")


class BuildError(FitwheelError):
    """A source distribution that could not be made into a wheel: an archive fitwheel refuses
    to unpack, a missing or broken ``[build-system]``, or a build backend that failed; the
    message names the sdist, the step and the output."""


class ResolutionError(FitwheelError):
    """What was asked for cannot be turned into files for the target: no version or build
    meets the requirements, they conflict, no build fits the target's hardware, no torch
    backend serves it, or no target of a lock fits this host. The message says what is
    missing and what to relax."""


class InstallationError(FitwheelError):
    """The Python environment fitwheel inspects or changes, or the disk it writes to, cannot be
    used as asked: an interpreter that does not answer, a system Python (PEP 668), files that
    cannot be written, a failed transaction, installed builds that do not fit the machine."""
