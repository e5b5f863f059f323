"""Which connections the HTTP endpoint keeps: strangers cannot take the daemon's file
descriptors (issue 36).

uvicorn gives a connection that never finishes its first request head all the time in
the world, and counts it nowhere. :func:`guarded_protocol` wraps its h11 protocol, and
:class:`Admission` keeps the books: at most ``cap`` connections (one more pushes out the
oldest still sending its head, or is refused with a 503), a head within ``head_timeout``,
a connection at most ``lifetime``. It runs in the endpoint's event loop thread: no lock.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any, Callable

log = logging.getLogger(__name__)

HEAD_END = b"\r\n\r\n"
BUSY = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
        b"content-length: 54\r\n\r\n{\"error\": \"too many connections; send it again later\"}")


@dataclass
class Admission:
    """The endpoint's books: open connections, those still waiting for their head."""

    cap: int = 100
    head_timeout: float = 10.0
    lifetime: float = 60.0
    clock: Callable[[], float] = time.monotonic
    open: set[Any] = field(default_factory=set)
    waiting: dict[Any, float] = field(default_factory=dict)
    """Connections whose first request head is not whole yet, oldest first."""
    refused: int = 0
    pushed_out: int = 0
    timed_out: int = 0

    def admit(self, connection: Any) -> bool:
        """Whether ``connection`` may stay; pushes out the oldest waiting one when full."""
        if len(self.open) >= self.cap:
            if not self.waiting:
                self.refused += 1
                log.warning("webhook endpoint: %s connections open, all busy: one more refused", len(self.open))
                return False
            oldest = next(iter(self.waiting))
            self.pushed_out += 1
            log.warning("webhook endpoint: %s connections open; the oldest still sending its request "
                        "head is closed for a new one", len(self.open))
            self.forget(oldest)
            oldest.hang_up()
        self.open.add(connection)
        self.waiting[connection] = self.clock()
        return True

    def head_received(self, connection: Any) -> None:
        self.waiting.pop(connection, None)

    def forget(self, connection: Any) -> None:
        self.open.discard(connection)
        self.waiting.pop(connection, None)


def guarded_protocol(admission: Admission) -> Callable[..., Any]:
    """uvicorn's ``http`` setting: a factory of h11 protocols kept by ``admission``."""
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class GuardedProtocol(H11Protocol):  # type: ignore[misc]
        """An h11 connection that :class:`Admission` may refuse, push out or time out."""

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._guard_transport = transport
            self._guard_tail = b""
            self._guard_timers: list[Any] = []
            if not admission.admit(self):
                transport.write(BUSY)
                transport.close()
                return
            loop = self.loop
            self._guard_timers = [loop.call_later(admission.head_timeout, self._head_late),
                                  loop.call_later(admission.lifetime, self.hang_up)]

        def data_received(self, data: bytes) -> None:
            if self in admission.waiting:
                # The head is whole once its blank line came (it may straddle two reads).
                seen = self._guard_tail + data[:65536]
                if HEAD_END in seen:
                    admission.head_received(self)
                    self._guard_timers[0].cancel()
                self._guard_tail = seen[-3:]
            super().data_received(data)

        def connection_lost(self, exc: Exception | None) -> None:
            admission.forget(self)
            for timer in getattr(self, "_guard_timers", ()):
                timer.cancel()
            super().connection_lost(exc)

        def _head_late(self) -> None:
            if self in admission.waiting:
                admission.timed_out += 1
                log.warning("webhook endpoint: a request head not whole after %g s: connection closed",
                            admission.head_timeout)
                self.hang_up()

        def hang_up(self) -> None:
            """Close the connection (its ``connection_lost`` settles the books)."""
            admission.forget(self)
            self._guard_transport.close()

    return GuardedProtocol
