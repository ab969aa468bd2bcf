"""SIGINT and SIGTERM while fitwheel changes an environment: the first one interrupts and
cancels the worker threads (the process's one token); one that comes while the command is
already stopping waits for the end of the command, so that the cleanup is never cut short;
a signal during a deferred block cancels the workers at once and is raised at the next
checkpoint."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from fitwheel.install.env.signals import checkpoint, deferred, interruptible
from fitwheel.threads import CANCEL


@pytest.fixture(autouse=True)
def clear_token() -> Iterator[None]:
    CANCEL.clear()
    yield
    CANCEL.clear()


def _signal() -> None:
    os.kill(os.getpid(), signal.SIGINT)


def test_the_first_signal_interrupts_and_cancels_the_workers() -> None:
    with pytest.raises(KeyboardInterrupt), interruptible():
        _signal()
        assert CANCEL.cancelled  # pragma: no cover - the signal raised before
    assert not CANCEL.cancelled, "the token is cleared once the command's block ended"


def test_a_second_signal_during_cleanup_does_not_cut_it_short() -> None:
    cleaned: list[str] = []
    with pytest.raises(KeyboardInterrupt), interruptible():
        try:
            _signal()
        finally:
            assert CANCEL.cancelled
            _signal()  # absorbed: the command is stopping already
            cleaned.append("rolled back")
            _signal()
            cleaned.append("temporary folders removed")
    assert cleaned == ["rolled back", "temporary folders removed"]


def test_a_signal_in_a_deferred_block_cancels_the_workers_and_waits_for_a_checkpoint() -> None:
    steps: list[str] = []
    with pytest.raises(KeyboardInterrupt), interruptible():
        with deferred():
            _signal()
            steps.append("deferred block finished")
            assert CANCEL.cancelled  # the workers stop at once
        steps.append("went on to the checkpoint")
        checkpoint()
        steps.append("not reached")  # pragma: no cover
    assert steps == ["deferred block finished", "went on to the checkpoint"]


def test_a_signal_that_waited_is_raised_when_the_command_ends() -> None:
    with pytest.raises(KeyboardInterrupt), interruptible(), deferred():
        _signal()
        # nothing looked for it: the end of the block raises it (the command exits 130)
    assert not CANCEL.cancelled
