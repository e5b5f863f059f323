"""From a stored message to game steps: find the player and the game, run each line.

Each line is one command. A line the rules refuse gets a private error that quotes it,
says what is wrong (with the rule id) and what is allowed now; the other lines of the
message still count. Shell commands (``help``, `'game ID'`, ``seed TEXT``) are answered
here, before the rules see anything.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import Row, bindparam, func, select
from sqlalchemy.orm import Session

from dealer.fairness import client_hash
from dealer.games import rules_for
from dealer.games.base import Context, GameState, PostDraft, Rejected, Rules
from dealer.steps import load_state, queue_posts, run_step
from dealer.store.models import Game, GamePlayer, Inbound, Player
from dealer.text import MAX_BODY_CHARS, MAX_LINES, MAX_LINE_CHARS, command_lines, player_key, quote

log = logging.getLogger(__name__)

GameRef = Row[Any]
"""A game as routing found it: a row with ``id``, ``kind``, ``status`` and ``channel``."""


_GAME_LINE = re.compile(r"^game\s+(\S+)$", re.IGNORECASE)
_SEED_LINE = re.compile(r"^seed\s+(.+)$", re.IGNORECASE)
_HELP_LINE = re.compile(r"^(help|\?|commands)$", re.IGNORECASE)


@dataclass
class Outcome:
    """What became of a message: its status and one entry per line."""

    status: str = "applied"
    lines: list[dict[str, Any]] = field(default_factory=list)
    replies: list[PostDraft] = field(default_factory=list)
    deadlines_changed: bool = False

    def note(self, line: str | None, result: str, detail: str = "", game: str | None = None) -> None:
        """Record the result of one line (or of the whole message when ``line`` is None)."""
        entry: dict[str, Any] = {"result": result}
        if line is not None:
            entry["line"] = line
        if detail:
            entry["detail"] = detail
        if game:
            entry["game"] = game
        self.lines.append(entry)


_PLAYER = select(Player.__table__.c.key, Player.__table__.c.name).where(
    Player.__table__.c.key == bindparam("key")
)


def find_player(session: Session, name: str) -> Row[Any] | None:
    """The player called ``name`` (matched by :func:`~dealer.text.player_key`: case, width
    and spacing aside): a row with ``key`` and ``name``."""
    return session.execute(_PLAYER, {"key": player_key(name)}).first()


def process_inbound(session: Session, inbound: Inbound | Row[Any]) -> Outcome:
    """Apply a stored message (an ``inbound`` row); the caller records the outcome and
    commits."""
    outcome = Outcome()
    origin = f"in:{inbound.id}"
    sender = find_player(session, inbound.sender)
    if sender is None:
        outcome.status = "rejected"
        outcome.note(None, "rejected", f"unknown sender {inbound.sender!r}")
        _reply_error(
            outcome, inbound.sender, None, inbound.body[:120] or "(empty message)",
            f"{inbound.sender} is not a registered player, so the message was not applied. "
            "Ask the dealer to add you (dealer player add NAME).",
        )
        _flush(session, outcome, inbound, origin)
        return outcome
    if inbound.kind != "message":
        outcome.status = "ignored"
        outcome.note(None, "ignored", f"{inbound.kind}s are recorded; no running game uses them")
        return outcome
    if len(inbound.body) > MAX_BODY_CHARS:
        outcome.status = "rejected"
        outcome.note(None, "rejected", f"body of {len(inbound.body)} characters")
        _reply_error(
            outcome, sender.name, None, inbound.body[:80],
            f"The message is {len(inbound.body)} characters long; at most {MAX_BODY_CHARS} "
            "are read. Send one command per line in a shorter message.",
        )
        _flush(session, outcome, inbound, origin)
        return outcome
    lines = command_lines(inbound.body)
    if not lines:
        outcome.status = "ignored"
        outcome.note(None, "ignored", "no command in the message")
        return outcome
    if len(lines) > MAX_LINES:
        outcome.status = "rejected"
        outcome.note(None, "rejected", f"{len(lines)} lines")
        _reply_error(
            outcome, sender.name, None, lines[0],
            f"The message has {len(lines)} command lines; at most {MAX_LINES} are read at once.",
        )
        _flush(session, outcome, inbound, origin)
        return outcome

    chosen = inbound.game_hint
    public = inbound.channel != "pm"
    routes: dict[str | None, tuple[GameRef | None, str | None]] = {}
    applied = rejected = 0
    for index, line in enumerate(lines):
        game_line = _GAME_LINE.match(line)
        if game_line:
            chosen = game_line.group(1)
            outcome.note(line, "game", game=chosen)
            continue
        if len(line) > MAX_LINE_CHARS:
            rejected += 1
            outcome.note(line[:80], "rejected", "line too long")
            _reply_error(outcome, sender.name, None, line,
                         f"A command line may be at most {MAX_LINE_CHARS} characters.")
            continue
        if chosen not in routes:
            routes[chosen] = _route(session, inbound, sender, chosen)
        result = _run_line(
            session, inbound, sender, line, routes[chosen], public, f"{origin}:{index}", outcome
        )
        if result == "applied":
            applied += 1
            routes.pop(chosen)  # the step changed the game: read it again for the next line
        elif result == "rejected":
            rejected += 1
    if applied == 0 and rejected == 0:
        outcome.status = "ignored"
    elif applied == 0:
        outcome.status = "rejected"
    _flush(session, outcome, inbound, origin)
    return outcome


def _flush(session: Session, outcome: Outcome, inbound: Inbound, origin: str) -> None:
    queue_posts(session, outcome.replies, inbound.sent_at, None, f"{origin}:reply")
    outcome.replies.clear()


def _reply_error(
    outcome: Outcome,
    recipient: str,
    game_id: str | None,
    line: str,
    what: str,
    rule: str | None = None,
    allowed: list[str] | None = None,
) -> None:
    if rule and f"({rule})" in what:
        rule = None  # the rules' own message already cites it
    outcome.replies.append(
        PostDraft(
            kind="error",
            template="common/error.txt",
            channel="pm",
            recipient=recipient,
            subject=f"Not accepted: {quote(line, 60)}",
            context={
                "game_id": game_id,
                "line": quote(line),
                "what": what,
                "rule": rule,
                "allowed": allowed or [],
            },
        )
    )


# Routing reads games as Core rows (they have a Game's attributes) with statements built
# once: it runs for every message.
_games = Game.__table__
_members = GamePlayer.__table__
# Routing needs no state (the step reads it, locked): these rows leave the JSON out.
_GAME_REF = (_games.c.id, _games.c.kind, _games.c.status, _games.c.channel)
_GAME_BY_ID = select(*_GAME_REF).where(_games.c.id == bindparam("game_id"))
_GAME_STATE = select(_games.c.kind, _games.c.state).where(_games.c.id == bindparam("game_id"))
_GAMES_OF_PLAYER = (
    select(*_GAME_REF)
    .join(_members, _members.c.game_id == _games.c.id)
    .where(_members.c.player == bindparam("player"), _games.c.status != "finished")
    .order_by(_games.c.created_at, _games.c.id)
)
_GAMES_ON_CHANNEL = select(*_GAME_REF).where(
    _games.c.channel == bindparam("channel"), _games.c.status != "finished"
)


def player_games(session: Session, name: str) -> list[Row[Any]]:
    """The unfinished games ``name`` takes part in."""
    return list(session.execute(_GAMES_OF_PLAYER, {"player": name}))


def _route(
    session: Session, inbound: Inbound | Row[Any], sender: Row[Any], chosen: str | None
) -> tuple[GameRef | None, str | None]:
    """The game a line is for, or ``(None, why)``."""
    if chosen:
        game = session.execute(_GAME_BY_ID, {"game_id": chosen}).first()
        if game is None:
            game = session.execute(select(*_GAME_REF).where(func.lower(_games.c.id) == chosen.lower())).first()
        if game is None:
            return None, f"There is no game {chosen!r}."
        return game, None
    if inbound.channel != "pm":
        on_channel = list(session.execute(_GAMES_ON_CHANNEL, {"channel": inbound.channel}))
        if len(on_channel) == 1:
            return on_channel[0], None
        if len(on_channel) > 1:
            ids = ", ".join(g.id for g in on_channel)
            return None, f"Several games run in {inbound.channel} ({ids}); start with 'game ID'."
    mine = player_games(session, sender.name)
    if len(mine) == 1:
        return mine[0], None
    if not mine:
        finished = session.scalar(
            select(Game.id)
            .join(GamePlayer, GamePlayer.game_id == Game.id)
            .where(GamePlayer.player == sender.name, Game.status == "finished")
            .order_by(Game.updated_at.desc())
            .limit(1)
        )
        if finished:
            return None, f"Your game {finished} has finished, and you are in no running game."
        open_games = [
            g.id
            for g in session.scalars(select(Game).where(Game.status != "finished").order_by(Game.id))
            if rules_for(g.kind).open_to_all
        ]
        hint = f" Open games: {', '.join(open_games)}." if open_games else ""
        return None, f"You are in no running game, so the line has no game to go to.{hint} Start with 'game ID'."
    ids = ", ".join(g.id for g in mine)
    return None, f"You are in several games ({ids}); start the message with a line 'game ID'."


def _run_line(
    session: Session,
    inbound: Inbound | Row[Any],
    sender: Row[Any],
    line: str,
    route: tuple[GameRef | None, str | None],
    public: bool,
    origin: str,
    outcome: Outcome,
) -> str:
    """Run one line; return ``applied``, ``rejected``, ``ignored`` or ``answered``."""
    game, why = route
    if _HELP_LINE.match(line):
        _answer_help(session, sender, game, outcome)
        outcome.note(line, "answered", game=game.id if game else None)
        return "answered"
    if game is None:
        if public:
            outcome.note(line, "ignored", "not addressed to a game")
            return "ignored"
        _reply_error(outcome, sender.name, None, line, why or "No game.")
        outcome.note(line, "rejected", why or "no game")
        return "rejected"
    rules = rules_for(game.kind)
    seed_line = _SEED_LINE.match(line)
    if seed_line:
        return _add_client_seed(
            session, game, sender, seed_line.group(1), line, inbound.sent_at, origin, outcome
        )
    try:
        command = rules.parse(line)
    except Rejected as exc:
        if public and not _looks_like_command(session, rules, game, sender.name, line):
            outcome.note(line, "ignored", "chatter", game=game.id)
            return "ignored"
        return _refused(session, rules, game, sender, line, exc, outcome)

    def handle(r: Rules, ctx: Context, state: GameState) -> GameState:
        if not r.open_to_all and not r.involves(state, sender.name):
            raise Rejected(f"You do not play in game {game.id}.", allowed=[])
        return r.handle(ctx, state, sender.name, command)

    # The rules raise Rejected before the step writes anything, so a refused line needs
    # no savepoint; any other failure aborts the whole message's transaction.
    try:
        step = run_step(session, game, inbound.sent_at, handle, origin=origin, actor=sender.name)
    except Rejected as exc:
        return _refused(session, rules, game, sender, line, exc, outcome)
    outcome.deadlines_changed |= step.deadlines_changed
    outcome.note(line, "applied", game=game.id)
    return "applied"


def _current_state(session: Session, game: GameRef) -> tuple[Rules, GameState]:
    """The game's ruleset and its state as it stands now (for help and error replies)."""
    return load_state(session.execute(_GAME_STATE, {"game_id": game.id}).one())


def _looks_like_command(session: Session, rules: Rules, game: GameRef, actor: str, line: str) -> bool:
    """In a public channel, a line counts as a command when it starts with a command word."""
    _, state = _current_state(session, game)
    words = {item.split()[0].lower() for item in rules.help(state, actor) if item.split()}
    return line.split()[0].lower() in words


def _refused(
    session: Session,
    rules: Rules, game: GameRef, sender: Row[Any], line: str, exc: Rejected, outcome: Outcome
) -> str:
    allowed = exc.allowed
    if not allowed:
        _, state = _current_state(session, game)
        allowed = rules.help(state, sender.name)
    _reply_error(outcome, sender.name, game.id, line, exc.what, exc.rule, allowed)
    outcome.note(line, "rejected", exc.what, game=game.id)
    return "rejected"


def _answer_help(session: Session, sender: Row[Any], game: GameRef | None, outcome: Outcome) -> None:
    context: dict[str, Any] = {"game_id": None, "commands": [], "title": "", "games": []}
    if game is not None:
        rules, state = _current_state(session, game)
        context.update(game_id=game.id, title=rules.title, commands=rules.help(state, sender.name))
    context["games"] = [g.id for g in player_games(session, sender.name)]
    outcome.replies.append(
        PostDraft("help", "common/help.txt", "pm", sender.name, "Commands you can send", context)
    )


def _add_client_seed(
    session: Session,
    game: GameRef,
    sender: Row[Any],
    text: str,
    line: str,
    sent_at: datetime,
    origin: str,
    outcome: Outcome,
) -> str:
    """GH-40: a player's client seed is mixed into every later draw of the current epoch."""
    if game.status == "finished":
        exc = Rejected(f"Game {game.id} has finished; its draws are all made.", rule="GH-40")
        return _refused(session, rules_for(game.kind), game, sender, line, exc, outcome)
    seed_text = f"{sender.name}: {text.strip()}"

    def add(rules: Rules, ctx: Context, state: GameState) -> GameState:
        ctx.rng.add_client_seed(seed_text)
        ctx.record("seed.client", player=sender.name, seed=seed_text, epoch=ctx.rng.epoch)
        ctx.reply(
            sender.name, "seed_added", "common/seed.txt", f"{game.id}: your seed is in",
            seed=seed_text, client_hash=client_hash(ctx.rng.client_seeds),
            commitment=ctx.rng.commitment,
            until="phase" if game.kind == "hall" else "game",
        )
        return state

    run_step(session, game, sent_at, add, origin=origin, actor=sender.name)
    outcome.note(line, "applied", "client seed added", game=game.id)
    return "applied"
