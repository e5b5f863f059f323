"""A tiny in-memory shell for Off to the Races: steps, deadlines, posts, ledger, scripted draws.

A fake shipped with the game (STYLE.md, "ship the fakes") for its tests and for anyone who
wants to run a race in a REPL. It does what the real shell does around the pure ruleset: a
fresh context per step with the balances, the pending deadlines and the fair source's
counter carried forward; deadlines fired in time order before a message sent after them;
everything a rejected step collected thrown away; the state stored as JSON between steps.

Draws can be scripted: :meth:`RaceShell.script` queues cards that the next draws return
(instead of the seeded ones), so a test can say exactly which cards a race sees.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable

from dealer.cards import STANDARD_DECK, parse_card
from dealer.fairness import FairSource
from dealer.games.base import Context, PostDraft, Rejected
from dealer.games.races.state import RacesSettings, RacesState
from dealer.games.races.table import OffToTheRaces
from dealer.ledger import CHIPS, HOUSE, MINT, VOID, Ledger, player, pool
from dealer.render import render_post

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
SEED = "ace5" * 16
GAME = "race1"
CHANNEL = "#the-raceway"
RULES = OffToTheRaces()


def minutes(n: float) -> timedelta:
    """A duration of ``n`` minutes."""
    return timedelta(minutes=n)


@dataclass
class ScriptedSource(FairSource):
    """A fair source whose next draws from the 52-card deck can be dictated (tests only)."""

    script: deque[int] = field(default_factory=deque)

    def below(self, n: int, purpose: str = "") -> int:
        """The next scripted index when one is queued (for a 52-way draw), else a fair draw."""
        if self.script and n == len(STANDARD_DECK):
            self.counter += 1  # keep later fair draws moving on, as a real draw would
            return self.script.popleft()
        return super().below(n, purpose)


@dataclass
class Sent:
    """One post or reply a step produced, with its rendered body."""

    at: datetime
    draft: PostDraft
    body: str

    @property
    def kind(self) -> str:
        """The post's kind (its template's name)."""
        return self.draft.kind

    @property
    def to(self) -> str | None:
        """The recipient of a private reply; None for a public post."""
        return self.draft.recipient


@dataclass
class RaceShell:
    """Drive one table of Off to the Races through time."""

    state: RacesState
    balances: dict[tuple[str, str], int]
    deadlines: dict[str, datetime] = field(default_factory=dict)
    counter: int = 0
    scripted: deque[int] = field(default_factory=deque)
    sent: list[Sent] = field(default_factory=list)
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    render: bool = True

    @classmethod
    def create(
        cls,
        chips: dict[str, int] | None = None,
        cards: dict[str, Iterable[str]] | None = None,
        players: Iterable[str] = (),
        start: datetime = T0,
        now: datetime = T0,
        render: bool = True,
        **settings: Any,
    ) -> "RaceShell":
        """A new table; ``chips`` and ``cards`` (card names per player) fill the wallets."""
        balances: dict[tuple[str, str], int] = {}
        for name, amount in (chips or {}).items():
            _mint(balances, player(name), CHIPS, amount)
        for name, owned in (cards or {}).items():
            for text in owned:
                card, holo = parse_card(text)
                _mint(balances, player(name), card.item(holo), 1)
        shell = cls(state=None, balances=balances, render=render)  # type: ignore[arg-type]
        ctx = shell.context(now)
        state = RULES.start(ctx, list(players), RacesSettings(**settings), start)
        shell.commit(ctx, state)
        return shell

    # --- steps -----------------------------------------------------------------------

    def context(self, now: datetime) -> Context:
        """A fresh context at ``now`` carrying the balances, deadlines and draw counter."""
        rng = ScriptedSource(SEED, counter=self.counter, script=deque(self.scripted))
        return Context(
            game_id=GAME, kind="races", channel=CHANNEL, now=now, rng=rng,
            ledger=Ledger(dict(self.balances)), deadlines=dict(self.deadlines),
        )

    def commit(self, ctx: Context, state: RacesState) -> None:
        """Keep what a step produced, as the shell's transaction would."""
        self.state = RacesState.model_validate(state.model_dump(mode="json"))
        self.balances = dict(ctx.ledger.balances)
        self.deadlines = dict(ctx.deadlines)
        self.counter = ctx.rng.counter
        if isinstance(ctx.rng, ScriptedSource):
            self.scripted = deque(ctx.rng.script)
        self.events.extend(ctx.events)
        for draft in ctx.posts:
            body = render_post(draft, ctx.now, GAME) if self.render else ""
            self.sent.append(Sent(ctx.now, draft, body))

    def script(self, *cards: str) -> None:
        """Make the next draws return ``cards`` (names such as ``KS`` or ``7 of hearts``)."""
        for text in cards:
            card, _ = parse_card(text)
            self.scripted.append(STANDARD_DECK.index(card))

    def fire_due(self, until: datetime) -> None:
        """Fire every pending deadline due at or before ``until``, in time order."""
        while True:
            due = sorted((when, name) for name, when in self.deadlines.items() if when <= until)
            if not due:
                return
            self.fire(due[0][1])

    def fire(self, name: str) -> None:
        """Fire the pending deadline ``name`` at its due time."""
        when = self.deadlines.pop(name)
        ctx = self.context(when)
        self.commit(ctx, RULES.on_deadline(ctx, self.state, name))

    def send(self, actor: str, line: str, at: datetime, fire_first: bool = True) -> Rejected | None:
        """Deliver ``actor``'s line sent at ``at``; return the rejection, if any.

        With ``fire_first`` (the shell's normal order) every deadline due by then fires
        first; without it the message is handled as one that arrived late.
        """
        if fire_first:
            self.fire_due(at)
        ctx = self.context(at)
        try:
            state = RULES.handle(ctx, self.state, actor, RULES.parse(line))
        except Rejected as exc:
            return exc  # the shell discards everything the context collected
        self.commit(ctx, state)
        return None

    def accept(self, actor: str, line: str, at: datetime) -> None:
        """Deliver a line that must be accepted."""
        rejected = self.send(actor, line, at)
        assert rejected is None, f"{line!r} rejected: {rejected.what} ({rejected.rule})"

    def refuse(self, actor: str, line: str, at: datetime, fire_first: bool = True) -> Rejected:
        """Deliver a line that must be refused; return the rejection."""
        before = (self.state, dict(self.balances), dict(self.deadlines), len(self.sent))
        rejected = self.send(actor, line, at, fire_first)
        assert rejected is not None, f"{line!r} was accepted"
        assert (self.state, self.balances, self.deadlines, len(self.sent)) == before
        return rejected

    # --- looking -----------------------------------------------------------------------

    def chips(self, account: str) -> int:
        """Chips held by player ``account`` (or by ``house``, ``void``, ``pool``)."""
        special = {"house": HOUSE, "void": VOID, "pool": pool(GAME)}
        return self.balances.get((special.get(account, player(account)), CHIPS), 0)

    def posts(self, kind: str | None = None) -> list[Sent]:
        """Public posts, optionally of one kind."""
        return [s for s in self.sent if s.to is None and (kind is None or s.kind == kind)]

    def replies(self, to: str, kind: str | None = None) -> list[Sent]:
        """Private replies to ``to``, optionally of one kind."""
        return [s for s in self.sent if s.to == to and (kind is None or s.kind == kind)]

    def totals(self) -> dict[str, int]:
        """The sum of every item over all accounts (zero per item when nothing leaked)."""
        return dict(Ledger(self.balances).totals())


def _mint(balances: dict[tuple[str, str], int], account: str, item: str, amount: int) -> None:
    balances[(account, item)] = balances.get((account, item), 0) + amount
    balances[(MINT, item)] = balances.get((MINT, item), 0) - amount
