"""The card catalogue (RULES GH-2) and the card-name parser (dealer.cards)."""

from __future__ import annotations

import pytest

from dealer.cards import (
    BY_CODE, CATALOGUE, STANDARD_DECK, UnknownCard, card_of_item, display, parse_card,
)

# The seed's table, row by row: (name, value, suit, colour, special).
SEED_TABLE = [
    (f"{rank} of {suit}", value, suit.lower(), colour, special)
    for suit, colour in (("Hearts", "red"), ("Diamonds", "red"), ("Spades", "black"),
                         ("Clubs", "black"))
    for rank, value, special in (
        [("Ace", 1, True)] + [(str(n), n, False) for n in range(2, 11)]
        + [("Jack", 11, True), ("Queen", 12, True), ("King", 12, True)]
    )
] + [("Red Joker", None, None, "red", True), ("Black Joker", None, None, "black", True)]


def test_the_catalogue_is_the_seeds_54_rows_in_order():
    assert len(CATALOGUE) == 54 == len(SEED_TABLE)
    rows = [(c.name, c.value, c.suit, c.colour, c.special) for c in CATALOGUE]
    assert rows == SEED_TABLE
    assert len(BY_CODE) == 54  # every code is distinct


def test_values_colours_and_specials():
    # GH-2: the King is 12, as the seed's table says (not 13).
    assert BY_CODE["KS"].value == 12 == BY_CODE["QS"].value
    assert BY_CODE["JD"].value == 11 and BY_CODE["AH"].value == 1 and BY_CODE["10C"].value == 10
    assert {c.colour for c in CATALOGUE if c.suit in ("hearts", "diamonds")} == {"red"}
    assert {c.colour for c in CATALOGUE if c.suit in ("spades", "clubs")} == {"black"}
    specials = [c.code for c in CATALOGUE if c.special]
    assert len(specials) == 4 * 4 + 2  # A, J, Q, K in four suits and two jokers
    assert not any(c.special for c in CATALOGUE if c.rank in {str(n) for n in range(2, 11)})
    assert BY_CODE["RJ"].value is None and BY_CODE["RJ"].suit is None and BY_CODE["RJ"].is_joker
    assert BY_CODE["BJ"].colour == "black"


def test_standard_deck_has_no_jokers():
    assert len(STANDARD_DECK) == 52 and not any(c.is_joker for c in STANDARD_DECK)


@pytest.mark.parametrize(
    "text, code, holo",
    [
        ("king of spades", "KS", False),
        ("King Of Spades", "KS", False),
        ("KS", "KS", False),
        ("ks", "KS", False),
        ("K♠", "KS", False),
        ("K♠️", "KS", False),  # with the emoji variation selector
        ("10h", "10H", False),
        ("10 ♥", "10H", False),
        ("ten of hearts", "10H", False),
        ("ace of diamonds", "AD", False),
        ("2 of clubs", "2C", False),
        ("queen of heart", "QH", False),
        ("red joker", "RJ", False),
        ("Black Joker", "BJ", False),
        ("holo 7H", "7H", True),
        ("holographic queen of clubs", "QC", True),
        ("7H (holo)", "7H", True),
        ("holo red joker", "RJ", True),
    ],
)
def test_parser_accepts_the_usual_spellings(text, code, holo):
    card, is_holo = parse_card(text)
    assert (card.code, is_holo) == (code, holo)


@pytest.mark.parametrize("text", ["", "joker", "11H", "1 of nothing", "KX", "king", "green joker",
                                  "holo", "seven of cups", "KSS"])
def test_parser_rejects_junk_with_a_clear_message(text):
    with pytest.raises(UnknownCard) as caught:
        parse_card(text)
    message = str(caught.value)
    assert "is not a card" in message and "'king of spades'" in message and "'red joker'" in message


def test_items_round_trip():
    for card in CATALOGUE:
        for holo in (False, True):
            assert card_of_item(card.item(holo)) == (card, holo)
    assert card_of_item("chips") is None and card_of_item("card:ZZ") is None
    assert display("card:KS:holo") == "King of Spades (holo)" and display("chips") == "chips"
