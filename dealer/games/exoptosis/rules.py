"""The Exoptosis ruleset: one match, a child game of a Hall cycle (docs/EXOPTOSIS.md); it
routes to ``setup``, ``play`` and ``table``; a command that changes it is a Hall action (GH-6)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dealer.clock import format_utc
from dealer.games import register
from dealer.games.base import Context, Rejected, Rules, Summary
from dealer.games.exoptosis import events, play, setup
from dealer.games.commands import Receipts
from dealer.games.exoptosis.cards import labels, note_spare
from dealer.games.exoptosis.commands import (
    COMMANDS, Add, Ask, ChooseHand, Fold, Forfeit, Give, MatchBet, Play, Raise, Terminate,
)
from dealer.games.exoptosis.state import ExoptosisSettings, ExoptosisState, Seat
from dealer.games.exoptosis.table import board, check_last_one, finish, leave, pass_turn


@register
class Exoptosis(Rules):
    """One Exoptosis match: hands, betting, turns, effects, and the end."""

    kind = "exoptosis"
    title = "Exoptosis"
    Settings = ExoptosisSettings
    State = ExoptosisState
    default_channel = "#game-actions"
    parent_kind = "hall"
    commands = COMMANDS

    def start(self, ctx: Context, players: list[str], settings: Any, start: datetime) -> ExoptosisState:
        """Open the match: the setup window runs from ``start`` (GH-10)."""
        if len({name.casefold() for name in players}) != len(players):
            raise Rejected("a player is listed twice", rule="GH-10")
        if len(players) < 2:
            raise Rejected("a match needs at least 2 participants", rule="GH-10")
        match_settings = self.settings_of(settings)
        state = ExoptosisState(settings=match_settings, seats=[Seat(name=p) for p in players])
        closes = start + match_settings.setup_window
        ctx.set_deadline("setup", closes)
        ctx.record(events.MatchOpened(players=players, fight=match_settings.fight,
                                      commitment=ctx.rng.commitment))
        ctx.post("opened", "exoptosis/opened.txt", f"Exoptosis: a {match_settings.fight} begins",
                 players=players, fight=match_settings.fight, closes=closes,
                 commitment=ctx.rng.commitment, parent=ctx.parent_id,
                 settings=match_settings, game_id=ctx.game_id)
        return state

    def handle(self, ctx: Context, state: Any, actor: str, command: Any) -> ExoptosisState:
        """Apply ``actor``'s command; every accepted one is a Hall action (GH-6, GH-7)."""
        if state.phase == "finished":
            raise Rejected(f"match {ctx.game_id} is over", rule="GH-16", allowed=[])
        seat = state.seat(actor)
        if seat is None or seat.out is not None:
            why = "you are not a participant of this match" if seat is None \
                else f"you are out of this match ({seat.out})"
            raise Rejected(why, rule="GH-10", allowed=[])
        if isinstance(command, Receipts):  # looking is not an action (GH-7)
            ctx.reply(actor, "receipts", "exoptosis/receipts.txt", f"{ctx.game_id}: your record",
                      match=ctx.game_id, phase=state.phase,
                      hand=labels(seat.hand) if seat.hand is not None else None, stake=seat.stake,
                      pool=sum(s.stake for s in state.seats), commitment=ctx.rng.commitment)
            return state
        if isinstance(command, ChooseHand):
            if state.phase != "setup":
                raise Rejected("the hands are revealed already; a hand can be changed only "
                               "until everyone has chosen", rule="GH-10")
            setup.choose_hand(ctx, state, seat, command)
        elif isinstance(command, (Raise, MatchBet, Fold)):
            if state.phase != "betting":
                raise Rejected(f"betting happens after the reveal and before the first play; "
                               f"now is the {state.phase}", rule="GH-11")
            setup.bet(ctx, state, seat, command)
        elif isinstance(command, Play):
            play.play(ctx, state, seat, command)
        elif isinstance(command, Add):
            play.add(ctx, state, seat, command)
        elif isinstance(command, Ask):
            play.ask(ctx, state, seat, command)
        elif isinstance(command, Give):
            play.give(ctx, state, seat, command)
        elif isinstance(command, Forfeit):
            self._forfeit(ctx, state, seat)
        elif isinstance(command, Terminate):
            self._consent(ctx, state, seat)
        note_spare(ctx, state)
        ctx.act_in_parent(seat.name)
        return state

    def on_deadline(self, ctx: Context, state: Any, name: str) -> ExoptosisState:
        """The setup window, the betting window, a turn or a give's time ran out."""
        due = {"setup": "setup", "betting": "betting", "turn": "play", "give": "play"}
        if state.phase != due.get(name):
            ctx.record(events.DeadlineIgnored(name=name))
            return state
        if name == "setup":
            setup.close_setup(ctx, state)
        elif name == "betting":
            setup.close_betting(ctx, state)
        elif name == "turn" and state.asked is None:
            play.skip(ctx, state)
        elif name == "give" and state.asked is not None:
            giver = state.seat(state.asked.giver)
            assert giver is not None
            play.give(ctx, state, giver, None)
        else:
            ctx.record(events.DeadlineIgnored(name=name))
        note_spare(ctx, state)
        return state

    def _forfeit(self, ctx: Context, state: ExoptosisState, seat: Seat) -> None:
        """GH-16: forfeit at any time, the stake staying in the pool (in the setup: simply leave)."""
        was_current = state.phase == "play" and state.current == seat.name
        asked_by = state.asked.asker if state.asked and state.asked.giver == seat.name else None
        home = leave(ctx, state, seat, "forfeited")
        ctx.post("forfeit", "exoptosis/forfeit.txt", f"{seat.name} forfeits", name=seat.name,
                 stake=seat.stake, home=home, **board(ctx, state))
        if check_last_one(ctx, state):
            return
        if state.phase == "setup" and all(s.hand is not None for s in state.remaining):
            setup.reveal(ctx, state)
        elif state.phase == "betting" and all(s.settled for s in state.remaining):
            setup.close_betting(ctx, state)
        elif was_current:
            state.current = seat.name
            pass_turn(ctx, state)
        elif asked_by is not None:
            # The giver left: the asker's turn goes on, with its time restarted.
            ctx.cancel_deadline("give")
            state.turn_ends_at = ctx.now + state.settings.turn_length
            ctx.set_deadline("turn", state.turn_ends_at)

    def _consent(self, ctx: Context, state: ExoptosisState, seat: Seat) -> None:
        """GH-16: all consenting within one turn end the match (setup and betting: a turn each)."""
        if seat.name in state.consents:
            raise Rejected("you have consented already in this turn", rule="GH-16")
        state.consents.append(seat.name)
        ctx.record(events.Consented(player=seat.name, turn=state.turn))
        waiting = [s.name for s in state.remaining if s.name not in state.consents]
        if not waiting:
            finish(ctx, state, "terminated", None)
            return
        ctx.post("consent", "exoptosis/consent.txt", f"{seat.name} consents to terminate",
                 name=seat.name, waiting=waiting, turn_ends_at=state.turn_ends_at,
                 phase=state.phase)

    def on_parent_finished(self, ctx: Context, state: Any, parent_id: str,
                           winner: str | None) -> ExoptosisState:
        """GH-8: the match ends with its cycle; nobody wins, stakes and cards go home."""
        if state.phase != "finished":
            finish(ctx, state, "ended", None, cycle_winner=winner)
        return state

    def summary(self, state: Any) -> Summary:
        """Status, participants, stakes, winner and the match's details."""
        status = "finished" if state.phase == "finished" else "running"
        return Summary(
            status=status,
            players=[s.name for s in state.seats],
            scores={s.name: s.stake for s in state.seats},
            winner=state.winner,
            detail={
                "phase": state.phase,
                "fight": state.settings.fight,
                "result": state.result,
                "reward": state.reward,
                "current": state.current,
                "turn_ends_at": format_utc(state.turn_ends_at) if state.turn_ends_at else None,
                "hands": {s.name: [h.item for h in s.hand] for s in state.seats if s.hand},
                "out": {s.name: s.out for s in state.seats if s.out},
            },
        )

    def involves(self, state: Any, actor: str) -> bool:
        """A participant, in or out (an out one is told why it cannot act)."""
        return state.seat(actor) is not None

    def ledger_scope(self, game_id: str, state: Any, parent_scope: str | None = None) -> str | None:
        """GH-10: a match uses its Hall cycle's inventories: the parent's scope."""
        return parent_scope

