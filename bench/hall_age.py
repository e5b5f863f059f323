"""Benchmark: the cost of a Gilded Hall step early in a cycle and late in it.

Target (the project's issue 8, "the state of a cycle is one growing blob"): a step's cost
does not grow with the age of the cycle (a late step within 30 % of an early one, in CPU
time) and neither does the state it reads and writes (within 5 %). What grows without bound (the history, closed
offers, past phases) stays out of the state a step reads and writes, so a step at phase
200 costs what it costs at phase 1.

Set-up: M members (default 8), all in one Hall created at 2026-12-01T10:00Z where each
starts with 10,000 vertebrae (phase length 24 h, victory out of reach). Every phase has the same
realistic traffic, drawn with the fair source: each member buys a random card or a Handy
Pack and opens it, offers another member a trade that is accepted, declined or left to
lapse, gifts a card to another member (GH-7), and now and then looks at its inventory:
about 6 messages per member. Each phase is two passes: the phase's messages, one minute
before its end, then the phase boundary (offers lapse, the seed is revealed and a new one
committed, the summary posted).

Timed: every pass (``Dealer.run_pass``) of every phase; the figures are the time per
message step (the pass's message stage divided by the steps) and the boundary pass, at
the first phases and at the last ones, with the size of the stored state, the history and
the members' holdings at that age.

    .venv/bin/python bench/hall_age.py                   # 200 phases, 8 members (~2 min)
    .venv/bin/python bench/hall_age.py --phases 50       # a quick run
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from benchlib import (  # noqa: E402
    DAY,
    T0,
    Bench,
    SqlCounter,
    Store,
    common_arguments,
    machine_line,
    step,
    timed_pass,
    verdict,
)

from dealer.fairness import FairSource  # noqa: E402
from dealer.shell.admin import add_player, create_game  # noqa: E402
from dealer.store.models import Game, Holding, Inbound  # noqa: E402

GAME = "h1"
CHANNEL = "#game-actions"
TOLERANCE = 1.3
"""A late step may cost at most 30 % more CPU than an early one (runs vary by ~15 %)."""
STATE_TOLERANCE = 1.05
"""The stored state may grow by at most 5 % (its numbers' digits) from phase 2 to the end."""


@dataclass
class PhaseFigures:
    """One phase's timed passes and the store's size after it."""

    phase: int
    steps: int
    message_seconds: float
    message_cpu: float
    boundary_seconds: float
    boundary_cpu: float
    state_bytes: int
    events: int
    holdings: int

    @property
    def ms_per_step(self) -> float:
        """Wall time per message."""
        return 1000 * self.message_seconds / max(self.steps, 1)

    @property
    def cpu_ms_per_step(self) -> float:
        """CPU time per message (what the comparison uses: the machine may be shared)."""
        return 1000 * self.message_cpu / max(self.steps, 1)


class Traffic:
    """The messages of one phase, drawn with the fair source; tracks the offers' ids."""

    def __init__(self, members: list[str], rng: FairSource) -> None:
        self.members = members
        self.rng = rng
        self.next_offer = 1

    def phase(self) -> list[tuple[str, str]]:
        """``(sender, body)`` in sending order."""
        messages: list[tuple[str, str]] = []
        answers: list[tuple[str, str]] = []
        count = len(self.members)
        for index, name in enumerate(self.members):
            if self.rng.chance(1, 2, "purchase"):
                messages.append((name, "buy random card"))
            else:
                messages.append((name, "buy handy pack\nopen handy pack"))
            other = self.members[(index + 1 + self.rng.below(count - 1, "partner")) % count]
            messages.append((name, f"offer 2 vertebrae to {other} for 1 vertebra"))
            answer = self.rng.choice(["accept", "accept", "decline", None], "answer")
            if answer:
                answers.append((other, f"{answer} offer {self.next_offer}"))
            self.next_offer += 1
            receiver = self.members[(index + 1 + self.rng.below(count - 1, "gift")) % count]
            messages.append((name, f"gift {receiver}"))
            if self.rng.chance(1, 4, "look"):
                messages.append((name, "inventory"))
        return messages + answers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--phases", type=int, default=200, help="phases (default 200)")
    parser.add_argument("--members", type=int, default=8, help="members (default 8)")
    parser.add_argument("--window", type=int, default=5,
                        help="phases averaged at each end (default 5)")
    common_arguments(parser)
    args = parser.parse_args(argv)

    store = Store.create(args.database_url, args.keep)
    bench = Bench(store, publisher=args.publisher)
    members = [f"m{i}" for i in range(args.members)]
    traffic = Traffic(members, FairSource("bench-hall-20261201"))
    figures: list[PhaseFigures] = []
    try:
        with step(f"{len(members)} members and the Hall"):
            with bench.dealer.sessions.begin() as session:
                for name in members:
                    add_player(session, name, T0)
                # GH-1: a cycle's inventories are its own; its members start with 10,000
                # vertebrae there.
                create_game(session, "hall", GAME, T0, players=members,
                            settings={"victory_chips": "1000000", "starting_vertebrae": "10000"})
        print(f"store: {store.describe()}; publisher: {args.publisher}", flush=True)
        sql = SqlCounter(bench.dealer.engine) if args.sql_stats else None
        with step(f"{args.phases} phases, every pass timed"):
            for phase in range(1, args.phases + 1):
                last = phase == args.phases  # --sample, --profile, --sql-stats: its messages
                figures.append(play_phase(bench, traffic, phase, args if last else None,
                                          sql if last else None))
                if phase % 25 == 0:
                    print(f" {phase}", end="", file=sys.stderr, flush=True)
        timed = timed_pass(bench, T0 + args.phases * DAY + timedelta(minutes=1))
        refused = bench.count(Inbound, Inbound.status != "applied")
        print(f"messages:         {bench.count(Inbound)} ({refused} not applied as a whole)")
        if sql:
            sql.print(figures[-1].steps, "message")
        return report(figures, args.window, machine_line(timed))
    finally:
        bench.close()


def play_phase(
    bench: Bench, traffic: Traffic, phase: int, args: argparse.Namespace | None = None,
    sql: SqlCounter | None = None,
) -> PhaseFigures:
    """Send phase ``phase``'s traffic, apply it (timed), then cross its boundary (timed).

    With ``args``, the messages' pass is also profiled or sampled as they ask.
    """
    began = T0 + (phase - 1) * DAY
    messages = traffic.phase()
    for number, (sender, body) in enumerate(messages):
        bench.send(sender, body, began + timedelta(minutes=1 + number),
                   channel=CHANNEL, game=GAME)
    applied = timed_pass(bench, began + DAY - timedelta(minutes=1),
                         args.profile if args else None, args.top if args else 35, sql,
                         bool(args and args.sample))
    steps = applied.report.messages
    boundary = timed_pass(bench, began + DAY)
    assert boundary.report.deadlines == 1, boundary.report.line()
    with bench.dealer.sessions() as session:
        game = session.get(Game, GAME)
        state_bytes = len(json.dumps(game.state))
        events = game.next_event_seq - 1
        holdings = session.query(Holding).filter(Holding.account.like("%player:%")).count()
    return PhaseFigures(
        phase, steps,
        applied.stages.get("process_due", applied.total),
        applied.stages_cpu.get("process_due", applied.cpu),
        boundary.stages.get("process_due", boundary.total),
        boundary.stages_cpu.get("process_due", boundary.cpu),
        state_bytes, events, holdings,
    )


def report(figures: list[PhaseFigures], window: int, machine: str) -> int:
    """Print the figures; PASS when late steps cost no more than early ones (within noise)."""
    # Phase 1 carries one-off costs (templates compiled, statement caches filled).
    early, late = figures[1:window + 1], figures[-window:]

    def mean(rows: list[PhaseFigures], attribute: str) -> float:
        return statistics.fmean(getattr(row, attribute) for row in rows)

    print(f"{'phase':>6} {'state bytes':>12} {'history':>8} {'holdings':>9} {'messages':>9} "
          f"{'ms/step':>8} {'CPU ms/step':>12} {'boundary CPU ms':>16}")
    shown = sorted({1, 2, len(figures) // 4, len(figures) // 2, len(figures) - 1, len(figures)})
    for row in (figures[n - 1] for n in shown if n >= 1):
        print(f"{row.phase:>6} {row.state_bytes:>12} {row.events:>8} {row.holdings:>9} "
              f"{row.steps:>9} {row.ms_per_step:>8.2f} {row.cpu_ms_per_step:>12.2f} "
              f"{1000 * row.boundary_cpu:>16.1f}")
    first, last = mean(early, "cpu_ms_per_step"), mean(late, "cpu_ms_per_step")
    first_b, last_b = mean(early, "boundary_cpu"), mean(late, "boundary_cpu")
    ends = f"(phases 2-{window + 1} -> {figures[-window].phase}-{figures[-1].phase})"
    print(f"message step CPU: {first:.2f} ms -> {last:.2f} ms {ends}: x{last / first:.2f}")
    print(f"boundary CPU:     {1000 * first_b:.1f} ms -> {1000 * last_b:.1f} ms: x{last_b / first_b:.2f}")
    wall_first, wall_last = mean(early, "ms_per_step"), mean(late, "ms_per_step")
    print(f"message step:     {wall_first:.2f} ms -> {wall_last:.2f} ms wall")
    print(f"state:            {early[0].state_bytes} bytes after phase {early[0].phase}, "
          f"{late[-1].state_bytes} after phase {late[-1].phase}")
    print(f"machine:          {machine}")
    growth = late[-1].state_bytes / early[0].state_bytes
    ok = (last / first <= TOLERANCE and last_b / first_b <= TOLERANCE
          and growth <= STATE_TOLERANCE)
    print(f"target:           a late step within x{TOLERANCE} of an early one (CPU), the "
          f"state within x{STATE_TOLERANCE} (x{growth:.2f})")
    print(f"result:           {verdict(ok)}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
