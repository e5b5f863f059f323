"""One scripted game of each ruleset, played through the real daemon or the in-memory shell.

A :class:`Script` is the wallets, the game's creation, the host's grants into the game
and the messages of a whole game, each at a given time; :meth:`Script.on_daemon` plays it
through the directory inbox and ``run --once`` passes on a real store,
:meth:`Script.on_shell` through :class:`dealer.testing.RulesShell`. Every message names its
game (the ``game`` field), so lines sent after the game ended still reach its rules, in
both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from dealer.games import rules_for
from dealer.games.base import Rejected
from dealer.ledger import CHIPS, VERTEBRAE
from dealer.shell.admin import add_player, create_game, grant
from dealer.testing import RulesShell, Sent
from dealer.text import command_lines

DAY = timedelta(days=1)
HOUR = timedelta(hours=1)
MINUTE = timedelta(minutes=1)


@dataclass(frozen=True)
class Message:
    """A message as a player sends it (several command lines may share it)."""

    at: datetime
    sender: str
    body: str
    channel: str = "pm"


@dataclass(frozen=True)
class Grant:
    """``dealer grant NAME ITEM N --game ID`` at a given time."""

    at: datetime
    player: str
    item: str
    amount: int


@dataclass
class Script:
    """A whole game: who holds what, the creation, every message, and when to stop."""

    kind: str
    game_id: str
    seed: str
    created: datetime
    start: datetime
    players: list[str]
    wallets: dict[str, dict[str, int]]
    """Each player's starting holdings (``chips``, ``vertebrae``, a card item ...)."""
    settings: dict[str, str]
    messages: list[Message]
    end: datetime
    """The last pass: every deadline due by then has fired."""
    grants: list[Grant] = field(default_factory=list)
    refusals: list[tuple[str, str, str]] = field(default_factory=list)
    """What the fake refused: ``(sender, line, what)``."""
    answers: list[list[str]] = field(default_factory=list)
    """For each message, the rules' replies to its sender (the daemon sends them as one)."""
    posts: list[Sent] = field(default_factory=list)
    """What the fake posted, but for those replies."""

    def on_daemon(self, harness: Any) -> None:
        """Play the game through the directory inbox and one daemon pass at :attr:`end`."""

        def setup(session: Any) -> None:
            for name, wallet in self.wallets.items():
                add_player(session, name, self.created, chips=wallet.get(CHIPS, 0),
                           vertebrae=wallet.get(VERTEBRAE, 0))
                for item, amount in wallet.items():
                    if item not in (CHIPS, VERTEBRAE):
                        grant(session, name, _item_text(item), amount, self.created)
            create_game(session, self.kind, self.game_id, self.created, players=self.players,
                        start=self.start, settings=dict(self.settings), server_seed=self.seed)

        harness.admin(setup)
        for at, entry in self.timeline():
            if isinstance(entry, Message):
                harness.send(entry.sender, entry.body, entry.at, channel=entry.channel,
                             game=self.game_id)
                continue
            harness.run(at)  # what came before the grant, first
            harness.admin(lambda session, g=entry: grant(
                session, g.player, _item_text(g.item), g.amount, g.at, game_id=self.game_id))
        harness.run(self.end)

    def timeline(self) -> list[tuple[datetime, Message | Grant]]:
        """The messages and grants in time order (a grant after messages sent at its time)."""
        entries: list[tuple[datetime, int, Message | Grant]] = [
            (m.at, 0, m) for m in self.messages] + [(g.at, 1, g) for g in self.grants]
        return [(at, entry) for at, _, entry in sorted(entries, key=lambda e: (e[0], e[1]))]

    def on_shell(self) -> RulesShell:
        """Play the game through the in-memory shell; refusals go to :attr:`refusals`."""
        shell = RulesShell(rules_for(self.kind), seed=self.seed, game_id=self.game_id,
                           load_players_only=True)
        for name, wallet in self.wallets.items():
            for item, amount in wallet.items():
                shell.grant(name, item, amount, wallet=True)  # as `dealer player add`
        shell.open(self.players, self.settings, start=self.start, now=self.created)
        answered: set[int] = set()
        for at, entry in self.timeline():
            if isinstance(entry, Grant):
                shell.grant_step(entry.player, entry.item, entry.amount, at)
                continue
            answers = []
            for line in command_lines(entry.body):
                try:
                    sent = shell.step(entry.sender, line, at)
                except Rejected as refused:
                    self.refusals.append((entry.sender, line, refused.what))
                    continue
                mine = [s for s in sent if s.to == entry.sender]
                answers += [s.body.strip() for s in mine]
                answered |= {id(s) for s in mine}
            self.answers.append(answers)
        shell.fire_due(self.end)
        self.posts = [s for s in shell.sent if id(s) not in answered]
        return shell


def _item_text(item: str) -> str:
    """How ``dealer grant`` names a ledger item (``card:KS`` -> ``KS``)."""
    return item.split(":", 1)[1] if item.startswith("card:") else item


def roulette() -> Script:
    """Stationary Roulette, 10 rounds: reminders, a refused bet, a replaced bet sent at the
    very time of the deadline, a missed preparation (SR-10) and black roulettes (SR-9)."""
    t0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
    alice = {p: "gold" if p <= 4 else "silver" if p <= 8 else "black" for p in range(10)}
    bob = {p: "gold" if p <= 4 else "black" if p == 6 else "silver" for p in range(10)}
    messages = []
    for phase in range(11):
        sent = t0 + phase * DAY + HOUR
        for name, colours, bet in (("alice", alice, "silver 40"), ("bob", bob, "gold 30 black 10")):
            lines = [f"bet {bet}"] if phase >= 1 else []
            if phase <= 9 and not (name == "bob" and phase == 3):  # bob misses one (SR-10)
                lines.append(f"prepare {colours[phase]} gold 30 silver 10")
            if name == "alice" and phase == 2:
                lines.append("reminders off")
            messages.append(Message(sent, name, "\n".join(lines)))
    messages.append(Message(t0 + DAY + 2 * HOUR, "bob", "bet gold 50"))  # SR-5: refused
    # Sent at the very time round 1 ends: it still counts for round 1, replacing bob's bet.
    messages.append(Message(t0 + 2 * DAY, "bob", "bet gold 40"))
    return Script(
        kind="roulette", game_id="r1", seed="5eed" * 16, created=t0, start=t0,
        players=["alice", "bob"], wallets={"alice": {CHIPS: 100}, "bob": {CHIPS: 100}},
        settings={}, messages=messages, end=t0 + 11 * DAY + 10 * MINUTE,
    )


def races() -> Script:
    """Off to the Races: two horses and NPCs, three bettors, a race run to the end (and
    race lines sent after it ended, refused by the rules)."""
    t0 = datetime(2026, 12, 1, 18, 0, tzinfo=timezone.utc)
    way = "#the-raceway"
    at = t0 + MINUTE
    messages = [
        Message(at, "alice", "sit\nhorse Thunder Hooves card KS", way),
        Message(at + 30 * timedelta(seconds=1), "bob", "sit\nhorse Red Rum card 7h\nready", way),
        Message(at + MINUTE, "alice", "ready", way),
        Message(at + 4 * MINUTE, "carol", "bet 20 on Red Rum", way),
        Message(at + 5 * MINUTE, "alice", "bet 10 on Thunder Hooves\nbet 99 on Red Rum", way),
    ]
    t = at + 2 * HOUR
    for _ in range(25):  # the race ends after about 20 (seeded draws)
        t += MINUTE
        messages.append(Message(t, "alice", "race", way))
        messages.append(Message(t + timedelta(seconds=30), "bob", "lap", way))
    return Script(
        kind="races", game_id="derby", seed="ace5" * 16, created=t0, start=t0, players=[],
        wallets={"alice": {CHIPS: 50, "card:KS": 1}, "bob": {CHIPS: 50, "card:7H": 1},
                 "carol": {CHIPS: 50}},
        settings={}, messages=messages, end=t + HOUR,
    )


def hall() -> Script:
    """The Gilded Hall over three phases: starting items, the host's grants into the cycle,
    packs, purchases, a gift, trades accepted, declined, refused and lapsed, a join, a
    client seed, and a victory at 2 chips (GH-8)."""
    t0 = datetime(2026, 12, 1, 0, 0, tzinfo=timezone.utc)
    hall_channel = "#game-actions"

    def say(hours: float, sender: str, body: str) -> Message:
        return Message(t0 + timedelta(hours=hours), sender, body, hall_channel)

    messages = [
        say(1, "alice", "buy deck pack\nopen deck pack"),
        say(1.1, "bob", "buy handy pack\nopen handy pack"),
        say(2, "carol", "join\ninventory"),
        say(2.5, "alice", "gift carol"),
        say(3, "alice", "offer 5 vertebrae to bob for 1 chip"),
        say(3.5, "bob", "accept offer 1"),
        say(4, "carol", "offer 40 vertebrae to alice for 1 vertebra"),  # GH-1: refused
        say(5, "bob", "offer 2 vertebrae to carol for 1 chip"),
        say(5.5, "carol", "decline offer 2"),
        say(6, "bob", "seed lucky horseshoe"),
        say(7, "alice", "offer 1 vertebra to carol for 1 vertebra"),  # lapses at the phase end
        say(25, "bob", "gift alice"),
        say(26, "carol", "buy legendary pack"),  # 50 vertebrae: refused (GH-5)
        say(49, "alice", "buy chip"),  # her second chip: victory (GH-8)
    ]
    return Script(
        kind="hall", game_id="h1", seed="5e" * 32, created=t0, start=t0,
        players=["alice", "bob"],
        wallets={"alice": {VERTEBRAE: 500}, "bob": {}, "carol": {}},  # not the cycle's (GH-1)
        settings={"victory_chips": "2", "starting_vertebrae": "30"}, messages=messages,
        grants=[Grant(t0 + HOUR / 2, "alice", VERTEBRAE, 30), Grant(t0 + HOUR / 2, "bob", CHIPS, 1)],
        end=t0 + 50 * HOUR,
    )


SCRIPTS = {"roulette": roulette, "races": races, "hall": hall}
"""Each ruleset's script, by kind."""


def refused_on_daemon(harness: Any) -> list[tuple[str, str, str]]:
    """The lines the daemon refused, ``(sender, line, what)``, in the order it applied them."""
    from sqlalchemy import select

    from dealer.store.models import Inbound

    def read(session: Any) -> list[tuple[str, str, str]]:
        rows = session.scalars(select(Inbound).order_by(Inbound.sent_at, Inbound.id))
        return [
            (row.sender, entry["line"], entry["detail"])
            for row in rows
            for entry in (row.outcome or [])
            if entry["result"] == "rejected"
        ]

    return harness.admin(read)
