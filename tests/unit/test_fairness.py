"""Provably fair draws (RULES GH-40): dealer.fairness and the check published in FAIRNESS.md.

The statistical tests use fixed seeds, so they are deterministic: they either always pass
or always fail, never flake. Their thresholds are the 0.1 % critical values of the
chi-square distribution: a fair source exceeds them for only 1 seed in 1000, while a
visibly biased mapping (a wrong modulo, a dropped row, a 5 % chance read as 10 %) exceeds
them by far at these sample sizes.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import pytest

from dealer import fairness
from dealer.cards import CATALOGUE
from dealer.fairness import FairSource, client_hash, commitment, raw_value, uniform, verify_draw
from dealer.games.hall.economy import draw_card
from dealer.games.hall.items import card_label

SEED = "c0ffee" * 10 + "abcd"
ROOT = Path(__file__).resolve().parents[2]


# -- the formula ---------------------------------------------------------------------------


def test_commitment_and_client_hash_are_plain_sha256():
    assert commitment(SEED) == hashlib.sha256(SEED.encode()).hexdigest()
    assert client_hash([]) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    assert client_hash(["alice: a", "bob: b"]) == hashlib.sha256(b"alice: a\nbob: b").hexdigest()


def test_raw_value_is_the_hmac_of_client_and_counter():
    client = client_hash(["alice: hello"])
    digest = hmac.new(SEED.encode(), f"{client}:7".encode(), hashlib.sha256).hexdigest()
    assert raw_value(SEED, client, 7) == int(digest, 16)


def test_draws_are_reproducible_from_the_seeds():
    def run(source: FairSource) -> list:
        return [source.below(54), source.between(5, 16), source.chance(5, 100),
                source.choice("abc"), source.shuffled(range(6))]

    first, second = FairSource(SEED), FairSource(SEED)
    first.add_client_seed("alice: x")
    second.add_client_seed("alice: x")
    assert run(first) == run(second)
    assert first.draws == second.draws and first.counter == second.counter
    # Another client seed gives other draws (2**64 outcomes: a coincidence is impossible).
    other, same = FairSource(SEED, ["alice: y"]), FairSource(SEED, ["alice: x"])
    assert other.below(2**64) != same.below(2**64)


def test_each_draw_is_the_formula_at_its_counter():
    source = FairSource(SEED, ["bob: seed"])
    results = [source.below(54, "card") for _ in range(20)]
    client = client_hash(["bob: seed"])
    counter = 0
    for draw, result in zip(source.draws, results):
        assert draw.counter == counter and draw.client == client and draw.n == 54
        expected, counter = uniform(SEED, client, counter, 54)
        assert draw.result == result == expected


def test_client_seed_added_midway_changes_only_later_draws():
    source = FairSource(SEED)
    source.below(1000)
    source.add_client_seed("carol: late")
    source.below(1000)
    early, late = source.draws
    assert early.client == client_hash([]) and late.client == client_hash(["carol: late"])
    assert verify_draw(SEED, early) and verify_draw(SEED, late)


def test_rotation_retires_the_seed_and_restarts_the_counter():
    source = FairSource(SEED, ["a: 1"], seed_factory=lambda: "f" * 64)
    source.below(10)
    assert source.rotate() == SEED
    assert (source.server_seed, source.counter, source.epoch, source.client_seeds) == (
        "f" * 64, 0, 1, [])
    source.below(10)
    assert [d.epoch for d in source.draws] == [0, 1]
    assert source.retired[0][:2] == (0, SEED)


# -- tampering -----------------------------------------------------------------------------


def test_a_tampered_draw_is_detected():
    source = FairSource(SEED, ["alice: x"])
    source.below(54)
    source.below(54)
    draw = source.draws[1]
    assert verify_draw(SEED, draw)
    assert not verify_draw(SEED, replace(draw, result=(draw.result + 1) % 54))
    assert not verify_draw("0" * 64, draw)  # another seed than the committed one
    assert not verify_draw(SEED, replace(draw, client=client_hash([])))  # client seeds dropped
    moved = replace(draw, counter=draw.counter + 1)
    assert verify_draw(SEED, moved) == (uniform(SEED, draw.client, draw.counter + 1, 54)[0]
                                        == draw.result)


def test_a_revealed_seed_must_match_its_commitment():
    published = commitment(SEED)
    assert commitment(SEED) == published and commitment(SEED[:-1] + "e") != published


# -- rejection sampling at the edges -------------------------------------------------------


def scripted(monkeypatch, values):
    """Make raw_value return ``values`` in turn (and record the counters asked for)."""
    asked = []
    feed = iter(values)

    def fake(server_seed, client, counter):
        asked.append(counter)
        return next(feed)

    monkeypatch.setattr(fairness, "raw_value", fake)
    return asked


def test_the_top_incomplete_block_is_rejected(monkeypatch):
    # n = 3: 2**256 = 3 * q + 1, so limit = 3 * q = 2**256 - 1 and only the single largest
    # value (2**256 - 1) is rejected; limit - 1 is accepted as (limit - 1) % 3 = 2.
    limit = (2**256 // 3) * 3
    assert limit == 2**256 - 1
    asked = scripted(monkeypatch, [2**256 - 1, limit - 1])
    assert uniform(SEED, "c", 10, 3) == (2, 12)  # counter 10 rejected, 11 accepted
    assert asked == [10, 11]


def test_a_value_just_below_the_limit_is_kept(monkeypatch):
    n = 2**255 + 1  # limit = 1 * n, so nearly half of all values are rejected
    asked = scripted(monkeypatch, [n - 1])
    assert uniform(SEED, "c", 0, n) == (n - 1, 1) and asked == [0]
    asked = scripted(monkeypatch, [n, 2**256 - 1, 0])
    assert uniform(SEED, "c", 0, n) == (0, 3) and asked == [0, 1, 2]


def test_rejections_really_happen_and_skip_counters():
    # With n = 2**255 + 1 about half the counters are rejected (value >= n). Find one with
    # the real HMAC and check that the draw moved on to the next counter.
    n = 2**255 + 1
    client = client_hash([])
    rejected = next(c for c in range(64) if raw_value(SEED, client, c) >= n)
    result, after = uniform(SEED, client, rejected, n)
    assert after >= rejected + 2
    assert result == raw_value(SEED, client, after - 1) % n


def test_degenerate_sizes():
    source = FairSource(SEED)
    assert [source.below(1) for _ in range(3)] == [0, 0, 0] and source.counter == 3
    assert source.between(7, 7) == 7
    assert not any(source.chance(0, 100) for _ in range(50))
    assert all(source.chance(100, 100) for _ in range(50))
    value = raw_value(SEED, client_hash([]), source.counter)
    assert source.below(2**256) == value  # limit = 2**256: nothing is ever rejected
    with pytest.raises(ValueError):
        source.below(0)


def test_shuffle_is_fisher_yates_over_fair_draws():
    items = list(range(10))
    shuffled = FairSource(SEED).shuffled(items)
    assert sorted(shuffled) == items
    replay = FairSource(SEED)
    expected = list(items)
    for i in range(len(expected) - 1, 0, -1):
        j = replay.below(i + 1)
        expected[i], expected[j] = expected[j], expected[i]
    assert shuffled == expected


# -- statistics with fixed seeds -----------------------------------------------------------


def chi_square(observed: Counter, expected: dict) -> float:
    """Pearson's statistic: the sum over cells of (observed - expected)**2 / expected."""
    return sum((observed.get(cell, 0) - e) ** 2 / e for cell, e in expected.items())


# 0.1 % critical values. 53 degrees of freedom: the Wilson-Hilferty approximation
# 53 * (1 - 2/(9*53) + 3.090 * sqrt(2/(9*53)))**3 = 53 * 1.19589**3 = 90.65 (tables: 90.57).
# 1 degree of freedom: 3.2905**2 = 10.83.
CRITICAL_53 = 90.6
CRITICAL_1 = 10.83


def test_chi_square_statistic_by_hand():
    # cells expect 10 each; observed 12, 8, 10: (4 + 4 + 0) / 10 = 0.8
    assert chi_square(Counter({"a": 12, "b": 8, "c": 10}), {"a": 10, "b": 10, "c": 10}) == 0.8


def test_the_54_catalogue_rows_are_uniform():
    source = FairSource("1" * 64, ["uniformity: rows"])
    draws = 54 * 200  # 10 800 cards, 200 expected per row
    rows = Counter(draw_card(source, 5, "test")[5:].removesuffix(":holo") for _ in range(draws))
    expected = {card.code: draws / 54 for card in CATALOGUE}
    assert set(rows) == set(expected)  # every row occurs, nothing else does
    assert chi_square(rows, expected) < CRITICAL_53  # with this seed: 39.7


def test_the_chi_square_check_would_catch_a_bias():
    # The same draws read with a wrong mapping (row % 53: the Black Joker never comes and
    # the Ace of Hearts comes twice as often): (0 - 200)**2 / 200 = 200 for the joker plus
    # about (400 - 200)**2 / 200 = 200 for the ace, so about 400, far above 90.6.
    source = FairSource("1" * 64, ["uniformity: rows"])
    rows = Counter(CATALOGUE[source.below(54) % 53].code for _ in range(54 * 200))
    assert chi_square(rows, {card.code: 200 for card in CATALOGUE}) > 4 * CRITICAL_53


@pytest.mark.parametrize("percent, seed", [(5, "2" * 64), (10, "3" * 64)])
def test_holographic_rates(percent, seed):
    source = FairSource(seed)
    draws = 20_000  # expected holo: 5 % -> 1000, 10 % -> 2000
    holo = sum(draw_card(source, percent, "test").endswith(":holo") for _ in range(draws))
    expected_holo = draws * percent / 100
    statistic = chi_square(Counter({"holo": holo, "plain": draws - holo}),
                           {"holo": expected_holo, "plain": draws - expected_holo})
    assert statistic < CRITICAL_1  # with these seeds: 1020 holo -> 0.42; 2043 -> 1.03
    # ... and the other rate would be rejected: 5 % draws do not look like 10 % and back.
    other = expected_holo * (2 if percent == 5 else 0.5)
    wrong = chi_square(Counter({"holo": holo, "plain": draws - holo}),
                       {"holo": other, "plain": draws - other})
    assert wrong > 10 * CRITICAL_1


def test_holographic_by_rule_takes_one_draw():
    source = FairSource(SEED)
    item = draw_card(source, None, "legendary extra")
    assert item.endswith(":holo") and source.counter == 1
    assert [d.n for d in source.draws] == [54]


# -- the published check (dealer fairness-script, docs/FAIRNESS.md) -------------------------

SCRIPT = ROOT / "dealer" / "fairness_check.py"


@pytest.fixture(scope="module")
def fairdraw(tmp_path_factory) -> Path:
    """The players' script, copied where nothing of dealer is importable."""
    path = tmp_path_factory.mktemp("player") / "fairness_check.py"
    path.write_text(SCRIPT.read_text(encoding="utf-8"), encoding="utf-8")
    return path


def test_the_doc_publishes_exactly_the_packaged_script():
    """One source of truth: the code block at the end of FAIRNESS.md is the package's file."""
    text = (ROOT / "docs" / "FAIRNESS.md").read_text(encoding="utf-8")
    section = text.split("\n## The script\n", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "FAIRNESS.md no longer publishes the script"
    assert match.group(1) == SCRIPT.read_text(encoding="utf-8")


def test_dealer_fairness_script_prints_the_packaged_script():
    from importlib.resources import files

    from click.testing import CliRunner

    from dealer.cli import main

    printed = CliRunner().invoke(main, ["fairness-script"], env={"DEALER_FAIRNESS_URL": ""})
    assert printed.exit_code == 0
    assert printed.output == files("dealer").joinpath("fairness_check.py").read_text(encoding="utf-8")
    assert printed.output == SCRIPT.read_text(encoding="utf-8")


def run_script(path: Path, *args: str) -> subprocess.CompletedProcess:
    # -I: isolated mode, so the script sees only the standard library, not dealer.
    return subprocess.run([sys.executable, "-I", str(path), *args], capture_output=True,
                          text=True, timeout=60)


def test_published_script_recomputes_numbers_and_cards(fairdraw):
    seeds = ["alice: lucky", "bob: 42"]
    source = FairSource(SEED, list(seeds))
    numbers = [source.below(n) for n in (54, 100, 7, 2**255 + 1)]
    cards = [draw_card(source, 5, "t"), draw_card(source, 10, "t"), draw_card(source, None, "t")]
    args = ["--commitment", commitment(SEED)] + [a for s in seeds for a in ("--client-seed", s)]
    done = run_script(fairdraw, "draws", SEED, *args, "54", "100", "7", str(2**255 + 1),
                      "card", "card:10", "holocard")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "commitment OK"
    starts = [d.counter for d in source.draws]
    assert lines[1:5] == [f"counter {starts[i]}: {numbers[i]} of {n}"
                          for i, n in enumerate((54, 100, 7, 2**255 + 1))]
    # cards start at the draws after the 4 numbers: two draws, two draws, one draw
    assert lines[5:] == [f"counter {starts[4]}: {card_label(cards[0])}",
                         f"counter {starts[6]}: {card_label(cards[1])}",
                         f"counter {starts[8]}: {card_label(cards[2])}"]


def test_published_script_matches_a_hall_phase(fairdraw):
    # A Hall deck pack opened at counter 3 of a phase: the summary says "draws 3 to 12".
    source = FairSource(SEED)
    source.below(10)
    source.below(10)
    source.below(10)
    first = source.counter
    pack = [draw_card(source, 5, "GH-4 Deck Pack") for _ in range(5)]
    done = run_script(fairdraw, "draws", SEED, "--counter", str(first), *["card"] * 5)
    assert [line.split(": ", 1)[1] for line in done.stdout.splitlines()] == [
        card_label(item) for item in pack]


def test_published_script_refuses_a_wrong_commitment(fairdraw):
    done = run_script(fairdraw, "draws", SEED, "--commitment", commitment("0" * 64), "54")
    assert done.returncode == 1 and "MISMATCH" in done.stdout


def test_published_catalogue_is_dealers(fairdraw):
    namespace: dict = {}
    exec(compile(fairdraw.read_text(encoding="utf-8"), str(fairdraw), "exec"), namespace)
    assert namespace["CARDS"] == [card.name for card in CATALOGUE]
