"""The time limits of one HTTP attempt, and the one thread that enforces them.

:class:`Deadline` holds an attempt's limits: the answer's headers within the per-read
``timeout`` of the request being sent, a page whole within its ``total``, and a minimum
throughput for the body, counted over the time spent *waiting on the socket* only (time the
caller spends inflating, hashing or writing between reads does not count). The watchdog thread
shuts down the socket of an attempt past a limit, which ends a read however the server
trickles: a byte every two seconds keeps a per-read time-out happy, never the throughput rule.

The connections of :mod:`fitwheel.index.http`'s pools are :func:`watched`: they hand their socket
to the watchdog when they send a request of the attempt the calling thread is making
(:data:`ATTEMPT`).
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import socket

#: a page, metadata or variants file must be complete within this many times ``timeout``
PAGE_TIME_FACTOR = 4
#: the least a body may bring: this many bytes a second ...
MIN_RATE = 1024.0
#: ... over every this many seconds spent waiting for it
RATE_WINDOW = 30.0


def rate_text(rate: float) -> str:
    """``1024.0`` -> ``'1 KiB/s'``; ``200.0`` -> ``'200 B/s'``."""
    return f"{rate / 1024:g} KiB/s" if rate >= 1024 else f"{rate:g} B/s"


class Deadline:
    """The time limits of one attempt. From the moment the request is sent, the answer's headers
    must arrive within ``timeout`` seconds, and a page must be complete within ``total``
    seconds (None: no total limit, for downloads). Each read of the body must bring something
    within ``timeout`` seconds (the socket's own time-out says the same), and the body at least
    ``min_rate`` bytes a second over every ``window`` seconds spent waiting on the socket.

    The reading thread brackets each read with :meth:`start_read` and :meth:`end_read`; the
    watchdog reads those fields without a lock, in an order that can only make it late, never
    early (:meth:`expiry`)."""

    __slots__ = (
        "at",
        "expired",
        "hard",
        "in_body",
        "min_rate",
        "reading_since",
        "received",
        "sock",
        "timeout",
        "total",
        "waited",
        "why",
        "window",
    )

    def __init__(
        self,
        timeout: float,
        total: float | None,
        *,
        min_rate: float = MIN_RATE,
        window: float = RATE_WINDOW,
    ) -> None:
        self.timeout = timeout
        self.total = total
        self.min_rate = min_rate
        self.window = window
        #: when the headers are due; when the whole answer is due
        self.at = math.inf
        self.hard = math.inf
        self.expired = False
        #: which limit the watchdog enforced (see :meth:`expiry`)
        self.why = ""
        self.in_body = False
        #: the current window: seconds spent waiting on the socket, and the bytes they brought
        self.waited = 0.0
        self.received = 0
        #: when the read in progress began (0.0: none is)
        self.reading_since = 0.0
        self.sock: socket.socket | None = None

    def start_read(self) -> None:
        self.reading_since = time.monotonic()

    def end_read(self, size: int) -> None:
        """Count a read of ``size`` bytes; a window that brought its bytes starts a new one."""
        started = self.reading_since
        # cleared before ``waited`` grows, so that the watchdog never counts this read twice
        self.reading_since = 0.0
        self.waited += time.monotonic() - started
        self.received += size
        if self.received >= self.min_rate * self.window:
            self.waited = 0.0
            self.received = 0

    def too_slow(self) -> bool:
        """Whether a whole window of waiting brought less than the rule asks for."""
        return self.waited >= self.window

    def expiry(self, now: float) -> tuple[float, str]:
        """When this attempt passes a limit, as the watchdog sees it at ``now``, and which
        ("headers", "total", "stall": a read that brought nothing for ``timeout`` seconds, or
        "slow": a window of waiting that did not bring its bytes; a read that passes both at
        once has stalled). In the body, while no read is in progress, the earliest the next
        read could pass one (the watchdog looks again then): waiting only counts while a read
        is in progress."""
        if not self.in_body:
            return self.at, "total" if self.at >= self.hard else "headers"
        waited = self.waited  # read before ``reading_since``: see end_read
        since = self.reading_since or now
        stall = since + self.timeout
        slow = since + self.window - waited
        when, why = (stall, "stall") if stall <= slow else (slow, "slow")
        return (self.hard, "total") if self.hard <= when else (when, why)

    def detail(self, why: str = "") -> str:
        """What went wrong, for the error: ``why`` is the limit passed ("headers", "total",
        "slow", or "stall": the socket's per-read time-out in the body); default: the one the
        watchdog enforced, else the per-read time-out."""
        why = why or self.why or ("stall" if self.in_body else "headers")
        if why == "total":
            return f"the answer was not complete within {self.total:g} s"
        if why == "slow":
            return (
                f"received {self.received} bytes in {self.window:g} s of waiting: too slow "
                f"(under {rate_text(self.min_rate)})"
            )
        if why == "stall":
            return f"the answer stalled (nothing arrived for {self.timeout:g} s)"
        return f"no answer within {self.timeout:g} s"


class Watchdog:
    """One thread that ends the attempts whose deadline has passed.

    It sleeps until the nearest deadline it knows of, and is woken only by an attempt whose
    deadline comes sooner than that: waking it for every request and every answer's headers
    would hand the interpreter lock to it hundreds of times in a cold install, to learn
    nothing new (a deadline later than its wake-up is seen when it wakes)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._live: set[Deadline] = set()
        self._thread: threading.Thread | None = None
        #: when the thread wakes next (``inf``: only when woken)
        self._wake = math.inf

    def _nudge(self, when: float) -> None:  # under the lock
        if when < self._wake:
            self._wake = when
            self._cond.notify()

    def attach(self, deadline: Deadline, sock: socket.socket) -> None:
        """Start timing ``deadline``, whose request was just sent on ``sock``."""
        now = time.monotonic()
        with self._cond:
            deadline.sock = sock
            deadline.at = now + deadline.timeout
            if deadline.total is not None:
                deadline.hard = now + deadline.total
                deadline.at = min(deadline.at, deadline.hard)
            self._live.add(deadline)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="fitwheel-http-deadlines", daemon=True
                )
                self._thread.start()
            self._nudge(deadline.at)

    def in_body(self, deadline: Deadline) -> None:
        """The answer's headers came: from now on the body's rules hold (the watchdog may be
        sleeping until the headers' limit, which can be later than the body's)."""
        with self._cond:
            deadline.in_body = True
            self._nudge(deadline.expiry(time.monotonic())[0])

    def forget(self, deadline: Deadline) -> None:
        with self._cond:
            self._live.discard(deadline)
            deadline.sock = None

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                nearest = math.inf
                for deadline in list(self._live):
                    when, why = deadline.expiry(now)
                    if when > now:
                        nearest = min(nearest, when)
                        continue
                    deadline.why = why
                    deadline.expired = True
                    self._live.discard(deadline)
                    if deadline.sock is not None:
                        _shut(deadline.sock)
                self._wake = nearest
                self._cond.wait(None if nearest == math.inf else nearest - now)


def _shut(sock: socket.socket) -> None:
    # the plain socket's shutdown, also for a TLS socket (whose own shutdown would tear down the
    # TLS state under the thread reading it): the blocked read returns at once
    import socket

    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


WATCHDOG = Watchdog()
#: the deadline of the attempt the current thread is making (read by the connections)
ATTEMPT = threading.local()

_WATCHED: dict[type[Any], type[Any]] = {}


def watched(base: type[Any]) -> type[Any]:
    """``base`` (a urllib3 connection class) telling the watchdog when it sends a request."""
    found = _WATCHED.get(base)
    if found is None:

        class Watched(base):  # type: ignore[misc]
            def getresponse(self) -> Any:
                deadline = getattr(ATTEMPT, "deadline", None)
                if deadline is not None and self.sock is not None:
                    WATCHDOG.attach(deadline, self.sock)
                return super().getresponse()

        found = _WATCHED[base] = Watched
    return found
