"""From a stored message to game steps: find the player and the game, run each line.

Every message gets one private reply taking its lines in order, as a play-by-email judge
does; the other lines of a message still count. In a PM, lines whose first word is no
game's command word are listed once as not read as commands. Shell commands (``help``,
``game ID``, ``seed TEXT``) are answered here, before the rules see anything.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.orm import Session

from dealer.games import command_words, rules_for
from dealer.games.base import Rejected
from dealer.history import ClientSeedAdded, CommandSent
from dealer.routes import ACCOUNT
from dealer.shell.hooks import offer_message, offer_shared, process_event
from dealer.shell.replies import (
    Answer, Outcome, Section, answer_help, no_command, queue_reply, refused, reply_error,
)
from dealer.shell.routing import (
    GAME_LINE, HELP_LINE, SEED_LINE, GameRef, InboundRef, PlayerRef, before_game, find_sender,
    find_game, match_route,
)
from dealer.shell.steps import run_step
from dealer.shell import unit_of_work
from dealer.store import queries
from dealer.text import (
    MAX_BODY_CHARS, MAX_LINES, MAX_LINE_CHARS, command_lines, escape_post,
)

log = logging.getLogger(__name__)


def _unknown_sender(session: Session, inbound: InboundRef, outcome: Outcome, origin: str) -> None:
    """Refuse a sender who is no player, saying how to be added: once for an unlinked platform
    account, every time for a named sender."""
    outcome.status = "rejected"
    outcome.note(None, "rejected", f"unknown sender {inbound.sender!r}")
    account = ACCOUNT.match(inbound.sender)
    if account:
        # An earlier message of the group may have told it.
        unit_of_work.of(session).before_reading_appended()
        if queries.already_told(session, inbound.sender):
            return  # told once already
        # A join command registers an unknown sender only on Discord (DEALER_REGISTER_UNKNOWN).
        joins = (" Where the host allows it, sending a game's join command (`join`, `sit`) "
                 "adds you at once." if account.group("platform") == "discord" else "")
        how = (
            f"Your {account.group('platform')} account is not linked to a player of this dealer, "
            "so your messages are not applied. Ask the host to add you: `dealer player add NAME` "
            f"then `dealer player link NAME {inbound.sender}`.{joins} "
            "This is said once; later messages are not answered until then."
        )
    else:
        how = (f"{inbound.sender} is not a registered player, so the message was not applied. "
               "Ask the dealer to add you (dealer player add NAME).")
    reply_error(outcome, None, inbound.body[:120] or "(empty message)", how)
    queue_reply(session, outcome, inbound, origin, inbound.sender)


def process_inbound(session: Session, inbound: InboundRef) -> Outcome:
    """Apply a stored message; the caller records the outcome and commits."""
    outcome = Outcome(now=inbound.sent_at)
    origin = f"in:{inbound.id}"
    sender = find_sender(session, inbound.sender)
    if sender is None:
        _unknown_sender(session, inbound, outcome, origin)
        return outcome
    if inbound.kind != "message":
        process_event(session, inbound, sender, outcome, origin)
        queue_reply(session, outcome, inbound, origin, sender.name)
        return outcome
    if len(inbound.body) > MAX_BODY_CHARS:
        outcome.status = "rejected"
        outcome.note(None, "rejected", f"body of {len(inbound.body)} characters")
        reply_error(
            outcome, None, inbound.body[:80],
            f"The message is {len(inbound.body)} characters long; at most {MAX_BODY_CHARS} "
            "are read. Send one command per line in a shorter message.",
        )
        queue_reply(session, outcome, inbound, origin, sender.name)
        return outcome
    lines = command_lines(inbound.body)
    if not lines:
        outcome.status = "ignored"
        outcome.note(None, "ignored", "no command in the message")
        return outcome
    chosen = inbound.game_hint
    routes: dict[str | None, tuple[GameRef | None, str | None]] = {}
    if chosen or inbound.channel != "pm":
        # A whole message is offered to the game of its channel or of its `game` field.
        routes[chosen] = find_game(session, inbound, sender, chosen)
        if offer_message(session, inbound, sender, lines, routes[chosen][0], origin, outcome) \
                or offer_shared(session, inbound, sender, lines, routes[chosen], origin, outcome):
            queue_reply(session, outcome, inbound, origin, sender.name)
            return outcome
    if len(lines) > MAX_LINES:
        outcome.status = "rejected"
        outcome.note(None, "rejected", f"{len(lines)} lines")
        reply_error(
            outcome, None, lines[0],
            f"The message has {len(lines)} command lines; at most {MAX_LINES} are read at once.",
        )
        queue_reply(session, outcome, inbound, origin, sender.name)
        return outcome

    public = inbound.channel != "pm"
    words = None if public else command_words()
    if words is not None and not any(_is_command(line, words) for line in lines):
        if chosen not in routes:
            routes[chosen] = find_game(session, inbound, sender, chosen)
        no_command(session, inbound, sender, lines, outcome, routes[chosen][0])
        queue_reply(session, outcome, inbound, origin, sender.name)
        return outcome
    applied = rejected = 0
    for index, line in enumerate(lines):
        game_line = GAME_LINE.match(line)
        if game_line:
            chosen = game_line.group(1)
            outcome.note(line, "game", game=chosen)
            outcome.sections.append(Section(
                line, "routed", "routed", "",
                f"The lines that follow go to game {escape_post(chosen)}.",  # player text
            ))
            continue
        if words is not None and not _is_command(line, words):
            outcome.note(line, "ignored", "not a command")
            outcome.not_commands.append(line)
            continue
        if len(line) > MAX_LINE_CHARS:
            rejected += 1
            outcome.note(line[:80], "rejected", "line too long")
            reply_error(outcome, None, line,
                         f"A command line may be at most {MAX_LINE_CHARS} characters.")
            continue
        if chosen not in routes:
            routes[chosen] = find_game(session, inbound, sender, chosen)
        route = routes[chosen] if chosen else match_route(
            session, sender, line, routes[chosen], public)
        if route[0] is None and route is not routes[chosen]:
            # A match command of a player in several matches: said even in public.
            rejected += 1
            reply_error(outcome, None, line, route[1] or "No game.")
            outcome.note(line, "rejected", route[1] or "no game")
            continue
        result = _run_line(
            session, inbound, sender, line, route, public, f"{origin}:{index}", outcome
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
    queue_reply(session, outcome, inbound, origin, sender.name)
    return outcome


def _is_command(line: str, words: frozenset[str]) -> bool:
    """Whether a PM's line is a command: a shell command, or any game's command word (so ``sit``
    sent to a roulette is refused, not set aside)."""
    if HELP_LINE.match(line) or GAME_LINE.match(line) or SEED_LINE.match(line):
        return True
    first = line.split()[0].lower()
    return first in _SHELL_WORDS or first in words or first.rstrip(".,:;!?") in words


_SHELL_WORDS = frozenset({"help", "commands", "game", "seed"})


def _run_line(session: Session, inbound: InboundRef, sender: PlayerRef, line: str,
              route: tuple[GameRef | None, str | None], public: bool, origin: str,
              outcome: Outcome) -> str:
    """Run one line; return ``applied``, ``rejected``, ``ignored`` or ``answered``."""
    game, why = route
    if HELP_LINE.match(line):
        answer_help(session, sender, game, line, outcome)
        outcome.note(line, "answered", game=game.id if game else None)
        return "answered"
    if game is None:
        if public:
            outcome.note(line, "ignored", "not addressed to a game")
            return "ignored"
        reply_error(outcome, None, line, why or "No game.")
        outcome.note(line, "rejected", why or "no game")
        return "rejected"
    rules = rules_for(game.kind)
    early = before_game(session, game, inbound)
    if early:
        if public and not rules.is_command_line(line):
            outcome.note(line, "ignored", "chatter", game=game.id)
            return "ignored"
        reply_error(outcome, game.id, line, early)
        outcome.note(line, "rejected", "sent before the game existed", game=game.id)
        return "rejected"
    seed_line = SEED_LINE.match(line)
    if seed_line:
        return _add_client_seed(
            session, game, sender, seed_line.group(1), line, inbound.sent_at, origin, outcome
        )
    try:
        command = rules.parse(line)
    except Rejected as exc:
        if public and not rules.is_command_line(line):
            outcome.note(line, "ignored", "chatter", game=game.id)
            return "ignored"
        return refused(session, rules, game, sender, line, exc, outcome)

    answer = Answer(sender.name)

    # The rules raise Rejected before the step writes anything, so a refused line needs
    # no savepoint; any other failure aborts the whole message's transaction.
    try:
        step = run_step(session, game, inbound.sent_at, CommandSent(actor=sender.name, line=line),
                        origin=origin, actor=sender.name, command=command, after=answer.take,
                        inbound=True)
    except Rejected as exc:
        return refused(session, rules, game, sender, line, exc, outcome)
    outcome.deadlines_changed |= step.deadlines_changed
    outcome.note(line, "applied", game=game.id)
    answer.accepted(outcome, game, line)
    return "applied"


def _add_client_seed(session: Session, game: GameRef, sender: PlayerRef, text: str, line: str,
                     sent_at: datetime, origin: str, outcome: Outcome) -> str:
    """GH-40: a player's client seed is mixed into every later draw of the current epoch."""
    if game.status == "finished":
        exc = Rejected(f"Game {game.id} has finished; its draws are all made.", rule="GH-40")
        return refused(session, rules_for(game.kind), game, sender, line, exc, outcome)
    seed_text = f"{sender.name}: {text.strip()}"
    answer = Answer(sender.name)
    run_step(session, game, sent_at, ClientSeedAdded(player=sender.name, seed=seed_text),
             origin=origin, actor=sender.name, after=answer.take, inbound=True)
    outcome.note(line, "applied", "client seed added", game=game.id)
    answer.accepted(outcome, game, line)
    return "applied"
