"""Properties of the Hall's government (hypothesis).

- GH-20: a vote counts each player's reactions as they stood when the vote ended, by the
  time they were sent: the tally does not depend on the order the reactions were read in,
  and nobody is counted twice or without having joined.
- Random governance (proposals, reactions, edits, rulings, polls, removals, candidacies,
  chatter) over random time: nothing forbidden is reached: numbers are unique and
  increasing (adopted ones in the order their votes end), every open vote has its
  deadline, the settings stay valid, at most one Judge, a lone removal assent at most, and
  the state keeps nothing older than its rules need.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dealer.games.base import Ignored, Rejected
from dealer.history import ReactionSent
from dealer.games.hall import Hall
from dealer.games.hall.state import HallSettings, HallState, Member
from dealer.games.hall.votes import mark, tally
from dealer.records import NotTaken
from dealer.testing import RulesShell

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
END = T0 + timedelta(hours=10)
MEMBERS = ("alice", "bob", "carol")
VOTERS = MEMBERS + ("zed",)  # zed never joined
UP, DOWN = "\N{THUMBS UP SIGN}", "\N{THUMBS DOWN SIGN}"

change = st.tuples(st.sampled_from(VOTERS), st.sampled_from((UP, DOWN)), st.booleans(),
                   st.integers(0, 12 * 60))


def _reaction(voter: str, emoji: str, removed: bool, minute: int) -> ReactionSent:
    return ReactionSent(id=f"{voter}{minute}", sender=voter, channel="#proposals",
                    sent_at=T0 + timedelta(minutes=minute), target="m1", emoji=emoji,
                    removed=removed)


def _state() -> HallState:
    return HallState(settings=HallSettings(), opens_at=T0,
                     members=[Member(name=n, joined_phase=1) for n in MEMBERS])


@settings(max_examples=150, deadline=None)
@given(st.lists(change, max_size=25, unique_by=lambda c: (c[0], c[1], c[3])), st.randoms())
def test_the_tally_does_not_depend_on_reading_order(changes, random) -> None:
    state = _state()

    def counted(order):  # type: ignore[no-untyped-def]
        marks = []  # type: ignore[var-annotated]
        for voter, emoji, removed, minute in order:
            reaction = _reaction(voter, emoji, removed, minute)
            if reaction.sent_at <= END:
                mark(marks, reaction, voter, END, "GH-20")
        return tally(state, marks, END)

    in_time = sorted(changes, key=lambda c: c[3])
    shuffled = list(changes)
    random.shuffle(shuffled)
    expected, got = counted(in_time), counted(shuffled)
    assert got == expected
    groups = [set(got.ayes), set(got.noes), set(got.both)]
    assert not (groups[0] & groups[1] or groups[0] & groups[2] or groups[1] & groups[2])
    assert set().union(*groups) <= set(MEMBERS)  # zed never counts
    # Each member's standing mark of each kind is its latest change sent by the end.
    for voter in MEMBERS:
        for emoji, kind in ((UP, "+"), (DOWN, "-")):
            latest = [c for c in in_time if c[0] == voter and c[1] == emoji
                      and T0 + timedelta(minutes=c[3]) <= END]
            present = bool(latest) and not latest[-1][2]
            shown = voter in (got.ayes if kind == "+" else got.noes) or voter in got.both
            assert shown == present


# --- random government ------------------------------------------------------------------------

PLAYERS = ("alice", "bob", "carol", "dave")
commands = st.sampled_from([
    "judge", "proposals", "adopted", "ruling 1 true", "ruling 2: no", "confidence 1",
    "confidence 2", "overturn 1", "overturn 2", "remove judge", "resign", "ruling 9 true",
])
bodies = st.sampled_from([
    "More packs.", "urgent\nFix it.", "set phase_length 12h", "set victory_chips 20",
    "Tweak.\nset holo_percent 7\nset nonsense 3", "set reputable carol", "set phase_length 0m",
])
step = st.one_of(
    st.tuples(st.just("command"), st.sampled_from(PLAYERS), commands),
    st.tuples(st.just("command"), st.just("alice"), commands),  # alice is the Judge
    st.tuples(st.just("command"), st.just("alice"),
              st.builds(lambda n, verdict: f"ruling {n} {verdict}", st.integers(1, 4),
                        st.sampled_from(["true", "false"]))),
    st.tuples(st.just("proposal"), st.sampled_from(PLAYERS), bodies),
    st.tuples(st.just("request"), st.sampled_from(PLAYERS[1:]), st.just("Is it so?")),
    st.tuples(st.just("request"), st.sampled_from(PLAYERS[1:]), st.just("Is it not?")),
    st.tuples(st.just("stand"), st.sampled_from(PLAYERS), st.just("Me.")),
    st.tuples(st.just("react"), st.sampled_from(PLAYERS + ("zed",)),
              st.tuples(st.integers(1, 4), st.sampled_from((UP, DOWN, "x")), st.booleans())),
    st.tuples(st.just("react"), st.sampled_from(PLAYERS),
              st.tuples(st.integers(1, 4), st.sampled_from((UP, DOWN)), st.just(False))),
    st.tuples(st.just("poll"), st.sampled_from(PLAYERS),
              st.tuples(st.integers(1, 3), st.sampled_from((UP, DOWN)), st.booleans())),
    st.tuples(st.just("edit"), st.sampled_from(PLAYERS), st.integers(1, 4)),
    st.tuples(st.just("delete"), st.sampled_from(PLAYERS), st.integers(1, 4)),
)
gaps = st.integers(1, 20 * 60)


def _act(shell: RulesShell, kind: str, who: str, what, when: datetime, n: int,  # type: ignore[no-untyped-def]
         sent: list[str]) -> None:
    if kind in ("proposal", "request", "stand"):
        sent.append(f"m{n}")
    if kind == "command":
        shell.step(who, what, when)
    elif kind == "proposal":
        shell.message(who, what, when, "#proposals", f"m{n}")
    elif kind == "request":
        shell.message(who, what, when, "#request-for-justice", f"m{n}")
    elif kind == "stand":
        shell.message(who, what, when, "#judge-elections", f"m{n}")
    elif kind == "react":  # on one of the last whole messages
        back, emoji, removed = what
        target = sent[-back] if len(sent) >= back else "m0"
        shell.react(who, target, emoji, when, removed=removed)
    elif kind == "poll":  # on one of dealer's confidence polls
        ruling, emoji, removed = what
        shell.react(who, "post", emoji, when, removed=removed, ref=f"poll-{ruling}")
    elif kind == "edit":
        shell.edit(who, sent[-what] if len(sent) >= what else "m0", "changed", when)
    else:
        shell.delete(who, sent[-what] if len(sent) >= what else "m0", when)


def check(shell: RulesShell) -> None:
    state = shell.state
    numbers = [p.number for p in state.proposals]
    assert numbers == sorted(set(numbers)) and all(n < state.next_proposal for n in numbers)
    # GH-22: adopted as their periods end, those ending at once in creation order.
    adopted = [(a.adopted_at, a.number) for a in state.adopted]
    assert adopted == sorted(adopted) and len({n for _, n in adopted}) == len(adopted)
    assert not {n for _, n in adopted} & set(numbers)
    if state.status == "running":
        for p in state.proposals:
            assert f"proposal-{p.number}" in shell.deadlines
        for poll in state.polls:
            assert f"poll-{poll.ruling}" in shell.deadlines
    HallSettings.model_validate(state.settings.model_dump())  # still valid
    assert state.settings.phase_length > timedelta(0)
    assert len(state.removal) <= 1 and (state.judge is not None or not state.removal)
    rulings = [r.number for r in state.rulings]
    assert rulings == sorted(set(rulings)) and all(n < state.next_ruling for n in rulings)
    standing = [r.request for r in state.rulings if not r.overturned]
    assert len(standing) == len(set(standing))  # one standing ruling per request
    assert not set(standing) & {r.number for r in state.requests}
    assert {p.ruling for p in state.polls} <= set(rulings)
    assert len(state.closed_votes) <= 200


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(step, gaps), max_size=30))
def test_random_government_reaches_nothing_forbidden(steps) -> None:
    shell = RulesShell(Hall(), game_id="h1", load_players_only=True)
    shell.open(list(PLAYERS), {"reputable": "alice,bob", "judge": "alice"}, T0)
    when = T0
    sent: list[str] = []
    for n, ((kind, who, what), gap) in enumerate(steps, start=1):
        when += timedelta(minutes=gap)
        try:
            _act(shell, kind, who, what, when, n, sent)
        except (Rejected, Ignored, NotTaken):
            pass
        check(shell)
    shell.fire_due(when + timedelta(days=10))
    check(shell)
    assert shell.state.proposals == [] and shell.state.polls == []
    assert shell.state.candidacies == []
    tallied = [d["number"] for t, d in shell.events if t == "proposal.tallied"]
    assert len(set(tallied)) == len(tallied)  # each proposal is tallied once
