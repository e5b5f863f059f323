"""Elections of the Judge (RULES GH-34); interpretations in docs/GOVERNANCE.md."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from dealer.clock import iso, parse_time
from dealer.games.base import Context, Ignored, Rejected
from dealer.history import DeletionSent, MessageTaken, ReactionSent
from dealer.games.hall import gov_events as events
from dealer.games.hall.judge import change_judge
from dealer.games.hall.proposals import record_mark, remember_closed
from dealer.games.hall.state import Candidacy, HallState, week_start_of
from dealer.games.hall.votes import mark, tally

CHANNEL = "#judge-elections"
PREFIX = "election-"
_NAME_TIME = "%Y%m%dT%H%M"


def week_of(state: HallState, when: datetime) -> datetime:
    """The start of the election week ``when`` falls in (GH-34): GH-35, weeks start at the
    ``week_start`` instant at or before the cycle opens, then every 7 ``day_length``s."""
    weekday, hour, minute = week_start_of(state.settings.week_start)
    start = state.opens_at.replace(hour=hour, minute=minute, second=0, microsecond=0)
    start -= timedelta(days=(start.weekday() - weekday) % 7)
    if start > state.opens_at:
        start -= timedelta(days=7)
    return start + (when - start) // week_length(state) * week_length(state)


def week_length(state: HallState) -> timedelta:
    """GH-35: a week is 7 of the Hall's days."""
    return state.settings.days(7)


def deadline_name(week: datetime) -> str:
    """The deadline tallying ``week``'s election (``election-20261130T0000``: no colon; with
    the seconds, ``...T000005``, when a short ``day_length`` starts a week within a minute)."""
    return PREFIX + week.strftime(_NAME_TIME + "%S" * bool(week.second))


def week_of_deadline(name: str) -> datetime | None:
    """The week start a deadline name holds (None: not an election deadline)."""
    if not name.startswith(PREFIX):
        return None
    text = name[len(PREFIX):]
    try:
        return datetime.strptime(text, _NAME_TIME + "%S" * (len(text) > 13)).replace(tzinfo=timezone.utc)
    except ValueError:
        return None


def stand(ctx: Context, state: HallState, message: MessageTaken) -> None:
    """GH-34: a reputable player's message in ``#judge-elections`` is a candidacy."""
    if not state.settings.is_reputable(message.sender):
        names = ", ".join(state.settings.reputable) or "nobody yet"
        raise Rejected(f"only a reputable player may stand for Judge; reputable: {names}",
                       rule="GH-34", allowed=[])
    week = week_of(state, message.sent_at)
    if any(c.candidate.casefold() == message.sender.casefold() and c.week == week
           for c in state.candidacies):
        raise Rejected("you are a candidate this week already", rule="GH-34", allowed=[])
    candidacy = Candidacy(candidate=message.sender, message=message.id, at=message.sent_at,
                          week=week)
    state.candidacies.append(candidacy)
    ends_at = week + week_length(state)
    ctx.set_deadline(deadline_name(week), ends_at + state.settings.vote_grace)
    ctx.record(events.Candidacy(candidate=message.sender, message=message.id, week=iso(week)))
    ctx.post("candidacy", "hall/candidacy.txt", f"{message.sender} stands for Judge",
             in_channel=CHANNEL, candidacy=candidacy, ends_at=ends_at)


def react(ctx: Context, state: HallState, candidacy: Candidacy, reaction: ReactionSent) -> None:
    """GH-34: a 👍 or 👎 on a candidacy, counted by when it was sent."""
    record_mark(ctx, f"candidacy-{candidacy.candidate}",
                mark(candidacy.marks, reaction, reaction.sender, candidacy.week + week_length(state), "GH-34"))


def withdraw(ctx: Context, state: HallState, candidacy: Candidacy, deletion: DeletionSent) -> None:
    """Interpretation: a candidacy whose message is deleted before the week ends is withdrawn."""
    if deletion.sent_at > candidacy.week + week_length(state):
        raise Ignored("the election week had ended")
    state.candidacies.remove(candidacy)
    ctx.post("candidacy_withdrawn", "hall/candidacy_withdrawn.txt",
             f"{candidacy.candidate} withdraws", in_channel=CHANNEL, candidacy=candidacy)


def close(ctx: Context, state: HallState, week: datetime) -> None:
    """GH-34: the week ended: count, break ties by first messages, install the winner."""
    ctx.cancel_deadline(deadline_name(week))
    ends_at = week + week_length(state)
    standing = [c for c in state.candidacies if c.week == week]
    state.candidacies = [c for c in state.candidacies if c.week != week]
    votes: dict[str, list[int]] = {}
    for candidacy in standing:
        remember_closed(ctx, state, candidacy.message, f"{candidacy.candidate}'s candidacy",
                        ends_at)
        counted = tally(state, candidacy.marks, ends_at)
        both = len(counted.both)  # interpretation: a player with 👍 and 👎 counts in both
        votes[candidacy.candidate] = [len(counted.ayes) + both, len(counted.noes) + both]
    popular = [c for c in standing if votes[c.candidate][0] > votes[c.candidate][1]]
    firsts: dict[str, str] = {}
    winner = None
    if not standing:
        why = "nobody stood"
    elif not popular:
        why = "no candidacy had more \N{THUMBS UP SIGN} than \N{THUMBS DOWN SIGN} from players"
    else:
        most = max(votes[c.candidate][0] for c in popular)
        tied = [c for c in popular if votes[c.candidate][0] == most]
        if len(tied) == 1:
            winner, why = tied[0].candidate, f"the most \N{THUMBS UP SIGN} ({most})"
        else:
            for c in tied:
                first = _first_message(ctx, c.candidate)
                firsts[c.candidate] = iso(first) if first else ""
            # GH-34: the earliest first message of the week wins; a candidate with none found
            # comes after (its candidacy itself is one, so this does not happen in practice),
            # then the earlier candidacy.
            best = min(tied, key=lambda c: (_first_message(ctx, c.candidate) or ends_at + week_length(state), c.at))
            winner = best.candidate
            why = (f"tied at {most} \N{THUMBS UP SIGN} with "
                   f"{', '.join(c.candidate for c in tied if c is not best)}; "
                   f"{winner}'s first message of the week came earliest")
    ctx.record(events.ElectionTallied(week=iso(week), votes=votes, first_messages=firsts,
                                      winner=winner, why=why))
    previous = state.judge
    if winner is not None:
        change_judge(ctx, state, winner, "elected")
    ctx.post("election", "hall/election.txt",
             f"Election: {winner} is the Judge" if winner else "Election: nobody won",
             in_channel=CHANNEL, week=week, ends_at=ends_at, votes=votes, winner=winner, why=why,
             previous=previous,
             firsts={name: parse_time(text) for name, text in firsts.items() if text})


def _first_message(ctx: Context, name: str) -> datetime | None:
    """The candidate's first text message of the week, as the shell read it."""
    found = [at for sender, at in ctx.first_messages.items() if sender.casefold() == name.casefold()]
    return min(found) if found else None
