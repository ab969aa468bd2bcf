"""User-facing errors outside the format core.

The CLI prints them as one paragraph and exits with status 1.
"""

from __future__ import annotations


class FitwheelError(Exception):
    """A failure the user can act on: ``str(error)`` says what failed, why, and what to do."""

    exit_code = 1
