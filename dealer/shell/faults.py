"""Fault injection for the crash tests: ``DEALER_FAULT=POINT[@N]`` kills the process with
SIGKILL at that point (the N-th time it is reached), so ``faults/run.py`` and
``tests/integration/test_fault_run.py`` can check that nothing is lost or done twice. Each
point is named where it sits.
"""

from __future__ import annotations

import os
import signal

POINTS = (
    "after-ingest-commit",
    "before-messages-commit",
    "after-messages-commit",
    "before-deadline-commit",
    "after-deadline-commit",
    "after-send",
    "after-delivered",
    "after-timers",
)
"""Every point :func:`fault` is called with (a test checks each is reached)."""

_hits: dict[str, int] = {}


def fault(point: str) -> None:
    """Kill the process here if ``DEALER_FAULT`` names ``point`` (and this is its N-th time)."""
    wanted = os.environ.get("DEALER_FAULT")
    if not wanted:
        return
    name, _, nth = wanted.partition("@")
    if name != point:
        return
    _hits[point] = _hits.get(point, 0) + 1
    if _hits[point] >= (int(nth) if nth.isdigit() else 1):
        os.kill(os.getpid(), signal.SIGKILL)
