"""How much of a stranger's chatter (an account linked to no player) a push platform stores:
:data:`PER_STRANGER` each and :data:`ALL_STRANGERS` in all per :data:`WINDOW`, the rest
logged, not stored (issue 36: 303 DMs of one account were 303 rows). A ``join`` that makes
a player is never limited."""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from typing import Callable

log = logging.getLogger(__name__)

PER_STRANGER = 5
"""Messages stored per stranger per :data:`WINDOW`."""
ALL_STRANGERS = 100
"""Messages stored from all strangers together per :data:`WINDOW`."""
WINDOW = 600.0
"""Seconds of the sliding window."""
REMEMBERED = 10000
"""Strangers remembered at most (those heard longest ago are forgotten first)."""


class StrangerLimit:
    """A sliding-window limit per stranger and for all of them (thread-safe)."""

    def __init__(self, per_stranger: int = PER_STRANGER, all_strangers: int = ALL_STRANGERS,
                 window: float = WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_stranger = per_stranger
        self.all_strangers = all_strangers
        self.window = window
        self.clock = clock
        self.heard: dict[str, deque[float]] = {}
        self.everyone: deque[float] = deque()
        self.dropped = 0
        self._lock = threading.Lock()

    def allow(self, account: str) -> bool:
        """Whether a message of the stranger ``account`` may be stored now (it counts)."""
        now = self.clock()
        with self._lock:
            _expire(self.everyone, now - self.window)
            mine = self.heard.pop(account, None) or deque()
            _expire(mine, now - self.window)
            self.heard[account] = mine  # most recently heard last
            if len(self.heard) > REMEMBERED:
                del self.heard[next(iter(self.heard))]
            if len(mine) >= self.per_stranger or len(self.everyone) >= self.all_strangers:
                self.dropped += 1
                return False
            mine.append(now)
            self.everyone.append(now)
            return True


def _expire(times: deque[float], before: float) -> None:
    while times and times[0] <= before:
        times.popleft()
