"""Repeated log lines are limited (issue 36: 188k identical error lines in 25 s)."""

from __future__ import annotations

import logging

from dealer.logs import REPEAT_WINDOW, REPEATS_SHOWN, RepeatFilter
from dealer.shell.admission import Admission


def record(msg: str, *args: object, name: str = "asyncio", level: int = logging.ERROR) -> logging.LogRecord:
    return logging.LogRecord(name, level, __file__, 1, msg, args, None)


def test_a_repeated_line_is_shown_five_times_a_minute_then_counted() -> None:
    now = [0.0]
    kept = RepeatFilter(clock=lambda: now[0])
    shown = [kept.filter(record("socket.accept() out of system resource")) for _ in range(1000)]
    assert shown.count(True) == REPEATS_SHOWN == 5
    # Another kind (another template, level or logger) has its own count.
    assert kept.filter(record("post %s not delivered", 1, name="dealer.shell.delivery"))
    assert kept.filter(record("socket.accept() out of system resource", level=logging.WARNING))
    # A window later the line is shown again, saying how many were left out.
    now[0] = REPEAT_WINDOW
    again = record("socket.accept() out of system resource")
    assert kept.filter(again)
    assert again.getMessage() == "socket.accept() out of system resource [995 more like this left out in 60 s]"
    # Lines of one template with different values count together.
    now[0] = 10 * REPEAT_WINDOW
    shown = [kept.filter(record("message %s refused", n, name="dealer")) for n in range(8)]
    assert shown == [True] * 5 + [False] * 3


def test_the_filter_remembers_a_bounded_number_of_kinds() -> None:
    kept = RepeatFilter(clock=lambda: 0.0)
    for number in range(RepeatFilter.KINDS + 50):
        assert kept.filter(record(f"line {number}"))
    assert len(kept.kinds) == RepeatFilter.KINDS


class Connection:
    def __init__(self, admission: Admission) -> None:
        self.admission = admission
        self.closed = False

    def hang_up(self) -> None:
        self.admission.forget(self)
        self.closed = True


def test_admission_pushes_out_the_oldest_slow_connection_then_refuses() -> None:
    admission = Admission(cap=3)
    a, b, c, d, e = (Connection(admission) for _ in range(5))
    assert all(admission.admit(x) for x in (a, b, c))
    admission.head_received(b)
    # Full: the oldest still waiting for its head (a) makes room for d.
    assert admission.admit(d) and a.closed and not b.closed
    assert admission.open == {b, c, d} and admission.pushed_out == 1
    admission.head_received(c)
    admission.head_received(d)
    # Full, every connection busy with a request: e is refused.
    assert not admission.admit(e) and admission.refused == 1
    assert admission.open == {b, c, d}
