"""Brief posts and replies (the default, dealer/detail.py) on a real roulette game: short
replies with one line per command line, the explanations once, the full record through
``receipts`` and ``dealer game show``, and nothing a player could check lost: every
receipt and commitment is checked with the published fairness script from what the brief
posts, the ``receipts`` answers and ``game show`` give."""

from __future__ import annotations

import json
import re
from datetime import timedelta
from pathlib import Path

from tests.integration.test_fairness_record import (
    ALICE_PREP, BOB_PREP, DAY, T0, iso, play, printed_script, run_script,
)

HEX64 = re.compile(r"\b[0-9a-f]{64}\b")


def posts(cli) -> list[dict]:  # type: ignore[no-untyped-def]
    return [json.loads(p.read_text("utf-8")) for p in sorted(cli.outbox.glob("*.json"))]


def play_asking_receipts(cli) -> None:  # type: ignore[no-untyped-def]
    """test_fairness_record's game, each player sending `receipts` late in each phase."""
    cli("player", "add", "alice", "--chips", "100")
    cli("player", "add", "bob", "--chips", "100")
    cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start-in-past", "--start", iso(T0),
        "--set", "rounds=2", "--set", "remind_before=")
    for phase in range(3):
        sent = T0 + phase * DAY + timedelta(hours=1)
        alice = {1: ["bet silver 40", "bet gold 30 silver 10"], 2: ["bet gold 40"]}.get(phase, [])
        bob = ["bet gold 40"] if phase >= 1 else []
        for name, lines, preps in (("alice", alice, ALICE_PREP), ("bob", bob, BOB_PREP)):
            lines = lines + ([preps[phase]] if phase in preps else [])
            cli("submit", "--from", name, "--at", iso(sent), "\n".join(lines))
            cli("submit", "--from", name, "--at", iso(sent + timedelta(hours=20)), "receipts")
        cli("run", "--once", "--now", iso(sent + timedelta(hours=21)))
        cli("run", "--once", "--now", iso(T0 + (phase + 1) * DAY + timedelta(minutes=5)))


def test_brief_replies_are_one_line_per_command_with_the_explanations_once(cli, brief) -> None:  # type: ignore[no-untyped-def]
    play(cli, phases=range(2))
    replies = [p for p in posts(cli) if p["recipient"] == "alice" and p["channel"] == "pm"]
    first, second = replies[0]["body"], replies[1]["body"]
    # The preparation phase: one line, its footer, and the explanations (the first reply).
    assert first.splitlines()[0].startswith(
        "✓ prepare gold (gold 30, silver 10, black 0): bob's roulette in round 1; winning "
        "colours left after it: gold 4, silver 5, black 5 · receipt ")
    assert re.search(r"· receipt [0-9a-f]{8}$", first.splitlines()[0])
    assert first.splitlines()[1] == (
        "r1: nothing more due from you in the preparation phase; deadline 2026-12-02 12:00 UTC "
        "(in 23 hours).")
    assert "Good to know (said once; `help` repeats it): a receipt is the SHA-256" in first
    # Round 1: two bets (the second replaces the first) and a preparation, in 4 lines.
    lines = second.strip().splitlines()
    assert len(lines) == 4 and len(second) < 600, second
    assert lines[0].startswith("✓ bet silver 40 on bob's roulette in round 1 · receipt ")
    assert lines[1].startswith("✓ bet gold 30, silver 10 on bob's roulette in round 1; replaces no. 1 · receipt ")
    assert lines[2].startswith("✓ prepare silver (gold 30, silver 10, black 0): bob's roulette in round 2")
    assert lines[3].startswith("r1: nothing more due from you in round 1; deadline 2026-12-03 12:00 UTC")
    assert "Good to know" not in second and not HEX64.search(second)


def test_a_refused_line_says_why_and_what_is_allowed_in_one_line(cli, brief) -> None:  # type: ignore[no-untyped-def]
    play(cli, phases=range(1))
    at = T0 + timedelta(days=1, hours=2)  # round 1
    cli("submit", "--from", "bob", "--at", iso(at), "bet gold 50\nhello\nhelp")
    cli("run", "--once", "--now", iso(at + timedelta(minutes=1)))
    body = [p for p in posts(cli) if p["recipient"] == "bob"][-1]["body"]
    assert body.splitlines()[0] == (
        "✗ bet gold 50: a bet uses exactly 40 points, not 50 (SR-5). Now you can send: "
        "bet gold 30 silver 10")
    assert "Not read as commands, so nothing was done with: hello" in body
    # help gives the explanations again, and lists receipts.
    assert "- receipts — your submissions on file in this phase with their receipts" in body
    assert "Good to know (said once; `help` repeats it): a receipt is the SHA-256" in body


def test_nothing_checkable_is_lost_in_brief_posts(cli, brief, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    play_asking_receipts(cli)
    everything = posts(cli)
    bodies = [p["body"] for p in everything]
    assert all(len(body) <= 2000 for body in bodies)
    view = json.loads(cli("game", "show", "r1", "--json").output)
    assert view["status"] == "finished"
    script = printed_script(cli, tmp_path)

    # The server seed: its commitment is in the opening post, the seed in the final result.
    seed = view["seeds"][0]
    (opening,) = [p["body"] for p in everything if p["kind"] == "opening"]
    (final,) = [p["body"] for p in everything if p["kind"] == "final_result"]
    assert seed["commitment"] in opening and seed["server_seed"] in final
    assert run_script(script, "seed", seed["server_seed"], seed["commitment"]).stdout == "commitment OK\n"

    # Every receipt a player got: its first 8 hex digits in the brief reply, the whole of it
    # and its sealed text in the `receipts` answer, the salt in `game show`.
    answers = "\n".join(p["body"] for p in everything if p["kind"] == "receipts")
    answered = dict(re.findall(r"receipt ([0-9a-f]{64})\n  sealed text: (.+)", answers))
    replies = "\n".join(p["body"] for p in everything if p["recipient"] and p["kind"] != "receipts")
    salts = {x["prep_receipt"]: x["salt"] for r in view["sealed"] for x in r["roulettes"]}
    salts |= {b["receipt"]: b["salt"] for r in view["sealed"] for b in r["bets"]}
    checked = 0
    for receipt, text in answered.items():
        assert f"receipt {receipt[:8]}" in replies  # the brief reply gave its start
        if receipt in salts:  # counted: game show reveals its salt
            done = run_script(script, "receipt", salts[receipt], receipt, text)
            assert done.stdout == "receipt OK\n", done.stderr
            checked += 1
    # Every submission was on file when its phase's receipts were asked: the preparation
    # phase's 2 preparations, round 1's 2 bets of alice (the first replaced, SR-6), her
    # preparation, bob's bet and preparation, round 2's 2 bets: 9, 8 of them counted.
    assert len(answered) == 9 and checked == 8
    # alice's replaced bet is not revealed; `receipts` gave it whole, the seed opens it.
    replaced = [r for r, text in answered.items() if "round 1, submission 1, bet gold 0 silver 40 black 0" in text]
    assert len(replaced) == 1 and replaced[0] not in salts
    salt = run_script(script, "salt", seed["server_seed"], "alice:round-1:bet:1").stdout.strip()
    done = run_script(script, "receipt", salt, replaced[0], answered[replaced[0]])
    assert done.stdout == "receipt OK\n", done.stderr

    # Every commitment: its start in the brief round post, all of it with its salt in game show.
    starts = "\n".join(p["body"] for p in everything if p["kind"] == "phase_start")
    for record in view["sealed"]:
        for x in record["roulettes"]:
            assert f"commitment {x['commitment'][:12]}…" in starts
            done = run_script(script, "commitment", x["salt"], x["colour"], x["commitment"])
            assert done.stdout == "commitment OK\n", done.stderr
    # The round results point to the full record instead of printing it.
    results = [p["body"] for p in everything if p["kind"] == "round_result"]
    assert len(results) == 2 and all("`dealer game show r1`" in r and not HEX64.search(r) for r in results)


def test_posts_link_the_status_page_when_it_has_an_address(cli, brief) -> None:  # type: ignore[no-untyped-def]
    cli.env["DEALER_WEB_URL"] = "https://casino.example.org/"
    brief("https://casino.example.org/")
    play(cli, phases=range(2))
    (result,) = [p["body"] for p in posts(cli) if p["kind"] == "round_result"]
    assert "salts and receipts at https://casino.example.org/games/r1#round-1;" in result


def test_a_full_route_keeps_the_complete_texts(cli, brief) -> None:  # type: ignore[no-untyped-def]
    # The public channel archives everything; private replies stay brief.
    cli.env["DEALER_ROUTES"] = f"#stationary-roulette={cli.env['DEALER_PUBLISH']}|detail=full"
    play(cli, phases=range(2))
    everything = posts(cli)
    (result,) = [p["body"] for p in everything if p["kind"] == "round_result"]
    assert "Bets revealed (salt, receipt, sealed text):" in result
    reply = [p["body"] for p in everything if p["recipient"] == "alice"][1]
    assert reply.startswith("✓ bet silver 40")


def test_a_brief_hall_phase_summary_gives_the_fairness_in_one_line(cli, brief) -> None:  # type: ignore[no-untyped-def]
    # Issue 29: "the fairness check in one line (the commitment, shortened, and the link)";
    # the whole seed and commitment stay one step away, in `dealer game show`.
    import hashlib

    cli("migrate")
    for name in ("alice", "bob"):
        cli("player", "add", name)
    cli("game", "new", "hall", "--id", "h1", "--players", "alice,bob", "--start-in-past",
        "--start", iso(T0))
    cli("run", "--once", "--now", iso(T0))
    cli("run", "--once", "--now", iso(T0 + DAY + timedelta(minutes=1)))
    (summary,) = [p["body"] for p in posts(cli) if p["kind"] == "phase_summary"]
    assert not HEX64.search(summary), summary  # no hash in full
    shown = json.loads(cli("game", "show", "h1", "--json").output)
    seed = next(s["server_seed"] for s in shown["seeds"] if s["server_seed"])  # phase 1's, revealed
    commitment = hashlib.sha256(seed.encode()).hexdigest()  # what a player checks (FAIRNESS.md)
    fair = next(line for line in summary.splitlines() if line.startswith("Fair draws (GH-40)"))
    assert fair.startswith(f"Fair draws (GH-40): phase 1's seed `{seed[:12]}…` (commitment "
                           f"`{commitment[:12]}…`), no draw; in full in `dealer game show h1`;"), fair
    assert f"Phase 2's commitment: `{shown['seeds'][1]['commitment'][:12]}…`" in summary
    assert len(summary) < 700, summary
