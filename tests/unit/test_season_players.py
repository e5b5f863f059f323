"""The season's scripted players (faults/players) drive each game to its milestones in memory."""

from __future__ import annotations

import random
import sys
from collections import Counter
from datetime import timedelta
from pathlib import Path

import pytest

from dealer.cards import CATALOGUE
from dealer.games import rules_for
from dealer.testing import T0, RulesShell

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "faults"))

from players.base import (  # noqa: E402
    DILIGENT, SILENT, SLOPPY, Act, ShellView, Temperament, cast, temperaments,
)

MARKUP = set("*_`~<>@[]|#")


def kept_their_word(view: ShellView) -> None:
    """Every line meant valid, malformed or refused became exactly that."""
    wrong = [(a.sender, a.body, a.expect, got) for a, got in view.outcomes
             if a.expect != "any" and got != a.expect]
    assert not wrong, wrong


def roulette(seed: int, temper: dict[str, Temperament]) -> ShellView:
    """A roulette of hour-long phases between the two players of ``temper``, played out."""
    rng = random.Random(seed)
    shell = RulesShell(rules_for("roulette"), seed=f"{seed:02x}" * 32)
    for name in temper:
        shell.grant(name, "chips", 100, wallet=True)
    shell.open(list(temper), {"round_length": "1h", "preparation_length": "1h"}, start=T0)
    view = ShellView(shell, T0)
    players = cast("roulette", list(temper), rng, temper)
    view.play_until(players, rng, timedelta(minutes=20), view.finished, turns=40)
    return view


def test_roulette_is_played_to_its_end() -> None:
    view = roulette(1, {"ann": DILIGENT, "bo": SLOPPY})
    summary = view.shell.summary()
    assert summary.status == "finished"
    assert view.state().phase == view.state().last_round
    assert summary.winner in ("ann", "bo")
    assert all(summary.scores[name] > 0 for name in ("ann", "bo"))
    assert view.shell.totals() == {"chips": 0}
    kept_their_word(view)
    said = Counter((a.sender, a.body.split()[0]) for a, got in view.outcomes if got == "valid")
    assert said[("ann", "prepare")] == 10  # SR-3: in every phase one is due
    assert 7 <= said[("bo", "bet")] <= 10
    # bo's slips are sent again at its next turn, three a phase: few phases are missed, and
    # ann bets in every round bo prepared for (SR-10: none on a missing roulette)
    assert 7 <= said[("bo", "prepare")] < 10
    assert said[("ann", "bet")] == said[("bo", "prepare")]


def test_a_silent_roulette_player_stops_and_loses() -> None:
    view = roulette(2, {"ann": DILIGENT, "bo": SILENT})
    assert view.shell.summary().winner == "ann"
    bo = [a for a, _ in view.outcomes if a.sender == "bo"]
    ann = [a for a, _ in view.outcomes if a.sender == "ann"]
    assert 0 < len(bo) <= 3 < len(ann)
    assert view.shell.summary().scores["ann"] > 3 * view.shell.summary().scores["bo"]


def test_sloppy_share_is_the_temperament_s() -> None:
    outcomes: Counter[str] = Counter()
    for seed in range(6):
        view = roulette(seed, {"cy": SLOPPY, "di": SLOPPY})
        kept_their_word(view)
        outcomes.update(got for _, got in view.outcomes)
    lines = sum(outcomes.values())
    assert lines > 200
    # SLOPPY: 20 % malformed, 20 % refused of the lines sent (each slip is sent again later)
    assert 0.12 < outcomes["malformed"] / lines < 0.28
    assert 0.12 < outcomes["refused"] / lines < 0.28
    diligent = roulette(0, {"cy": DILIGENT, "di": DILIGENT})
    assert {got for _, got in diligent.outcomes} == {"valid"}


def test_same_seed_same_acts() -> None:
    def acts(seed: int) -> list[Act]:
        return [a for a, _ in roulette(seed, {"ann": SLOPPY, "bo": SLOPPY}).outcomes]

    assert acts(4) == acts(4)
    assert acts(4) != acts(5)


def races(seed: int, names: list[str], with_cards: int) -> ShellView:
    """A table where the first ``with_cards`` players own a card, run to its end."""
    rng = random.Random(seed)
    shell = RulesShell(rules_for("races"), seed=f"{seed:02x}" * 32)
    for i, name in enumerate(names):
        shell.grant(name, "chips", 50, wallet=True)
        if i < with_cards:
            shell.grant(name, CATALOGUE[i * 7].item(), 1, wallet=True)
    shell.open([], {}, start=T0)
    view = ShellView(shell, T0)
    players = cast("races", names, rng, temperaments(names, rng, [("diligent", 0.7),
                                                                 ("sloppy", 0.3)]))
    view.play_until(players, rng, timedelta(minutes=5), view.finished, turns=200)
    return view


@pytest.mark.parametrize("seed", [3, 11])
def test_a_race_is_run_and_paid(seed: int) -> None:
    names = [f"rider{i}" for i in range(7)]
    view = races(seed, names, with_cards=4)
    state = view.state()
    assert state.outcome == "raced" and state.winners
    assert {h.owner for h in state.horses} == set(names[:4])
    assert {b.bettor for b in state.bets} | set(state.passed) == set(names)
    assert max(h.position for h in state.horses) > state.length
    assert view.shell.totals()["chips"] == 0
    kept_their_word(view)


def test_horse_names_with_markup_show_as_text() -> None:
    view = races(3, [f"rider{i}" for i in range(7)], with_cards=4)
    marked = [h.name for h in view.state().horses if MARKUP & set(h.name)]
    assert marked, "the field has a name with markup to check"
    bodies = [post.body for post in view.posts()]
    for name in marked:
        assert not any(name in body for body in bodies), name
