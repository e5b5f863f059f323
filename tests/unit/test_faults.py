"""Fault injection (dealer/shell/faults.py): the named points exist where they say, and
``point@N`` kills the process the N-th time the point is reached."""

from __future__ import annotations

import ast
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from dealer.shell.faults import POINTS

PACKAGE = Path(__file__).resolve().parents[2] / "dealer"


def fault_calls() -> list[str]:
    """The point named by every ``fault("...")`` call in dealer/."""
    found = []
    for file in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "fault":
                assert isinstance(node.args[0], ast.Constant), f"{file}: a point is a literal"
                found.append(node.args[0].value)
    return found


def test_every_named_point_is_called_once_and_every_call_is_named() -> None:
    calls = fault_calls()
    assert sorted(calls) == sorted(POINTS)


def _run(fault: str | None) -> subprocess.CompletedProcess[str]:
    code = (
        "from dealer.shell.faults import fault\n"
        "for n in range(1, 4):\n"
        "    fault('after-send')\n"
        "    print(n, flush=True)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "DEALER_FAULT"}
    if fault:
        env["DEALER_FAULT"] = fault
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize(
    "fault, printed, killed",
    [
        (None, "1 2 3", False),
        ("after-delivered", "1 2 3", False),  # another point: nothing happens
        ("after-send", "", True),  # the first time
        ("after-send@1", "", True),
        ("after-send@3", "1 2", True),  # the third time: two passes got through
    ],
)
def test_a_fault_kills_at_its_point_and_hit(fault: str | None, printed: str, killed: bool) -> None:
    result = _run(fault)
    assert result.stdout.split() == printed.split()
    assert result.returncode == (-signal.SIGKILL if killed else 0)


def test_the_send_log_tells_a_resend_from_a_double_by_what_became_of_each_batch() -> None:
    """faults/faultlib.py: a post may be sent in any number of batches that did not commit
    and in at most one that did: each send's batch ends with its sender's next mark
    (committed, or rolled back under a cut connection), or none when the sender was killed
    first. A cut nearby excuses nothing: a batch committed before or after it sent its posts
    for good."""
    sys.path.insert(0, str(PACKAGE.parent / "faults"))
    try:
        from faultlib import CUT, resends
    finally:
        sys.path.pop(0)
    lines = [
        ["1", "10", "a"], ["1", "11", "b"], [CUT, "-", "-"], ["2", "10", "a"],
        ["1", "-", "rolled back"], ["2", "11", "b"], ["2", "-", "committed"],  # 1's rolled back
        ["3", "12", "c"], ["3", "13", "d"], ["1", "12", "c"],  # 3 killed before its commit
        ["1", "-", "committed"], ["1", "13", "d"],  # 3's post again, in 1's next batch
        ["2", "14", "e"], [CUT, "-", "-"], ["2", "-", "committed"],
        ["1", "14", "e"],  # 2's batch committed, a cut or not: a double
        ["2", "15", "f"], ["1", "15", "f"], ["2", "-", "committed"],  # 2 committed after: a double
        ["1", "-", "committed"],
        ["2", "16", "g"], ["2", "-", "rolled back"], ["1", "16", "g"], ["1", "-", "committed"],
        ["2", "16", "g"],  # a third send, after a committed one: a double
        ["4", "17", "h"], ["1", "17", "h"],  # 4 stopped cleanly with no mark: as committed
    ]
    sends = resends(lines, dead={"3"})
    assert sends.sends == 17
    assert (sends.after_rollback, sends.after_kill) == (3, 2)
    assert sends.doubles == ["e", "f", "g", "h"]
    assert sends.keys == set("abcdefgh")


def test_a_batch_sent_on_after_its_connection_was_cut_is_no_double() -> None:
    """faults/faultlib.py: replica 1 claims a batch (a, b); the cut releases its locks and
    replica 2 claims and sends them; 1, learning of the cut only at its next statement, sends
    the rest of its doomed batch after 2 did, then rolls back: each such repeat is a re-send
    after a cut, whichever replica sent first. A post sent in two batches that both
    committed is a double (1 claimed d after the cut; e twice by one replica), and a kill
    excuses only a dead life's unmarked send. (Seen in the season on Postgres with two
    replicas.)"""
    sys.path.insert(0, str(PACKAGE.parent / "faults"))
    try:
        from faultlib import CUT, resends
    finally:
        sys.path.pop(0)
    lines = [["2", "-", "committed"], ["1", "-", "committed"],
             ["1", "20", "a"], [CUT, "-", "-"],  # 1's batch under way when the cut comes
             ["2", "20", "a"], ["2", "-", "committed"],  # 2 takes a over (1 sent first)
             ["2", "21", "b"], ["1", "21", "b"],  # 1 sends on: its batch began before the cut
             ["1", "-", "rolled back"], ["1", "-", "committed"],  # 1 on a new connection
             ["2", "23", "d"], ["1", "23", "d"],  # both batches committed: a double
             ["2", "24", "e"], ["2", "24", "e"],  # the same replica twice: a double
             ["3", "-", "committed"], ["3", "25", "f"], ["2", "25", "f"]]  # 3 died before marking f
    sends = resends(lines, dead={"3"})
    assert (sends.after_kill, sends.after_rollback, sends.doubles) == (1, 2, ["d", "e"])


def test_the_ledger_audit_counts_the_chips_handed_out_in_the_global_wallets(tmp_path: Path) -> None:
    """faults/faultlib.py: chips a Hall cycle mints into its own inventories (GH-1) are not
    the wallets' chips handed out at set-up; the audit compares the global wallets only."""
    from datetime import datetime, timezone

    from dealer.shell.admin import add_player, create_game, grant
    from dealer.store.db import make_engine, session_factory

    sys.path.insert(0, str(PACKAGE.parent / "faults"))
    try:
        import faultlib
    finally:
        sys.path.pop(0)
    now = datetime(2026, 12, 1, 10, tzinfo=timezone.utc)
    with faultlib.scratch_store(None, tmp_path, "ledger_audit") as url:
        engine = make_engine(url)
        with session_factory(engine).begin() as session:
            add_player(session, "ann", now, chips=100)
            create_game(session, "hall", "h1", now, players=["ann"], start=now)
        with session_factory(engine).begin() as session:
            grant(session, "ann", "chips", 3, now, game_id="h1")  # into ann's h1 inventory
        figures = faultlib.Figures()
        faultlib._audit_ledger(engine, faultlib.Table([], 100), figures)
        assert figures.problems == []
        faultlib._audit_ledger(engine, faultlib.Table([], 103), figures)
        assert figures.problems == ["ledger: 100 chips held, 103 handed out"]
        engine.dispose()


def test_a_season_whose_hall_did_nothing_fails_as_vacuous(tmp_path: Path) -> None:
    """faults/season_books.py: with the Hall on (the default), a season fails unless a cycle
    ended, a match finished, a proposal was resolved and an election held, however well the
    rest went; with the Hall off, the rest suffices."""
    sys.path.insert(0, str(PACKAGE.parent / "faults"))
    try:
        import season_books
        import seasonlib
    finally:
        sys.path.pop(0)
    counts = {"rounds played": 9, "roulette games finished": 3, "races run": 2,
              "races tables opened": 2, "admin paused": 1, "admin resumed": 1, "admin shift": 1,
              "sent dir": 5, "sent webhook": 5, "sent discord": 5, "posts on Discord": 5}
    faults = {"downtime": "20.0 s", "publisher outage": "4.0 s", "connections cut": 0}
    verdicts = []
    for hall in (True, False):
        season = seasonlib.Season(database_url="sqlite://", root=tmp_path, hall=hall, email=False)
        figures = seasonlib.Figures(season, backend="sqlite", counts=dict(counts), faults=dict(faults))
        figures.kills.kills_random = 3
        season_books._vacuity(figures)
        verdicts.append(figures.problems)
    [vacuous] = verdicts[0]
    assert vacuous.startswith("vacuous season: ")
    for milestone in ("hall cycles ended", "matches finished", "proposals resolved", "elections held"):
        assert f"{milestone} (at least 1)" in vacuous
    assert verdicts[1] == []
