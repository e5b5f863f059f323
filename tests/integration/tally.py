"""A tiny ruleset for testing the shell on its own: players ``add N``; at ``close`` the dealer
draws one player at random, who takes 1 chip from each other player."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pathlib import Path

from dealer import ledger as L
from dealer.games import register
from dealer.games.base import Context, Duration, GameSettings, GameState, Rejected, Rules, Summary, UtcTime
from dealer.games.commands import Command, Commands, Example, Whole
from dealer.history import HistoryEvent
from dealer.render import add_template_dir

add_template_dir(Path(__file__).parent / "templates")


class TallySettings(GameSettings):
    length: Duration = timedelta(hours=1)
    rounds: int = 1


class TallyState(GameState):
    players: list[str]
    opened: UtcTime
    closes: UtcTime
    totals: dict[str, int]
    winner: str | None = None
    finished: bool = False
    round: int = 1
    rounds: int = 1
    length_seconds: int = 3600


class TallyEvent(HistoryEvent):
    ruleset = "tally"


class RoundBegan(TallyEvent):
    type = "tally.round"
    round: int


class Closed(TallyEvent):
    type = "tally.closed"
    winner: str
    totals: dict[str, int]


@dataclass(frozen=True)
class Add:
    amount: int


@register
class Tally(Rules):
    kind = "tally"
    title = "Tally"
    Settings = TallySettings
    State = TallyState
    default_channel = "#tally"
    commands = Commands("a tally command", [
        Command("add {amount}", Add, fields={"amount": Whole(1, 10, complaint="add a number from 1 to 10")},
                examples=[Example("add 3", "add 3 to your tally")], rule="T-1",
                valid=lambda state, actor: not state.finished),
    ])

    def start(self, ctx: Context, players: list[str], settings: TallySettings, start: datetime) -> TallyState:
        if len(players) < 2:
            raise Rejected("a tally needs at least two players")
        closes = start + settings.length
        ctx.set_deadline("close", closes)
        ctx.post("opening", "tally/opening.txt", "Tally opens", players=players, closes=closes,
                 commitment=ctx.rng.commitment)
        return TallyState(players=players, opened=start, closes=closes, totals={p: 0 for p in players},
                          rounds=settings.rounds, length_seconds=int(settings.length.total_seconds()))

    def handle(self, ctx: Context, state: TallyState, actor: str, command: Add) -> TallyState:
        if state.finished:
            raise Rejected("the tally is over", rule="T-2")
        if ctx.now < state.opened:
            raise Rejected("the tally has not opened yet", rule="T-2")
        state = state.model_copy(deep=True)
        state.totals[actor] += command.amount
        ctx.reply(actor, "confirmation", "tally/confirm.txt", "Added", amount=command.amount,
                  total=state.totals[actor])
        return state

    def on_deadline(self, ctx: Context, state: TallyState, name: str) -> TallyState:
        state = state.model_copy(deep=True)
        if state.round < state.rounds:
            state.round += 1
            state.opened = ctx.now
            state.closes = ctx.now + timedelta(seconds=state.length_seconds)
            ctx.set_deadline("close", state.closes)
            ctx.record(RoundBegan(round=state.round))
            return state
        winner = ctx.rng.choice(state.players, "winner")
        for p in state.players:
            if p != winner:
                ctx.ledger.move_up_to(L.player(p), L.player(winner), L.CHIPS, 1, "tally")
        state.winner = winner
        state.finished = True
        ctx.record(Closed(winner=winner, totals=state.totals))
        ctx.post("result", "tally/result.txt", "Tally result", winner=winner, totals=state.totals,
                 server_seed=ctx.rng.server_seed)
        return state

    def summary(self, state: TallyState) -> Summary:
        status = "finished" if state.finished else "running"
        return Summary(status, list(state.players), dict(state.totals), state.winner)
