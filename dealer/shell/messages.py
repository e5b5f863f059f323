"""From a stored message to game steps: find the player and the game, run each line.

Each line is one command. Every message gets one private reply that takes its lines in
order, as a play-by-email judge does: each line quoted, then "accepted" with what the
rules confirm, or "refused" with why, the rule id and what is allowed now. The other
lines of the message still count. In a PM that holds commands, lines whose first word is a
command word of no game (a greeting, a thank-you) are listed once at the end as not read
as commands; a PM with no command at all gets one error with the commands valid now.
Shell commands (``help``, `'game ID'`, ``seed TEXT``) are answered here, before the rules
see anything. Public posts of the rules are queued as the rules made them.

A message sent in a game's channel (or with a ``game`` field) is first offered whole to a
ruleset that reads whole messages (``Rules.on_message``: a proposal); it is read line by
line only if the rules leave it. An edit, a deletion or a reaction goes to the game of the
message it targets (``store.queries.game_of_target``) and to that ruleset's ``on_edit``,
``on_delete`` or ``on_reaction``; a ruleset that does not implement the hook costs no step
and the event is stored as ignored ("no rule uses it").
"""

from __future__ import annotations

import logging
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Iterable

from markupsafe import Markup
from sqlalchemy import Row, bindparam, select
from sqlalchemy.orm import Session

from dealer.clock import iso_exact
from dealer.games import command_words, rules_for
from dealer.games.base import Context, GameState, Ignored, PostDraft, Rejected, Rules
from dealer.history import (
    ClientSeedAdded, CommandSent, DeletionSent, EditSent, MessageTaken, ReactionSent,
)
from dealer.records import NotTaken
from dealer.render import render, render_post
from dealer.shell.steps import (
    games_version, keep_games, keep_locked, keeps_games, kept_game, load_state, queue_posts,
    run_step, staged_rows, write_kept_steps, write_staged,
)
from dealer.store import queries
from dealer.store.models import Game, GamePlayer, Inbound, Player
from dealer.routes import ACCOUNT
from dealer.text import (
    MAX_BODY_CHARS, MAX_LINES, MAX_LINE_CHARS, command_lines, escape_post, player_key, quote,
)

log = logging.getLogger(__name__)

GameRef = Row[Any] | queries.PlayerGame
"""A game as routing found it: a row with ``id``, ``kind``, ``status``, ``channel``,
``parent_id`` and ``created_at``."""

PlayerRef = Row[Any] | queries.PlayerGame
"""A player as routing found it: a row with ``key`` and ``name``."""

InboundRef = Inbound | queries.ClaimedMessage
"""A stored message being handled."""


_GAME_LINE = re.compile(r"^game\s+(\S+)$", re.IGNORECASE)
_SEED_LINE = re.compile(r"^seed\s+(.+)$", re.IGNORECASE)
_HELP_LINE = re.compile(r"^(help|\?|commands)$", re.IGNORECASE)


@dataclass
class Section:
    """One part of the reply to a message: a line (None: the whole message) and what became
    of it, with the text the rules or the shell give for it (already rendered)."""

    line: str | None
    verdict: str  # accepted | refused | answered | routed
    kind: str
    subject: str
    text: str = ""
    game_id: str | None = None


@dataclass
class Outcome:
    """What became of a message: its status, one entry per line, and the reply's parts."""

    status: str = "applied"
    lines: list[dict[str, Any]] = field(default_factory=list)
    sections: list[Section] = field(default_factory=list)
    not_commands: list[str] = field(default_factory=list)
    deadlines_changed: bool = False
    now: datetime | None = None  # when the message was sent: replies are rendered at it

    def render(self, template: str, **context: Any) -> str:
        """Render a part of the reply at the time the message was sent."""
        assert self.now is not None, "process_inbound sets the message's time"
        return render(template, self.now, **context)

    @property
    def game_id(self) -> str | None:
        """The game the message was applied to (else the first game it was routed to):
        an edit, deletion or reaction that targets it goes there."""
        applied = [e["game"] for e in self.lines if e.get("game") and e["result"] == "applied"]
        routed = [e["game"] for e in self.lines if e.get("game") and e["result"] != "game"]
        return (applied or routed or [None])[0]

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
    and spacing aside): a row with ``key`` and ``name``.

    A sender written as a platform account (``discord:80351110224678912``: how a platform
    adapter stores who sent a message) is the player linked to that account: a message is
    attributed by the account, never by a display name that can change. A Discourse
    username linked to nobody is the player of that name, unless that player linked
    another Discourse account (:func:`~dealer.store.queries.player_of_sender`)."""
    account = ACCOUNT.match(name)
    if account:
        platform, account_id = account.group("platform"), account.group("id")
        if platform == "discourse":
            account_id = account_id.lower()  # Discourse usernames: one user whatever the case
        key = queries.player_of_sender(session, platform, account_id)
        return None if key is None else session.execute(_PLAYER, {"key": key}).first()
    return session.execute(_PLAYER, {"key": player_key(name)}).first()


_ROUTING = "dealer.routing_reads"
"""``session.info`` key: what routing read of the senders (:class:`_Senders`)."""


@dataclass
class _Senders:
    """The players routing read in a transaction (a message, or a group of them) and their
    unfinished games: kept while they stand. Players are added only by the admin (another
    transaction); a player's unfinished games change only through a step that changes who
    plays in a game or a game's status, which :func:`~dealer.shell.steps.games_version`
    counts: the games read before such a step are read again."""

    version: int
    """:func:`~dealer.shell.steps.games_version` when ``games`` were read."""
    players: dict[str, PlayerRef | None] = field(default_factory=dict)
    """By sender as stored: the player (``key``, ``name``), or None for no player."""
    games: dict[str, list[GameRef]] = field(default_factory=dict)
    """By player name: the unfinished games the player takes part in."""


def _senders(session: Session) -> _Senders:
    """What routing read in ``session``, its games dropped if a step changed any since."""
    version = games_version(session)
    senders = session.info.get(_ROUTING)
    if senders is None:
        senders = session.info[_ROUTING] = _Senders(version)
    elif senders.version != version:
        senders.games.clear()
        senders.version = version
    return senders


def read_senders(session: Session, names: Iterable[str]) -> None:
    """Read the players who sent ``names`` (as stored) with their unfinished games, in one
    statement: a group of messages reads its senders together (nearly every message needs
    its sender's games to be routed). A sender written as a platform account is read when
    its message is (:func:`find_player`)."""
    senders = _senders(session)
    keys = _unread(senders, names)
    if not keys:
        return
    write_kept_steps(session)  # a step of the group may have changed a game's status
    _keep_senders(senders, keys, queries.players_with_games(session, sorted(set(keys.values()))))


def read_senders_keeping_games(session: Session, names: Iterable[str]) -> None:
    """:func:`read_senders`, then :func:`keep_senders_games`: what a group of messages
    reads first, once its messages are claimed. On Postgres, in a group that keeps its
    games, one statement reads the senders and locks and reads their games
    (:func:`~dealer.store.queries.senders_with_games_locked`): a round trip less for
    every group, a one-message pass's included."""
    if not keeps_games(session) or session.connection().dialect.name != "postgresql":
        read_senders(session, names)
        keep_senders_games(session)
        return
    senders = _senders(session)
    keys = _unread(senders, names)
    if keys:
        write_kept_steps(session)  # a step of the group may have changed a game's status
        found, locked = queries.senders_with_games_locked(
            session.connection(), sorted(set(keys.values())))
        _keep_senders(senders, keys, found)
        keep_locked(session, locked)
    keep_senders_games(session)  # the games of senders read before, if any is not kept


def _unread(senders: _Senders, names: Iterable[str]) -> dict[str, str]:
    """The senders of ``names`` (as stored) not read yet, each with its player key; a
    platform account is read with its message (:func:`find_player`)."""
    return {name: player_key(name) for name in names
            if name not in senders.players and not ACCOUNT.match(name)}


def _keep_senders(senders: _Senders, keys: dict[str, str],
                  found: dict[str, list[queries.PlayerGame]]) -> None:
    """Keep what was read of the players of ``keys`` (by sender as stored)."""
    for name, key in keys.items():
        rows = found.get(key)
        senders.players[name] = rows[0] if rows else None
        if rows:
            senders.games[rows[0].name] = [row for row in rows if row.id is not None]


def keep_senders_games(session: Session) -> None:
    """Lock and read, in one statement, the unfinished games of the senders routing read
    in the current group of messages (:func:`~dealer.shell.steps.keep_games`): nearly
    every step of the group goes to one of them."""
    keep_games(session, [game.id for games in _senders(session).games.values() for game in games])


def _find_sender(session: Session, name: str) -> PlayerRef | None:
    """:func:`find_player`, reading the player's unfinished games in the same statement
    (nearly every message needs them to be routed), unless read already
    (:func:`read_senders`)."""
    senders = _senders(session)
    if name not in senders.players:
        if ACCOUNT.match(name):
            senders.players[name] = find_player(session, name)
        else:
            read_senders(session, [name])
    return senders.players[name]


def _unknown_sender(session: Session, inbound: InboundRef, outcome: Outcome, origin: str) -> None:
    """Refuse the message of a sender who is no player, and say how to be added: once for
    an unlinked platform account (its first message), every time for a named sender."""
    outcome.status = "rejected"
    outcome.note(None, "rejected", f"unknown sender {inbound.sender!r}")
    account = ACCOUNT.match(inbound.sender)
    if account:
        write_staged(session)  # an earlier message of the group may have told it
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
    _reply_error(outcome, None, inbound.body[:120] or "(empty message)", how)
    _flush(session, outcome, inbound, origin, inbound.sender)


def process_inbound(session: Session, inbound: InboundRef) -> Outcome:
    """Apply a stored message (an ``inbound`` row); the caller records the outcome and
    commits."""
    outcome = Outcome(now=inbound.sent_at)
    origin = f"in:{inbound.id}"
    sender = _find_sender(session, inbound.sender)
    if sender is None:
        _unknown_sender(session, inbound, outcome, origin)
        return outcome
    if inbound.kind != "message":
        _process_event(session, inbound, sender, outcome, origin)
        _flush(session, outcome, inbound, origin, sender.name)
        return outcome
    if len(inbound.body) > MAX_BODY_CHARS:
        outcome.status = "rejected"
        outcome.note(None, "rejected", f"body of {len(inbound.body)} characters")
        _reply_error(
            outcome, None, inbound.body[:80],
            f"The message is {len(inbound.body)} characters long; at most {MAX_BODY_CHARS} "
            "are read. Send one command per line in a shorter message.",
        )
        _flush(session, outcome, inbound, origin, sender.name)
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
        routes[chosen] = _route(session, inbound, sender, chosen)
        if _offer_message(session, inbound, sender, lines, routes[chosen][0], origin, outcome) \
                or _offer_shared(session, inbound, sender, lines, routes[chosen], origin, outcome):
            _flush(session, outcome, inbound, origin, sender.name)
            return outcome
    if len(lines) > MAX_LINES:
        outcome.status = "rejected"
        outcome.note(None, "rejected", f"{len(lines)} lines")
        _reply_error(
            outcome, None, lines[0],
            f"The message has {len(lines)} command lines; at most {MAX_LINES} are read at once.",
        )
        _flush(session, outcome, inbound, origin, sender.name)
        return outcome

    public = inbound.channel != "pm"
    words = None if public else command_words()
    if words is not None and not any(_is_command(line, words) for line in lines):
        if chosen not in routes:
            routes[chosen] = _route(session, inbound, sender, chosen)
        _no_command(session, inbound, sender, lines, outcome, routes[chosen][0])
        _flush(session, outcome, inbound, origin, sender.name)
        return outcome
    applied = rejected = 0
    for index, line in enumerate(lines):
        game_line = _GAME_LINE.match(line)
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
            _reply_error(outcome, None, line,
                         f"A command line may be at most {MAX_LINE_CHARS} characters.")
            continue
        if chosen not in routes:
            routes[chosen] = _route(session, inbound, sender, chosen)
        route = routes[chosen] if chosen else _match_route(
            session, sender, line, routes[chosen], public)
        if route[0] is None and route is not routes[chosen]:
            # A match command of a player in several matches: said even in public.
            rejected += 1
            _reply_error(outcome, None, line, route[1] or "No game.")
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
    _flush(session, outcome, inbound, origin, sender.name)
    return outcome


def _is_command(line: str, words: frozenset[str]) -> bool:
    """Whether a PM's line is read as a command: a shell command, or a line whose first
    word is a command word of some game (so ``sit`` sent to a roulette is refused, not
    set aside)."""
    if _HELP_LINE.match(line) or _GAME_LINE.match(line) or _SEED_LINE.match(line):
        return True
    first = line.split()[0].lower()
    return first in _SHELL_WORDS or first in words or first.rstrip(".,:;!?") in words


_SHELL_WORDS = frozenset({"help", "commands", "game", "seed"})


def _flush(
    session: Session, outcome: Outcome, inbound: InboundRef, origin: str, recipient: str
) -> None:
    """Queue the message's one reply (nothing when there is nothing to tell the sender)."""
    told = [s for s in outcome.sections if s.verdict != "routed"]
    if not told:
        return
    quiet = inbound.channel != "pm" or inbound.kind != "message"  # an edit, a vote: in public
    if quiet and all(s.verdict == "accepted" and not s.text for s in told):
        return  # a public command the rules answered in public only: no private word needed
    games = {s.game_id for s in told}
    game_id = games.pop() if len(games) == 1 else None
    kinds = {s.kind for s in told}
    if len(told) == 1:
        subject = told[0].subject
    else:
        counts = Counter(s.verdict for s in told)
        tally = ", ".join(f"{counts[v]} {v}" for v in ("accepted", "refused", "answered") if counts[v])
        subject = f"{game_id}: {tally}" if game_id else f"Your message: {tally}"
    sections = [
        {"line": s.line, "verdict": s.verdict, "text": Markup(s.text.strip())}
        for s in outcome.sections
    ]
    reply = PostDraft(
        kind=kinds.pop() if len(kinds) == 1 else "reply",
        template="common/reply.txt",
        channel="pm",
        recipient=recipient,
        subject=subject,
        context={"game_id": game_id, "sent_at": inbound.sent_at, "sections": sections,
                 "not_commands": outcome.not_commands},
    )
    queue_posts(session, [reply], inbound.sent_at, game_id, f"{origin}:reply",
                staged=staged_rows(session))


def _reply_error(
    outcome: Outcome,
    game_id: str | None,
    line: str | None,
    what: str,
    rule: str | None = None,
    allowed: list[str] | None = None,
) -> None:
    """Add a refusal to the reply: what is wrong, the rule, what is allowed now."""
    if rule and f"({rule})" in what:
        rule = None  # the rules' own message already cites it
    text = outcome.render(
        "common/error.txt", game_id=game_id, what=what, rule=rule, allowed=allowed or []
    )
    outcome.sections.append(
        Section(line, "refused", "error", f"Not accepted: {quote(line or what, 60)}",
                text, game_id)
    )


def _take_replies(ctx: Context, recipient: str) -> list[PostDraft]:
    """Take the step's private replies to ``recipient`` out of its posts: they become
    sections of the message's one reply. Posts to others stay as the rules made them."""
    mine = [p for p in ctx.posts if p.channel == "pm" and p.recipient == recipient]
    if mine:
        ctx.posts[:] = [p for p in ctx.posts if not (p.channel == "pm" and p.recipient == recipient)]
    return mine


class _Answer:
    """What a step's rules said privately to the sender, taken out of the step's posts."""

    def __init__(self, recipient: str):
        self.recipient = recipient
        self.drafts: list[PostDraft] = []
        self.texts: list[str] = []

    def take(self, ctx: Context) -> None:
        """Take the step's private replies to the sender out of its posts, once its rules
        ran (rendered as the step would have rendered them: at its time, for its game)."""
        taken = _take_replies(ctx, self.recipient)
        self.drafts += taken
        self.texts += [render_post(d, ctx.now, ctx.game_id) for d in taken]

    def accepted(self, outcome: Outcome, game: GameRef, line: str) -> None:
        """Add the line to the reply as accepted, with what the rules said about it."""
        first = self.drafts[0] if self.drafts else None
        outcome.sections.append(Section(
            line, "accepted",
            first.kind if first else "confirmation",
            first.subject if first else f"{game.id}: accepted",
            "\n\n".join(t.strip() for t in self.texts),
            game.id,
        ))


def _no_command(
    session: Session, inbound: InboundRef, sender: PlayerRef, lines: list[str],
    outcome: Outcome, game: GameRef | None,
) -> None:
    """A PM none of whose lines is a command: one error, with the commands valid now."""
    outcome.status = "rejected"
    outcome.note(None, "rejected", "no command in the message")
    for line in lines:
        outcome.note(line, "ignored", "not a command")
    text = outcome.render("common/no_command.txt", lines=lines, **_help_context(session, sender, game))
    outcome.sections.append(
        Section(None, "refused", "error", "No command in your message", text,
                game.id if game else None)
    )


def player_games(session: Session, name: str) -> list[Row[Any]]:
    """The unfinished games ``name`` takes part in (read once while they stand:
    :class:`_Senders`)."""
    senders = _senders(session)
    games = senders.games.get(name)
    if games is None:
        write_kept_steps(session)
        games = senders.games[name] = queries.player_games(session, name)
    return games


def _route(
    session: Session, inbound: InboundRef, sender: PlayerRef, chosen: str | None
) -> tuple[GameRef | None, str | None]:
    """The game a line is for, or ``(None, why)``."""
    if chosen:
        # One of the sender's games, as read already, needs no statement (most `game ID`
        # lines name one).
        known = _senders(session).games.get(sender.name, ())
        game = next((g for g in known if g.id == chosen), None)
        if game is None:
            write_kept_steps(session)
            game = queries.game_by_id(session, chosen)
        if game is None:
            return None, f"There is no game {chosen!r}."
        return game, None
    if inbound.channel != "pm":
        write_kept_steps(session)
        on_channel = queries.games_on_channel(session, inbound.channel)
        if len(on_channel) == 1:
            return on_channel[0], None
        if len(on_channel) > 1:
            ids = ", ".join(g.id for g in on_channel)
            return None, f"Several games run in {inbound.channel} ({ids}); start with 'game ID'."
    mine = player_games(session, sender.name)
    if len(mine) == 1:
        return mine[0], None
    if not mine:
        write_kept_steps(session)
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


def _match_route(
    session: Session, sender: PlayerRef, line: str, route: tuple[GameRef | None, str | None],
    public: bool,
) -> tuple[GameRef | None, str | None]:
    """A match's command sent where its parent game is reached (the Hall's channel, or a PM
    of a player in the Hall and a match) goes to the match: a child game owns no channel.

    When the line's first word is no command word of the routed game (or no game was found
    because the sender plays in several, in a PM), and the sender plays in exactly one running
    child game whose ruleset has that word (of the routed game, if any), the line goes there.
    A public line in a channel no game owns stays unaddressed."""
    game, _ = route
    words = line.split()
    if not words or _HELP_LINE.match(line) or _SEED_LINE.match(line) or (game is None and public):
        return route
    word = words[0]
    if game is not None and rules_for(game.kind).is_command_word(word):
        return route
    mine = player_games(session, sender.name)
    matches = [g for g in mine
               if g.parent_id is not None and (game is None or g.parent_id == game.id)
               and rules_for(g.kind).is_command_word(word)]
    if len(matches) == 1:
        return matches[0], None
    if game is None and len({g.parent_id or g.id for g in mine}) == 1:
        # A PM of a player whose games are one Hall and its matches: a Hall command goes to
        # the Hall.
        parents = [g for g in mine if g.parent_id is None and rules_for(g.kind).is_command_word(word)]
        if len(parents) == 1:
            return parents[0], None
    if len(matches) > 1:
        ids = ", ".join(g.id for g in matches)
        return None, f"You play in several matches ({ids}); start the message with a line 'game ID'."
    return route


def _run_line(
    session: Session,
    inbound: InboundRef,
    sender: PlayerRef,
    line: str,
    route: tuple[GameRef | None, str | None],
    public: bool,
    origin: str,
    outcome: Outcome,
) -> str:
    """Run one line; return ``applied``, ``rejected``, ``ignored`` or ``answered``."""
    game, why = route
    if _HELP_LINE.match(line):
        _answer_help(session, sender, game, line, outcome)
        outcome.note(line, "answered", game=game.id if game else None)
        return "answered"
    if game is None:
        if public:
            outcome.note(line, "ignored", "not addressed to a game")
            return "ignored"
        _reply_error(outcome, None, line, why or "No game.")
        outcome.note(line, "rejected", why or "no game")
        return "rejected"
    rules = rules_for(game.kind)
    early = _before_game(session, game, inbound)
    if early:
        if public and not rules.is_command_line(line):
            outcome.note(line, "ignored", "chatter", game=game.id)
            return "ignored"
        _reply_error(outcome, game.id, line, early)
        outcome.note(line, "rejected", "sent before the game existed", game=game.id)
        return "rejected"
    seed_line = _SEED_LINE.match(line)
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
        return _refused(session, rules, game, sender, line, exc, outcome)

    answer = _Answer(sender.name)

    # The rules raise Rejected before the step writes anything, so a refused line needs
    # no savepoint; any other failure aborts the whole message's transaction.
    try:
        step = run_step(session, game, inbound.sent_at, CommandSent(actor=sender.name, line=line),
                        origin=origin, actor=sender.name, command=command, after=answer.take)
    except Rejected as exc:
        return _refused(session, rules, game, sender, line, exc, outcome)
    outcome.deadlines_changed |= step.deadlines_changed
    outcome.note(line, "applied", game=game.id)
    answer.accepted(outcome, game, line)
    return "applied"


def _before_game(session: Session, game: GameRef, inbound: InboundRef) -> str | None:
    """Why a message sent before its game began is refused (else None); a game begins when
    it is created, or at the start it was given if that is earlier.

    Nothing sent before a game exists counts for it: a clock far behind (a ``sent_at`` of
    year 0001) would otherwise have the move made, and every deadline it sets fall, long
    before the game began.
    """
    if inbound.sent_at >= game.created_at:
        return None  # the common case needs no query
    write_staged(session)  # the game may have been opened by an earlier message of the group
    began = queries.game_began(session, game.id, game.created_at)
    if inbound.sent_at >= began:
        return None
    return (
        f"The message says it was sent at {iso_exact(inbound.sent_at)}, before game "
        f"{game.id} began ({iso_exact(began)}), so it does not count for it. "
        "If the time is wrong, send the message again."
    )


def _current_state(session: Session, game: GameRef) -> tuple[Rules, GameState]:
    """The game's ruleset and its state as it stands now (for help and error replies)."""
    kept = kept_game(session, game.id)  # as a step of the group left it
    if kept is not None:
        return load_state(kept)
    write_kept_steps(session, game.id)  # a step of the group may have kept its new state
    return load_state(queries.game_state_row(session, game.id))


def _refused(
    session: Session,
    rules: Rules, game: GameRef, sender: PlayerRef, line: str, exc: Rejected, outcome: Outcome
) -> str:
    allowed = exc.allowed
    if not allowed:
        _, state = _current_state(session, game)
        allowed = rules.help(state, sender.name)
    _reply_error(outcome, game.id, line, exc.what, exc.rule, allowed)
    outcome.note(line, "rejected", exc.what, game=game.id)
    return "rejected"


def _help_context(session: Session, sender: PlayerRef, game: GameRef | None) -> dict[str, Any]:
    """What ``common/help.txt`` shows: the game's commands valid now and the sender's games."""
    context: dict[str, Any] = {"game_id": None, "commands": [], "title": "", "games": [], "family": []}
    mine = player_games(session, sender.name)
    if game is not None:
        rules, state = _current_state(session, game)
        context.update(game_id=game.id, title=rules.title, commands=rules.help(state, sender.name))
    elif len(mine) > 1 and len({g.parent_id or g.id for g in mine}) == 1:
        # A player whose games are one Hall and its matches: a PM's command goes by its
        # word (see _route), so help lists each game's commands, the Hall's first.
        for each in sorted(mine, key=lambda g: g.parent_id is not None):
            rules, state = _current_state(session, each)
            context["family"].append(
                {"id": each.id, "title": rules.title, "commands": rules.help(state, sender.name)})
    context["games"] = [g.id for g in mine]
    return context


def _answer_help(
    session: Session, sender: PlayerRef, game: GameRef | None, line: str, outcome: Outcome
) -> None:
    """Add the commands valid now to the reply."""
    text = outcome.render("common/help.txt", **_help_context(session, sender, game))
    outcome.sections.append(
        Section(line, "answered", "help", "Commands you can send", text, game.id if game else None)
    )


def _add_client_seed(
    session: Session,
    game: GameRef,
    sender: PlayerRef,
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
    answer = _Answer(sender.name)
    run_step(session, game, sent_at, ClientSeedAdded(player=sender.name, seed=seed_text),
             origin=origin, actor=sender.name, after=answer.take)
    outcome.note(line, "applied", "client seed added", game=game.id)
    answer.accepted(outcome, game, line)
    return "applied"


def _overrides(rules: Rules, hook: str) -> bool:
    """Whether ``rules`` implements ``hook`` itself (a default hook needs no step)."""
    return getattr(type(rules), hook) is not getattr(Rules, hook)


def _offer_message(
    session: Session,
    inbound: InboundRef,
    sender: PlayerRef,
    lines: list[str],
    game: GameRef | None,
    origin: str,
    outcome: Outcome,
    body: str | None = None,
) -> bool:
    """Hand the whole message to the ruleset of the game it was sent to (by channel, by its
    ``game`` field, or the sender's one game), if that ruleset reads whole messages. True
    when the rules took it (applied or refused); False to read it line by line. ``body``
    replaces the stored text (a message whose first line named its game)."""
    if game is None or game.status == "finished":
        return False
    rules = rules_for(game.kind)
    if not _overrides(rules, "on_message") or not rules.takes_whole(inbound.channel):
        return False
    early = _before_game(session, game, inbound)
    if early:
        _reply_error(outcome, game.id, lines[0], early)
        outcome.note(None, "rejected", "sent before the game existed", game=game.id)
        outcome.status = "rejected"
        return True
    message = MessageTaken(
        id=inbound.external_id, sender=sender.name, channel=inbound.channel,
        sent_at=inbound.sent_at, body=inbound.body if body is None else body, lines=list(lines),
    )
    answer = _Answer(sender.name)
    first = lines[0]
    try:
        step = run_step(session, game, inbound.sent_at, message, origin=f"{origin}:m",
                        actor=sender.name, after=answer.take)
    except (NotTaken, Ignored):
        return False
    except Rejected as exc:
        _refused(session, rules, game, sender, first, exc, outcome)
        outcome.status = "rejected"
        return True
    outcome.deadlines_changed |= step.deadlines_changed
    outcome.note(None, "applied", "message taken by the rules", game=game.id)
    answer.accepted(outcome, game, first)
    return True


def _offer_shared(
    session: Session,
    inbound: InboundRef,
    sender: PlayerRef,
    lines: list[str],
    route: tuple[GameRef | None, str | None],
    origin: str,
    outcome: Outcome,
) -> bool:
    """A public message without a ``game`` field, in a channel several games share, where
    one of them reads whole messages (two Halls' ``#proposals``): True when it was handled.

    A first line ``game ID`` names the game: the rest of the message is offered to it
    whole. With no such line anywhere the message cannot be attributed, and it is refused
    privately, saying how to name the game, rather than read line by line as chatter and
    lost without a word (an interpretation of the shell's: a channel is normally one
    game's; docs/GOVERNANCE.md). A message with a ``game`` line further down is read line
    by line, as before."""
    if route[0] is not None or inbound.game_hint or inbound.channel == "pm":
        return False
    write_kept_steps(session)
    whole = [g for g in queries.games_on_channel(session, inbound.channel)
             if _overrides(rules_for(g.kind), "on_message") and rules_for(g.kind).takes_whole(inbound.channel)]
    if not whole:
        return False
    named = _GAME_LINE.match(lines[0])
    if named and len(lines) > 1:
        game, why = _route(session, inbound, sender, named.group(1))
        if game is not None and _offer_message(
            session, inbound, sender, lines[1:], game, origin, outcome, body=_after_first_line(inbound.body),
        ):
            return True
        if game is None:
            _reply_error(outcome, None, lines[0], why or "No such game.")
            outcome.note(lines[0], "rejected", why or "no such game")
            outcome.status = "rejected"
            return True
        return False
    if any(_GAME_LINE.match(line) for line in lines):
        return False
    ids = ", ".join(g.id for g in whole)
    _reply_error(
        outcome, None, lines[0],
        f"Several games read {inbound.channel} ({ids}), so this message cannot be given to "
        f"one: send it again with a first line 'game ID' (for example 'game {whole[0].id}').",
    )
    outcome.note(None, "rejected", f"several games read {inbound.channel}")
    outcome.status = "rejected"
    return True


def _after_first_line(body: str) -> str:
    """``body`` without its first non-blank line (a ``game ID`` line)."""
    rest = body.lstrip().split("\n", 1)
    return rest[1] if len(rest) > 1 else ""


_EVENT_HOOKS = {"edit": "on_edit", "delete": "on_delete", "reaction": "on_reaction"}


def _inbound_event(
    inbound: InboundRef, sender: str, target_ref: str | None = None
) -> EditSent | DeletionSent | ReactionSent:
    """The step input of a stored edit, deletion or reaction (the rules get it as a typed
    :class:`~dealer.games.base.Edit`, :class:`~dealer.games.base.Deletion` or
    :class:`~dealer.games.base.Reaction`)."""
    common = dict(id=inbound.external_id, sender=sender, channel=inbound.channel,
                  sent_at=inbound.sent_at, target=inbound.target)
    if inbound.kind == "edit":
        return EditSent(body=inbound.body, **common)
    if inbound.kind == "delete":
        return DeletionSent(**common)
    return ReactionSent(emoji=inbound.emoji or "", removed=bool(inbound.removed),
                        target_ref=target_ref, **common)


def _describe_event(inbound: InboundRef) -> str:
    """How the reply quotes an edit, a deletion or a reaction."""
    if inbound.kind == "reaction":
        verb = "took back" if inbound.removed else "reacted"
        return f"{verb} {inbound.emoji or ''} on message {inbound.target}"
    return f"{'edited' if inbound.kind == 'edit' else 'deleted'} message {inbound.target}"


def _process_event(
    session: Session, inbound: InboundRef, sender: PlayerRef, outcome: Outcome, origin: str
) -> None:
    """An edit, a deletion or a reaction: hand it to the game of the message it targets (a
    player's message: the game it was applied to; one of dealer's posts: the game that
    posted it). A ruleset that does not implement the hook ignores it, and no step runs."""
    kind = inbound.kind
    if not inbound.target:
        outcome.status = "ignored"
        outcome.note(None, "ignored", f"the {kind} names no target")
        return
    # The target may be a message of the same group (its outcome names its game) or a
    # post it queued: what the group staged is written first.
    write_staged(session)
    game_id = queries.game_of_target(session, inbound.source, inbound.target)
    game = queries.game_by_id(session, game_id) if game_id else None
    if game is None:
        # Bad input gets a clear reply: the target is no message or post dealer knows (or
        # one no game took); the event is kept in the inbox and changes nothing.
        outcome.status = "rejected"
        why = f"its target {inbound.target!r} is no message or post of a game dealer knows"
        outcome.note(None, "rejected", why)
        _reply_error(outcome, None, _describe_event(inbound),
                     f"dealer knows no message or post {inbound.target!r} of a game, so your "
                     f"{kind} changes nothing.")
        return
    rules = rules_for(game.kind)
    hook = _EVENT_HOOKS[kind]
    if not _overrides(rules, hook):
        outcome.status = "ignored"
        outcome.note(None, "ignored", "no rule uses it", game=game.id)
        return
    if game.status == "finished":
        outcome.status = "ignored"
        outcome.note(None, "ignored", f"game {game.id} has finished", game=game.id)
        return
    ref = queries.post_ref(session, inbound.source, inbound.target) if kind == "reaction" else None
    event = _inbound_event(inbound, sender.name, ref)
    answer = _Answer(sender.name)
    described = _describe_event(inbound)
    early = _before_game(session, game, inbound)
    if early:
        outcome.status = "rejected"
        _reply_error(outcome, game.id, described, early)
        outcome.note(None, "rejected", "sent before the game existed", game=game.id)
        return
    try:
        step = run_step(session, game, inbound.sent_at, event, origin=origin,
                        actor=sender.name, after=answer.take)
    except Ignored as exc:
        outcome.status = "ignored"
        outcome.note(None, "ignored", exc.why, game=game.id)
        return
    except Rejected as exc:
        outcome.status = "rejected"
        _reply_error(outcome, game.id, described, exc.what, exc.rule, exc.allowed)
        outcome.note(None, "rejected", exc.what, game=game.id)
        return
    outcome.deadlines_changed |= step.deadlines_changed
    outcome.note(None, "applied", game=game.id)
    answer.accepted(outcome, game, described)
