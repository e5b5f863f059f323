"""Proposals (RULES GH-20 to GH-23); interpretations in docs/GOVERNANCE.md."""

from __future__ import annotations

import re
from datetime import datetime, timedelta
from typing import Any

from pydantic import ValidationError

from dealer.clock import format_duration, format_utc, iso
from dealer.games.base import Context, Ignored, Rejected
from dealer.history import DeletionSent, EditSent, MessageTaken, ReactionSent
from dealer.games.hall import gov_events as events
from dealer.games.hall.state import Adopted, ClosedVote, HallSettings, HallState, Mark, Proposal
from dealer.games.hall.votes import mark, tally

CHANNEL = "#proposals"
URGENT_DAYS = 2  # GH-21, in days of `day_length` (GH-35)
URGENT_MAX_AGAINST = 2  # GH-21
TITLE_CHARS = 100

AMENDABLE = (
    "phase_length", "holo_percent", "croupier_holo_percent", "victory_chips",
    "price_random_card", "price_handy_pack", "price_deck_pack", "price_legendary_pack",
    "price_chip", "reputable",
)
"""GH-23: the settings an adopted proposal may change (the others are the operator's)."""

_SET_LINE = re.compile(r"^set\s+(\S+)\s+(.+)$", re.IGNORECASE)
_URGENT = re.compile(r"^urgent[.!:]?$", re.IGNORECASE)


def deadline_name(number: int) -> str:
    """The deadline at which proposal ``number`` is tallied."""
    return f"proposal-{number}"


def submit(ctx: Context, state: HallState, message: MessageTaken) -> None:
    """GH-20, GH-21: a member's message in ``#proposals`` becomes a proposal."""
    lines = message.body.strip().splitlines()
    urgent = bool(lines) and _URGENT.match(lines[0].strip()) is not None
    text = "\n".join(lines[1:] if urgent else lines).strip()
    if not text:
        raise Rejected("an Urgent proposal needs some text after its first line 'urgent'",
                       rule="GH-20", allowed=[])
    if urgent and not state.settings.is_reputable(message.sender):
        names = ", ".join(state.settings.reputable) or "nobody yet"
        raise Rejected("only a reputable player may submit an Urgent proposal; reputable: "
                       f"{names}. Send it without the line 'urgent' to make it Standard",
                       rule="GH-21", allowed=[])
    amendments, warnings = read_amendments(state.settings, text)
    number = state.next_proposal
    state.next_proposal += 1
    grace = state.settings.vote_grace
    if urgent:
        ends_at, phase = message.sent_at + state.settings.days(URGENT_DAYS), 0
    else:
        # GH-21: the period is the phase after this one; its end as now scheduled.
        assert state.phase_ends_at is not None
        ends_at, phase = state.phase_ends_at + state.settings.phase_length, state.phase + 1
    proposal = Proposal(number=number, author=message.sender, message=message.id,
                        urgent=urgent, submitted_at=message.sent_at, phase=phase,
                        ends_at=ends_at, text=text, amendments=amendments)
    state.proposals.append(proposal)
    ctx.set_deadline(deadline_name(number), ends_at + grace)
    ctx.record(events.ProposalSubmitted(
        number=number, author=message.sender, message=message.id, urgent=urgent,
        ends_at=iso(ends_at), text=text, amendments=amendments, warnings=warnings))
    ctx.post("proposal", "hall/proposal.txt", f"Proposal {number} ({_class(proposal)})",
             in_channel=CHANNEL, proposal=proposal, cls=_class(proposal), warnings=warnings,
             grace=format_duration(grace) if grace else None, phase=phase,
             amendments=[f"set {k} {v}" for k, v in amendments])


def read_amendments(settings: HallSettings, text: str) -> tuple[list[tuple[str, str]], list[str]]:
    """GH-23: the ``set`` lines dealer will carry out if adopted, and a warning for each it will not."""
    amendments: list[tuple[str, str]] = []
    warnings = []
    for line in text.splitlines():
        found = _SET_LINE.match(line.strip())
        if not found:
            continue
        key, value = found.group(1).lower(), found.group(2).strip()
        problem = amendment_problem(settings, key, value)
        if problem:
            warnings.append(f"'{line.strip()}' will not be carried out: {problem}")
        else:
            amendments.append((key, value))
    return amendments, warnings


def amendment_problem(settings: HallSettings, key: str, value: str) -> str | None:
    """Why ``set KEY VALUE`` cannot be carried out on ``settings`` (None: it can)."""
    if key not in HallSettings.model_fields:
        return (f"the Hall has no setting {key!r}; a proposal may set: {', '.join(AMENDABLE)}")
    if key not in AMENDABLE:
        return (f"{key} is not a setting a proposal may change; it may set: "
                f"{', '.join(AMENDABLE)}")
    try:
        _amended(settings, key, value)
    except ValidationError as exc:
        return f"{value!r} is not a valid {key}: {exc.errors()[0]['msg']}"
    return None


def _amended(settings: HallSettings, key: str, value: str) -> HallSettings:
    data: dict[str, Any] = settings.model_dump()
    data[key] = value
    return HallSettings.model_validate(data)


def _class(proposal: Proposal) -> str:
    return "Urgent" if proposal.urgent else "Standard"


def find(state: HallState, message_id: str) -> Proposal | None:
    """The open proposal whose message is ``message_id``."""
    return next((p for p in state.proposals if p.message == message_id), None)


def react(ctx: Context, state: HallState, proposal: Proposal, reaction: ReactionSent) -> None:
    """GH-20: a 👍 or 👎 on a proposal, added or taken back, counted by when it was sent."""
    record_mark(ctx, deadline_name(proposal.number),
                mark(proposal.marks, reaction, reaction.sender, proposal.ends_at, "GH-20"))


def changed(ctx: Context, state: HallState, proposal: Proposal, event: EditSent | DeletionSent) -> None:
    """GH-22: an edit or deletion during the period makes the proposal void."""
    if event.sent_at > proposal.ends_at:
        raise Ignored(f"proposal {proposal.number}'s vote had ended")
    change = "edited" if isinstance(event, EditSent) else "deleted"
    if change == "edited" and proposal.edited_at is None:
        proposal.edited_at = event.sent_at
    elif change == "deleted" and proposal.deleted_at is None:
        proposal.deleted_at = event.sent_at
    else:
        raise Ignored(f"proposal {proposal.number} was {change} already")
    ctx.record(events.ProposalChanged(number=proposal.number, change=change, at=iso(event.sent_at)))
    ctx.post("proposal_changed", "hall/proposal_changed.txt",
             f"Proposal {proposal.number} was {change}", in_channel=CHANNEL, proposal=proposal,
             change=change, at=event.sent_at)


def phase_ended(ctx: Context, state: HallState, closing: int) -> None:
    """GH-21: the phase ``closing`` ended: its Standard votes close, tallied ``vote_grace`` later."""
    for proposal in state.proposals:
        if not proposal.urgent and proposal.phase == closing:
            proposal.ends_at = ctx.now
            proposal.closed = True
            ctx.set_deadline(deadline_name(proposal.number), ctx.now + state.settings.vote_grace)


def due(ctx: Context, state: HallState, fired: int | None = None) -> list[Proposal]:
    """The proposals to tally now, in order of creation (GH-22)."""
    grace = state.settings.vote_grace
    ready = []
    for proposal in state.proposals:
        if proposal.urgent and proposal.number == fired and proposal.ends_at > ctx.now:
            proposal.ends_at = ctx.now
        if proposal.urgent and proposal.ends_at <= ctx.now:
            proposal.closed = True
        if proposal.closed and (proposal.ends_at + grace <= ctx.now or proposal.number == fired):
            ready.append(proposal)
    return sorted(ready, key=lambda p: p.number)


def tally_due(ctx: Context, state: HallState, fired: int | None = None) -> bool:
    """Tally every proposal due now, in order of creation (GH-22); True if any was."""
    ready = due(ctx, state, fired)
    for proposal in ready:
        _tally(ctx, state, proposal)
    return bool(ready)


def _tally(ctx: Context, state: HallState, proposal: Proposal) -> None:
    state.proposals.remove(proposal)
    remember_closed(ctx, state, proposal.message, f"proposal {proposal.number}", proposal.ends_at)
    ctx.cancel_deadline(deadline_name(proposal.number))
    counted = tally(state, proposal.marks, proposal.ends_at)
    against = len(counted.noes) + len(counted.both)  # GH-20: an unclear vote is against
    if proposal.urgent:
        popular = against <= URGENT_MAX_AGAINST
        rule = f"popular with at most {URGENT_MAX_AGAINST} against (GH-21)"
    else:
        popular = len(counted.ayes) > against
        rule = "popular with more for than against (GH-21)"
    applied: list[str] = []
    refused: list[str] = []
    if proposal.deleted_at is not None or proposal.edited_at is not None:
        status = "void"
        change, at = (("deleted", proposal.deleted_at) if proposal.deleted_at is not None
                      else ("edited", proposal.edited_at))
        assert at is not None
        why = f"its message was {change} at {format_utc(at)}, during its vote (GH-22)"
    elif popular:
        status = "adopted"
        why = rule
        applied, refused = _carry_out(ctx, state, proposal)
        title = proposal.text.strip().splitlines()[0][:TITLE_CHARS]
        state.adopted.append(Adopted(number=proposal.number, author=proposal.author,
                                     title=title, adopted_at=ctx.now))
    else:
        status = "failed"
        why = f"not {rule}"
    ctx.record(events.ProposalTallied(
        number=proposal.number, urgent=proposal.urgent, ends_at=iso(proposal.ends_at),
        ayes=list(counted.ayes), noes=list(counted.noes), both=list(counted.both),
        status=status, why=why, applied=applied, refused=refused))
    ctx.post("proposal_result", "hall/proposal_result.txt",
             f"Proposal {proposal.number}: {status}", in_channel=CHANNEL, proposal=proposal,
             cls=_class(proposal), status=status, why=why, tally=counted, against=against,
             applied=applied, refused=refused)


CLOSED_KEPT = timedelta(days=7)
"""How long a tallied vote is remembered, to answer a reaction read after its tally."""


def remember_closed(ctx: Context, state: HallState, target: str, what: str, ends_at: datetime) -> None:
    """Keep a tallied vote's target a while (a late reaction is told), then forget it."""
    state.closed_votes = [c for c in state.closed_votes if c.tallied_at + CLOSED_KEPT > ctx.now]
    state.closed_votes.append(ClosedVote(target=target, what=what, ends_at=ends_at,
                                         tallied_at=ctx.now))


def _carry_out(ctx: Context, state: HallState, proposal: Proposal) -> tuple[list[str], list[str]]:
    """GH-23: apply the proposal's ``set`` lines in order; say which could not be."""
    applied, refused = [], []
    for key, value in proposal.amendments:
        problem = amendment_problem(state.settings, key, value)
        if problem:
            refused.append(f"set {key} {value}: {problem}")
            continue
        old = _shown(state.settings, key)
        state.settings = _amended(state.settings, key, value)
        new = _shown(state.settings, key)
        applied.append(f"{key}: {old} -> {new}")
        ctx.record(events.SettingAmended(proposal=proposal.number, setting=key, old=old, new=new))
    return applied, refused


def _shown(settings: HallSettings, key: str) -> str:
    value = settings.model_dump(mode="json")[key]
    if isinstance(value, list):
        return ", ".join(value) or "nobody"
    return str(value)


def record_mark(ctx: Context, vote: str, changed: Mark | None) -> None:
    """Record a mark a reaction set (nothing when a later change was read first)."""
    if changed is not None:
        ctx.record(events.VoteMarked(vote=vote, voter=changed.voter, emoji=changed.emoji,
                                     present=changed.present, at=iso(changed.at)))
