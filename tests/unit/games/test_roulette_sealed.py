"""Sealed submissions: the players' check script and docs/FAIRNESS.md, run against a real game.

The script is the package's own ``fairness_check.py`` (what ``dealer fairness-script``
prints and the doc publishes), and the example is taken from the doc itself, so neither
can drift from what the dealer computes.
"""

from __future__ import annotations

import contextlib
import json
import io
import re
from pathlib import Path

from dealer.games.roulette import sealed
from dealer.games.roulette.testing import SEED, Shell

ROOT = Path(__file__).resolve().parents[3]
DOC = ROOT / "docs" / "FAIRNESS.md"
SCRIPT = ROOT / "dealer" / "fairness_check.py"
BLACK_PREP = "prepare black gold 30 silver 10"
GOLD_PREP = "prepare gold gold 25 silver 15"


def doc_blocks() -> list[str]:
    """The Python code blocks of the "Sealed submissions" section, in order."""
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## Sealed submissions"):]
    following = section.find("\n## ", 1)
    section = section if following < 0 else section[:following]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


def procedure() -> dict:
    """Load the players' script and return its functions."""
    namespace: dict = {"__name__": "fairness_check"}
    exec(compile(SCRIPT.read_text(encoding="utf-8"), "fairness_check.py", "exec"), namespace)  # noqa: S102
    return namespace


def three_rounds() -> Shell:
    """A game whose round 3 matches the doc's example: alice's second bet in round 3 is
    ``bet gold 30 silver 10``, on bob's black roulette."""
    sh = Shell.create(rounds=3)
    sh.play_phase(alice=GOLD_PREP, bob=GOLD_PREP)
    sh.play_phase(alice=["bet gold 40", GOLD_PREP], bob=["bet gold 40", GOLD_PREP])
    sh.play_phase(alice=["bet gold 40", GOLD_PREP], bob=["bet gold 40", BLACK_PREP])
    sh.play_phase(alice=["bet silver 40", "bet gold 30 silver 10"], bob="bet gold 40")
    assert sh.state.status == "finished"
    return sh


def test_the_doc_procedure_checks_receipts_commitments_and_salts_of_a_game():
    sh = three_rounds()
    check = procedure()
    opening = sh.posts("opening")[0].draft.context
    round3_start = sh.posts("phase_start")[-1]
    commitment = next(r["commitment"] for r in round3_start.draft.context["roulettes"]
                      if r["preparer"] == "bob")
    result = sh.posts("round_result")[-1]
    bob_roulette = next(r for r in result.draft.context["roulettes"] if r["preparer"] == "bob")
    alice_bet = next(b for b in result.draft.context["bets"] if b["player"] == "alice")
    first, second = sh.replies("alice", "confirmation")[-2:]
    receipt = second.draft.context["receipt"]

    # The values a player copies are in the posts and PMs themselves; the round result
    # shortens its many hashes (the full values are in the game's fairness record).
    assert commitment in round3_start.body and receipt in second.body
    for salt in (alice_bet["salt"], bob_roulette["salt"]):
        assert salt[:12] + "…" in result.body and salt not in result.body
    assert SEED in sh.posts("final_result")[0].body

    text = check["sealed_text"]("g1", "alice", "round 3", 2, check["bet_command"](30, 10, 0))
    assert text == alice_bet["canonical"] == second.draft.context["canonical"]
    assert check["check_receipt"](alice_bet["salt"], text, receipt)
    assert check["check_commitment"](bob_roulette["salt"], "black", commitment)
    assert not check["check_commitment"](bob_roulette["salt"], "gold", commitment)
    assert check["sha256"](SEED) == opening["commitment"]
    assert check["salt_from_seed"](SEED, "alice", "round-3", "bet", 2) == alice_bet["salt"]
    # A replaced submission's salt is never posted, but the revealed seed gives it.
    replaced_salt = check["salt_from_seed"](SEED, "alice", "round-3", "bet", 1)
    replaced_text = check["sealed_text"]("g1", "alice", "round 3", 1, check["bet_command"](0, 40, 0))
    assert check["check_receipt"](replaced_salt, replaced_text, first.draft.context["receipt"])
    # The preparer checks its own preparation with the commitment's salt (I-18).
    bob_prep = sh.replies("bob", "confirmation")[-2]
    prep_text = check["sealed_text"]("g1", "bob", "round 2", 1,
                                     check["prepare_command"]("black", 30, 10))
    assert prep_text == bob_roulette["prep_canonical"]
    assert check["check_receipt"](bob_roulette["salt"], prep_text, bob_prep.draft.context["receipt"])


def test_the_doc_example_prints_true_for_every_check_with_real_values():
    sh = three_rounds()
    result = sh.posts("round_result")[-1].draft.context
    bob_roulette = next(r for r in result["roulettes"] if r["preparer"] == "bob")
    values = {
        '"SALT"': next(b["salt"] for b in result["bets"] if b["player"] == "alice"),
        '"RECEIPT"': sh.replies("alice", "confirmation")[-1].draft.context["receipt"],
        '"SALT OF THE PREPARATION"': bob_roulette["salt"],
        '"COMMITMENT"': bob_roulette["commitment"],
        '"SERVER SEED"': SEED,
        '"COMMITMENT FROM THE OPENING POST"': sh.posts("opening")[0].draft.context["commitment"],
    }
    example = doc_blocks()[0].replace("from fairness_check import *\n", "")
    for placeholder, value in values.items():
        assert placeholder in example
        example = example.replace(placeholder, f'"{value}"')
    namespace = procedure()
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(example, "example.py", "exec"), namespace)  # noqa: S102
    assert out.getvalue().split() == ["True"] * 4


def test_the_module_and_the_doc_agree_on_formats():
    check = procedure()
    salt = "ab" * 32
    text = sealed.canonical("g-7", "Zoë", "round-10", 3, sealed.command_text("prepare", 35, 5, 0, "silver"))
    assert text == check["sealed_text"]("g-7", "Zoë", "round 10", 3,
                                        check["prepare_command"]("silver", 35, 5))
    assert check["check_receipt"](salt, text, sealed.receipt(salt, text))
    assert check["check_commitment"](salt, "silver", sealed.colour_commitment(salt, "silver"))


def test_check_sealed_counts_every_receipt_and_commitment_of_a_finished_game():
    sh = three_rounds()
    found = sealed.check_sealed("g1", SEED, sh.events)
    # Receipts: preparation phase 1 + 1; round 1 and round 2 a bet and a preparation each
    # (2 + 2 per round); round 3 alice's two bets and bob's one: 2 + 4 + 4 + 3 = 13.
    # Commitments: two roulettes in each of 3 rounds.
    assert (found.receipts, found.commitments, found.problems) == (13, 6, [])
    assert [r["round"] for r in sealed.fairness_record(sh.events)] == [1, 2, 3]
    # With another seed nothing opens: each receipt; each roulette's commitment and its
    # revealed salt; each revealed bet's salt.
    wrong = sealed.check_sealed("g1", "0" * 64, sh.events)
    assert len(wrong.problems) == 13 + 2 * 6 + 6
    assert wrong.problems[0] == ("alice's preparation no. 1 in the preparation phase: the "
                                 "receipt does not seal its text with the salt the seed gives")


def test_check_sealed_finds_a_bet_scored_other_than_the_last_one():
    sh = three_rounds()
    events = json.loads(json.dumps(sh.events))
    resolved = [data for kind, data in events if kind == "round.resolved"][-1]
    scored = next(r for r in resolved["roulettes"] if r["bettor"] == "alice")
    scored["bet"] = {"gold": 0, "silver": 40, "black": 0}  # her first, replaced bet (SR-6)
    assert sealed.check_sealed("g1", SEED, events).problems == [
        "round 3: bob's roulette: the bet scored is not alice's last accepted bet (SR-6)"]
