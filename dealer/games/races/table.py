"""Off to the Races (RULES OR-1 to OR-11): ``seating``, ``betting``, ``racing``, ``ending``."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Callable

from dealer.clock import as_utc, format_utc
from dealer.games import register
from dealer.games.base import Context, GameSettings, Rejected, Rules, Summary
from dealer.games.races import betting, events, racing, seating
from dealer.games.races.commands import (
    has_record,
    COMMANDS,
    EnterHorse,
    Interested,
    LapAction,
    Pass,
    PlaceBet,
    RaceAction,
    Ready,
    Sit,
    Stand,
)
from dealer.games.commands import Receipts
from dealer.games.races.posts import announce, bets_view, confirm
from dealer.games.races.state import PhaseMark, RacesSettings, RacesState

OPEN = "open"  # the deadline that opens a table created with a later start

_PHASE_NAME = {
    "pending": "before the table opened",
    "seating": "seating",
    "betting": "betting",
    "racing": "the race",
    "finished": "after the race",
}
_PHASE_RULE = {"pending": "OR-1", "seating": "OR-3", "betting": "OR-5", "racing": "OR-7", "finished": "OR-9"}

Handler = Callable[[Context, RacesState, str, Any], RacesState]
_HANDLERS: dict[type, Handler] = {
    Sit: lambda ctx, s, actor, _: seating.sit(ctx, s, actor),
    Stand: lambda ctx, s, actor, _: seating.stand(ctx, s, actor),
    EnterHorse: seating.enter_horse,
    Ready: lambda ctx, s, actor, _: seating.ready(ctx, s, actor),
    Interested: lambda ctx, s, actor, _: seating.interested(ctx, s, actor),
    PlaceBet: betting.place_bet,
    Pass: lambda ctx, s, actor, _: betting.pass_(ctx, s, actor),
    RaceAction: lambda ctx, s, actor, _: racing.act(ctx, s, actor, "race"),
    LapAction: lambda ctx, s, actor, _: racing.act(ctx, s, actor, "lap"),
}


@register
class OffToTheRaces(Rules):
    """A public horse-race betting table: sit, enter a horse, bet, race, get paid."""

    kind = "races"
    title = "Off to the Races"
    Settings = RacesSettings
    State = RacesState
    default_channel = "#the-raceway"
    open_to_all = True
    commands = COMMANDS

    def start(self, ctx: Context, players: list[str], settings: GameSettings,
              start: datetime) -> RacesState:
        """Open the table at ``start`` (now or later); seat ``players`` if any are given."""
        start = as_utc(start)
        settings = self.settings_of(settings)
        state = RacesState(
            settings=settings, phase="pending", opens_at=start,
            phases=[PhaseMark(phase="pending", started_at=min(ctx.now, start))],
        )
        if start > ctx.now:
            ctx.set_deadline(OPEN, start)
            ctx.record(events.TableScheduled(opens_at=start.isoformat(), players=list(players)))
            announce(ctx, "scheduled", "a table opens soon", opens_at=start,
                     commitment=ctx.rng.commitment)
            state.seat_on_open = list(dict.fromkeys(players))
            return state
        return seating.open_table(ctx, state, players, start)

    def handle(self, ctx: Context, state: RacesState, actor: str, command: Any) -> RacesState:
        """Apply ``actor``'s command at ``ctx.now`` to a copy of ``state``."""
        if isinstance(command, Receipts):  # changes nothing: answered at any time
            return _receipts(ctx, state, actor)
        if state.phase == "pending" and ctx.take_due(OPEN):
            # OR-1 (interpretation): a message sent at the opening instant counts.
            state = self.on_deadline(ctx, state, OPEN)
        _check_timing(state, ctx.now)
        handler = _HANDLERS.get(type(command))
        if handler is None:
            raise Rejected("this is not a command of Off to the Races")
        return handler(ctx, state, actor, command)

    def on_deadline(self, ctx: Context, state: RacesState, name: str) -> RacesState:
        """``open``, ``seating`` (OR-3), ``betting`` (OR-5) or ``idle`` (OR-11) is due."""
        if name == OPEN and state.phase == "pending":
            players, state.seat_on_open = state.seat_on_open, []
            return seating.open_table(ctx, state, players, ctx.now)
        if name == seating.SEATING and state.phase == "seating":
            return seating.close(ctx, state)
        if name == betting.BETTING and state.phase == "betting":
            return betting.close(ctx, state)
        if name == racing.IDLE:
            return racing.idle_action(ctx, state)
        return state  # a deadline left over from a phase already closed: nothing to do

    def summary(self, state: RacesState) -> Summary:
        """Status, players (seated, owners, bettors), no scores, winner and the race's detail."""
        status = {"pending": "pending", "finished": "finished"}.get(state.phase, "running")
        players = list(dict.fromkeys([
            *state.seat_on_open,
            *state.seated,
            *state.left,
            *(h.owner for h in state.horses if h.owner),
            *(bet.bettor for bet in state.bets),
        ]))
        return Summary(status=status, players=players, scores=None,
                       winner=_winner(state), detail=_detail(state), waiting=_waiting(state))


def _waiting(state: RacesState) -> str | None:
    """What the table waits for when no deadline is pending (docs/RACES.md, "Waiting")."""
    if state.phase == "seating" and state.first_sat_at is None:
        return "the first `sit` (OR-1): the seating window starts then (OR-3)"
    if state.phase == "racing" and state.settings.idle_action_after is None:
        return "a rider's `race` or `lap` (OR-7, OR-8): no idle action is set (OR-11 off)"
    return None


def _receipts(ctx: Context, state: RacesState, actor: str) -> RacesState:
    """``receipts``: what ``actor`` has at this table, in full (it changes nothing)."""
    if not has_record(state, actor):
        raise Rejected("you have no seat, horse or bet at this table", "OR-1")
    confirm(ctx, actor, "receipts", "your record",
            phase=state.phase, seated=actor in state.seated, ready=actor in state.ready,
            left=actor in state.left,
            horses=[{"name": h.name, "card": h.card} for h in state.horses if h.owner == actor],
            bets=[{"horse": b.horse, "amount": b.amount, "at": b.at} for b in state.bets
                  if b.bettor == actor],
            pool=state.pool, commitment=ctx.rng.commitment)
    return state


def _check_timing(state: RacesState, now: datetime) -> None:
    """Refuse a command meant for a phase already closed, or sent to a closed table."""
    if now < state.phase_started_at:
        marks = [m for m in state.phases if m.started_at <= now]
        if not marks:
            raise Rejected("this table was not open yet when you sent this", "OR-1")
        meant = marks[-1]
        ended = state.phases[len(marks)].started_at
        raise Rejected(
            f"too late: sent at {format_utc(now)}, during {_PHASE_NAME[meant.phase]}, "
            f"which ended at {format_utc(ended)} before your message was handled",
            _PHASE_RULE[meant.phase],
        )
    if state.phase == "pending":
        raise Rejected(f"the table opens at {format_utc(state.opens_at)}", "OR-1")
    if state.phase == "finished":
        raise Rejected("this table is closed: its race is over", "OR-1")


def _winner(state: RacesState) -> str | None:
    """The owner of the first winning horse who did not stand up (OR-9), or None."""
    owners = [h.owner for h in state.horses
              if h.name in state.winners and h.owner and h.owner not in state.left]
    return owners[0] if owners else None


def _detail(state: RacesState) -> dict[str, Any]:
    return {
        "phase": state.phase,
        "outcome": state.outcome,
        "horses": [h.model_dump(mode="json") for h in state.horses],
        "length": state.length,
        "pool": state.pool,
        "house_share": state.house_share,
        "prize": state.prize,
        "bets": bets_view(state),
        "lap_owed": state.lap_owed,
        "actions": state.actions,
        "winners": list(state.winners),
        "seated": list(state.seated),
    }
