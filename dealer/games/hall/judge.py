"""The Judge (RULES GH-30 to GH-33); interpretations in docs/GOVERNANCE.md."""

from __future__ import annotations

from datetime import timedelta

from dealer.clock import format_utc, iso
from dealer.games.base import Context, Rejected
from dealer.history import MessageTaken, ReactionSent
from dealer.games.hall import gov_events as events
from dealer.games.hall.proposals import record_mark, remember_closed
from dealer.games.hall.state import HallState, Poll, Request, Ruling
from dealer.games.hall.votes import mark, tally

CHANNEL = "#request-for-justice"
# GH-32, GH-33, in days of the setting `day_length` (GH-35)
CONFIDENCE_WITHIN, POLL_LENGTH, OVERTURN_WITHIN = 4, 2, 7
REMINDER = "remind-request-"  # GH-31: the deadline of request N's next reminder
"""A ruling stays in the state this long (or while its poll is open), so the state does not grow."""


def poll_name(ruling: int) -> str:
    """The deadline of ruling ``ruling``'s confidence vote, and the name of its poll post."""
    return f"poll-{ruling}"


def is_judge(state: HallState, name: str) -> bool:
    """Whether ``name`` is the Judge (compared without case)."""
    return state.judge is not None and state.judge.casefold() == name.casefold()


def request(ctx: Context, state: HallState, message: MessageTaken) -> None:
    """GH-31: a request for justice (a question or a statement), numbered."""
    text = message.body.strip()
    number = state.next_request
    state.next_request += 1
    asked = Request(number=number, author=message.sender, message=message.id,
                    asked_at=message.sent_at, text=text)
    state.requests.append(asked)
    ctx.record(events.RequestMade(number=number, author=message.sender, message=message.id,
                                  text=text))
    ctx.post("request", "hall/request.txt", f"Request for justice {number}", in_channel=CHANNEL,
             request=asked, judge=state.judge)
    _remind_later(ctx, state, number)


def _remind_later(ctx: Context, state: HallState, number: int) -> None:
    ctx.set_deadline(f"{REMINDER}{number}", ctx.now + state.settings.ruling_reminder)


def remind(ctx: Context, state: HallState, number: int) -> bool:
    """GH-31: remind the Judge privately of a request awaiting a ruling; False when none awaits."""
    asked = next((r for r in state.requests if r.number == number), None)
    if asked is None:
        return False
    if state.judge is not None:
        ctx.reply(state.judge, "ruling_reminder", "hall/ruling_reminder.txt",
                  f"Request for justice {number} awaits your ruling", request=asked,
                  every=state.settings.ruling_reminder)
    _remind_later(ctx, state, number)
    return True


def rule(ctx: Context, state: HallState, actor: str, number: int, answer: str) -> None:
    """GH-31: the Judge's ruling on request ``number``."""
    if not is_judge(state, actor):
        raise Rejected(f"only the Judge may rule; the Judge is {state.judge or 'nobody now'}",
                       rule="GH-31", allowed=["judge — who the Judge is (GH-30)"])
    asked = next((r for r in state.requests if r.number == number), None)
    if asked is None:
        standing = next((r for r in state.rulings if r.request == number and not r.overturned), None)
        if standing is not None:
            raise Rejected(f"request {number} has its ruling already (ruling {standing.number}); "
                           f"overturn it first ('overturn {standing.number}')", rule="GH-33")
        waiting = ", ".join(str(r.number) for r in state.requests) or "none"
        raise Rejected(f"there is no request {number} awaiting a ruling; awaiting: {waiting}",
                       rule="GH-31", allowed=[])
    text = answer.strip()
    if text.lower() in ("true", "false"):
        text = text.lower()  # GH-31: a statement's truth value
    state.requests.remove(asked)
    if f"{REMINDER}{number}" in ctx.deadlines:
        ctx.cancel_deadline(f"{REMINDER}{number}")
    ruling = Ruling(number=state.next_ruling, request=number, judge=state.judge or actor,
                    at=ctx.now, text=text, asked=asked)
    state.next_ruling += 1
    state.rulings.append(ruling)
    ctx.record(events.RulingGiven(number=ruling.number, request=number, judge=ruling.judge,
                                  text=text))
    ctx.post("ruling", "hall/ruling.txt", f"Ruling {ruling.number} on request {number}",
             in_channel=CHANNEL, ruling=ruling, confidence_until=ruling.at + state.settings.days(CONFIDENCE_WITHIN),
             overturn_until=ruling.at + state.settings.days(OVERTURN_WITHIN))


def _ruling(state: HallState, number: int, rule: str) -> Ruling:
    found = next((r for r in state.rulings if r.number == number), None)
    if found is None:
        if 1 <= number < state.next_ruling:
            raise Rejected(f"ruling {number} was made more than {OVERTURN_WITHIN} days ago",
                           rule=rule, allowed=[])
        raise Rejected(f"there is no ruling {number}", rule=rule, allowed=[])
    if found.overturned:
        raise Rejected(f"ruling {number} was overturned already ({found.overturned})",
                       rule=rule, allowed=[])
    return found


def overturn(ctx: Context, state: HallState, actor: str, number: int) -> None:
    """GH-33: the Judge overturns its own ruling within 7 days and must rule anew."""
    if not is_judge(state, actor):
        raise Rejected("only the Judge may overturn their own ruling (anyone may start a "
                       f"confidence vote: 'confidence {number}')", rule="GH-33", allowed=[])
    ruling = _ruling(state, number, "GH-33")
    if ruling.judge.casefold() != actor.casefold():
        raise Rejected(f"ruling {number} was made by {ruling.judge}, not by you",
                       rule="GH-33", allowed=[])
    if ctx.now - ruling.at > state.settings.days(OVERTURN_WITHIN):
        raise Rejected(f"ruling {number} was made at {format_utc(ruling.at)}, more than 7 days ago; "
                       "a Judge may overturn their own ruling within 7 days", rule="GH-33",
                       allowed=[])
    _overturned(ctx, state, ruling, "by the Judge")
    ctx.post("overturned", "hall/overturned.txt", f"Ruling {number} is overturned",
             in_channel=CHANNEL, ruling=ruling, by_judge=True)


def _overturned(ctx: Context, state: HallState, ruling: Ruling, how: str) -> None:
    """Mark ``ruling`` overturned (it stays in the record) and open its request again."""
    ruling.overturned = how
    state.requests.append(ruling.asked)
    state.requests.sort(key=lambda r: r.number)
    _remind_later(ctx, state, ruling.asked.number)
    ctx.record(events.RulingOverturned(number=ruling.number, how=how))
    poll = next((p for p in state.polls if p.ruling == ruling.number), None)
    if poll is not None:  # a confidence vote on a ruling no longer standing is moot
        state.polls.remove(poll)
        ctx.cancel_deadline(poll_name(ruling.number))


def confidence(ctx: Context, state: HallState, actor: str, number: int) -> None:
    """GH-32: start a confidence vote on ruling ``number`` (within 4 days of it)."""
    if state.member(actor) is None:
        raise Rejected("join the Hall first: only its players vote", rule="GH-32",
                       allowed=["join — take part in this cycle of the Hall (GH-6)"])
    ruling = _ruling(state, number, "GH-32")
    if ctx.now - ruling.at > state.settings.days(CONFIDENCE_WITHIN):
        raise Rejected(f"ruling {number} was made at {format_utc(ruling.at)}, more than 4 days ago; "
                       "a confidence vote must start within 4 days of the ruling",
                       rule="GH-32", allowed=[])
    if ruling.polled:
        raise Rejected(f"ruling {number} has had its confidence vote already", rule="GH-32",
                       allowed=[])
    ruling.polled = True
    poll = Poll(ruling=number, started_by=actor, opened_at=ctx.now, ends_at=ctx.now + state.settings.days(POLL_LENGTH))
    state.polls.append(poll)
    ctx.set_deadline(poll_name(number), poll.ends_at + state.settings.vote_grace)
    ctx.record(events.PollOpened(ruling=number, started_by=actor, ends_at=iso(poll.ends_at)))
    ctx.post("poll", "hall/poll.txt", f"Confidence vote on ruling {number}", in_channel=CHANNEL,
             ref=poll_name(number), poll=poll, ruling=ruling)


def react(ctx: Context, state: HallState, poll: Poll, reaction: ReactionSent) -> None:
    """GH-32: a 👍 (overturn) or 👎 (affirm) on a poll, counted by when it was sent."""
    record_mark(ctx, poll_name(poll.ruling),
                mark(poll.marks, reaction, reaction.sender, poll.ends_at, "GH-32"))


def close_poll(ctx: Context, state: HallState, ruling_number: int) -> bool:
    """GH-32: count a confidence vote; True if there was one to count."""
    poll = next((p for p in state.polls if p.ruling == ruling_number), None)
    if poll is None:
        return False
    # Its deadline fired: the tally is now. Fired early by an admin override, the vote ends
    # now; fired late, it counts the reactions sent by its end (docs/GOVERNANCE.md).
    poll.ends_at = min(poll.ends_at, ctx.now)
    state.polls.remove(poll)
    remember_closed(ctx, state, poll_name(poll.ruling), f"the confidence vote on ruling "
                    f"{poll.ruling}", poll.ends_at)
    counted = tally(state, poll.marks, poll.ends_at)
    affirm = len(counted.noes) + len(counted.both)  # GH-32: an unclear vote affirms
    overturned = len(counted.ayes) > affirm
    ruling = next(r for r in state.rulings if r.number == poll.ruling)
    ctx.record(events.PollTallied(ruling=poll.ruling, overturn=list(counted.ayes),
                                  affirm=list(counted.noes), both=list(counted.both),
                                  overturned=overturned))
    if overturned:
        _overturned(ctx, state, ruling, "by confidence vote")
    ctx.post("poll_result", "hall/poll_result.txt",
             f"Ruling {poll.ruling} is {'overturned' if overturned else 'affirmed'}",
             in_channel=CHANNEL, poll=poll, ruling=ruling, tally=counted, affirm=affirm,
             overturned=overturned)
    prune(ctx, state)
    return True


def prune(ctx: Context, state: HallState) -> None:
    """Rulings older than 7 days without an open poll leave the state (kept in history)."""
    polled = {p.ruling for p in state.polls}
    state.rulings = [r for r in state.rulings
                     if r.number in polled or ctx.now - r.at <= state.settings.days(OVERTURN_WITHIN)]


def show(ctx: Context, state: HallState, actor: str) -> None:
    """GH-30: who the Judge is, and what awaits it (not an action)."""
    ctx.reply(actor, "judge", "hall/judge.txt", "The Judge", judge=state.judge,
              requests=state.requests, rulings=state.rulings, polls=state.polls,
              removal=state.removal)


def remove(ctx: Context, state: HallState, actor: str) -> None:
    """GH-30: ``remove judge``: two members other than the Judge, in one phase."""
    if state.judge is None:
        raise Rejected("there is no Judge to remove", rule="GH-30", allowed=[])
    if state.member(actor) is None:
        raise Rejected("join the Hall first: only its players may remove the Judge",
                       rule="GH-30", allowed=[])
    if is_judge(state, actor):
        raise Rejected("the Judge cannot assent to their own removal; to step down, send 'resign'",
                       rule="GH-30", allowed=["resign — stop being the Judge (GH-30)"])
    if any(name.casefold() == actor.casefold() for name in state.removal):
        raise Rejected(f"you assented already in phase {state.phase}; it takes another player",
                       rule="GH-30", allowed=[])
    state.removal.append(actor)
    ctx.record(events.RemovalAssent(player=actor, judge=state.judge, phase=state.phase))
    if len(state.removal) >= 2:
        judge, assents = state.judge, list(state.removal)
        change_judge(ctx, state, None, "removed")
        ctx.post("judge_removed", "hall/judge_changed.txt", f"{judge} is no longer the Judge",
                 in_channel=CHANNEL, how="removed", previous=judge, judge=None, assents=assents)
    else:
        ctx.post("judge_removal", "hall/judge_removal.txt", "A player would remove the Judge",
                 in_channel=CHANNEL, judge=state.judge, player=actor, phase=state.phase)


def resign(ctx: Context, state: HallState, actor: str) -> None:
    """GH-30: the Judge stops being the Judge by saying so."""
    if not is_judge(state, actor):
        raise Rejected(f"only the Judge may resign; the Judge is {state.judge or 'nobody now'}",
                       rule="GH-30", allowed=[])
    previous = state.judge
    change_judge(ctx, state, None, "resigned")
    ctx.post("judge_resigned", "hall/judge_changed.txt", f"{previous} resigns as Judge",
             in_channel=CHANNEL, how="resigned", previous=previous, judge=None, assents=[])


def change_judge(ctx: Context, state: HallState, judge: str | None, how: str) -> None:
    """GH-30, GH-34: a new Judge (or none); removal assents start afresh."""
    previous = state.judge
    state.judge = judge
    state.removal = []
    ctx.record(events.JudgeChanged(judge=judge, previous=previous, how=how))
