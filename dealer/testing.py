"""Fakes shipped for tests, dealer's own and anyone's (STYLE.md, "ship the fakes"): the
memory inbox and publisher, a context with no shell, and :class:`RulesShell`."""

from __future__ import annotations

import copy
import hashlib
import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any, Callable, Iterable, Mapping

from dealer.clock import as_utc
from dealer.fairness import FairSource
from dealer.games.base import Context, GameSettings, GameState, PostDraft, Rejected, Rules, Summary
from dealer.history import (
    ClientSeedAdded, CommandSent, DeadlineFired, DeletionSent, EditSent, GameCreated, ItemGranted,
    MessageTaken, ReactionSent, StepInput,
)
from dealer.inbox.memory import MemoryInbox
from dealer.ledger import CHIPS, MINT, Ledger, Scope, player
from dealer.publish.memory import MemoryPublisher
from dealer.records import FairMark, apply_deadlines, collect, perform, revealed_after
from dealer.render import render_post

__all__ = [
    "T0", "MemoryInbox", "MemoryPublisher", "RulesShell", "Sent", "hours", "minutes", "seed_chain",
    "standalone_context",
]

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
"""The instant the games' tests start from."""


def hours(n: float) -> timedelta:
    """``n`` hours."""
    return timedelta(hours=n)


def minutes(n: float) -> timedelta:
    """``n`` minutes."""
    return timedelta(minutes=n)


def standalone_context(
    now: datetime,
    *,
    game_id: str = "g1",
    kind: str = "test",
    channel: str = "#test",
    balances: dict[tuple[str, str], int] | None = None,
    server_seed: str = "0" * 64,
    scope: str | None = None,
) -> Context:
    """A :class:`~dealer.games.base.Context` with no shell behind it, for pure tests and the demo."""
    return Context(
        game_id=game_id,
        kind=kind,
        channel=channel,
        now=as_utc(now),
        rng=FairSource(server_seed, seed_factory=lambda: server_seed[::-1]),
        ledger=Ledger(dict(balances or {})),
        scope=Scope(scope),
    )


def seed_chain(first: str) -> Callable[[], str]:
    """A deterministic chain of server seeds for tests; never a seed's SHA-256 (its commitment)."""
    current = [first]

    def factory() -> str:
        current[0] = hashlib.sha256(f"next seed after {current[0]}".encode()).hexdigest()
        return current[0]

    return factory


@dataclass
class Sent:
    """One post or reply a step of a :class:`RulesShell` produced, with its rendered body."""

    at: datetime
    draft: PostDraft
    body: str

    @property
    def kind(self) -> str:
        """The post's kind (``round_result``, ``confirmation`` ...)."""
        return self.draft.kind

    @property
    def to(self) -> str | None:
        """The recipient of a private reply; None for a public post."""
        return self.draft.recipient


class RulesShell:
    """Drive one game of any :class:`~dealer.games.base.Rules` through time, in memory.

    It does what the real shell does around the pure rules (steps through
    :func:`dealer.records.perform` and :func:`dealer.records.collect`, deadlines due before a
    message fired first, a refused step leaving nothing, the state stored as JSON, posts
    rendered), with every time given by the test. ``load_players_only``: a step's ledger holds
    only the accounts the real shell loads. Games keep thin subclasses in their own terms
    (:mod:`dealer.games.roulette.testing` ...)."""

    def __init__(self, rules: Rules, *, seed: str = "5e" * 32, rng: FairSource | None = None,
                 game_id: str = "g1", channel: str | None = None, render: bool = True,
                 load_players_only: bool = False) -> None:
        """A shell for one game of ``rules``, opened by :meth:`open`; its fair source is ``rng``,
        else one on ``seed`` rotating along :func:`seed_chain`."""
        self.rules = rules
        self.game_id = game_id
        self.channel = channel or rules.default_channel
        self.rng = rng if rng is not None else FairSource(seed, seed_factory=seed_chain(seed))
        self.render = render
        self.load_players_only = load_players_only
        self.state: Any = None
        self.balances: dict[tuple[str, str], int] = {}
        self.deadlines: dict[str, datetime] = {}
        self.revealed = False
        """Whether the current epoch's seed has been revealed (the game finished)."""
        self.sent: list[Sent] = []
        self.events: list[tuple[str, dict[str, Any]]] = []
        """The history as the store keeps it: ``(type, data)``, each step's input first."""
        self.wrote: list[tuple[str, datetime]] = []
        """Every text message sent to the game, as the inbox holds it (``Rules.message_window``)."""

    # --- the books -----------------------------------------------------------------------

    @property
    def scope(self) -> Scope:
        """The game's ledger scope (the global one unless the ruleset has its own)."""
        return Scope(self.rules.ledger_scope(self.game_id, self.state))

    def account(self, name: str, wallet: bool = False) -> str:
        """Player ``name``'s account in the game's scope, or its global wallet."""
        return player(name) if wallet else self.scope.player(name)

    def grant(self, name: str, item: str, amount: int, wallet: bool = False) -> None:
        """Give ``name`` ``amount`` of ``item`` from the mint (``wallet=True``: the global wallet)."""
        key = (self.account(name, wallet), item)
        self.balances[key] = self.balances.get(key, 0) + amount
        self.balances[(MINT, item)] = self.balances.get((MINT, item), 0) - amount

    def grant_step(self, name: str, item: str, amount: int, at: datetime) -> list[Sent]:
        """``dealer grant NAME ITEM N --game ID`` at ``at``, as a step of the game."""
        self.fire_due(at)
        return self._run(ItemGranted(player=name, item=item, amount=amount), at, name)

    def has(self, name: str, item: str = CHIPS, wallet: bool = False) -> int:
        """How much of ``item`` player ``name`` holds (in the game's scope, or its wallet)."""
        return self.balances.get((self.account(name, wallet), item), 0)

    def totals(self) -> dict[str, int]:
        """The sum of every item over all accounts (zero per item when nothing leaked)."""
        return dict(Ledger(self.balances).totals())

    # --- steps ---------------------------------------------------------------------------

    def open(self, players: Iterable[str] = (),
             settings: GameSettings | Mapping[str, Any] | None = None,
             start: datetime | None = None, now: datetime | None = None) -> None:
        """Create the game at ``now`` (default ``start``), opening at ``start`` (default now)."""
        if start is None and now is None:
            raise ValueError("open a game at a given time: pass start or now")
        start = start if start is not None else now
        now = now if now is not None else start
        if not isinstance(settings, GameSettings):
            settings = self.rules.Settings.model_validate(dict(settings or {}))
        players = list(players)
        step = GameCreated(players=players, settings=settings.model_dump(mode="json"), start=start)
        ctx = self.context(now, members=players)
        self.commit(ctx, perform(self.rules, ctx, None, step), step)

    def context(self, now: datetime, actor: str | None = None,
                members: Iterable[str] | None = None) -> Context:
        """A fresh context at ``now``; ``actor`` and ``members`` choose its wallets with ``load_players_only``."""
        balances = dict(self.balances)
        if self.load_players_only:
            if members is None:
                members = self.rules.summary(self.state).players if self.state else []
            scope = self.scope
            loaded = {scope.player(name) for name in members}
            loaded |= {scope.house, scope.void, scope.pool(self.game_id)}
            if actor:
                loaded.add(scope.player(actor))
            balances = {key: n for key, n in balances.items() if key[0] in loaded}
        return Context(
            game_id=self.game_id, kind=self.rules.kind, channel=self.channel, now=as_utc(now),
            rng=copy.deepcopy(self.rng), ledger=Ledger(balances), deadlines=dict(self.deadlines),
            scope=self.scope,
        )

    def commit(self, ctx: Context, state: GameState, step: StepInput) -> list[Sent]:
        """Keep what an accepted step produced, the records the real shell writes; return its posts."""
        records = collect(step, ctx, state, self.rules.summary(state), self.deadlines,
                          FairMark.of(self.rng, self.revealed))
        for t in records.transfers:
            self.balances[(t.source, t.item)] = self.balances.get((t.source, t.item), 0) - t.amount
            self.balances[(t.target, t.item)] = self.balances.get((t.target, t.item), 0) + t.amount
        self.state = self.rules.State.model_validate(records.state)
        apply_deadlines(self.deadlines, records.deadlines)
        self.rng = ctx.rng
        self.revealed = revealed_after(self.revealed, records.fair)
        json.dumps(records.events)  # events are stored as JSON
        self.events.extend(records.events)
        sent = [
            Sent(ctx.now, draft, render_post(draft, ctx.now, self.game_id) if self.render else "")
            for draft in records.posts
        ]
        self.sent.extend(sent)
        return sent

    def fire_due(self, until: datetime, before: bool = False) -> None:
        """Fire every deadline due by ``until`` (strictly before it, with ``before``), in time order."""
        while True:
            due = sorted((when, name) for name, when in self.deadlines.items()
                         if when < until or (when == until and not before))
            if not due:
                return
            self.fire(due[0][1])

    def fire(self, name: str) -> None:
        """Fire the pending deadline ``name`` at its due time."""
        when = self.deadlines.pop(name)
        since = self.rules.message_window(name)
        firsts: dict[str, datetime] | None = None
        if since is not None:
            firsts = {}
            for sender, sent in self.wrote:
                if since <= sent <= when and (sender not in firsts or sent < firsts[sender]):
                    firsts[sender] = sent
        self._run(DeadlineFired(deadline=name, first_messages=firsts), when)

    def step(self, actor: str, line: str, at: datetime, fire_first: bool = True) -> list[Sent]:
        """Deliver ``actor``'s line sent at ``at``, after the deadlines due before it (unless
        ``fire_first`` is False); return what it posted, or raise Rejected."""
        if fire_first:
            self.fire_due(at, before=True)
        self.wrote.append((actor, as_utc(at)))
        step = ClientSeedAdded(player=actor, seed=f"{actor}: {line[5:].strip()}") \
            if line.lower().startswith("seed ") else CommandSent(actor=actor, line=line)
        return self._run(step, at, actor)

    def deliver(self, step: StepInput, at: datetime, fire_first: bool = True) -> list[Sent]:
        """Hand the rules an inbound event sent at ``at`` (as :meth:`accept`); raises Rejected,
        Ignored or :class:`~dealer.records.NotTaken`, and nothing changes then."""
        if fire_first:
            self.fire_due(at, before=True)
        if isinstance(step, MessageTaken):
            self.wrote.append((step.sender, as_utc(at)))
        return self._run(step, at, getattr(step, "sender", None))

    def message(self, sender: str, body: str, at: datetime, channel: str, id: str,
                fire_first: bool = True) -> list[Sent]:
        """A whole message ``id`` sent in ``channel`` (a proposal, a request ...)."""
        lines = [line.strip() for line in body.splitlines() if line.strip()]
        return self.deliver(MessageTaken(id=id, sender=sender, channel=channel, sent_at=at,
                                         body=body, lines=lines), at, fire_first)

    def react(self, sender: str, target: str, emoji: str, at: datetime, *, removed: bool = False,
              ref: str | None = None, fire_first: bool = True, id: str | None = None) -> list[Sent]:
        """``sender`` adds (or, ``removed``, takes back) ``emoji`` on ``target`` (``ref``: a post's name)."""
        step = ReactionSent(id=id or f"r-{len(self.events)}", sender=sender, channel="#any",
                            sent_at=at, target=target, emoji=emoji, removed=removed,
                            target_ref=ref)
        return self.deliver(step, at, fire_first)

    def edit(self, sender: str, target: str, body: str, at: datetime) -> list[Sent]:
        """``sender`` edits the message ``target`` to read ``body``."""
        return self.deliver(EditSent(id=f"e-{len(self.events)}", sender=sender, channel="#any",
                                     sent_at=at, target=target, body=body), at)

    def delete(self, sender: str, target: str, at: datetime) -> list[Sent]:
        """``sender`` deletes the message ``target``."""
        return self.deliver(DeletionSent(id=f"d-{len(self.events)}", sender=sender,
                                         channel="#any", sent_at=at, target=target), at)

    def _run(self, step: StepInput, at: datetime, actor: str | None = None) -> list[Sent]:
        ctx = self.context(at, actor)
        return self.commit(ctx, perform(self.rules, ctx, self._fresh_state(), step), step)

    def _fresh_state(self) -> Any:
        """The state for one call, built from its JSON as the real shell does."""
        return self.rules.State.model_validate(self.state.model_dump(mode="json"))

    def send(self, actor: str, line: str, at: datetime, fire_first: bool = True) -> Rejected | None:
        """Like :meth:`step`, but return the rejection (None when the line was accepted)."""
        try:
            self.step(actor, line, at, fire_first)
        except Rejected as exc:
            return exc
        return None

    def accept(self, actor: str, line: str, at: datetime) -> list[Sent]:
        """Deliver a line that must be accepted; return what it posted."""
        try:
            return self.step(actor, line, at)
        except Rejected as exc:
            raise AssertionError(f"{line!r} rejected: {exc.what} ({exc.rule})") from exc

    def refuse(self, actor: str, line: str, at: datetime, fire_first: bool = True) -> Rejected:
        """Deliver a line that must be refused; check that nothing changed and return the rejection."""
        before = self._snapshot()
        try:
            self.step(actor, line, at, fire_first)
        except Rejected as rejected:
            assert self._snapshot() == before, f"{line!r} was refused but changed the game"
            return rejected
        raise AssertionError(f"{line!r} was accepted")

    def _snapshot(self) -> tuple[Any, ...]:
        state = self.state.model_dump(mode="json") if self.state is not None else None
        return (state, dict(self.balances), dict(self.deadlines), self.rng.counter,
                self.rng.epoch, len(self.sent), len(self.events))

    # --- looking -------------------------------------------------------------------------

    def summary(self) -> Summary:
        """The ruleset's summary of the current state (status, players, scores, winner)."""
        return self.rules.summary(self.state)

    def posts(self, kind: str | None = None) -> list[Sent]:
        """The public posts so far (of ``kind``)."""
        return [s for s in self.sent if s.to is None and (kind is None or s.kind == kind)]

    def replies(self, to: str, kind: str | None = None) -> list[Sent]:
        """The private replies to ``to`` so far (of ``kind``)."""
        return [s for s in self.sent if s.to == to and (kind is None or s.kind == kind)]
