"""The one private reply to a message: its sections, the refusals, the help, and the reply queued."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from markupsafe import Markup
from sqlalchemy.orm import Session

from dealer.games.base import Context, GameState, PostDraft, Rejected, Rules
from dealer.render import brief_template, render, render_post
from dealer.shell import brief
from dealer.shell.effects import queue_posts
from dealer.shell.routing import GameRef, InboundRef, PlayerRef, player_games
from dealer.shell import unit_of_work
from dealer.store import queries
from dealer.text import quote
from dealer.views import game_state

@dataclass
class Section:
    """One part of the reply: a line (None: the whole message), what became of it, and its rendered text."""

    line: str | None
    verdict: str  # accepted | refused | answered | routed
    kind: str
    subject: str
    text: str = ""
    game_id: str | None = None
    footer: str = ""
    """A brief reply's footer for this line; the reply ends with its last line's."""


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
        return render(brief_template(template) if brief.is_brief() else template, self.now, **context)

    @property
    def game_id(self) -> str | None:
        """The game the message was applied (else routed) to, where its edits and reactions go."""
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


def queue_reply(session: Session, outcome: Outcome, inbound: InboundRef, origin: str,
                recipient: str) -> None:
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
    extra = brief.reply_parts(session, [s.footer for s in told if s.footer], game_id, recipient,
                              inbound.sent_at) if brief.is_brief() else {}
    reply = PostDraft(
        kind=kinds.pop() if len(kinds) == 1 else "reply",
        template="common/reply.txt",
        channel="pm",
        recipient=recipient,
        subject=subject,
        context={"game_id": game_id, "sent_at": inbound.sent_at, "sections": sections,
                 "not_commands": outcome.not_commands, **extra},
    )
    queue_posts(session, [reply], inbound.sent_at, game_id, f"{origin}:reply",
                unit=unit_of_work.of(session))


def reply_error(outcome: Outcome, game_id: str | None, line: str | None, what: str,
                rule: str | None = None, allowed: list[str] | None = None) -> None:
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


class Answer:
    """What a step's rules said privately to the sender, taken out of the step's posts."""

    def __init__(self, recipient: str):
        self.recipient = recipient
        self.drafts: list[PostDraft] = []
        self.texts: list[str] = []
        self.footers: list[str] = []

    def take(self, ctx: Context) -> None:
        """Take the step's private replies to the sender out of its posts, rendered at its time for its game."""
        taken = [p for p in ctx.posts if p.channel == "pm" and p.recipient == self.recipient]
        if taken:
            ctx.posts[:] = [p for p in ctx.posts if p.channel != "pm" or p.recipient != self.recipient]
        self.drafts += taken
        self.texts += [render_post(d, ctx.now, ctx.game_id) for d in taken]
        if brief.is_brief():
            self.footers += [f for f in (brief.footer(d, ctx.now, ctx.game_id) for d in taken) if f]

    def accepted(self, outcome: Outcome, game: GameRef, line: str) -> None:
        """Add the line to the reply as accepted, with what the rules said about it."""
        first = self.drafts[0] if self.drafts else None
        outcome.sections.append(Section(
            line, "accepted",
            first.kind if first else "confirmation",
            first.subject if first else f"{game.id}: accepted",
            "\n\n".join(t.strip() for t in self.texts),
            game.id,
            self.footers[-1] if self.footers else "",
        ))


def no_command(session: Session, inbound: InboundRef, sender: PlayerRef, lines: list[str],
               outcome: Outcome, game: GameRef | None) -> None:
    """A PM none of whose lines is a command: one error, with the commands valid now."""
    outcome.status = "rejected"
    outcome.note(None, "rejected", "no command in the message")
    for line in lines:
        outcome.note(line, "ignored", "not a command")
    text = outcome.render("common/no_command.txt", lines=lines,
                          **_help_context(session, sender, game, outcome.now))
    outcome.sections.append(
        Section(None, "refused", "error", "No command in your message", text,
                game.id if game else None)
    )


def current_state(session: Session, game: GameRef) -> tuple[Rules, GameState]:
    """The game's ruleset and its state as it stands now (for help and error replies)."""
    unit = unit_of_work.of(session)
    kept = unit.kept_row(game.id)  # as a step of the group left it
    if kept is not None:
        return game_state(kept)
    unit.before_reading([game.id])  # a step of the group may have kept its new state
    return game_state(queries.game_state_row(session, game.id))


def refused(session: Session, rules: Rules, game: GameRef, sender: PlayerRef, line: str,
            exc: Rejected, outcome: Outcome) -> str:
    allowed = exc.allowed
    if not allowed:
        _, state = current_state(session, game)
        allowed = rules.help(state, sender.name)
    reply_error(outcome, game.id, line, exc.what, exc.rule, allowed)
    outcome.note(line, "rejected", exc.what, game=game.id)
    return "rejected"


def _help_context(session: Session, sender: PlayerRef, game: GameRef | None,
                  now: datetime | None = None) -> dict[str, Any]:
    """What ``common/help.txt`` shows: the game's commands valid now and the sender's games."""
    context: dict[str, Any] = {"game_id": None, "commands": [], "title": "", "games": [], "family": []}
    mine = player_games(session, sender.name)
    if game is not None:
        rules, state = current_state(session, game)
        context.update(game_id=game.id, title=rules.title, commands=rules.help(state, sender.name))
    elif len(mine) > 1 and len({g.parent_id or g.id for g in mine}) == 1:
        # A player whose games are one Hall and its matches: a PM's command goes by its
        # word (see find_game), so help lists each game's commands, the Hall's first.
        for each in sorted(mine, key=lambda g: g.parent_id is not None):
            rules, state = current_state(session, each)
            context["family"].append(
                {"id": each.id, "title": rules.title, "commands": rules.help(state, sender.name)})
    context["games"] = [g.id for g in mine]
    if brief.is_brief() and now is not None:  # brief replies explain once; help always does
        context["explain"] = Markup(brief.explanation(session, game.id if game else None, now))
    return context


def answer_help(session: Session, sender: PlayerRef, game: GameRef | None, line: str,
                outcome: Outcome) -> None:
    """Add the commands valid now to the reply."""
    text = outcome.render("common/help.txt", **_help_context(session, sender, game, outcome.now))
    outcome.sections.append(
        Section(line, "answered", "help", "Commands you can send", text, game.id if game else None)
    )
