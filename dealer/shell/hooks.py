"""What a ruleset's hooks take whole: a message (``Rules.on_message``: a proposal), and an
edit, a deletion or a reaction, sent to the game of its target."""

from __future__ import annotations

from sqlalchemy.orm import Session

from dealer.games import rules_for
from dealer.games.base import Ignored, Rejected, Rules
from dealer.history import DeletionSent, EditSent, MessageTaken, ReactionSent
from dealer.records import NotTaken
from dealer.shell.replies import Answer, Outcome, refused, reply_error
from dealer.shell.routing import (
    GAME_LINE, GameRef, InboundRef, PlayerRef, before_game, find_game,
)
from dealer.shell.steps import run_step
from dealer.shell import unit_of_work
from dealer.store import queries

def _overrides(rules: Rules, hook: str) -> bool:
    """Whether ``rules`` implements ``hook`` itself (a default hook needs no step)."""
    return getattr(type(rules), hook) is not getattr(Rules, hook)


def offer_message(session: Session, inbound: InboundRef, sender: PlayerRef, lines: list[str],
                  game: GameRef | None, origin: str, outcome: Outcome,
                  body: str | None = None) -> bool:
    """Hand the whole message to its game's ruleset, if it reads whole messages: True when the
    rules took it, False to read it line by line. ``body`` replaces the stored text."""
    if game is None or game.status == "finished":
        return False
    rules = rules_for(game.kind)
    if not _overrides(rules, "on_message") or not rules.takes_whole(inbound.channel):
        return False
    early = before_game(session, game, inbound)
    if early:
        reply_error(outcome, game.id, lines[0], early)
        outcome.note(None, "rejected", "sent before the game existed", game=game.id)
        outcome.status = "rejected"
        return True
    message = MessageTaken(
        id=inbound.external_id, sender=sender.name, channel=inbound.channel,
        sent_at=inbound.sent_at, body=inbound.body if body is None else body, lines=list(lines),
    )
    answer = Answer(sender.name)
    first = lines[0]
    try:
        step = run_step(session, game, inbound.sent_at, message, origin=f"{origin}:m",
                        actor=sender.name, after=answer.take, inbound=True)
    except (NotTaken, Ignored):
        return False
    except Rejected as exc:
        refused(session, rules, game, sender, first, exc, outcome)
        outcome.status = "rejected"
        return True
    outcome.deadlines_changed |= step.deadlines_changed
    outcome.note(None, "applied", "message taken by the rules", game=game.id)
    answer.accepted(outcome, game, first)
    return True


def offer_shared(session: Session, inbound: InboundRef, sender: PlayerRef, lines: list[str],
                 route: tuple[GameRef | None, str | None], origin: str, outcome: Outcome) -> bool:
    """A public message in a channel several games share, one reading whole messages (two
    Halls' ``#proposals``): a ``game ID`` first line names the game; with none anywhere it is
    refused privately, not lost as chatter (docs/GOVERNANCE.md). True when handled."""
    if route[0] is not None or inbound.game_hint or inbound.channel == "pm":
        return False
    unit_of_work.of(session).before_reading()
    whole = [g for g in queries.games_on_channel(session, inbound.channel)
             if _overrides(rules_for(g.kind), "on_message") and rules_for(g.kind).takes_whole(inbound.channel)]
    if not whole:
        return False
    named = GAME_LINE.match(lines[0])
    if named and len(lines) > 1:
        game, why = find_game(session, inbound, sender, named.group(1))
        if game is not None and offer_message(
            session, inbound, sender, lines[1:], game, origin, outcome, body=_after_first_line(inbound.body),
        ):
            return True
        if game is None:
            reply_error(outcome, None, lines[0], why or "No such game.")
            outcome.note(lines[0], "rejected", why or "no such game")
            outcome.status = "rejected"
            return True
        return False
    if any(GAME_LINE.match(line) for line in lines):
        return False
    ids = ", ".join(g.id for g in whole)
    reply_error(
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


def _inbound_event(inbound: InboundRef, sender: str,
                   target_ref: str | None = None) -> EditSent | DeletionSent | ReactionSent:
    """The step input of a stored edit, deletion or reaction."""
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


def process_event(session: Session, inbound: InboundRef, sender: PlayerRef, outcome: Outcome,
                  origin: str) -> None:
    """Hand an edit, a deletion or a reaction to the game of its target; a ruleset without the
    hook ignores it, and no step runs."""
    kind = inbound.kind
    if not inbound.target:
        outcome.status = "ignored"
        outcome.note(None, "ignored", f"the {kind} names no target")
        return
    # The target may be a message of the same group (its outcome names its game) or a
    # post it queued: what the group staged is written first.
    unit_of_work.of(session).before_reading_appended()
    game_id = queries.game_of_target(session, inbound.source, inbound.target)
    game = queries.game_by_id(session, game_id) if game_id else None
    if game is None:
        # Bad input gets a clear reply: the target is no message or post dealer knows (or
        # one no game took); the event is kept in the inbox and changes nothing.
        outcome.status = "rejected"
        why = f"its target {inbound.target!r} is no message or post of a game dealer knows"
        outcome.note(None, "rejected", why)
        reply_error(outcome, None, _describe_event(inbound),
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
    answer = Answer(sender.name)
    described = _describe_event(inbound)
    early = before_game(session, game, inbound)
    if early:
        outcome.status = "rejected"
        reply_error(outcome, game.id, described, early)
        outcome.note(None, "rejected", "sent before the game existed", game=game.id)
        return
    try:
        step = run_step(session, game, inbound.sent_at, event, origin=origin,
                        actor=sender.name, after=answer.take, inbound=True)
    except Ignored as exc:
        outcome.status = "ignored"
        outcome.note(None, "ignored", exc.why, game=game.id)
        return
    except Rejected as exc:
        outcome.status = "rejected"
        reply_error(outcome, game.id, described, exc.what, exc.rule, exc.allowed)
        outcome.note(None, "rejected", exc.what, game=game.id)
        return
    outcome.deadlines_changed |= step.deadlines_changed
    outcome.note(None, "applied", game=game.id)
    answer.accepted(outcome, game, described)
