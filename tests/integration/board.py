"""Two tiny rulesets for testing the shell's inbound events, channels and child games.

``board``: a club whose members keep chips in the board's own ledger scope. It owns two
channels: ``#board`` (commands, line by line: ``duel NAME``, ``close``) and ``#motions``,
where a whole message is a motion, kept by its message id; an edit of it changes the motion,
a deletion withdraws it, a 👍 reaction on it is a vote (taken back when removed). Any
reaction on one of the board's own posts counts as that member's acknowledgement. ``duel
NAME`` opens a ``duel`` child game; when a duel ends, the board pays its winner a bonus chip.

``duel``: a match inside a board. Each player stakes ``stake`` chips from the board's
inventories into the duel's pool; at its ``end`` deadline the fair source picks the winner,
who takes the pool, unless a player sends ``concede`` first (``game ID`` chooses the duel).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from dealer import ledger as L
from dealer.games import register
from dealer.games.base import Context, GameSettings, GameState, Ignored, Rejected, Rules, Summary
from dealer.games.commands import Command, Commands, Example, Word
from dealer.history import DeletionSent, EditSent, HistoryEvent, MessageTaken, ReactionSent
from dealer.render import add_template_dir

add_template_dir(Path(__file__).parent / "templates")

START_CHIPS = 5
BONUS = 1


class BoardEvent(HistoryEvent):
    ruleset = "board"


class DuelOpened(BoardEvent):
    type = "board.duel"
    game: str


class MotionMade(BoardEvent):
    type = "motion.made"
    message: str
    author: str


class MotionEdited(BoardEvent):
    type = "motion.edited"
    message: str


class Motion(BaseModel):
    author: str
    text: str
    votes: list[str] = []
    withdrawn: bool = False


class BoardState(GameState):
    players: list[str]
    motions: dict[str, Motion] = {}
    acks: list[str] = []
    duels: int = 0
    results: dict[str, str | None] = {}
    finished: bool = False


@register
class Board(Rules):
    kind = "board"
    title = "Board"
    State = BoardState
    default_channel = "#board"
    channels = ("#motions",)
    commands = Commands("a board command", [
        Command("duel {rival}", lambda rival: ("duel", rival.lower()), fields={"rival": Word("NAME")},
                examples=[Example("duel bob", "challenge bob")]),
        Command("close", lambda: ("close",), examples=[Example("close", "close the board")]),
    ])

    def ledger_scope(self, game_id: str, state: Any, parent_scope: str | None = None) -> str | None:
        return game_id

    def start(self, ctx: Context, players: list[str], settings: GameSettings, start: datetime) -> BoardState:
        for p in players:
            ctx.ledger.move(L.MINT, ctx.scope.player(p), L.CHIPS, START_CHIPS, "board stake")
        ctx.post("opening", "board/opening.txt", "Board opens", players=players)
        return BoardState(players=players)

    def handle(self, ctx: Context, state: BoardState, actor: str, command: tuple[str, ...]) -> BoardState:
        if command == ("close",):
            state.finished = True
            return state
        rival = next((p for p in state.players if p.lower() == command[1]), None)
        if rival is None or rival == actor:
            raise Rejected(f"{command[1]} is no other member of the board")
        state.duels += 1
        child = f"{ctx.game_id}-duel-{state.duels}"
        ctx.open_child("duel", child, [actor, rival], {"stake": 2})
        ctx.record(DuelOpened(game=child))
        return state

    def on_message(self, ctx: Context, state: BoardState, message: MessageTaken) -> BoardState | None:
        if message.channel != "#motions":
            return None  # read line by line as commands
        state.motions[message.id] = Motion(author=message.sender, text=message.body)
        ctx.record(MotionMade(message=message.id, author=message.sender))
        ctx.post("motion", "board/motion.txt", "New motion", author=message.sender, text=message.body)
        return state

    def on_edit(self, ctx: Context, state: BoardState, edit: EditSent) -> BoardState:
        motion = state.motions.get(edit.target)
        if motion is None:
            raise Ignored("not a motion")
        if edit.sender != motion.author:
            raise Rejected("only the author may edit a motion")
        motion.text = edit.body
        ctx.record(MotionEdited(message=edit.target))
        return state

    def on_delete(self, ctx: Context, state: BoardState, deletion: DeletionSent) -> BoardState:
        motion = state.motions.get(deletion.target)
        if motion is None:
            raise Ignored("not a motion")
        motion.withdrawn = True
        return state

    def on_reaction(self, ctx: Context, state: BoardState, reaction: ReactionSent) -> BoardState:
        motion = state.motions.get(reaction.target)
        if motion is None:  # one of the board's own posts
            if not reaction.removed and reaction.sender not in state.acks:
                state.acks.append(reaction.sender)
            return state
        if reaction.emoji != "👍":
            raise Ignored("only 👍 votes")
        if reaction.removed:
            motion.votes = [v for v in motion.votes if v != reaction.sender]
        elif reaction.sender not in motion.votes:
            motion.votes.append(reaction.sender)
        return state

    def on_child_finished(self, ctx: Context, state: BoardState, child_id: str, summary: Summary) -> BoardState:
        state.results[child_id] = summary.winner
        if summary.winner:
            ctx.ledger.move(L.MINT, ctx.scope.player(summary.winner), L.CHIPS, BONUS, "duel bonus")
        ctx.post("duel_over", "board/duel_over.txt", "Duel over", duel=child_id, winner=summary.winner)
        return state

    def on_deadline(self, ctx: Context, state: BoardState, name: str) -> BoardState:
        return state

    def summary(self, state: BoardState) -> Summary:
        return Summary("finished" if state.finished else "running", list(state.players))


class DuelSettings(GameSettings):
    stake: int = 1


class DuelState(GameState):
    players: list[str]
    stake: int
    winner: str | None = None
    finished: bool = False


@register
class Duel(Rules):
    kind = "duel"
    title = "Duel"
    Settings = DuelSettings
    State = DuelState
    default_channel = "#duels"
    commands = Commands("a duel command", [
        Command("concede", lambda: "concede", examples=[Example("concede", "give up the duel")],
                valid=lambda state, actor: not state.finished and actor in state.players),
    ])

    def start(self, ctx: Context, players: list[str], settings: DuelSettings, start: datetime) -> DuelState:
        for p in players:
            ctx.ledger.move(ctx.scope.player(p), ctx.scope.pool(ctx.game_id), L.CHIPS, settings.stake, "stake")
        ctx.set_deadline("end", start + timedelta(hours=1))
        ctx.post("opening", "duel/opening.txt", "Duel opens", players=players, parent=ctx.parent_id)
        return DuelState(players=players, stake=settings.stake)

    def handle(self, ctx: Context, state: DuelState, actor: str, command: str) -> DuelState:
        if state.finished:
            raise Rejected("the duel is over")
        ctx.cancel_deadline("end")
        return self._win(ctx, state, next(p for p in state.players if p != actor))

    def on_deadline(self, ctx: Context, state: DuelState, name: str) -> DuelState:
        return self._win(ctx, state, ctx.rng.choice(state.players, "duel winner"))

    def _win(self, ctx: Context, state: DuelState, winner: str) -> DuelState:
        pool = ctx.scope.pool(ctx.game_id)
        ctx.ledger.move(pool, ctx.scope.player(winner), L.CHIPS, ctx.ledger.balance(pool), "duel won")
        state.winner = winner
        state.finished = True
        ctx.post("result", "duel/result.txt", "Duel result", winner=winner)
        return state

    def summary(self, state: DuelState) -> Summary:
        return Summary("finished" if state.finished else "running", list(state.players), winner=state.winner)
