"""GH-35: the Hall's `day_length`, the day GH-21, GH-32, GH-33 and GH-34 count in. Worked
examples by hand at a 1-hour day, and the default's 2 days and Monday weeks."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from pydantic import ValidationError

from dealer.games.base import Rejected
from dealer.games.hall import Hall
from dealer.games.hall.state import HallSettings
from dealer.testing import RulesShell

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)  # a Tuesday: the cycle opens
GRACE = timedelta(minutes=10)
UP, DOWN = "\N{THUMBS UP SIGN}", "\N{THUMBS DOWN SIGN}"


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def hall(**settings: object) -> RulesShell:
    shell = RulesShell(Hall(), game_id="hall1", load_players_only=True)
    shell.open(["alice", "bob", "carol", "dave"], {"reputable": "alice,bob", **settings}, T0)
    return shell


def test_an_urgent_proposal_lasts_two_hall_days() -> None:
    shell = hall(day_length="1h")
    shell.message("alice", "urgent\nFix the prices.", at(1), "#proposals", "m1")
    # Sent 11:00; two 1-hour days: the vote ends at 13:00.
    assert "The vote ends at 2026-12-01 13:00 UTC" in shell.posts("proposal")[0].body
    assert shell.deadlines["proposal-1"] == at(3) + GRACE
    shell.react("carol", "m1", DOWN, at(2.5))
    for voter in ("dave", "bob"):  # after the end: not counted
        with pytest.raises(Rejected, match="the vote ended at 2026-12-01 13:00:00 UTC"):
            shell.react(voter, "m1", DOWN, at(3) + timedelta(seconds=1))
    shell.fire_due(at(3) + GRACE)
    (tallied,) = [d for t, d in shell.events if t == "proposal.tallied"]
    assert (tallied["status"], tallied["noes"]) == ("adopted", ["carol"])


def test_the_default_day_keeps_the_rules_two_days() -> None:
    shell = hall()
    shell.message("alice", "urgent\nFix the prices.", at(1), "#proposals", "m1")
    assert shell.deadlines["proposal-1"] == at(49) + GRACE


def test_a_confidence_poll_and_an_overturn_count_hall_days() -> None:
    shell = hall(day_length="1h", judge="alice")
    shell.message("carol", "Is a gift an action?", at(1), "#request-for-justice", "q1")
    shell.message("carol", "Is a trade an action?", at(1), "#request-for-justice", "q2")
    shell.accept("alice", "ruling 1 yes", at(2))  # 12:00
    shell.accept("alice", "ruling 2 yes", at(2))
    # GH-32: within 4 days (16:00); the poll closes 2 days (2 hours) after it starts.
    shell.accept("bob", "confidence 1", at(5))  # 15:00
    assert shell.deadlines["poll-1"] == at(7) + GRACE
    late = at(6) + timedelta(seconds=1)  # 16:00:01, past ruling 2's 4 days
    shell.fire_due(late)
    refused = shell.refuse("bob", "confidence 2", late, fire_first=False)
    assert refused.rule == "GH-32" and "more than 4 days ago" in refused.what
    # GH-33: the Judge overturns within 7 days: until 19:00.
    shell.accept("alice", "overturn 2", at(9))
    shell.accept("alice", "ruling 2 no", at(9))  # ruling 3
    late = at(9 + 7) + timedelta(seconds=1)
    shell.fire_due(late)
    refused = shell.refuse("alice", "overturn 3", late, fire_first=False)
    assert refused.rule == "GH-33"


def test_election_weeks_are_seven_hall_days_from_the_week_start_before_opening() -> None:
    shell = hall(day_length="1h")
    # Weeks start Monday 30 November 00:00 (at or before T0), then every 7 hours: ... Tuesday
    # 04:00, 11:00, 18:00. A candidacy at Tuesday 13:00 stands in the week of 11:00 to 18:00.
    shell.message("alice", "I stand.", at(3), "#judge-elections", "c1")
    end = datetime(2026, 12, 1, 18, 0, tzinfo=timezone.utc)
    assert shell.deadlines["election-20261201T1100"] == end + GRACE
    shell.react("carol", "c1", UP, at(4))
    with pytest.raises(Rejected, match="the vote ended at 2026-12-01 18:00:00 UTC"):
        shell.react("dave", "c1", DOWN, end + timedelta(seconds=1))  # after the week
    shell.fire_due(end + GRACE)
    (tallied,) = [d for t, d in shell.events if t == "election.tallied"]
    assert (tallied["votes"], tallied["winner"]) == ({"alice": [1, 0]}, "alice")
    assert shell.state.judge == "alice"
    # The next candidacy, at 18:30, falls in the next week (18:00 to Wednesday 01:00).
    shell.message("bob", "I stand.", end + timedelta(minutes=30), "#judge-elections", "c2")
    assert shell.deadlines["election-20261201T1800"] == end + timedelta(hours=7) + GRACE


def test_the_default_day_keeps_monday_weeks() -> None:
    shell = hall()
    shell.message("alice", "I stand.", at(3), "#judge-elections", "c1")
    monday = datetime(2026, 12, 7, 0, 0, tzinfo=timezone.utc)
    assert shell.deadlines["election-20261130T0000"] == monday + GRACE
    # Two weeks later, still a Monday week.
    shell.fire_due(monday + GRACE)
    shell.message("bob", "I stand.", monday + timedelta(days=9), "#judge-elections", "c2")
    assert shell.deadlines["election-20261214T0000"] == monday + timedelta(days=14) + GRACE


def test_a_proposal_may_not_change_the_day() -> None:
    shell = hall(day_length="1h")
    shell.message("carol", "Longer days.\nset day_length 2h", at(1), "#proposals", "m1")
    body = shell.posts("proposal")[0].body.replace("\\", "")
    assert "'set day_length 2h' will not be carried out: day_length is not a setting a " \
           "proposal may change" in body
    assert shell.state.proposals[0].amendments == []


def test_a_week_of_short_days_may_start_within_a_minute() -> None:
    shell = hall(day_length="5s")
    # From Monday 30 November 00:00, weeks of 35 s: Tuesday 13:00:00 is 37 h = 133,200 s
    # = 3805 weeks and 25 s in: its week runs from 12:59:35 to 13:00:10.
    shell.message("alice", "I stand.", at(3), "#judge-elections", "c1")
    start = datetime(2026, 12, 1, 12, 59, 35, tzinfo=timezone.utc)
    assert shell.deadlines["election-20261201T125935"] == start + timedelta(seconds=35) + GRACE
    shell.react("carol", "c1", UP, at(3))
    shell.fire_due(start + timedelta(seconds=35) + GRACE)
    assert shell.state.judge == "alice"


def test_a_day_is_whole_seconds() -> None:
    with pytest.raises(ValidationError, match="whole number of seconds"):
        HallSettings(day_length=timedelta(seconds=1.5))
    assert HallSettings().day_length == timedelta(hours=24)
