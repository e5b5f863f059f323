"""Votes by reaction (RULES GH-20, GH-32, GH-34), as they stood when the vote ended."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from dealer.games.base import Ignored, Rejected
from dealer.history import ReactionSent
from dealer.games.hall.state import HallState, Mark

FOR = "\N{THUMBS UP SIGN}"
AGAINST = "\N{THUMBS DOWN SIGN}"
_KINDS = {FOR: "+", AGAINST: "-"}


def vote_kind(emoji: str) -> str | None:
    """``+`` for 👍, ``-`` for 👎 (skin tones aside), None for any other emoji."""
    bare = "".join(ch for ch in emoji if not 0x1F3FB <= ord(ch) <= 0x1F3FF and ch != "\ufe0f")
    return _KINDS.get(bare)


def mark(marks: list[Mark], reaction: ReactionSent, voter: str, ends_at: datetime,
         rule: str) -> Mark | None:
    """Record ``reaction`` among ``marks`` (latest ``sent_at`` wins; GH-20); the mark it set, or None."""
    kind = vote_kind(reaction.emoji)
    if kind is None:
        if reaction.removed:
            raise Ignored(f"{reaction.emoji!r} is not a vote")
        raise Rejected(f"{reaction.emoji or 'that reaction'} is not a vote: only {FOR} (for) and "
                       f"{AGAINST} (against) count; your reaction is kept but changes nothing",
                       rule=rule, allowed=[])
    if reaction.sent_at > ends_at:
        raise Rejected(f"the vote ended at {ends_at:%Y-%m-%d %H:%M:%S} UTC; a reaction sent "
                       f"after that changes nothing", rule=rule, allowed=[])
    present = not reaction.removed
    for existing in marks:
        if existing.voter == voter and existing.emoji == kind:
            if reaction.sent_at < existing.at:  # GH-20: the later change wins
                return None
            existing.present = present
            existing.at = reaction.sent_at
            return existing
    new = Mark(voter=voter, emoji=kind, present=present, at=reaction.sent_at)
    marks.append(new)
    return new


@dataclass(frozen=True)
class Tally:
    """Who voted how: ``both`` are players with 👍 and 👎 at once (an unclear vote)."""

    ayes: tuple[str, ...]
    noes: tuple[str, ...]
    both: tuple[str, ...]


def tally(state: HallState, marks: list[Mark], ends_at: datetime) -> Tally:
    """The marks of players (joined by ``ends_at``, GH-20) as they stood at ``ends_at``."""
    ayes, noes = set(), set()
    for m in marks:
        member = state.member(m.voter)
        if (not m.present or m.at > ends_at or member is None
                or (member.joined_at is not None and member.joined_at > ends_at)):
            continue
        (ayes if m.emoji == "+" else noes).add(member.name)
    both = ayes & noes
    return Tally(tuple(sorted(ayes - both)), tuple(sorted(noes - both)), tuple(sorted(both)))


def late_reply(what: str, reaction: ReactionSent, ends_at: datetime, tallied_at: datetime) -> Rejected:
    """The refusal of a reaction read after its vote's tally: a posted tally stands (docs/GOVERNANCE.md)."""
    sent = reaction.sent_at
    if sent <= ends_at:
        why = (f"{what}'s vote ended at {ends_at:%Y-%m-%d %H:%M:%S} UTC and was tallied at "
               f"{tallied_at:%Y-%m-%d %H:%M:%S} UTC; your reaction was sent in time "
               f"({sent:%Y-%m-%d %H:%M:%S} UTC) but reached dealer after the tally, which "
               "stands: it was not counted")
    else:
        why = (f"{what}'s vote ended at {ends_at:%Y-%m-%d %H:%M:%S} UTC; a reaction sent "
               "after that changes nothing")
    return Rejected(why, allowed=[])
