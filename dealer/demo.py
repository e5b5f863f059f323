"""``dealer demo``: a Stationary Roulette game through the real daemon pass, on a simulated clock."""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta, timezone
from pathlib import Path

from dealer.clock import iso
from dealer.shell.passes import Dealer
from dealer.publish.stdout import StdoutPublisher
from dealer.shell.admin import add_player, create_game
from dealer.views import game_view
from dealer.settings import Settings
from dealer.store.db import make_engine, migrate
from dealer.inbox.memory import MemoryInbox

START = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)

# The scripted players' choices, one per phase (preparation phase, then rounds 1 to 10).
# Each colour stays within the SR-4 limit of five wins per game.
ALICE_PREPARES = ["gold", "silver", "black", "gold", "silver", "black", "gold", "silver", "black", "gold"]
BOB_PREPARES = ["silver", "gold", "gold", "black", "silver", "gold", "black", "silver", "gold", "silver"]
ALICE_BETS = ["gold 40", "gold 25 silver 15", "silver 40", "gold 20 black 20", "black 40",
              "gold 30 silver 10", "silver 20 black 20", "gold 40", "silver 40", "gold 35 black 5"]
BOB_BETS = ["gold 30 silver 10", "black 40", "black 40", "silver 25 black 15", "gold 40",
            "silver 20 black 20", "gold 20 silver 20", "black 40", "gold 30 black 10", "silver 40"]
LAYOUTS = {"gold": "gold 30 silver 10", "silver": "gold 25 silver 15", "black": "gold 35 silver 5"}


def _prepare(colour: str) -> str:
    return f"prepare {colour} {LAYOUTS[colour]}"


def _pass(dealer: Dealer, now: datetime) -> None:
    """One daemon pass; anything it could not handle ends the demo with an error."""
    report = dealer.run_pass(now)
    if not report.ok:
        raise SystemExit(f"dealer demo failed: {report.line()} (the log above says why)")


def run_demo(database: str | None = None) -> None:
    """Play the demo game and print every post as the daemon publishes it."""
    with tempfile.TemporaryDirectory(prefix="dealer-demo-") as scratch:
        path = Path(database) if database else Path(scratch) / "demo.db"
        settings = Settings(home=scratch, database_url=f"sqlite:///{path}", inbox="memory", publish="stdout",
                            deadline_overrides="", _env_file=None)
        engine = make_engine(settings.database_url)
        migrate(engine)
        engine.dispose()
        inbox = MemoryInbox()
        dealer = Dealer(settings, inbox=inbox, publisher=StdoutPublisher())
        print("dealer demo: Stationary Roulette, alice vs bob, 10 rounds of 24 h played in accelerated time.\n")
        with dealer.sessions.begin() as session:
            add_player(session, "alice", START, chips=100)
            add_player(session, "bob", START, chips=100)
            create_game(session, "roulette", "demo", START, players=["alice", "bob"],
                        start=START, settings={"remind_before": "1h"})
        _pass(dealer, START)
        for phase in range(11):
            phase_start = START + phase * DAY
            sent = phase_start + timedelta(hours=2)
            alice, bob = [], []
            if phase >= 1:
                alice.append(f"bet {ALICE_BETS[phase - 1]}")
                bob.append(f"bet {BOB_BETS[phase - 1]}")
            if phase <= 9:
                alice.append(_prepare(ALICE_PREPARES[phase]))
                if phase != 4:  # bob forgets one preparation: SR-10 inactivity in action
                    bob.append(_prepare(BOB_PREPARES[phase]))
            for sender, lines in (("alice", alice), ("bob", bob)):
                if lines:
                    inbox.put({"id": f"{sender}-{phase}", "sender": sender, "channel": "pm",
                               "body": "\n".join(lines), "sent_at": iso(sent)})
            _pass(dealer, sent)
            _pass(dealer, phase_start + DAY)
            with dealer.sessions() as session:
                if game_view(session, "demo")["status"] == "finished":
                    break
        with dealer.sessions() as session:
            view = game_view(session, "demo")
        dealer.dispose()
        print(f"\nFinal: {view['status']}, scores {view['scores']}, winner {view['winner']}.")
        print("Run it against your own store with `dealer run`; see the README's walkthrough.")
