"""One bounded query against a library, with every way it can fail turned into a reason."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

from fitwheel.platform.native.bounded import NativeTimeout, run_bounded, timeout_from_env
from fitwheel.platform.native.replay import ReplayTransport
from fitwheel.platform.native.transport import LibraryUnavailable, NativeError, Transport
from fitwheel.platform.probe import Probe

R = TypeVar("R")

#: a transport, or a function that opens one (called inside the bounded thread)
TransportSource = Transport | Callable[[], Transport]

TIMEOUT_ENV = "FITWHEEL_NATIVE_TIMEOUT"


@dataclass
class Outcome(Generic[R]):
    report: R | None = None
    #: why there is no report: "unavailable", "error", "timeout" ("" when there is one)
    failure: str = ""
    code: int | None = None
    detail: str = ""


def choose_source(
    probe: Probe,
    given: TransportSource | None,
    replay_env: str,
    default: Callable[[], Transport],
    library: str,
) -> tuple[str, TransportSource]:
    """The transport to use and its busy-key: the one given, a recording named by
    ``replay_env`` in the probe's environment, or the real library."""
    if given is not None:
        return f"{library}:given:{id(given)}", given
    path = probe.env.get(replay_env, "")
    if path:
        return f"{library}:replay:{path}", lambda: ReplayTransport.load(path)
    return library, default


def run_query(
    probe: Probe, key: str, source: TransportSource, query: Callable[[Transport], R]
) -> Outcome[R]:
    def work() -> R:
        if hasattr(source, "call"):
            return query(cast(Transport, source))
        return query(source())

    try:
        report = run_bounded(key, work, timeout_from_env(probe.env.get(TIMEOUT_ENV)))
    except NativeTimeout as exc:
        return Outcome(failure="timeout", detail=str(exc))
    except LibraryUnavailable as exc:
        return Outcome(failure="unavailable", detail=str(exc))
    except NativeError as exc:
        return Outcome(failure="error", code=exc.code, detail=str(exc))
    except (OSError, ValueError, TypeError, KeyError, IndexError) as exc:
        # a recording that is not valid JSON, or a library answering nonsense
        return Outcome(failure="error", detail=f"{type(exc).__name__}: {exc}")
    return Outcome(report=report)
