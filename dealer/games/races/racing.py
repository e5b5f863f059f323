"""The race: its start (OR-6), Race Actions (OR-7), Laps (OR-8) and the idle action (OR-11)."""

from __future__ import annotations

from typing import Literal

from dealer.cards import STANDARD_DECK
from dealer.clock import format_utc
from dealer.games.base import Context, Rejected
from dealer.games.races import ending, events
from dealer.games.races.field import card_of
from dealer.games.races.posts import announce, confirm, duration_text, field_view
from dealer.games.races.state import PhaseMark, RacesState
from dealer.games.races.track import Action, lap_action, race_action

IDLE = "idle"  # OR-11: the deadline at which the dealer acts itself

Kind = Literal["race", "lap"]


def start_race(ctx: Context, state: RacesState) -> None:
    """OR-6: every horse at position 0; the idle clock (OR-11) starts if it is on."""
    state.phase = "racing"
    state.phases.append(PhaseMark(phase="racing", started_at=ctx.now))
    for horse in state.horses:
        horse.position = 0
    _schedule_idle(ctx, state)


def act(ctx: Context, state: RacesState, actor: str | None, kind: Kind) -> RacesState:
    """Perform a Race or Lap Action for ``actor`` (None: the dealer, OR-11)."""
    _check_may_act(state, actor, kind)
    if actor is not None and state.last_action_at is not None and ctx.now < state.last_action_at:
        # Handled late (a daemon down, a bridge retrying): the race moved on meanwhile, and
        # acting now at its sent time would set the idle clock back (OR-11) and write history
        # out of time order.
        raise Rejected(
            f"too late: sent at {format_utc(ctx.now)}, before the race's action "
            f"{state.actions} at {format_utc(state.last_action_at)}, which was handled first",
            "OR-7", ["lap" if state.lap_owed else "race"],
        )
    drawn = ctx.rng.choice(STANDARD_DECK, purpose=f"OR-{7 if kind == 'race' else 8} {kind} action")
    cards = [card_of(h) for h in state.horses]
    positions = [h.position for h in state.horses]
    if kind == "race":
        action = race_action(cards, positions, state.length, state.last_lap_k, drawn)
    else:
        action = lap_action(cards, positions, drawn)
        state.lap_owed = False
    _apply(ctx, state, action, actor)
    if actor is not None:
        confirm(ctx, actor, "reply_action", f"{kind} action done", action=kind, card=drawn.short,
                card_name=drawn.name, moved=[state.horses[i].name for i in action.moved],
                finished=state.phase == "finished")
    return state


def _check_may_act(state: RacesState, actor: str | None, kind: Kind) -> None:
    """OR-7/OR-8: who may act, and which action is owed."""
    if state.phase != "racing":
        raise Rejected("the race has not begun yet: it starts when betting closes", "OR-7")
    # OR-7: any player with a horse in the race acts, seated or not: a horse whose owner
    # stood up keeps racing, and its owner may still move the race on.
    if actor is not None and state.horse_of(actor) is None:
        raise Rejected("only a player with a horse in the race may race or lap", "OR-7")
    if kind == "race" and state.lap_owed:
        raise Rejected("a Lap is owed: no Race Action until someone does it", "OR-8", ["lap"])
    if kind == "lap" and not state.lap_owed:
        raise Rejected("no Lap is owed now", "OR-8", ["race"])


def _apply(ctx: Context, state: RacesState, action: Action, actor: str | None) -> None:
    for horse, position in zip(state.horses, action.after):
        horse.position = position
    state.actions += 1
    state.last_action_at = ctx.now
    if action.lap_at is not None:
        state.lap_owed = True
        state.last_lap_k = action.lap_at
    if not action.winners:
        _schedule_idle(ctx, state)
    moved = [state.horses[i].name for i in action.moved]
    recorded = events.LapAction if action.kind == "lap" else events.RaceAction
    ctx.record(recorded(by=actor, card=action.card.code, moved=moved,
                        positions=list(action.after), lap_owed_at=action.lap_at))
    announce(
        ctx, f"{action.kind}_action", f"{action.kind} action {state.actions}",
        number=state.actions, by=actor, card=action.card.short, card_name=action.card.name,
        moved=moved, everyone=action.everyone, horses=field_view(state), length=state.length,
        winners=[state.horses[i].name for i in action.winners], lap_owed=state.lap_owed,
        idle=duration_text(state.settings.idle_action_after), idle_at=ctx.deadlines.get(IDLE),
    )
    if action.winners:
        ending.finish_race(ctx, state, [state.horses[i] for i in action.winners])
    elif action.lap_at is not None:
        # The riders are pinged: one of them must say `lap` (OR-8).
        announce(ctx, "lap_owed", "a Lap is owed", k=action.lap_at, riders=riders(state),
                 idle_at=ctx.deadlines.get(IDLE), mentions=sorted(set(riders(state))))


def riders(state: RacesState) -> list[str]:
    """OR-7: the players who may race or lap: every owner of a horse in the field."""
    return [h.owner for h in state.horses if h.owner]


def _schedule_idle(ctx: Context, state: RacesState) -> None:
    """OR-11: the dealer acts itself after ``idle_action_after`` without an action."""
    if state.settings.idle_action_after is not None:
        ctx.set_deadline(IDLE, ctx.now + state.settings.idle_action_after)


def idle_action(ctx: Context, state: RacesState) -> RacesState:
    """OR-11: nobody acted in time, so the dealer performs the owed action."""
    if state.phase != "racing":
        return state
    return act(ctx, state, None, "lap" if state.lap_owed else "race")
