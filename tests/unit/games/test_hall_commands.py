"""Reading Hall command lines (dealer.games.hall.commands and items)."""

from __future__ import annotations

import pytest

from dealer.games.base import Rejected
from dealer.games.hall.commands import (
    COMMANDS, AnswerOffer, Buy, Gift, Join, MakeOffer, OpenPack, ShowInventory,
)
from dealer.games.hall.items import label, parse_bundle

parse = COMMANDS.parse


@pytest.mark.parametrize(
    "line, command",
    [
        ("JOIN", Join()),
        ("join the hall", Join()),
        ("Inventory", ShowInventory()),
        ("inv", ShowInventory()),
        ("open handy pack", OpenPack("handy")),
        ("Open my Legendary Pack", OpenPack("legendary")),
        ("open deck", OpenPack("deck")),
        ("buy random card", Buy("random card", 1)),
        ("buy a card", Buy("random card", 1)),
        ("buy 3 random cards", Buy("random card", 3)),
        ("buy chip", Buy("chip", 1)),
        ("buy chip 4", Buy("chip", 4)),
        ("buy 4 chips", Buy("chip", 4)),
        ("BUY A LEGENDARY PACK", Buy("legendary pack", 1)),
        ("buy 2 deck packs", Buy("deck pack", 2)),
        ("accept offer 12", AnswerOffer("accept", 12)),
        ("Decline offer #3", AnswerOffer("decline", 3)),
        ("withdraw offer 7", AnswerOffer("withdraw", 7)),
        ("show my inventory", ShowInventory()),
        ("join the gilded hall", Join()),
        ("buy 3 x chips", Buy("chip", 3)),
        ("gift bob", Gift("bob")),
        ("gift @Bob", Gift("@Bob")),
        ("gift a card to carol", Gift("carol")),
    ],
)
def test_lines_read_as_commands(line, command):
    assert parse(line) == command


def test_offer_lists_items_on_both_sides():
    command = parse("offer 2 chips and 7H to bob for AS")
    assert command == MakeOffer("bob", (("card:7H", 1), ("chips", 2)), (("card:AS", 1),))
    command = parse("Offer holo red joker, 3 vertebrae, 2 x KS to Carol for nothing")
    assert command == MakeOffer(
        "Carol", (("card:KS", 2), ("card:RJ:holo", 1), ("vertebrae", 3)), ())
    command = parse("offer nothing to bob for king of spades and 2 of hearts and deck pack")
    assert command.wants == (("card:2H", 1), ("card:KS", 1), ("pack:deck", 1))


def test_repeated_items_add_up():
    assert parse_bundle("7H and 7h, 1 chip and 2 chips") == {"card:7H": 2, "chips": 3}


@pytest.mark.parametrize(
    "line, rule, fragment",
    [
        ("dance", None, "'dance' is not a Hall command"),
        ("open the door", "GH-4", "only packs can be opened"),
        ("buy a horse", "GH-5", "the Croupier does not sell that"),
        ("buy 0 chips", "GH-5", "between 1 and 100"),
        ("buy 101 random cards", "GH-5", "between 1 and 100"),
        ("buy 3 chips 2", "GH-5", "give the count once"),
        ("offer 7H for AS", "GH-1", "offer ITEMS to PLAYER for ITEMS"),
        ("offer 11 of hearts to bob for AS", "GH-1", "'11 of hearts' is not an item"),
        ("offer 0 chips to bob for AS", "GH-1", "a count must be at least 1"),
        ("offer 7H and to bob for AS", "GH-1", "'7H and' is not an item"),
        ("offer 7H, , 2C to bob for AS", "GH-1", "an empty item"),
        ("gift", "GH-7", "a gift reads 'gift PLAYER'"),
        ("accept offer x", "GH-1", "accept|decline offer N"),
        ("join us", "GH-6", "'join' takes nothing after it"),
    ],
)
def test_junk_is_refused_with_a_clear_message(line, rule, fragment):
    with pytest.raises(Rejected) as caught:
        parse(line)
    assert caught.value.rule == rule and fragment in caught.value.what


def test_labels_read_naturally():
    assert [label("chips", 1), label("chips", 3), label("vertebrae", 1), label("vertebrae", 2)] == [
        "1 chip", "3 chips", "1 vertebra", "2 vertebrae"]
    assert label("card:KS:holo") == "holo King of Spades"
    assert label("card:10H", 2) == "2 × 10 of Hearts"
    assert label("pack:legendary") == "Legendary Pack"
