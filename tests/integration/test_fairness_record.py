"""The fairness record of real games in the store: ``dealer verify`` checks a roulette's
receipts and commitments, ``dealer game show`` shows the full hashes the posts shorten, and
the players' script printed by ``dealer fairness-script`` checks real draws and receipts
when run on its own, in a subprocess."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

from sqlalchemy import select

from dealer.fairness import client_hash
from dealer.shell.admin import add_player, create_game
from dealer.views import game_view
from dealer.render import set_fairness_url
from dealer.store.db import make_engine, session_factory
from dealer.store.models import Draw, Event

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=timezone.utc)
DAY = timedelta(days=1)
HEX64 = re.compile(r"^[0-9a-f]{64}$")
ALICE_PREP = {0: "prepare gold gold 30 silver 10", 1: "prepare silver gold 30 silver 10"}
BOB_PREP = {0: "prepare black gold 30 silver 10", 1: "prepare gold gold 25 silver 15"}


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def play(cli, phases: range = range(3), create: bool = True) -> None:  # type: ignore[no-untyped-def]
    """A 2-round game r1; in round 1 alice sends two bets, the second replacing the first.

    Receipts (one per accepted submission): preparation 1 + 1, round 1 alice 2 bets and a
    preparation, bob 1 + 1, round 2 one bet each: 9. Colour commitments: 2 per round: 4.
    """
    if create:
        cli("player", "add", "alice", "--chips", "100")
        cli("player", "add", "bob", "--chips", "100")
        cli("game", "new", "roulette", "--id", "r1", "--players", "alice,bob", "--start-in-past", "--start", iso(T0),
            "--set", "rounds=2", "--set", "remind_before=")
    for phase in phases:
        sent = T0 + phase * DAY + timedelta(hours=1)
        alice = {1: ["bet silver 40", "bet gold 30 silver 10"], 2: ["bet gold 40"]}.get(phase, [])
        bob = ["bet gold 40"] if phase >= 1 else []
        for name, lines, preps in (("alice", alice, ALICE_PREP), ("bob", bob, BOB_PREP)):
            lines = lines + ([preps[phase]] if phase in preps else [])
            cli("submit", "--from", name, "--at", iso(sent), "\\n".join(lines))
        cli("run", "--once", "--now", iso(T0 + (phase + 1) * DAY + timedelta(minutes=5)))


def run_script(script: Path, *args: str) -> subprocess.CompletedProcess:  # type: ignore[type-arg]
    # -I: isolated mode, so the script sees only the standard library, not dealer.
    return subprocess.run([sys.executable, "-I", str(script), *args], capture_output=True,
                          text=True, timeout=60)


def printed_script(cli, tmp_path: Path) -> Path:  # type: ignore[no-untyped-def]
    path = tmp_path / "player" / "fairness_check.py"
    path.parent.mkdir()
    path.write_text(cli("fairness-script").output, encoding="utf-8")
    return path


def test_verify_checks_a_roulettes_receipts_and_commitments(cli) -> None:  # type: ignore[no-untyped-def]
    play(cli, phases=range(1))
    running = cli("verify", "r1")
    assert running.output.splitlines()[-1] == (
        "nothing to check: no seed is revealed yet: seeds are revealed when the game (or Hall "
        "phase) ends; no problems")
    play(cli, phases=range(1, 3), create=False)
    view = json.loads(cli("game", "show", "r1", "--json").output)
    assert view["status"] == "finished"
    done = cli("verify", "r1")
    assert done.output.splitlines()[-1] == (
        "checked 1 seed, 0 draws, 9 receipts and 4 colour commitments: no problems")

    # game show has the full hashes that the round results shorten to 12 hex digits.
    results = [p["body"] for p in map(json.loads, (p.read_text("utf-8") for p in sorted(
        cli.outbox.glob("*.json")))) if p["kind"] == "round_result"]
    assert [r["round"] for r in view["sealed"]] == [1, 2]
    text = cli("game", "show", "r1").output
    for record, body in zip(view["sealed"], results):
        values = [x[k] for x in record["roulettes"] for k in ("commitment", "salt", "prep_receipt")]
        values += [b[k] for b in record["bets"] for k in ("salt", "receipt")]
        assert len(values) == 10
        for value in values:
            assert HEX64.match(value)
            assert value[:12] + "…" in body and value not in body  # the post shortens it
            assert value in text  # game show gives it whole
        assert "the host shows with `dealer game show r1`" in body
    # The replaced bet is not revealed; the one that counted is.
    assert [b["canonical"] for b in view["sealed"][0]["bets"] if b["player"] == "alice"] == [
        "r1, alice, round 1, submission 2, bet gold 30 silver 10 black 0"]


def test_the_printed_script_checks_a_real_roulette(cli, tmp_path) -> None:  # type: ignore[no-untyped-def]
    play(cli)
    script = printed_script(cli, tmp_path)
    view = json.loads(cli("game", "show", "r1", "--json").output)
    seed = view["seeds"][0]
    assert run_script(script, "seed", seed["server_seed"], seed["commitment"]).stdout == "commitment OK\n"
    # Round 1 (the verify test checks every value): bob's black roulette, alice's bet on it.
    x = next(r for r in view["sealed"][0]["roulettes"] if r["preparer"] == "bob")
    done = run_script(script, "commitment", x["salt"], x["colour"], x["commitment"])
    assert done.stdout == "commitment OK\n", done.stderr
    done = run_script(script, "receipt", x["salt"], x["prep_receipt"], x["prep_canonical"])
    assert done.stdout == "receipt OK\n", done.stderr
    b = next(b for b in view["sealed"][0]["bets"] if b["player"] == "alice")
    assert run_script(script, "receipt", b["salt"], b["receipt"], b["canonical"]).stdout == "receipt OK\n"
    wrong = run_script(script, "commitment", x["salt"], "silver" if x["colour"] == "gold" else "gold",
                       x["commitment"])
    assert (wrong.returncode, wrong.stdout) == (1, "commitment MISMATCH\n")
    # alice's replaced first bet of round 1: its salt comes from the revealed seed, and it
    # opens the receipt of her first confirmation.
    first = [json.loads(p.read_text("utf-8")) for p in sorted(cli.outbox.glob("*.json"))]
    first = [p["body"] for p in first if p["recipient"] == "alice" and "bet no. 1 in round 1" in p["body"]][0]
    receipt = re.search(r"^Receipt: ([0-9a-f]{64})$", first, re.M).group(1)  # type: ignore[union-attr]
    salt = run_script(script, "salt", seed["server_seed"], "alice:round-1:bet:1").stdout.strip()
    done = run_script(script, "receipt", salt, receipt,
                      "r1, alice, round 1, submission 1, bet gold 0 silver 40 black 0")
    assert done.stdout == "receipt OK\n", done.stderr


def tamper(database_url: str, event_type: str, change) -> None:  # type: ignore[no-untyped-def]
    """Rewrite the first event of ``event_type`` for which ``change(data)`` returns True."""
    engine = make_engine(database_url)
    with session_factory(engine).begin() as session:
        for event in session.scalars(select(Event).where(Event.type == event_type).order_by(Event.seq)):
            data = json.loads(json.dumps(event.data))
            if change(data):
                event.data = data
                break
        else:
            raise AssertionError(f"no {event_type} event to tamper with")
    engine.dispose()


def test_verify_reports_tampered_receipts_colours_and_commitments(cli, database_url) -> None:  # type: ignore[no-untyped-def]
    play(cli)

    def forge(data):  # type: ignore[no-untyped-def]
        if (data["player"], data["phase"], data["number"]) != ("bob", "round-2", 1):
            return False
        data["receipt"] = "0" * 64
        return True

    def recolour(data):  # type: ignore[no-untyped-def]
        roulette = next(r for r in data["roulettes"] if r["preparer"] == "bob")
        roulette["colour"] = "gold"  # bob's round-1 roulette was black
        return True

    def republish(data):  # type: ignore[no-untyped-def]
        if data["phase"] != "round-2":
            return False
        data["commitments"]["alice"] = "1" * 64
        return True

    tamper(database_url, "submission.accepted", forge)
    tamper(database_url, "round.resolved", recolour)
    tamper(database_url, "phase.started", republish)
    done = cli("verify", "r1", ok=False)
    assert done.exit_code == 1
    assert done.output.splitlines() == [
        # round 1: the winning colour changed after the commitment
        "MISMATCH: round 1: bob's roulette: the revealed colour or layout is not the one "
        "sealed in bob's preparation no. 1 in the preparation phase",
        "MISMATCH: round 1: bob's roulette: the commitment does not open to gold with the salt "
        "the seed gives",
        # round 2: a forged receipt, found twice: as a receipt, and as the bet revealed
        "MISMATCH: bob's bet no. 1 in round 2: the receipt does not seal its text with the "
        "salt the seed gives",
        "MISMATCH: round 2: alice's roulette: the commitment differs from the one published "
        "when the round began",
        "MISMATCH: round 2: the bet revealed for bob is not its last accepted bet (SR-6)",
        "checked 1 seed, 0 draws, 9 receipts and 4 colour commitments: 5 problems",
    ]


def test_the_printed_script_recomputes_a_real_games_draws(cli, harness, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A Gilded Hall phase with a client seed: every draw recorded in the store is what the
    script computes from the revealed seed, the client seeds before it and its counter."""
    def setup(session):  # type: ignore[no-untyped-def]
        add_player(session, "alice", T0)
        add_player(session, "bob", T0)
        create_game(session, "hall", "h1", T0)
    harness.admin(setup)
    at = T0 + timedelta(hours=1)
    harness.send("alice", "join", at, channel="#game-actions")
    harness.send("bob", "join", at + timedelta(minutes=1), channel="#game-actions")
    harness.send("alice", "gift bob", at + timedelta(minutes=2), channel="#game-actions")
    harness.send("bob", "seed bob was here", at + timedelta(minutes=3))
    harness.send("bob", "gift alice", at + timedelta(minutes=4), channel="#game-actions")
    harness.run(at + timedelta(minutes=5))
    harness.run(T0 + DAY + timedelta(minutes=1))  # phase 1 ends: its seed is revealed
    seed = harness.admin(lambda s: game_view(s, "h1"))["seeds"][0]
    draws = harness.admin(lambda s: [(d.counter, d.n, d.result, d.client) for d in s.scalars(
        select(Draw).where(Draw.game_id == "h1", Draw.epoch == 0).order_by(Draw.counter))])
    clients = {client_hash(seed["client_seeds"][:k]): seed["client_seeds"][:k]
               for k in range(len(seed["client_seeds"]) + 1)}
    assert len(draws) >= 4 and len({d[3] for d in draws}) == 2  # before and after the seed
    script = printed_script(cli, tmp_path)
    for client in dict.fromkeys(d[3] for d in draws):  # one run per client-seed prefix
        run = [d for d in draws if d[3] == client]
        seeds = [a for text in clients[client] for a in ("--client-seed", text)]
        done = run_script(script, "draws", seed["server_seed"], "--commitment", seed["commitment"],
                          *seeds, "--counter", str(run[0][0]), *[str(d[1]) for d in run])
        # Counters follow on (a draw rejected and redrawn would skip one: none is here).
        assert [d[0] for d in run] == list(range(run[0][0], run[0][0] + len(run)))
        assert done.stdout.splitlines() == ["commitment OK"] + [
            f"counter {counter}: {result} of {n}" for counter, n, result, _ in run]


def test_posts_link_the_hosts_fairness_page(make_harness, cli, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    url = "https://casino.example.org/fair_play.html"
    try:
        # The daemon: a reply rendered while it handles a message.
        harness = make_harness(fairness_url=url)
        harness.admin(lambda s: add_player(s, "carol", T0))
        harness.send("carol", "help", T0)
        harness.run(T0 + timedelta(minutes=1))
        assert f"the procedure and its script are at {url})" in harness.pms("carol")[0]["body"]
        # The CLI: a confirmation rendered by `dealer run --once`, the setting from the
        # environment.
        monkeypatch.setenv("DEALER_FAIRNESS_URL", url)
        play(cli, phases=range(1))
        confirmation = [p for p in map(json.loads, (f.read_text("utf-8") for f in sorted(
            cli.outbox.glob("*.json")))) if p["kind"] == "confirmation"][0]
        assert f"How to check: the procedure and its script are at {url}." in confirmation["body"]
    finally:
        set_fairness_url(None)


def test_without_a_url_posts_say_the_host_has_the_procedure(cli) -> None:  # type: ignore[no-untyped-def]
    play(cli, phases=range(1))
    bodies = [json.loads(p.read_text("utf-8"))["body"] for p in sorted(cli.outbox.glob("*.json"))]
    assert any("How to check: the host has the procedure and its script and can send them to "
               "you (the host prints the script with `dealer fairness-script`)." in b for b in bodies)
    assert not any("docs/FAIRNESS.md" in b for b in bodies)
