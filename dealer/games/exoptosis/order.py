"""The turn order (RULES GH-12): by hand size, descending, fixed when play starts; ties in
fair random order, shown in the post that opens play."""

from __future__ import annotations

from itertools import groupby

from dealer.games.base import Context
from dealer.games.exoptosis import events
from dealer.games.exoptosis.state import ExoptosisState
from dealer.games.exoptosis.table import begin_turn, board


def turn_order(ctx: Context, state: ExoptosisState) -> tuple[list[str], list[list[str]]]:
    """GH-12: the order and the tied groups; each group of equal hand size is shuffled by
    the fair source (one shuffle per group, bigger hands first; the group is listed in the
    participants' order of the match before the shuffle)."""
    seats = sorted(state.remaining, key=lambda s: -len(s.hand or []))
    order: list[str] = []
    ties: list[list[str]] = []
    for size, group in groupby(seats, key=lambda s: len(s.hand or [])):
        names = [s.name for s in group]
        if len(names) > 1:
            ties.append(list(names))
            names = ctx.rng.shuffled(names, f"GH-12 tie of {size}-card hands")
        order += names
    return order, ties


def begin_play(ctx: Context, state: ExoptosisState) -> None:
    """Play begins: the order is fixed and the first participant's turn starts (GH-12)."""
    state.order, state.ties = turn_order(ctx, state)
    state.phase = "play"
    begin_turn(ctx, state, state.order[0], ctx.now)
    ctx.record(events.PlayBegan(order=state.order, ties=state.ties))
    ctx.post("play_began", "exoptosis/play_began.txt", "Exoptosis: play begins",
             order=state.order, ties=state.ties,
             sizes={s.name: len(s.hand or []) for s in state.remaining}, **board(ctx, state))
