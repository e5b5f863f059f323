"""The Hall's government (RULES GH-20 to GH-23, GH-30 to GH-34): its commands, and where
messages, edits, reactions and deadlines go; interpretations in docs/GOVERNANCE.md, and
one here: taking part in government is no Hall action (GH-6), it changes no inventory."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Callable

from dealer.clock import iso
from dealer.games.base import Context, Ignored, Rejected
from dealer.history import DeletionSent, EditSent, MessageTaken, ReactionSent
from dealer.games.commands import Command, Example, Text, Whole
from dealer.games.hall import elections, gov_events as events, judge, proposals
from dealer.games.hall.events import DeadlineIgnored
from dealer.games.hall.state import HallState
from dealer.games.hall.votes import late_reply, tally


@dataclass(frozen=True)
class ShowJudge:
    """GH-30: who the Judge is (not an action)."""


@dataclass(frozen=True)
class ShowProposals:
    """GH-22: the open proposals with their tallies so far (not an action)."""


@dataclass(frozen=True)
class ShowAdopted:
    """GH-22: post the ruleset record, the adopted proposals (not an action)."""


@dataclass(frozen=True)
class GiveRuling:
    """GH-31: the Judge's ruling on a request."""

    request: int
    answer: str


@dataclass(frozen=True)
class Confidence:
    """GH-32: start a confidence vote on a ruling."""

    ruling: int


@dataclass(frozen=True)
class Overturn:
    """GH-33: the Judge overturns its own ruling."""

    ruling: int


@dataclass(frozen=True)
class RemoveJudge:
    """GH-30: assent to removing the Judge."""


@dataclass(frozen=True)
class Resign:
    """GH-30: the Judge steps down."""


class Number(Whole):
    """A request or ruling number, written ``4``, ``#4`` or ``4:``."""

    def __init__(self, what: str) -> None:
        super().__init__(1, complaint=f"'{{text}}' is not a {what} number",
                         pattern=r"#?\d{1,9}:?", label="N")

    def convert(self, text: str) -> int:
        """The number, without its ``#`` or ``:``."""
        return super().convert(text.strip("#:"))


def _running(state: HallState, actor: str) -> bool:
    return state.status == "running"


def _judge_with_requests(state: HallState, actor: str) -> bool:
    return _running(state, actor) and judge.is_judge(state, actor) and bool(state.requests)


def _rulings_now(state: HallState, actor: str) -> list[Example]:
    return [Example(f"ruling {r.number} true", f"answer request {r.number}: {r.text[:60]}")
            for r in state.requests[:5]]


def _confidence_now(state: HallState, actor: str) -> list[Example]:
    return [Example(f"confidence {r.number}", f"a vote to overturn ruling {r.number}")
            for r in state.rulings if not r.overturned and not r.polled]


def _overturns_now(state: HallState, actor: str) -> list[Example]:
    return [Example(f"overturn {r.number}", "overturn your ruling within 7 days; then rule anew")
            for r in state.rulings if not r.overturned and r.judge.casefold() == actor.casefold()]


GOVERNANCE_COMMANDS = [
    Command("judge", lambda: ShowJudge(), rule="GH-30", strict=True, valid=_running,
            examples=[Example("judge", "who the Judge is, and the requests awaiting a ruling")]),
    Command("proposals", lambda: ShowProposals(), rule="GH-22", strict=True, valid=_running,
            examples=[Example("proposals", "the open proposals, their tallies so far and "
                                           "deadlines")]),
    Command("adopted", lambda: ShowAdopted(), rule="GH-22", strict=True, valid=_running,
            examples=[Example("adopted", "post the adopted proposals (the ruleset record)")]),
    Command("ruling {request} {answer}", GiveRuling, rule="GH-31", strict=True,
            fields={"request": Number("request"), "answer": Text("TEXT")},
            examples=[Example("ruling 4 true", "the Judge's answer to request 4 (for a "
                                               "statement: true or false)"),
                      "ruling 4: yes, a gift counts as an action", "Ruling #4 false"],
            valid=_judge_with_requests, suggest=_rulings_now,
            refusal="a ruling reads 'ruling N: TEXT' (or 'ruling N true')"),
    Command("confidence [vote] [on] [ruling] {ruling}", Confidence, rule="GH-32", strict=True,
            fields={"ruling": Number("ruling")},
            examples=[Example("confidence 4", "within 4 days of ruling 4: a vote to overturn it"),
                      "confidence vote on ruling 4"],
            valid=lambda s, a: s.running_member(a) and bool(_confidence_now(s, a)),
            suggest=_confidence_now),
    Command("overturn [ruling] {ruling}", Overturn, rule="GH-33", strict=True,
            fields={"ruling": Number("ruling")},
            examples=[Example("overturn 4", "the Judge overturns their own ruling 4 (within 7 "
                                            "days), then rules anew"), "overturn ruling 4"],
            valid=lambda s, a: _running(s, a) and bool(_overturns_now(s, a)),
            suggest=_overturns_now),
    Command("remove [the] judge", lambda: RemoveJudge(), rule="GH-30", strict=True,
            examples=[Example("remove judge", "assent to removing the Judge: two players in "
                                              "one phase remove it"), "remove the judge"],
            valid=lambda s, a: s.running_member(a) and s.judge is not None
            and not judge.is_judge(s, a)),
    Command("resign", lambda: Resign(), rule="GH-30", strict=True,
            examples=[Example("resign", "the Judge stops being the Judge")],
            valid=lambda s, a: _running(s, a) and judge.is_judge(s, a)),
]
"""The government's commands, declared beside the Hall's others (``commands.COMMANDS``)."""

QUERIES = (ShowJudge, ShowProposals, ShowAdopted)
"""Commands that only look (not actions, valid whatever the cycle's status)."""

Act = Callable[[Context, HallState, str, Any], None]

ACTIONS: dict[type, Act] = {
    GiveRuling: lambda ctx, s, a, c: judge.rule(ctx, s, a, c.request, c.answer),
    Confidence: lambda ctx, s, a, c: judge.confidence(ctx, s, a, c.ruling),
    Overturn: lambda ctx, s, a, c: judge.overturn(ctx, s, a, c.ruling),
    RemoveJudge: lambda ctx, s, a, c: judge.remove(ctx, s, a),
    Resign: lambda ctx, s, a, c: judge.resign(ctx, s, a),
}
"""Government commands that change the cycle (not Hall actions: GH-6)."""


def show(ctx: Context, state: HallState, actor: str, command: Any) -> None:
    """Answer ``judge``, ``proposals`` (privately) or ``adopted`` (a public post)."""
    if isinstance(command, ShowJudge):
        judge.show(ctx, state, actor)
    elif isinstance(command, ShowProposals):
        ctx.reply(actor, "proposals", "hall/proposals.txt", "Open proposals",
                  proposals=[{**open_view(state, p), "due": p.ends_at} for p in state.proposals],
                  grace=state.settings.vote_grace)
    else:
        ctx.post("adopted", "hall/adopted.txt", "The adopted proposals", adopted=state.adopted)


def open_view(state: HallState, proposal: Any) -> dict[str, Any]:
    """An open proposal with its tally so far (as it would stand if the vote ended now)."""
    counted = tally(state, proposal.marks, proposal.ends_at)
    return {"number": proposal.number, "class": "urgent" if proposal.urgent else "standard",
            "status": "open", "author": proposal.author, "ends_at": iso(proposal.ends_at),
            "for": len(counted.ayes), "against": len(counted.noes) + len(counted.both),
            "ayes": list(counted.ayes), "noes": list(counted.noes), "both": list(counted.both),
            "edited": proposal.edited_at is not None, "deleted": proposal.deleted_at is not None,
            "title": proposal.text.splitlines()[0][:proposals.TITLE_CHARS]}


# --- whole messages in the government's channels -------------------------------------------


def takes_whole(channel: str) -> bool:
    """Whether a message in ``channel`` may be a proposal, a request or a candidacy."""
    return channel.lower() in (proposals.CHANNEL, judge.CHANNEL, elections.CHANNEL)


def take_message(ctx: Context, state: HallState, message: MessageTaken,
                 is_commands: Callable[[str], bool],
                 require_running: Callable[[HallState, datetime], None]) -> bool:
    """Take ``message`` whole if it is a proposal, a request or a candidacy (True)."""
    channel = message.channel.lower()
    if channel not in (proposals.CHANNEL, judge.CHANNEL, elections.CHANNEL):
        return False
    if message.lines and all(_HELP.match(line) or is_commands(line) for line in message.lines):
        return False  # commands sent in a government channel ("proposals", "confidence 3")
    if channel == judge.CHANNEL and judge.is_judge(state, message.sender):
        # GH-31: a request is submitted "by a person other than themself": the Judge is told
        # so (never silently dropped), with how to answer the requests it awaits.
        waiting = [r.number for r in state.requests]
        answer = (f"; to answer request {waiting[0]}, send 'ruling {waiting[0]}: TEXT'"
                  if waiting else "")
        raise Rejected("you are the Judge, so this is not a request for justice: a request "
                       f"is made by someone other than the Judge{answer}", rule="GH-31")
    require_running(state, message.sent_at)
    if channel == proposals.CHANNEL:
        if state.member(message.sender) is None:
            raise Rejected("join the Hall first: proposals are made by its players",
                           rule="GH-20",
                           allowed=["join — take part in this cycle of the Hall (GH-6)"])
        proposals.submit(ctx, state, message)
    elif channel == judge.CHANNEL:
        judge.request(ctx, state, message)
    else:
        elections.stand(ctx, state, message)
    return True


_HELP = re.compile(r"^(help|\?|commands)$", re.IGNORECASE)


# --- edits, deletions, reactions -------------------------------------------------------------


def on_change(ctx: Context, state: HallState, event: EditSent | DeletionSent) -> None:
    """An edit or deletion of a proposal (GH-22: void) or a candidacy (withdrawn)."""
    proposal = proposals.find(state, event.target)
    if proposal is not None:
        proposals.changed(ctx, state, proposal, event)
        return
    candidacy = next((c for c in state.candidacies if c.message == event.target), None)
    if candidacy is not None:
        if isinstance(event, DeletionSent):
            elections.withdraw(ctx, state, candidacy, event)
            return
        raise Ignored("an edit of a candidacy changes nothing")
    raise Ignored("it concerns no open proposal or candidacy")


def on_reaction(ctx: Context, state: HallState, reaction: ReactionSent) -> None:
    """A reaction on a proposal, a poll or a candidacy: a vote if 👍 or 👎, sent in time."""
    target = reaction.target_ref or reaction.target
    poll = next((p for p in state.polls if judge.poll_name(p.ruling) == target), None)
    proposal = proposals.find(state, target)
    candidacy = next((c for c in state.candidacies if c.message == target), None)
    if poll is None and proposal is None and candidacy is None:
        closed = next((c for c in state.closed_votes if c.target == target), None)
        if closed is not None and not reaction.removed:
            raise late_reply(closed.what, reaction, closed.ends_at, closed.tallied_at)
        raise Ignored("it concerns no open vote")
    if state.member(reaction.sender) is None:
        # GH-20: reactions by anyone who has not joined the cycle do not count.
        raise Ignored("not a player of the cycle: their reactions are not votes")
    if poll is not None:
        judge.react(ctx, state, poll, reaction)
    elif proposal is not None:
        proposals.react(ctx, state, proposal, reaction)
    else:
        assert candidacy is not None
        elections.react(ctx, state, candidacy, reaction)


# --- time ------------------------------------------------------------------------------------


def on_deadline(ctx: Context, state: HallState, name: str) -> bool:
    """A government deadline (a tally); False when ``name`` is none of them."""
    if name.startswith("proposal-"):
        number = name.removeprefix("proposal-")
        done = state.status == "running" and proposals.tally_due(
            ctx, state, int(number) if number.isdigit() else None)
    elif name.startswith(judge.REMINDER):
        number = name.removeprefix(judge.REMINDER)
        done = state.status == "running" and number.isdigit() and judge.remind(
            ctx, state, int(number))
    elif name.startswith("poll-"):
        number = name.removeprefix("poll-")
        done = (state.status == "running" and number.isdigit()
                and judge.close_poll(ctx, state, int(number)))
    else:
        week = elections.week_of_deadline(name)
        if week is None:
            return False
        done = state.status == "running" and any(c.week == week for c in state.candidacies)
        if done:
            elections.close(ctx, state, week)
    if not done:
        # Nothing to tally (a Standard proposal's row fired before its phase ended, or the
        # cycle is over): recorded, nothing changed.
        ctx.record(DeadlineIgnored(name=name, phase=state.phase, status=state.status))
    return True


def phase_ended(ctx: Context, state: HallState, closing: int) -> None:
    """A phase ended: Standard votes close (GH-21), a lone removal assent lapses (GH-30)."""
    proposals.phase_ended(ctx, state, closing)
    state.removal = []
    judge.prune(ctx, state)


def lapse(ctx: Context, state: HallState) -> None:
    """The cycle ended: every open vote lapses untallied, and a post says which."""
    if not (state.proposals or state.polls or state.candidacies):
        return
    lapsed = dict(proposals=[p.number for p in state.proposals],
                  polls=[p.ruling for p in state.polls],
                  candidates=[c.candidate for c in state.candidacies])
    state.proposals, state.polls, state.candidacies = [], [], []
    ctx.record(events.VotesLapsed(**lapsed))
    ctx.post("votes_lapsed", "hall/votes_lapsed.txt", "Open votes lapse with the cycle",
             **lapsed)


def record_view(events: list[tuple[str, dict[str, Any]]], summary: Any) -> dict[str, Any]:
    """The government's record for ``dealer game show``: proposals, adopted, judge, rulings."""
    submitted: dict[int, dict[str, Any]] = {}
    closed: dict[int, dict[str, Any]] = {}
    rulings: dict[int, dict[str, Any]] = {}
    for kind, data in events:
        if kind == "proposal.submitted":
            submitted[data["number"]] = data
        elif kind == "proposal.tallied":
            closed[data["number"]] = {
                "number": data["number"], "class": "urgent" if data["urgent"] else "standard",
                "status": data["status"], "for": len(data["ayes"]),
                "against": len(data["noes"]) + len(data["both"]), "ends_at": data["ends_at"],
                "ayes": data["ayes"], "noes": data["noes"], "both": data["both"],
                "why": data["why"], "applied": data["applied"]}
        elif kind == "votes.lapsed":
            for number in data["proposals"]:
                closed[number] = {"number": number, "status": "lapsed", "for": 0, "against": 0}
        elif kind == "ruling.given":
            rulings[data["number"]] = {"number": data["number"], "request": data["request"],
                                       "judge": data["judge"], "text": data["text"],
                                       "overturned": None}
        elif kind == "ruling.overturned" and data["number"] in rulings:
            rulings[data["number"]]["overturned"] = data["how"]
    for number, entry in closed.items():
        origin = submitted.get(number, {})
        entry.setdefault("class", "urgent" if origin.get("urgent") else "standard")
        entry.update(author=origin.get("author"), text=origin.get("text"))
    opened = {p["number"]: p for p in summary.detail.get("proposals", [])}
    every = {**closed, **opened}
    return {
        "proposals": [every[n] for n in sorted(every)],
        "adopted": [{"number": n, "author": e["author"], "text": e["text"]}
                    for n, e in sorted(closed.items()) if e["status"] == "adopted"],
        "judge": summary.detail.get("judge"),
        "rulings": [rulings[n] for n in sorted(rulings)],
    }
