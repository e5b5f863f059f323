"""``receipts`` in every game (declared once: dealer.games.commands.receipts_command): each
answers with what the player has on file, in full, and changes nothing."""

from __future__ import annotations

from dealer.games import BUILT_IN, rules_for
from dealer.games.commands import Receipts
from dealer.games.exoptosis.testing import MatchShell

from tests.unit.games.test_hall import Shell as HallShell, at
from tests.unit.games.test_races import T0, betting_table, minutes


def test_every_game_declares_receipts() -> None:
    for kind in BUILT_IN:
        assert isinstance(rules_for(kind).parse("receipts"), Receipts), kind
        assert isinstance(rules_for(kind).parse("Receipt"), Receipts), kind


def test_races_receipts_give_the_seat_horse_and_bets() -> None:
    shell = betting_table()
    shell.accept("alice", "bet 10 on Lightning", T0 + minutes(7))
    before = shell.state.model_dump()
    (answer,) = [s for s in shell.accept("alice", "receipts", T0 + minutes(8)) if s.to == "alice"]
    assert answer.kind == "receipts" and shell.state.model_dump() == before
    assert "- seated, ready\n- your horse Thunder Hooves, running as KS\n" in answer.body
    assert "- bet 10 chips on Lightning at 2026-" in answer.body
    assert f"commitment {shell.rng.commitment}" in answer.body
    refused = shell.refuse("carol", "receipts", T0 + minutes(8))
    assert refused.what == "you have no seat, horse or bet at this table" and refused.rule == "OR-1"


def test_the_halls_receipts_are_its_inventory() -> None:
    shell = HallShell(["alice", "bob"])
    inventory = shell.send("alice", "inventory", at(1))
    receipts = shell.send("alice", "receipts", at(1.1))
    assert [d.template for d in receipts] == [d.template for d in inventory] == ["hall/inventory.txt"]
    assert receipts[0].context == inventory[0].context


def test_an_exoptosis_match_gives_the_hand_and_stake() -> None:
    shell = MatchShell()
    shell.deal("alice", "7H", "8H", "9S", "10C")
    shell.deal("bob", "2H", "3H", "4S", "KS")
    shell.start(["alice", "bob"])
    (empty,) = [s for s in shell.accept("alice", "receipts", T0 + minutes(1)) if s.to == "alice"]
    assert "- hand: not chosen yet (GH-10)" in empty.body
    shell.accept("alice", "hand 7H 8H 9S 10C", T0 + minutes(2))
    (answer,) = [s for s in shell.accept("alice", "receipts", T0 + minutes(3)) if s.to == "alice"]
    assert "7 of Hearts, 8 of Hearts, 9 of Spades, 10 of Clubs" in answer.body
    assert "- stake: 0 chips of 0 chips staked in all (GH-11)" in answer.body
