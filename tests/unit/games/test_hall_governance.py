"""The Hall's government (GH-20 to GH-23, GH-30 to GH-34): worked examples, each counted
by hand from RULES.md, through the pure rules (RulesShell)."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from dealer.games.base import Ignored, Rejected
from dealer.games.hall import Hall
from dealer.games.hall.governance import GOVERNANCE_COMMANDS
from dealer.records import NotTaken
from dealer.testing import RulesShell

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)  # a Tuesday
DAY = timedelta(hours=24)
GRACE = timedelta(minutes=10)
UP, DOWN = "\N{THUMBS UP SIGN}", "\N{THUMBS DOWN SIGN}"
PLAYERS = ("alice", "bob", "carol", "dave", "erin")


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def hall(**settings: object) -> RulesShell:
    shell = RulesShell(Hall(), game_id="hall1", load_players_only=True)
    shell.open(list(PLAYERS), {"reputable": "alice,bob", **settings}, T0)
    return shell


def propose(shell: RulesShell, sender: str, body: str, when: datetime, id: str) -> None:
    shell.message(sender, body, when, "#proposals", id)


def plain(text: str) -> str:
    """A post's text without the escapes that keep player text from being markup."""
    return text.replace("\\", "")


def result(shell: RulesShell, number: int) -> dict:
    (found,) = [d for t, d in shell.events if t == "proposal.tallied" and d["number"] == number]
    return found


# --- proposals -----------------------------------------------------------------------------


def test_a_standard_proposal_is_adopted_after_the_next_phase() -> None:
    shell = hall()
    propose(shell, "carol", "Gifts are encouraged.", at(1), "m1")
    (ack,) = shell.posts("proposal")
    assert ack.draft.channel == "#proposals"
    # GH-21: submitted in phase 1, voted during phase 2, which ends at T0 + 48 h.
    assert "**Proposal 1** (Standard) by carol" in ack.body
    assert "ends when that phase ends, scheduled for 2026-12-03 10:00 UTC" in ack.body
    assert shell.deadlines["proposal-1"] == at(48) + GRACE
    shell.react("alice", "m1", UP, at(2))
    shell.react("bob", "m1", UP, at(30))
    shell.react("dave", "m1", DOWN, at(40))
    shell.fire_due(at(48))  # phase 3 begins: the vote ended, the tally waits its grace
    assert not shell.posts("proposal_result")
    shell.fire_due(at(48) + GRACE)
    tallied = result(shell, 1)
    assert (tallied["status"], tallied["ayes"], tallied["noes"], tallied["both"]) == (
        "adopted", ["alice", "bob"], ["dave"], [])
    (post,) = shell.posts("proposal_result")
    assert "**Proposal 1 (Standard) is adopted**" in post.body
    assert "For (2): alice, bob." in post.body and "Against (1): dave." in post.body
    assert "for the players to honour" in post.body
    assert [a.number for a in shell.state.adopted] == [1]
    assert shell.state.adopted[0].title == "Gifts are encouraged."
    assert shell.state.proposals == []


def test_a_tie_fails() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("alice", "m1", UP, at(25))
    shell.react("bob", "m1", DOWN, at(26))
    shell.fire_due(at(48) + GRACE)
    tallied = result(shell, 1)
    assert (tallied["status"], tallied["ayes"], tallied["noes"]) == ("failed", ["alice"], ["bob"])
    assert "fails**: not popular with more for than against (GH-21)" in \
        shell.posts("proposal_result")[0].body
    assert shell.state.adopted == []


def test_an_edit_during_the_vote_makes_it_void() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("alice", "m1", UP, at(25))
    shell.edit("carol", "m1", "More packs, please.", at(30))
    assert "Proposal 1 was edited** at 2026-12-02 16:00 UTC" in shell.posts("proposal_changed")[0].body
    shell.fire_due(at(48) + GRACE)
    tallied = result(shell, 1)
    assert tallied["status"] == "void"
    assert tallied["why"] == "its message was edited at 2026-12-02 16:00 UTC, during its vote (GH-22)"


def test_a_deletion_during_the_vote_makes_it_void() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("alice", "m1", UP, at(2))
    shell.react("bob", "m1", UP, at(2))
    shell.delete("carol", "m1", at(47))
    shell.fire_due(at(48) + GRACE)
    tallied = result(shell, 1)
    assert tallied["status"] == "void" and "deleted at 2026-12-03 09:00 UTC" in tallied["why"]


def test_an_edit_after_the_vote_ended_changes_nothing() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("alice", "m1", UP, at(2))
    shell.fire_due(at(48))
    with pytest.raises(Ignored):
        shell.edit("carol", "m1", "later text", at(48) + timedelta(minutes=1))
    shell.fire_due(at(48) + GRACE)
    assert result(shell, 1)["status"] == "adopted"


def test_both_thumbs_count_against() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("alice", "m1", UP, at(25))
    shell.react("bob", "m1", UP, at(25))
    shell.react("dave", "m1", UP, at(25))
    shell.react("dave", "m1", DOWN, at(26))
    shell.react("erin", "m1", DOWN, at(26))
    shell.fire_due(at(48) + GRACE)
    tallied = result(shell, 1)
    # 2 for; erin and dave (unclear) against: 2 > 2 is false.
    assert (tallied["ayes"], tallied["noes"], tallied["both"], tallied["status"]) == (
        ["alice", "bob"], ["erin"], ["dave"], "failed")
    assert "unclear (both 👍 and 👎, counted against, GH-20): dave" in \
        shell.posts("proposal_result")[0].body


def test_a_non_players_reaction_is_ignored() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("alice", "m1", UP, at(25))
    with pytest.raises(Ignored, match="not a player of the cycle"):
        shell.react("zed", "m1", DOWN, at(25))
    with pytest.raises(Ignored):
        shell.react("zed", "m1", DOWN, at(26))
    shell.fire_due(at(48) + GRACE)
    assert (result(shell, 1)["noes"], result(shell, 1)["status"]) == ([], "adopted")


def test_a_reaction_removed_before_the_end_does_not_count() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("alice", "m1", UP, at(25))
    shell.react("bob", "m1", DOWN, at(25))
    shell.react("dave", "m1", DOWN, at(26))
    shell.react("dave", "m1", DOWN, at(40), removed=True)
    shell.fire_due(at(48) + GRACE)
    assert (result(shell, 1)["noes"], result(shell, 1)["status"]) == (["bob"], "failed")


def test_a_removal_read_before_its_addition_still_wins_by_time() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("dave", "m1", DOWN, at(30), removed=True)
    shell.react("dave", "m1", DOWN, at(26), fire_first=False)  # sent earlier, read later
    shell.react("alice", "m1", UP, at(31))
    shell.fire_due(at(48) + GRACE)
    assert (result(shell, 1)["noes"], result(shell, 1)["status"]) == ([], "adopted")


def test_reactions_count_by_when_they_were_sent() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("alice", "m1", UP, at(25))
    shell.fire_due(at(48))  # the vote ends; the tally waits 10 min
    # Sent a minute before the end, read 5 minutes after it: counts.
    shell.react("bob", "m1", DOWN, at(48) - timedelta(minutes=1), fire_first=False)
    # Sent a minute after the end: refused, with the reason.
    late = None
    try:
        shell.react("dave", "m1", DOWN, at(48) + timedelta(minutes=1))
    except Rejected as exc:
        late = exc
    assert late is not None and "the vote ended at 2026-12-03 10:00:00 UTC" in late.what
    shell.fire_due(at(48) + GRACE)
    assert (result(shell, 1)["noes"], result(shell, 1)["status"]) == (["bob"], "failed")
    # Sent in time but read after the tally: the tally stands, and the sender is told so.
    with pytest.raises(Rejected, match="reached dealer after the tally, which stands"):
        shell.react("erin", "m1", UP, at(47), fire_first=False)


def test_other_emoji_are_not_votes() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    with pytest.raises(Rejected, match="is not a vote: only 👍 .for. and 👎 .against. count"):
        shell.react("alice", "m1", "\N{HEAVY BLACK HEART}", at(2))
    shell.react("alice", "m1", UP + "\N{EMOJI MODIFIER FITZPATRICK TYPE-4}", at(3))  # skin tone
    assert [m.emoji for m in shell.state.proposals[0].marks] == ["+"]


def test_a_reaction_on_no_vote_is_ignored() -> None:
    shell = hall()
    with pytest.raises(Ignored, match="no open vote"):
        shell.react("alice", "nothing", UP, at(1))


def test_an_urgent_proposal_from_a_non_reputable_player_is_refused() -> None:
    shell = hall()
    before = shell.state.model_dump()
    with pytest.raises(Rejected) as refused:
        propose(shell, "carol", "urgent\nFix the prices.", at(1), "m1")
    assert refused.value.rule == "GH-21"
    assert "only a reputable player may submit an Urgent proposal; reputable: alice, bob" in \
        refused.value.what
    assert shell.state.model_dump() == before and not shell.posts("proposal")


def test_an_urgent_proposal_fails_with_three_against() -> None:
    shell = hall()
    propose(shell, "alice", "URGENT\nFix the prices.", at(1), "m1")
    (ack,) = shell.posts("proposal")
    assert "(Urgent)" in ack.body and "The vote ends at 2026-12-03 11:00 UTC" in ack.body
    assert shell.state.proposals[0].text == "Fix the prices."
    for voter in ("bob", "carol", "dave"):
        shell.react(voter, "m1", DOWN, at(5))
    shell.react("alice", "m1", UP, at(5))
    shell.fire_due(at(49) + GRACE)
    assert (result(shell, 1)["status"], result(shell, 1)["noes"]) == (
        "failed", ["bob", "carol", "dave"])


def test_an_urgent_proposal_with_two_against_is_adopted() -> None:
    shell = hall()
    propose(shell, "bob", "urgent\nFix the prices.", at(1), "m1")
    shell.react("carol", "m1", DOWN, at(5))
    shell.react("dave", "m1", DOWN, at(5))
    shell.fire_due(at(49) + GRACE)
    assert result(shell, 1)["status"] == "adopted"


def test_two_adopted_at_once_take_effect_in_creation_order() -> None:
    shell = hall()
    propose(shell, "carol", "Shorter phases.\nset phase_length 12h", at(1), "m1")
    propose(shell, "dave", "Even shorter.\nset phase_length 6h\nset victory_chips 30", at(2), "m2")
    for target in ("m1", "m2"):
        shell.react("alice", target, UP, at(30))
    shell.fire_due(at(48) + GRACE)
    amended = [(d["proposal"], d["setting"], d["old"], d["new"])
               for t, d in shell.events if t == "setting.amended"]
    assert amended == [(1, "phase_length", "24h", "12h"), (2, "phase_length", "12h", "6h"),
                       (2, "victory_chips", "25", "30")]
    assert shell.state.settings.phase_length == timedelta(hours=6)
    assert "phase_length: 12h -> 6h; victory_chips: 25 -> 30" in plain(
        shell.posts("proposal_result")[1].body)
    # Phase 3 began at 48 h with the old length: it still ends at 72 h; phase 4 is 6 h long.
    assert shell.deadlines["phase-4"] == at(72)
    shell.fire_due(at(72))
    assert shell.deadlines["phase-5"] == at(78)
    assert shell.summary().detail["victory_chips"] == 30


def test_a_later_standard_proposal_whose_period_ends_first_is_adopted_first() -> None:
    # GH-21: the urgent one's period is the 2 days after it (to 49 h), the standard one's
    # phase 2 (to 48 h); GH-22's creation order holds only among those adopted at once.
    shell = hall()
    propose(shell, "bob", "urgent\nFix the prices.", at(1), "m1")
    propose(shell, "carol", "More packs.", at(2), "m2")
    shell.react("alice", "m2", UP, at(30))
    shell.fire_due(at(50) + GRACE)
    assert [(a.number, a.adopted_at) for a in shell.state.adopted] == [
        (2, at(48) + GRACE), (1, at(49) + GRACE)]


def test_an_amendment_that_cannot_be_carried_out_is_warned_at_submission() -> None:
    shell = hall()
    propose(shell, "carol", "Tweaks.\nset phase_lenght 12h\nset holo_percent 150\n"
                            "set starting_chips 3\nset price_chip 20", at(1), "m1")
    ack_body = plain(shell.posts("proposal")[0].body)
    assert "Warning: 'set phase_lenght 12h' will not be carried out: the Hall has no setting " \
           "'phase_lenght'" in ack_body
    assert "Warning: 'set holo_percent 150' will not be carried out: '150' is not a valid " \
           "holo_percent" in ack_body
    assert "starting_chips is not a setting a proposal may change" in ack_body
    assert "If adopted, dealer carries out (GH-23): set price_chip 20." in ack_body
    assert shell.state.proposals[0].amendments == [("price_chip", "20")]
    shell.react("alice", "m1", UP, at(30))
    shell.fire_due(at(48) + GRACE)
    assert shell.state.settings.prices()["chip"] == 20


def test_proposals_and_adopted_answer_without_acting() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.react("alice", "m1", UP, at(2))
    shell.accept("bob", "proposals", at(3))
    (reply,) = shell.replies("bob", "proposals")
    assert "Proposal 1 (standard) by carol: More packs." in reply.body
    assert "for 1 (alice), against 0" in reply.body
    assert not shell.state.member("bob").acted  # looking is not an action
    shell.accept("bob", "adopted", at(3))
    assert "No proposal has been adopted" in shell.posts("adopted")[0].body


def test_a_message_of_commands_in_proposals_is_read_as_commands() -> None:
    shell = hall()
    with pytest.raises(NotTaken):
        propose(shell, "carol", "proposals", at(1), "m1")


def test_open_votes_lapse_when_the_cycle_ends() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.grant_step("dave", "chips", 25, at(2))  # GH-8: dave wins, the cycle closes
    assert shell.summary().status == "finished"
    assert [d for t, d in shell.events if t == "votes.lapsed"] == [
        {"proposals": [1], "polls": [], "candidates": []}]
    assert "open votes lapse untallied: proposals 1" in shell.posts("votes_lapsed")[0].body
    assert shell.state.proposals == [] and "proposal-1" not in shell.deadlines


# --- the Judge -----------------------------------------------------------------------------


def judged(**settings: object) -> RulesShell:
    shell = hall(judge="alice", **settings)
    shell.message("carol", "Is a gift an action?", at(1), "#request-for-justice", "q1")
    return shell


def test_a_request_and_a_ruling() -> None:
    shell = judged()
    assert "**Request for justice 1** by carol" in shell.posts("request")[0].body
    shell.accept("alice", "ruling 1: yes, a gift is an action", at(2))
    (post,) = shell.posts("ruling")
    assert post.draft.channel == "#request-for-justice"
    assert "**Ruling 1** by the Judge, alice, on request 1" in post.body
    assert "> yes, a gift is an action" in post.body
    assert [(r.number, r.request, r.text) for r in shell.state.rulings] == [
        (1, 1, "yes, a gift is an action")]
    assert shell.state.requests == []
    assert not shell.state.member("alice").acted  # government is not a Hall action


def test_the_judges_messages_in_the_channel_are_not_requests() -> None:
    shell = judged()
    with pytest.raises(Rejected) as caught:  # GH-31: the Judge is told, not ignored
        shell.message("alice", "I will rule tomorrow.", at(2), "#request-for-justice", "q2")
    assert caught.value.rule == "GH-31" and [r.number for r in shell.state.requests] == [1]
    with pytest.raises(NotTaken):  # commands sent there are read as commands
        shell.message("bob", "confidence 1", at(2), "#request-for-justice", "q3")


def test_a_ruling_by_a_non_judge_or_on_an_unknown_request_is_refused() -> None:
    shell = judged()
    refused = shell.refuse("bob", "ruling 1 true", at(2))
    assert refused.rule == "GH-31" and "only the Judge may rule; the Judge is alice" in refused.what
    refused = shell.refuse("alice", "ruling 7 true", at(2))
    assert "there is no request 7 awaiting a ruling; awaiting: 1" in refused.what
    shell.accept("alice", "ruling 1 TRUE", at(3))
    assert shell.state.rulings[0].text == "true"
    refused = shell.refuse("alice", "ruling 1 false", at(4))
    assert "request 1 has its ruling already (ruling 1); overturn it first" in refused.what


def test_a_confidence_vote_overturns_with_strictly_more() -> None:
    shell = judged()
    shell.accept("alice", "ruling 1 true", at(2))
    shell.accept("bob", "confidence 1", at(3))
    (poll,) = shell.posts("poll")
    assert poll.draft.ref == "poll-1" and "React to THIS message" in poll.body
    assert shell.deadlines["poll-1"] == at(51) + GRACE
    shell.react("bob", "p9", UP, at(4), ref="poll-1")
    shell.react("carol", "p9", UP, at(4), ref="poll-1")
    shell.react("dave", "p9", DOWN, at(5), ref="poll-1")
    shell.fire_due(at(51) + GRACE)
    (tallied,) = [d for t, d in shell.events if t == "poll.tallied"]
    assert tallied == {"ruling": 1, "overturn": ["bob", "carol"], "affirm": ["dave"],
                       "both": [], "overturned": True}
    assert "**Ruling 1 is overturned** by the confidence vote" in shell.posts("poll_result")[0].body
    assert shell.state.rulings[0].overturned == "by confidence vote"
    assert [r.number for r in shell.state.requests] == [1]  # open again for a new ruling


def test_a_tied_confidence_vote_affirms() -> None:
    shell = judged()
    shell.accept("alice", "ruling 1 true", at(2))
    shell.accept("bob", "confidence vote on ruling 1", at(3))
    shell.react("bob", "p9", UP, at(4), ref="poll-1")
    shell.react("carol", "p9", DOWN, at(4), ref="poll-1")
    shell.react("dave", "p9", UP, at(4), ref="poll-1")
    shell.react("dave", "p9", DOWN, at(4), ref="poll-1")  # unclear: affirms
    shell.fire_due(at(51) + GRACE)
    (tallied,) = [d for t, d in shell.events if t == "poll.tallied"]
    assert (tallied["overturn"], tallied["affirm"], tallied["both"], tallied["overturned"]) == (
        ["bob"], ["carol"], ["dave"], False)
    assert "**Ruling 1 is affirmed**" in shell.posts("poll_result")[0].body
    assert shell.state.rulings[0].overturned is None


def test_a_confidence_vote_after_four_days_is_refused() -> None:
    shell = judged()
    shell.accept("alice", "ruling 1 true", at(2))
    late = at(2 + 96) + timedelta(seconds=1)
    shell.fire_due(late)
    refused = shell.refuse("bob", "confidence 1", late, fire_first=False)
    assert refused.rule == "GH-32" and "more than 4 days ago" in refused.what
    shell.accept("bob", "confidence 1", at(2 + 96))  # read late, sent just in time
    refused = shell.refuse("carol", "confidence 1", at(2 + 96), fire_first=False)
    assert "has had its confidence vote already" in refused.what


def test_the_judge_overturns_within_seven_days_only() -> None:
    shell = judged()
    shell.accept("alice", "ruling 1 true", at(2))
    late = at(2 + 7 * 24) + timedelta(seconds=1)
    shell.fire_due(late)
    refused = shell.refuse("alice", "overturn 1", late, fire_first=False)
    assert refused.rule == "GH-33" and "more than 7 days ago" in refused.what
    shell = judged()
    shell.accept("alice", "ruling 1 true", at(2))
    assert shell.refuse("bob", "overturn 1", at(3)).rule == "GH-33"
    shell.accept("alice", "overturn ruling 1", at(2 + 7 * 24))
    assert "Ruling 1 is overturned** by the Judge" in shell.posts("overturned")[0].body
    assert "the Judge must issue a new ruling on it" in shell.posts("overturned")[0].body
    shell.accept("alice", "ruling 1 false", at(2 + 7 * 24 + 1))
    assert [(r.number, r.request, r.overturned) for r in shell.state.rulings] == [
        (1, 1, "by the Judge"), (2, 1, None)]


def test_two_players_in_one_phase_remove_the_judge() -> None:
    shell = hall(judge="alice")
    assert shell.refuse("alice", "remove judge", at(1)).rule == "GH-30"
    shell.accept("bob", "remove judge", at(1))
    assert shell.refuse("bob", "remove the judge", at(2)).rule == "GH-30"
    shell.fire_due(at(24))  # a lone assent lapses with its phase
    assert shell.state.removal == [] and shell.state.judge == "alice"
    shell.accept("bob", "remove judge", at(25))
    shell.accept("carol", "remove the judge", at(26))
    assert shell.state.judge is None
    assert "**alice is removed as Judge** by the assent of bob and carol" in \
        shell.posts("judge_removed")[0].body


def test_the_judge_resigns() -> None:
    shell = hall(judge="alice")
    assert shell.refuse("bob", "resign", at(1)).rule == "GH-30"
    shell.accept("alice", "resign", at(1))
    assert shell.state.judge is None
    shell.accept("bob", "judge", at(2))
    assert "There is no Judge now" in shell.replies("bob", "judge")[0].body


# --- elections -----------------------------------------------------------------------------

MONDAY = datetime(2026, 12, 7, 0, 0, tzinfo=timezone.utc)  # the week of T0 ends


def test_an_election_tie_goes_to_the_earliest_first_message() -> None:
    shell = hall()
    shell.accept("bob", "inventory", at(2))  # bob's first message of the week: 12:00
    shell.message("alice", "I stand.", at(3), "#judge-elections", "c1")
    shell.message("bob", "Me too.", at(4), "#judge-elections", "c2")
    assert shell.deadlines["election-20261130T0000"] == MONDAY + GRACE
    for voter in ("carol", "dave"):
        shell.react(voter, "c1", UP, at(5))
        shell.react(voter, "c2", UP, at(5))
    shell.react("erin", "c2", DOWN, at(6))
    shell.fire_due(MONDAY + GRACE)
    (tallied,) = [d for t, d in shell.events if t == "election.tallied"]
    # Both popular with 2 👍 (bob's 1 👎 does not matter); bob wrote first (12:00 < 13:00).
    assert tallied["votes"] == {"alice": [2, 0], "bob": [2, 1]}
    assert tallied["first_messages"] == {"alice": "2026-12-01T13:00:00Z",
                                         "bob": "2026-12-01T12:00:00Z"}
    assert tallied["winner"] == "bob" and shell.state.judge == "bob"
    assert "**bob is the Judge**: tied at 2 👍 with alice; bob's first message of the week " \
           "came earliest" in shell.posts("election")[0].body


def test_an_election_nobody_wins() -> None:
    shell = hall(judge="erin")
    shell.message("alice", "I stand.", at(3), "#judge-elections", "c1")
    shell.react("carol", "c1", DOWN, at(5))
    shell.fire_due(MONDAY + GRACE)
    assert shell.state.judge == "erin"
    assert "Nobody won: no candidacy had more 👍 than 👎 from players. erin stays the Judge." in \
        shell.posts("election")[0].body


def test_a_candidacy_from_a_non_reputable_player_is_refused() -> None:
    shell = hall()
    before = shell.state.model_dump()
    with pytest.raises(Rejected) as refused:
        shell.message("carol", "I stand.", at(3), "#judge-elections", "c1")
    assert refused.value.rule == "GH-34"
    assert "only a reputable player may stand for Judge; reputable: alice, bob" in refused.value.what
    assert shell.state.model_dump() == before and not shell.deadlines.get("election-20261130T0000")


def test_the_week_start_is_a_setting() -> None:
    shell = hall(week_start="wednesday 12:00")
    shell.message("alice", "I stand.", at(3), "#judge-elections", "c1")
    # T0 is Tuesday 10:00: its week began on Wednesday 25 November at 12:00.
    assert shell.deadlines["election-20261125T1200"] == datetime(
        2026, 12, 2, 12, tzinfo=timezone.utc) + GRACE


# --- chatter -------------------------------------------------------------------------------


@pytest.mark.parametrize("line, meant", [
    ("judge", True), ("judge was right about that", False), ("ruling 3: yes", True),
    ("ruling aside, I disagree", False), ("remove judge", True), ("remove the clutter", False),
    ("resign", True), ("resign yourself to it", False), ("confidence 2", True),
    ("confidence is key", False), ("proposals", True), ("proposals are fun", False),
    ("buy lots", True),  # a non-strict command word stays a (refused) command
])
def test_strict_words_in_public_chat_are_chatter(line: str, meant: bool) -> None:
    assert Hall().is_command_line(line) is meant


def test_every_governance_command_is_strict() -> None:
    assert all(c.strict for c in GOVERNANCE_COMMANDS)


# --- admin overrides of a tally --------------------------------------------------------------


def test_an_urgent_tally_fired_early_ends_its_vote_then() -> None:
    shell = hall()
    propose(shell, "alice", "urgent\nFix it.", at(1), "m1")
    shell.react("bob", "m1", DOWN, at(2))
    shell.deadlines["proposal-1"] = at(3)  # `dealer deadline now hall1:proposal-1` at 3 h
    shell.fire_due(at(3))
    tallied = result(shell, 1)
    assert (tallied["status"], tallied["ends_at"], tallied["noes"]) == (
        "adopted", "2026-12-01T13:00:00Z", ["bob"])


def test_a_standard_tally_fired_before_its_phase_ends_waits_for_it() -> None:
    shell = hall()
    propose(shell, "carol", "More packs.", at(1), "m1")
    shell.deadlines["proposal-1"] = at(30)  # moved into phase 2 by an override
    shell.fire_due(at(30))
    assert [p.number for p in shell.state.proposals] == [1]
    assert "proposal-1" not in shell.deadlines
    shell.react("alice", "m1", UP, at(40))
    shell.fire_due(at(48))
    assert shell.deadlines["proposal-1"] == at(48) + GRACE  # the phase's end sets it again
    shell.fire_due(at(48) + GRACE)
    assert result(shell, 1)["status"] == "adopted"


def test_a_poll_tally_fired_late_counts_reactions_sent_by_its_end() -> None:
    shell = judged()
    shell.accept("alice", "ruling 1 true", at(2))
    shell.accept("bob", "confidence 1", at(3))
    shell.react("bob", "p9", UP, at(4), ref="poll-1")
    shell.deadlines["poll-1"] = at(80)  # extended by an override
    with pytest.raises(Rejected, match="the vote ended"):
        shell.react("carol", "p9", DOWN, at(60), ref="poll-1")
    shell.fire_due(at(80))
    (tallied,) = [d for t, d in shell.events if t == "poll.tallied"]
    assert (tallied["overturn"], tallied["affirm"], tallied["overturned"]) == (["bob"], [], True)
