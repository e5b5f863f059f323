"""Fault injection for the crash tests: ``DEALER_FAULT=<point>`` kills the process at that
point (with SIGKILL: no clean-up runs), so a test can check that nothing is lost or done
twice. ``DEALER_FAULT=<point>@N`` kills it the N-th time the point is reached instead of
the first, so a kill can also land in the middle of a batch.

The points (each named where it sits):

- ``after-ingest-commit``: a batch of inbox messages is stored, its files not yet moved to
  ``processed/`` (the next pass finds them stored already);
- ``before-messages-commit`` / ``after-messages-commit``: a group of messages is applied
  but not committed (all of it is applied again) / committed, the pass not gone on;
- ``before-deadline-commit`` / ``after-deadline-commit``: a deadline's step is done but not
  committed (it fires again) / committed, the pass not gone on;
- ``after-send``: a post is sent, not yet marked delivered (it is sent again, to the same
  idempotency key);
- ``after-delivered``: a post is marked delivered, the next not yet sent;
- ``after-timers``: the pass is over and the timers are set, the daemon about to wait.

``faults/run.py`` and ``tests/integration/test_fault_run.py`` kill the daemon at every one
of them (and at random moments) and check the store and the outbox afterwards.
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
    """Kill the process here if ``DEALER_FAULT`` names ``point`` (and this is the N-th time
    it is reached, for ``point@N``); otherwise do nothing."""
    wanted = os.environ.get("DEALER_FAULT")
    if not wanted:
        return
    name, _, nth = wanted.partition("@")
    if name != point:
        return
    _hits[point] = _hits.get(point, 0) + 1
    if _hits[point] >= (int(nth) if nth.isdigit() else 1):
        os.kill(os.getpid(), signal.SIGKILL)
