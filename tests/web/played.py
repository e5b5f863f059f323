"""A store holding a played game of each kind, for the status page's tests.

:func:`play_all` plays, through the real daemon (directory inbox, ``run --once`` passes at
controlled times): the scripted roulette ``r1``, race ``derby`` and Hall ``h1`` of
``tests/integration/scripts.py``, and a second Hall ``h2`` with one Exoptosis duel finished
(``h2-duel-1``) and one still choosing hands (``h2-duel-2``: its chosen hand is secret,
GH-10), plus a player whose name is markup (``<b>mallory</b>``-like text is escaped).
"""

from __future__ import annotations

import json
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "integration"))

import scripts  # noqa: E402

from dealer.clock import iso_exact  # noqa: E402
from dealer.settings import Settings  # noqa: E402
from dealer.shell.admin import add_player, create_game, grant  # noqa: E402
from dealer.shell.passes import Dealer  # noqa: E402

T_HALL = datetime(2027, 1, 4, 0, 0, tzinfo=timezone.utc)
NOW = T_HALL + timedelta(hours=4)
"""When the store is "now" for the pages: h2 is running, its deadlines ahead."""
MARKUP_HORSE = '<b>Bold</b> & "Co"'
"""A horse name that is markup: every page shows it as text."""
SECRET_HAND = "JD QD KD AD"
"""The hand carol chose in ``h2-duel-2`` while dave has not chosen: secret (GH-10)."""


class Harness:
    """The real daemon on ``database_url`` with a directory inbox and outbox under ``root``
    (as ``tests/integration/conftest.py``'s, without its test rulesets)."""

    def __init__(self, database_url: str, root: Path) -> None:
        self.inbox_dir = root / "inbox"
        self.settings = Settings(home=str(root), database_url=database_url,
                                 inbox=f"dir:{self.inbox_dir}", publish=f"dir:{root / 'outbox'}",
                                 _env_file=None)
        self.dealer = Dealer(self.settings)
        self.sessions = self.dealer.sessions
        self._n = 0

    def send(self, sender: str, body: str, at: datetime, **fields: Any) -> str:
        """Drop a message file into the inbox."""
        self._n += 1
        ident = f"m{self._n:05d}"
        message = {"id": ident, "sender": sender, "channel": "pm", "body": body,
                   "sent_at": iso_exact(at), **fields}
        self.inbox_dir.mkdir(parents=True, exist_ok=True)
        (self.inbox_dir / f"{self._n:05d}-{ident}.json").write_text(json.dumps(message), encoding="utf-8")
        return ident

    def run(self, now: datetime) -> Any:
        """One pass at ``now``."""
        return self.dealer.run_pass(now)

    def admin(self, fn: Callable[..., Any]) -> Any:
        """``fn(session)`` in one transaction."""
        with self.sessions.begin() as session:
            return fn(session)


def play_all(harness: Any) -> None:
    """Play every game into ``harness``'s store (see the module's docstring)."""
    for make in (scripts.roulette, scripts.races, scripts.hall):
        _on_daemon(make(), harness)
    _exoptosis(harness)
    _government(harness)


def _on_daemon(script: scripts.Script, harness: Any) -> None:
    """:meth:`scripts.Script.on_daemon`, where the scripts' players exist once (the scripts
    share alice and bob; each adds its own wallets)."""
    from dealer.store.models import Player

    def setup(session: Any) -> None:
        for name, wallet in script.wallets.items():
            if session.get(Player, name) is None:
                add_player(session, name, script.created)
            for item, amount in wallet.items():
                grant(session, name, scripts._item_text(item), amount, script.created)
        create_game(session, script.kind, script.game_id, script.created, players=script.players,
                    start=script.start, settings=dict(script.settings), server_seed=script.seed)

    harness.admin(setup)
    for at, entry in script.timeline():
        if isinstance(entry, scripts.Message):
            harness.send(entry.sender, entry.body, entry.at, channel=entry.channel, game=script.game_id)
            continue
        harness.run(at)
        harness.admin(lambda session, g=entry: grant(
            session, g.player, scripts._item_text(g.item), g.amount, g.at, game_id=script.game_id))
    harness.run(script.end)


def _exoptosis(harness: Any) -> None:
    t0 = T_HALL
    cards = {"alice": "7C 8C 9C 10C", "bob": "2H 3H 4H 5H 6H", "carol": SECRET_HAND, "dave": "2S 3S 4S 5S"}

    def setup(session: Any) -> None:
        add_player(session, "dave", t0)
        create_game(session, "hall", "h2", t0, players=list(cards), server_seed="4a11" * 16)
        for name, held in cards.items():
            for card in held.split():
                grant(session, name, card, 1, t0, "h2")
            grant(session, name, "chips", 5, t0, "h2")

    harness.admin(setup)
    harness.run(t0)
    at = t0 + timedelta(hours=1)
    actions = "#game-actions"
    harness.send("alice", "duel bob", at, channel=actions)
    harness.send("bob", "accept duel 1", at + timedelta(minutes=1), channel=actions)
    harness.send("carol", "duel dave", at + timedelta(minutes=2), channel=actions)
    harness.send("dave", "accept duel 2", at + timedelta(minutes=3), channel=actions)
    harness.run(at + timedelta(minutes=5))
    at += timedelta(hours=1)
    harness.send("alice", "hand 7C 8C 9C 10C", at)
    harness.send("bob", "hand 2H 3H 4H 5H 6H", at + timedelta(minutes=1))
    harness.send("carol", f"hand {SECRET_HAND}", at + timedelta(minutes=2), game="h2-duel-2")
    harness.send("alice", "raise 2", at + timedelta(minutes=4), game="h2-duel-1")
    harness.send("bob", "match", at + timedelta(minutes=5), game="h2-duel-1")
    harness.run(at + timedelta(minutes=6))
    at += timedelta(minutes=30)
    plays = [("bob", "2H"), ("alice", "7C"), ("bob", "3H"), ("alice", "8C"), ("bob", "4H"),
             ("alice", "9C"), ("bob", "5H"), ("alice", "10C")]
    for i, (who, card) in enumerate(plays):
        harness.send(who, f"play {card}", at + timedelta(minutes=i + 1), game="h2-duel-1")
    harness.run(at + timedelta(minutes=10))
    # WEB-4: a gift in the current phase is told privately; public after the phase ends.
    harness.send("dave", "gift alice", at + timedelta(minutes=20), channel=actions)
    # A second race table, still seating, with a horse whose name is markup.
    harness.admin(lambda session: (grant(session, "dave", "QC", 1, t0),
                                   create_game(session, "races", "derby2", t0, players=[],
                                               server_seed="d2" * 32)))
    harness.send("dave", f"sit\nhorse {MARKUP_HORSE} card QC", at + timedelta(minutes=21),
                 channel="#the-raceway", game="derby2")
    # A roulette in its first round: its layouts are public (SR-7), its colours sealed.
    harness.admin(lambda session: create_game(session, "roulette", "r2", t0, players=["carol", "dave"],
                                              settings={"round_length": "24h", "preparation_length": "2h"},
                                              server_seed="2e" * 32))
    harness.send("carol", "prepare silver gold 25 silver 15", t0 + timedelta(minutes=30), game="r2")
    harness.send("dave", "prepare black gold 35 silver 5", t0 + timedelta(minutes=31), game="r2")
    harness.run(NOW)


MARKUP_PROPOSAL = "<script>alert('p')</script> Shorter phases"
"""A proposal's first line that is markup: the page shows it as text."""


def _government(harness: Any) -> None:
    """A Hall ``h3`` (GH-20 to GH-31) with an open proposal voted 1 for and 1 against so far,
    and a ruling of its Judge, alice."""
    t0 = T_HALL
    proposals, justice = "#proposals", "#request-for-justice"
    harness.admin(lambda session: create_game(
        session, "hall", "h3", t0, players=["alice", "bob", "carol", "dave"],
        settings={"judge": "alice", "reputable": "alice"}, server_seed="3c" * 32))
    harness.run(t0)
    proposal = harness.send("carol", f"{MARKUP_PROPOSAL}\nset phase_length 12h",
                            t0 + timedelta(hours=1), channel=proposals, game="h3")
    harness.send("carol", "Is a gift an action?", t0 + timedelta(hours=1, minutes=1),
                 channel=justice, game="h3")
    harness.run(t0 + timedelta(hours=1, minutes=2))
    harness.send("alice", "", t0 + timedelta(hours=2), kind="reaction", target=proposal,
                 emoji="\N{THUMBS UP SIGN}", channel=proposals, game="h3")
    harness.send("dave", "", t0 + timedelta(hours=2, minutes=1), kind="reaction", target=proposal,
                 emoji="\N{THUMBS DOWN SIGN}", channel=proposals, game="h3")
    harness.send("alice", "ruling 1: yes", t0 + timedelta(hours=2, minutes=2), channel=justice,
                 game="h3")
    harness.run(NOW)
