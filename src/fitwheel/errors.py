"""User-facing errors outside the format core, by the kind of action they call for.

The CLI prints each as one paragraph and exits with its ``exit_code``. Code that raises picks
the category that tells a caller what to do about it; modules subclass a category only where a
caller has a reason to catch the narrower class.
"""

from __future__ import annotations


class FitwheelError(Exception):
    """A failure the user can act on: ``str(error)`` says what failed, why, and what to do."""

    exit_code = 1


class UsageError(FitwheelError):
    """Options or arguments this invocation cannot honour; reported like bad usage (exit 2)."""

    exit_code = 2


class NetworkError(FitwheelError):
    """An index or file server could not be reached, or answered with an error."""


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
