"""Fault injection for the crash tests: ``DEALER_FAULT=<point>`` kills the process at that
point (with SIGKILL: no clean-up runs), so a test can check that nothing is lost or done
twice. The points: ``after-deadline-commit`` (a deadline's step is committed, the pass has
not gone on) and ``after-send`` (a post is sent, not yet marked delivered)."""

from __future__ import annotations

import os
import signal


def fault(point: str) -> None:
    """Kill the process here if ``DEALER_FAULT`` names ``point``; otherwise do nothing."""
    if os.environ.get("DEALER_FAULT") == point:
        os.kill(os.getpid(), signal.SIGKILL)
