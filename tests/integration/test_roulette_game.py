"""A complete 10-round Stationary Roulette game through the directory inbox and
``dealer run --once`` at controlled times, checked against numbers worked out by hand."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path



T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)

# The script (phase 0 is the preparation phase, phase r is round r):
# - alice prepares gold in phases 0-4, silver in 5-8 (layout gold 30 silver 10) and black in
#   phase 9 (layout gold 35 silver 5): the roulettes bob bets on in rounds 1-5, 6-9 and 10.
# - bob prepares gold in phases 0-4 and silver in 5-9 (layout gold 25 silver 15).
# - bob always bets "gold 40" and alice always bets "silver 40".
#
# By hand, from SR-8 to SR-11:
# alice's roulette, bob betting gold 40:
#   rounds 1-5 (W gold): alice +30 (I[gold]); bob +40 (b[gold]) +20 (all 40 on W)   -> a 30, b 60
#   rounds 6-9 (W silver): alice +10 (I[silver]) +20 (b[silver] = 0); bob +0        -> a 30, b 0
#   round 10 (W black): no base points; alice +20 (b[black] = 0); bob pays alice
#     40 - 0 = 40 chips, then alice pays the house 10 (SR-9)                     -> a 20, b 0
# bob's roulette, alice betting silver 40:
#   rounds 1-5 (W gold): bob +25 +20 (b[gold] = 0); alice +0                       -> b 45, a 0
#   rounds 6-10 (W silver): bob +15; alice +40 +20 (all 40 on W)                   -> b 15, a 60
# alice: 5*30 + 4*30 + 20 + 5*60 = 590;  bob: 5*60 + 5*45 + 5*15 = 600.
# bob wins by 10 and takes floor(10 / 10) = 1 chip from alice (SR-11).
# chips: alice 100 + 40 - 10 - 1 = 129; bob 100 - 40 + 1 = 61; the house 10.
ALICE = {p: "gold" if p <= 4 else "silver" if p <= 8 else "black" for p in range(10)}
BOB = {p: "gold" if p <= 4 else "silver" for p in range(10)}
LAYOUT = {"alice": {"gold": "gold 30 silver 10", "silver": "gold 30 silver 10", "black": "gold 35 silver 5"},
          "bob": {"gold": "gold 25 silver 15", "silver": "gold 25 silver 15"}}


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def posts(outbox: Path) -> list[dict]:  # type: ignore[type-arg]
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(outbox.glob("*.json"))]


def test_a_whole_game(cli) -> None:  # type: ignore[no-untyped-def]
    cli("player", "add", "alice", "--chips", "100")
    cli("player", "add", "bob", "--chips", "100")
    cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start-in-past", "--start", iso(T0),
        "--set", "remind_before=")
    for phase in range(11):
        sent = iso(T0 + phase * DAY + timedelta(hours=1))
        for name, colours, bet in (("alice", ALICE, "silver 40"), ("bob", BOB, "gold 40")):
            lines = []
            if phase >= 1:
                lines.append(f"bet {bet}")
            if phase <= 9:
                lines.append(f"prepare {colours[phase]} {LAYOUT[name][colours[phase]]}")
            cli("submit", "--from", name, "--at", sent, "\\n".join(lines))
        # The daemon reads the phase's PMs only after its deadline: they still count.
        cli("run", "--once", "--now", iso(T0 + (phase + 1) * DAY + timedelta(minutes=5)))
    # A PM sent after the last deadline is too late.
    cli("submit", "--from", "bob", "--at", iso(T0 + 11 * DAY + timedelta(minutes=1)), "bet gold 40")
    cli("run", "--once", "--now", iso(T0 + 11 * DAY + timedelta(minutes=10)))

    game = json.loads(cli("game", "show", "r1", "--json").output)
    assert game["status"] == "finished"
    assert game["players"] == ["alice", "bob"]
    assert game["scores"] == {"alice": 590, "bob": 600}
    assert game["winner"] == "bob"
    assert game["deadlines"] == []
    assert game["detail"]["tournament_points"] == {"alice": 0, "bob": 1}
    alice = json.loads(cli("player", "show", "alice", "--json").output)
    bob = json.loads(cli("player", "show", "bob", "--json").output)
    assert (alice["chips"], bob["chips"]) == (129, 61)

    published = posts(cli.outbox)
    public = [p for p in published if p["recipient"] is None]
    kinds = [p["kind"] for p in public]
    assert kinds.count("round_result") == 10
    assert kinds.count("phase_start") == 11  # the preparation phase and 10 rounds
    assert kinds[-1] == "final_result"
    assert all(p["channel"] == "#stationary-roulette" for p in public)
    # One reply per PM (11 each), with a section for each of the 10 preparations and 10 bets.
    confirmations = [p for p in published if p["kind"] == "confirmation"]
    assert len(confirmations) == 2 * 11
    assert sum(p["body"].count("\naccepted:\n") for p in confirmations) == 2 * (10 + 10)
    final = public[-1]["body"]
    assert "bob" in final and "1 chip" in final
    late = [p for p in published if p["recipient"] == "bob" and p["kind"] == "error"]
    assert len(late) == 1 and "> bet gold 40" in late[0]["body"]
    # The server seed is revealed with the final result.
    assert game["seeds"][0]["server_seed"] in final
