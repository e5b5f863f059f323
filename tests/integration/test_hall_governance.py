"""The Hall's government through the daemon: the directory inbox (messages, reactions,
edits), ``dealer run --once`` at controlled times, the outbox and ``dealer game show``
(GH-20 to GH-23, GH-30 to GH-34)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from itertools import count
from typing import Any

from dealer.clock import iso_exact

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
UP, DOWN = "👍", "👎"
_n = count(1)


def at(hours: float, minutes: float = 0) -> datetime:
    return T0 + timedelta(hours=hours, minutes=minutes)


def drop(cli: Any, sender: str, sent: datetime, body: str = "", **fields: Any) -> str:
    """Write one inbox file as a transport would; return its id."""
    number = next(_n)
    ident = fields.pop("id", f"g{number:04d}")
    message = {"id": ident, "sender": sender, "channel": fields.pop("channel", "pm"), "body": body,
               "sent_at": iso_exact(sent), **fields}
    cli.inbox.mkdir(parents=True, exist_ok=True)
    (cli.inbox / f"{number:05d}-{ident}.json").write_text(json.dumps(message), encoding="utf-8")
    return ident


def once(cli: Any, now: datetime) -> None:
    cli("run", "--once", "--now", iso_exact(now))


def posts(cli: Any, kind: str | None = None, recipient: str | None = None) -> list[dict[str, Any]]:
    found = [json.loads(p.read_text(encoding="utf-8")) for p in sorted(cli.outbox.glob("*.json"))]
    return [p for p in found if (kind is None or p["kind"] == kind) and p["recipient"] == recipient]


def show(cli: Any) -> dict[str, Any]:
    return json.loads(cli("game", "show", "h1", "--json").output)


def plain(text: str) -> str:
    return text.replace("\\", "")


def setup(cli: Any, **settings: str) -> None:
    cli("migrate")
    for name in ("alice", "bob", "carol", "dave"):
        cli("player", "add", name)
    sets = [arg for key, value in {"reputable": "alice", **settings}.items()
            for arg in ("--set", f"{key}={value}")]
    cli("game", "new", "hall", "--id", "h1", "--players", "alice,bob,carol,dave",
        "--start-in-past", "--start", iso_exact(T0), *sets)
    once(cli, T0)


def test_a_whole_governance_cycle_through_the_daemon(cli) -> None:  # type: ignore[no-untyped-def]
    setup(cli)
    drop(cli, "carol", at(1), "Shorter phases for everyone.\nset phase_length 12h",
         channel="#proposals", id="p1")
    once(cli, at(1, 1))
    (ack,) = posts(cli, "proposal")
    assert ack["channel"] == "#proposals"
    assert "**Proposal 1** (Standard) by carol" in ack["body"]
    assert "scheduled for 2026-12-03 10:00 UTC" in ack["body"]
    assert "If adopted, dealer carries out (GH-23): set phase_length 12h." in plain(ack["body"])
    assert {d["name"]: d["due_at"] for d in show(cli)["deadlines"]}["proposal-1"] == \
        "2026-12-03T10:10:00Z"

    drop(cli, "alice", at(30), kind="reaction", target="p1", emoji=UP, channel="#proposals")
    drop(cli, "dave", at(31), kind="reaction", target="p1", emoji="🎉", channel="#proposals")
    drop(cli, "bob", at(31), kind="reaction", target="nowhere", emoji=UP, channel="#proposals")
    once(cli, at(31, 1))
    (open_one,) = show(cli)["proposals"]
    assert (open_one["status"], open_one["for"], open_one["against"]) == ("open", 1, 0)
    # Bad input: a clear private reply each, nothing changed.
    assert "🎉 is not a vote" in posts(cli, recipient="dave")[-1]["body"]
    assert "dealer knows no message or post 'nowhere'" in plain(posts(cli, recipient="bob")[-1]["body"])

    # The period ends with phase 2, at 48 h; the daemon fires that boundary on time.
    once(cli, at(48, 2))
    assert not posts(cli, "proposal_result")
    # Then a reaction sent a minute before the end arrives, and one sent a minute after it.
    drop(cli, "bob", at(47, 59), kind="reaction", target="p1", emoji=UP, channel="#proposals")
    drop(cli, "dave", at(48, 1), kind="reaction", target="p1", emoji=DOWN, channel="#proposals")
    once(cli, at(48, 5))
    assert "a reaction sent after that changes nothing" in posts(cli, recipient="dave")[-1]["body"]
    once(cli, at(48, 11))  # the tally, 10 minutes after the end
    (tally,) = posts(cli, "proposal_result")
    assert "**Proposal 1 (Standard) is adopted**" in tally["body"]
    assert "For (2): alice, bob." in tally["body"] and "Against (0): nobody." in tally["body"]
    assert "phase_length: 24h -> 12h" in plain(tally["body"])
    view = show(cli)
    assert view["settings"]["phase_length"] == "12h"
    assert [(p["number"], p["status"], p["for"], p["against"]) for p in view["proposals"]] == [
        (1, "adopted", 2, 0)]
    assert view["adopted"] == [{"number": 1, "author": "carol",
                                "text": "Shorter phases for everyone.\nset phase_length 12h"}]
    # Phase 3 began at 48 h with 24 h; from the next boundary phases last 12 h.
    deadlines = {d["name"]: d["due_at"] for d in view["deadlines"]}
    assert deadlines["phase-4"] == "2026-12-04T10:00:00Z"
    once(cli, at(72, 1))
    deadlines = {d["name"]: d["due_at"] for d in show(cli)["deadlines"]}
    assert deadlines["phase-5"] == "2026-12-04T22:00:00Z"
    # Read after the tally: the sender is told the tally stands.
    drop(cli, "carol", at(47), kind="reaction", target="p1", emoji=UP, channel="#proposals")
    once(cli, at(72, 2))
    assert "reached dealer after the tally, which stands" in posts(cli, recipient="carol")[-1]["body"]
    text = cli("game", "show", "h1").output
    assert "judge: none" in text and "proposal 1 (standard): adopted, for 2, against 0" in text
    assert "ruleset record (adopted proposals, GH-22):\n  1. Shorter phases for everyone.\n" \
           "     set phase_length 12h (by carol)" in text
    assert cli("replay", "h1").exit_code == 0


def test_a_confidence_poll_is_voted_on_dealers_own_post(cli) -> None:  # type: ignore[no-untyped-def]
    setup(cli, judge="alice")
    drop(cli, "carol", at(1), "Is a gift an action?", channel="#request-for-justice", id="q1")
    drop(cli, "alice", at(2), "ruling 1: yes", channel="#request-for-justice")
    drop(cli, "bob", at(3), "confidence 1", channel="#game-actions")
    drop(cli, "carol", at(3), "judge was right, I think", channel="#game-actions")
    once(cli, at(3, 1))
    assert "**Request for justice 1** by carol" in posts(cli, "request")[0]["body"]
    assert "**Ruling 1** by the Judge, alice, on request 1" in posts(cli, "ruling")[0]["body"]
    (poll,) = posts(cli, "poll")
    assert poll["channel"] == "#request-for-justice"
    assert not posts(cli, recipient="carol")  # chatter starting with "judge": no reply
    # The target is the outbox post's id as the outbox writes it (a number), or as a string.
    assert isinstance(poll["id"], int)
    for voter in ("bob", "carol"):
        drop(cli, voter, at(4), kind="reaction", target=poll["id"], emoji=UP,
             channel="#request-for-justice")
    drop(cli, "dave", at(4), kind="reaction", target=str(poll["id"]), emoji=DOWN,
         channel="#request-for-justice")
    drop(cli, "dave", at(5), kind="reaction", target=str(poll["id"]), emoji=DOWN,
         channel="#request-for-justice", removed=True)
    once(cli, at(51, 11))  # 2 days after the poll opened, and the grace
    (result,) = posts(cli, "poll_result")
    assert "**Ruling 1 is overturned** by the confidence vote" in result["body"]
    assert "Overturn (2): bob, carol." in result["body"] and "Affirm (0): nobody." in result["body"]
    view = show(cli)
    assert view["rulings"] == [{"number": 1, "request": 1, "judge": "alice", "text": "yes",
                                "overturned": "by confidence vote"}]
    assert view["judge"] == "alice"
    assert "ruling 1 on request 1 by alice: yes [overturned by confidence vote]" in \
        cli("game", "show", "h1").output
    assert cli("replay", "h1").exit_code == 0


def test_an_election_through_the_daemon_reads_first_messages(cli) -> None:  # type: ignore[no-untyped-def]
    setup(cli, reputable="alice,bob")
    drop(cli, "bob", at(1), "inventory", channel="#game-actions")
    drop(cli, "alice", at(2), "I stand for Judge.", channel="#judge-elections", id="c1")
    drop(cli, "bob", at(3), "So do I.", channel="#judge-elections", id="c2")
    drop(cli, "carol", at(3), "I stand too.", channel="#judge-elections", id="c3")
    once(cli, at(3, 1))
    assert "only a reputable player may stand for Judge" in posts(cli, recipient="carol")[-1]["body"]
    for target in ("c1", "c2"):
        drop(cli, "carol", at(4), kind="reaction", target=target, emoji=UP)
    monday = datetime(2026, 12, 7, tzinfo=timezone.utc)
    once(cli, monday + timedelta(minutes=11))
    (post,) = posts(cli, "election")
    assert "**bob is the Judge**: tied at 1 👍 with alice; bob's first message of the week " \
           "came earliest" in post["body"]
    assert show(cli)["judge"] == "bob"
    # A counted vote needs no private word, even when the transport calls it a PM.
    assert [p["kind"] for p in posts(cli, recipient="carol")] == ["error"]
    assert cli("replay", "h1").exit_code == 0


def test_two_halls_sharing_proposals_a_message_names_its_hall_or_is_refused(cli) -> None:  # type: ignore[no-untyped-def]
    setup(cli)
    cli("game", "new", "hall", "--id", "h2", "--players", "alice,bob,carol,dave",
        "--start-in-past", "--start", iso_exact(T0), "--set", "reputable=alice")
    once(cli, T0)
    # No game named: refused privately (it used to be read line by line as chatter, unseen).
    drop(cli, "carol", at(1), "Shorter phases for everyone.\nset phase_length 12h",
         channel="#proposals", id="p1")
    # A first line naming the Hall: the rest is that Hall's proposal.
    drop(cli, "bob", at(1, 5), "game h2\nLonger phases.\nset phase_length 48h",
         channel="#proposals", id="p2")
    drop(cli, "dave", at(1, 6), "game h9\nA proposal for no Hall.", channel="#proposals", id="p3")
    once(cli, at(1, 10))
    (refused,) = [p for p in posts(cli, recipient="carol")]
    assert "Several games read #proposals (h1, h2)" in plain(refused["body"])
    assert "'game h1'" in plain(refused["body"])
    assert "no game 'h9'" in plain(posts(cli, recipient="dave")[0]["body"])
    assert show(cli)["proposals"] == []
    h2 = json.loads(cli("game", "show", "h2", "--json").output)
    (proposal,) = h2["proposals"]
    assert proposal["author"] == "bob"
    (ack,) = posts(cli, "proposal")
    assert "**Proposal 1** (Standard) by bob" in ack["body"]
    assert "game h2" not in ack["body"]
