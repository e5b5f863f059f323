"""What the government's posts say and how they read (GH-20 to GH-34): each on its own
lines, times written as every other post writes them ("2026-12-02 09:02 UTC (in 1 day)"),
outcomes in plain English, players called "they", and a reply to the Judge's own request."""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

import pytest

from dealer.formats import to_plain
from dealer.games.base import Rejected
from dealer.games.hall import Hall
from dealer.testing import RulesShell

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)  # a Tuesday
MONDAY = datetime(2026, 12, 7, 0, 0, tzinfo=timezone.utc)  # the week of T0 ends
GRACE = timedelta(minutes=10)
UP, DOWN = "\N{THUMBS UP SIGN}", "\N{THUMBS DOWN SIGN}"

ISO = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}")


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def hall(**settings: object) -> RulesShell:
    shell = RulesShell(Hall(), game_id="hall1", load_players_only=True)
    shell.open(["alice", "bob", "carol", "dave", "erin"], {"reputable": "alice,bob", **settings}, T0)
    return shell


def judged() -> RulesShell:
    shell = hall(judge="alice")
    shell.message("carol", "Is a gift an action?", at(1), "#request-for-justice", "q1")
    return shell


def propose(shell: RulesShell, sender: str, body: str, when: datetime, id: str) -> None:
    shell.message(sender, body, when, "#proposals", id)


def bodies(shell, *kinds: str) -> list[str]:  # type: ignore[no-untyped-def]
    return [to_plain(sent.body) for kind in kinds for sent in shell.posts(kind)]


def test_the_election_post_has_one_line_per_candidate_and_readable_times() -> None:
    shell = hall()
    shell.accept("bob", "inventory", at(2))
    shell.message("alice", "I stand.", at(3), "#judge-elections", "c1")
    shell.message("bob", "Me too.", at(4), "#judge-elections", "c2")
    for voter in ("carol", "dave"):
        shell.react(voter, "c1", UP, at(5))
        shell.react(voter, "c2", UP, at(5))
    shell.react("erin", "c2", DOWN, at(6))
    shell.fire_due(MONDAY + GRACE)
    (post,) = bodies(shell, "election")
    assert post.splitlines() == [
        "Election of the week from 2026-11-30 00:00 UTC to 2026-12-07 00:00 UTC (GH-34):",
        "- alice: 2 👍, 0 👎; first message of the week at 2026-12-01 13:00 UTC",
        "- bob: 2 👍, 1 👎; first message of the week at 2026-12-01 12:00 UTC",
        "bob is the Judge: tied at 2 👍 with alice; bob's first message of the week came earliest.",
    ]


def test_the_proposal_acknowledgement_keeps_its_lines_and_shows_times_like_other_posts() -> None:
    shell = hall()
    propose(shell, "carol", "Tweaks.\nset holo_percent 150\nset price_chip 20", at(1), "m1")
    (ack,) = bodies(shell, "proposal")
    assert "submitted at 2026-12-01 11:00 UTC (GH-20)" in ack
    assert "scheduled for 2026-12-03 10:00 UTC (in 1 day 23 h)" in ack
    lines = ack.splitlines()
    assert ("Editing or deleting the message before then makes it void (GH-22). The tally is "
            "posted 10 minutes after the end, counting every reaction sent before the end.") in lines
    assert "If adopted, dealer carries out (GH-23): set price_chip 20." in lines
    assert any(line.startswith("Warning: 'set holo_percent 150' will not") for line in lines)


def test_a_failed_proposal_fails_and_no_government_post_shows_a_raw_time() -> None:
    shell = judged()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.accept("alice", "ruling 1: yes", at(2))
    shell.accept("bob", "confidence 1", at(3))
    shell.message("bob", "I stand.", at(4), "#judge-elections", "c1")
    shell.react("alice", "m1", UP, at(25))
    shell.react("bob", "m1", DOWN, at(26))
    shell.fire_due(at(72))
    (tally,) = bodies(shell, "proposal_result")
    assert tally.startswith("Proposal 1 (Standard) fails: not popular with more for than against")
    assert "is failed" not in tally and "The vote ended at 2026-12-03 10:00 UTC." in tally
    (ruling,) = bodies(shell, "ruling")
    assert "until 2026-12-05 12:00 UTC (in 4 days)" in ruling  # 4 days after 12:00
    assert "until 2026-12-08 12:00 UTC (in 7 days)" in ruling
    (poll,) = bodies(shell, "poll")
    assert "closes at 2026-12-03 13:00 UTC (in 2 days)" in poll
    (closed,) = bodies(shell, "poll_result")
    assert "closed at 2026-12-03 13:00 UTC." in closed
    (stood,) = bodies(shell, "candidacy")
    assert "closes at 2026-12-07 00:00 UTC (in 5 days 10 h)" in stood
    for body in bodies(shell, "request", "ruling", "poll", "poll_result", "proposal",
                       "proposal_result", "candidacy"):
        assert not ISO.search(body), body


def test_the_judges_own_request_is_answered() -> None:
    # GH-31: a request is made "by a person other than themself"; the Judge is told so.
    shell = judged()
    with pytest.raises(Rejected) as caught:
        shell.message("alice", "Is a trade an action?", at(2), "#request-for-justice", "q2")
    assert caught.value.rule == "GH-31"
    assert "you are the Judge" in caught.value.what and "ruling 1: TEXT" in caught.value.what
    assert [r.number for r in shell.state.requests] == [1]


def test_the_judge_is_reminded_daily_of_a_request_until_it_rules() -> None:
    # GH-31: the Judge responds "as quickly as possible"; dealer reminds the Judge privately
    # of a request still waiting, every `ruling_reminder` (1 day) after it was made.
    shell = judged()  # request 1 by carol at 11:00, the Judge is alice
    assert shell.deadlines["remind-request-1"] == at(25)
    shell.fire_due(at(25))
    (reminder,) = shell.replies("alice", "ruling_reminder")
    body = to_plain(reminder.body)
    assert "Request for justice 1 by carol (made 2026-12-01 11:00 UTC) still awaits your ruling" in body
    assert "> Is a gift an action?" in body and "ruling 1: TEXT" in body
    assert shell.deadlines["remind-request-1"] == at(49)
    shell.accept("alice", "ruling 1: yes", at(30))
    assert "remind-request-1" not in shell.deadlines
    shell.fire_due(at(80))
    assert len(shell.replies("alice", "ruling_reminder")) == 1


def test_no_reminder_without_a_judge_and_the_next_judge_is_reminded() -> None:
    shell = hall()  # no Judge
    shell.message("carol", "Is a gift an action?", at(1), "#request-for-justice", "q1")
    shell.fire_due(at(25))
    assert not [s for s in shell.sent if s.kind == "ruling_reminder"]
    assert shell.deadlines["remind-request-1"] == at(49)  # still waiting: checked again
