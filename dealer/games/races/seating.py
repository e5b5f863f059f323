"""Seating and horse entry: OR-1 (sit, stand), OR-2 (horses), OR-3 (closing), OR-4 (NPCs)."""

from __future__ import annotations

from datetime import datetime

from dealer.cards import BY_CODE
from dealer.games.base import Context, Rejected
from dealer.games.races import betting, ending, events
from dealer.games.races.commands import EnterHorse
from dealer.games.races.field import check_entry, draw_npcs, entry_suggestions, owns
from dealer.games.races.posts import announce, confirm, duration_text, field_view
from dealer.games.races.state import Horse, PhaseMark, RacesState
from dealer.games.races.track import race_length

SEATING = "seating"  # the deadline that closes seating (OR-3)


def open_table(ctx: Context, state: RacesState, players: list[str], at: datetime) -> RacesState:
    """Open the table for seating at ``at``; seat the players the admin named, if any."""
    state.phase = "seating"
    state.phases.append(PhaseMark(phase="seating", started_at=at))
    for name in dict.fromkeys(players):
        _seat(ctx, state, name, at)
    ctx.record(events.TableOpened(at=at.isoformat(), seated=list(state.seated)))
    s = state.settings
    announce(
        ctx, "opened", "the table is open",
        commitment=ctx.rng.commitment, seated=list(state.seated),
        closes_at=ctx.deadlines.get(SEATING), seating_window=duration_text(s.seating_window),
        min_horses=s.min_horses, betting_window=duration_text(s.betting_window),
        house_share_percent=s.house_share_percent, idle=duration_text(s.idle_action_after),
    )
    return state


def sit(ctx: Context, state: RacesState, actor: str) -> RacesState:
    """OR-1: take a seat while seating is open."""
    if state.phase != "seating":
        raise Rejected(
            "seating is closed: the field is set. Anyone may still bet while betting is open",
            "OR-3",
        )
    if actor in state.seated:
        raise Rejected("you are already seated", "OR-1")
    _seat(ctx, state, actor, ctx.now)
    closes_at = seating_closes_at(ctx, state)
    ctx.record(events.Seated(player=actor))
    # The example is an entry this player could send now (its own card, a free name).
    offered = entry_suggestions(ctx.ledger, state.horses, actor)[0].split(" — ")[0]
    confirm(ctx, actor, "reply_sat", "you are seated", closes_at=closes_at,
            stood_before=actor in state.left,
            example=offered if offered.startswith("horse ") else None)
    announce(ctx, "seated", "a player sat down", who=actor, seated=list(state.seated), closes_at=closes_at)
    return state


def _seat(ctx: Context, state: RacesState, name: str, at: datetime) -> None:
    state.seated.append(name)
    if state.first_sat_at is None:
        # OR-3: the seating window runs from the first player's seat.
        state.first_sat_at = at
        ctx.set_deadline(SEATING, at + state.settings.seating_window)


def seating_closes_at(ctx: Context, state: RacesState) -> datetime | None:
    """When the seating window ends (an admin may have moved the deadline)."""
    if SEATING in ctx.deadlines:
        return ctx.deadlines[SEATING]
    if state.first_sat_at is None:
        return None
    return state.first_sat_at + state.settings.seating_window


def stand(ctx: Context, state: RacesState, actor: str) -> RacesState:
    """OR-1: leave the table; the player's winnings go to void (OR-9); the last stand ends it (OR-10)."""
    if actor not in state.seated:
        raise Rejected("you are not seated at this table", "OR-1")
    state.seated.remove(actor)
    horse = state.horse_of(actor)
    withdrawn = state.phase == "seating"
    if withdrawn:
        state.ready = [p for p in state.ready if p != actor]
        state.horses = [h for h in state.horses if h.owner != actor]
    _stood_up(state, actor)
    ctx.record(events.Stood(player=actor, withdrawn=withdrawn))
    horse_name = horse.name if horse else None
    confirm(ctx, actor, "reply_stood", "you stood up", phase=state.phase, horse=horse_name,
            last=not state.seated)
    announce(
        ctx, "stood", "a player stood up",
        who=actor, phase=state.phase, horse=horse_name, seated=list(state.seated),
    )
    if not state.seated:
        return ending.abandon(ctx, state)
    if state.phase == "seating":
        return maybe_close(ctx, state)
    if state.phase == "betting":
        return betting.maybe_close(ctx, state)
    return state


def _stood_up(state: RacesState, name: str) -> None:
    """OR-9: ``name`` sat and stood up, so its winnings go to void (docs/RACES.md)."""
    if name not in state.left:
        state.left.append(name)


def enter_horse(ctx: Context, state: RacesState, actor: str, command: EnterHorse) -> RacesState:
    """OR-2: enter (or re-enter, replacing the earlier entry) the actor's horse."""
    if state.phase != "seating":
        raise Rejected("horses are entered only while seating is open; the field is set", "OR-2")
    if actor not in state.seated:
        raise Rejected("only a seated player enters a horse: sit first", "OR-2", ["sit"])
    card = BY_CODE[command.card]
    try:
        check_entry(state.horses, actor, command.name, card)
        if not owns(ctx.ledger, actor, card):
            raise Rejected(
                f"you do not own the {card.name}: a horse runs as a card from your own "
                "inventory",
                "OR-2",
            )
    except Rejected as refused:
        # What to send instead is worked out from the actor's own cards and the names
        # still free, so it never offers the very entry just refused.
        refused.allowed = entry_suggestions(ctx.ledger, state.horses, actor, command.name, card)
        raise
    # Interpretation (docs/RACES.md): entering again before seating closes replaces the
    # earlier horse, in its place in the field; a 'ready' already said stays.
    earlier = state.horse_of(actor)
    horse = Horse(name=command.name, card=card.code, owner=actor)
    if earlier is None:
        state.horses.append(horse)
    else:
        state.horses[state.horses.index(earlier)] = horse
    ctx.record(events.HorseEntered(player=actor, name=horse.name, card=card.code,
                                   replaces=earlier.name if earlier else None))
    replaced = earlier.name if earlier else None
    confirm(ctx, actor, "reply_horse", "your horse is entered", name=horse.name,
            card=card.short, card_name=card.name, replaced=replaced, is_ready=actor in state.ready)
    announce(ctx, "horse_entered", "a horse was entered", who=actor, name=horse.name,
             card=card.short, card_name=card.name, replaced=replaced)
    return maybe_close(ctx, state)


def ready(ctx: Context, state: RacesState, actor: str) -> RacesState:
    """OR-3: say one's horse is set; seating closes early once every seated player did."""
    if state.phase != "seating":
        raise Rejected("seating is already closed", "OR-3")
    if actor not in state.seated:
        raise Rejected("you are not seated at this table", "OR-3", ["sit"])
    if state.horse_of(actor) is None:
        raise Rejected("enter your horse before saying ready", "OR-3",
                       entry_suggestions(ctx.ledger, state.horses, actor))
    if actor in state.ready:
        raise Rejected("you already said ready", "OR-3")
    state.ready.append(actor)
    ctx.record(events.Ready(player=actor))
    waiting = [p for p in state.seated if p not in state.ready]
    confirm(ctx, actor, "reply_ready", "you are ready", waiting=waiting,
            closes_at=seating_closes_at(ctx, state))
    return maybe_close(ctx, state)


def interested(ctx: Context, state: RacesState, actor: str) -> RacesState:
    """OR-5: ask betting to wait for the actor's bet or pass (before or during betting)."""
    if state.phase not in ("seating", "betting"):
        raise Rejected("betting has closed", "OR-5")
    if actor in state.interested:
        raise Rejected("you already said you are interested", "OR-5")
    state.interested.append(actor)
    ctx.record(events.Interested(player=actor))
    confirm(ctx, actor, "reply_interested", "betting waits for you", phase=state.phase,
            closes_at=ctx.deadlines.get(betting.BETTING))
    return state


def maybe_close(ctx: Context, state: RacesState) -> RacesState:
    """OR-3: close seating early when every seated player has a horse and said ready."""
    everyone_set = all(state.horse_of(p) is not None and p in state.ready for p in state.seated)
    if state.seated and everyone_set:
        return close(ctx, state)
    return state


def close(ctx: Context, state: RacesState) -> RacesState:
    """OR-3/OR-4: stand up the players without a horse, complete the field, open betting."""
    if SEATING in ctx.deadlines:
        ctx.cancel_deadline(SEATING)
    unhorsed = [p for p in state.seated if state.horse_of(p) is None]
    state.seated = [p for p in state.seated if p not in unhorsed]
    for name in unhorsed:
        _stood_up(state, name)
    if not state.horses:
        return ending.no_race(ctx, state, unhorsed)
    npcs, draws = draw_npcs(ctx.rng, state.horses, state.settings.min_horses)
    state.horses.extend(npcs)
    state.length = race_length(len(state.horses))  # OR-6
    ctx.record(events.SeatingClosed(
        stood_up=unhorsed,
        field=[h.model_dump(mode="json") for h in state.horses],
        npc_draws=[events.NpcDraw(card=d.card.code, clash=d.clash) for d in draws],
        length=state.length,
    ))
    announce(
        ctx, "seating_closed", "seating closed: the field",
        stood_up=unhorsed, horses=field_view(state), length=state.length,
        npc_draws=[{"card": d.card.short, "card_name": d.card.name, "clash": d.clash} for d in draws],
        min_horses=state.settings.min_horses,
    )
    return betting.open_betting(ctx, state)
