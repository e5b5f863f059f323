"""Player names with spaces in every command that names a player (the declared commands'
player field, ``dealer.games.commands.Player`` and ``read_names``): ``gift``, ``offer ... to``,
``duel``, ``ask`` and the targets of ``play ... on``. Forum and Discord names carry spaces
(``Mary Ann``), and ``help`` suggests exactly such lines, so each must be accepted."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from dealer.games.base import Rejected
from dealer.games.exoptosis.testing import MatchShell, T0 as MATCH_T0
from dealer.games.hall import Hall
from dealer.games.hall.state import HallSettings
from dealer.testing import RulesShell

T0 = datetime(2026, 12, 1, 10, 0, tzinfo=timezone.utc)
MARY = "Mary Ann"
FOUR = {"card:7C": 1, "card:8C": 1, "card:9C": 1, "card:10C": 1}


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def hall(*names: str) -> RulesShell:
    shell = RulesShell(Hall(), game_id="hall1", load_players_only=True)
    for name in names:
        for item, amount in FOUR.items():
            shell.grant(name, item, amount)
    shell.open(list(names), HallSettings(), T0)
    return shell


def test_read_names_takes_the_longest_known_name_first() -> None:
    from dealer.games.names import read_names

    known = ["Mary Ann", "Mary", "bob", "Ann Lee"]
    assert read_names("Mary Ann bob", known) == ["Mary Ann", "bob"]
    assert read_names("mary  ann, BOB", known) == ["Mary Ann", "bob"]
    assert read_names("@Mary Ann and @bob", known) == ["Mary Ann", "bob"]
    assert read_names("Mary bob", known) == ["Mary", "bob"]
    assert read_names("Mary Ann Lee", known) == ["Mary Ann", "Lee"]  # unknown word: kept alone
    assert read_names("zoe", known) == ["zoe"]
    # A name that holds the word "and" is read whole; a lone "and" separates.
    assert read_names("Sand and Sea and bob", ["Sand and Sea", "bob"]) == ["Sand and Sea", "bob"]


@pytest.mark.parametrize("line", [f"gift {MARY}", f"gift a card to {MARY}",
                                  f"gift @{MARY.lower()}", "gift   Mary   Ann"])
def test_gift_to_a_name_with_spaces(line: str) -> None:
    shell = hall("alice", MARY)
    shell.accept("alice", line, at(1))
    assert shell.state.member("alice").gifted == MARY


def test_a_gift_names_one_member_whole() -> None:
    # A name may hold spaces, so "bob and carol" is one name, and no member's: refused.
    shell = hall("alice", "bob", "carol")
    refused = shell.refuse("alice", "gift bob and carol", at(1))
    assert refused.rule == "GH-7" and "bob and carol is not in the Hall" in refused.what


def test_help_suggests_gift_and_offer_lines_that_are_accepted() -> None:
    shell = hall("alice", MARY)
    lines = [line.split(" — ")[0] for line in shell.rules.help(shell.state, "alice")]
    assert f"gift {MARY}" in lines
    (offer,) = [line for line in lines if line.startswith("offer ")]
    assert offer == f"offer 2 chips and 7H to {MARY} for AS"
    shell.grant("alice", "chips", 2)
    shell.grant("alice", "card:7H", 1)
    shell.accept("alice", offer, at(1))
    (made,) = shell.state.offers
    assert made.target == MARY
    shell.accept("alice", f"gift {MARY}", at(2))


def test_offer_to_a_name_with_spaces_and_a_stranger_is_refused() -> None:
    shell = hall("alice", MARY)
    shell.grant("alice", "chips", 1)
    shell.accept("alice", "offer 1 chip to mary ann for 7C", at(1))
    assert shell.state.offers[0].target == MARY
    refused = shell.refuse("alice", "offer 1 chip to Mary Jo for 7C", at(2))
    assert refused.rule == "GH-1" and "Mary Jo is not in the Hall" in refused.what


def test_duel_names_with_spaces() -> None:
    shell = hall("alice", MARY, "bob")
    shell.accept("alice", f"duel {MARY} bob", at(1))
    assert shell.state.challenges[0].challenged == [MARY, "bob"]
    shell.accept("bob", f"duel {MARY}", at(2))
    assert shell.state.challenges[1].challenged == [MARY]
    refused = shell.refuse("alice", "duel Mary Jo", at(3))
    assert refused.rule == "GH-19" and "Mary is not in the Hall" in refused.what
    refused = shell.refuse("alice", "duel Mary Ann mary ann", at(3))
    assert refused.rule == "GH-19" and "Mary Ann is named twice" in refused.what
    shell.accept(MARY, "accept duel 1", at(4))
    shell.accept("bob", "accept duel 1", at(5))
    (opened,) = [data for kind, data in shell.events if kind == "child.opened"]
    assert opened["players"] == ["alice", MARY, "bob"]


def match(first: str, second: str, first_inv: str = "", second_inv: str = "") -> MatchShell:
    """Mary Ann (5 cards, first in turn order) and alice (4 cards); play begun."""
    shell = MatchShell()
    shell.deal(MARY, *first.split(), *first_inv.split())
    shell.deal("alice", *second.split(), *second_inv.split())
    shell.start([MARY, "alice"])
    shell.to_play({MARY: first, "alice": second})
    assert shell.state.order == [MARY, "alice"]
    return shell


def minutes(n: int) -> datetime:
    return MATCH_T0 + timedelta(minutes=n)


def test_ask_a_participant_with_spaces() -> None:
    shell = match("5H 6H 7H 8H 9H", "KS QS JS AC")  # alice can neither play nor add
    shell.accept(MARY, "play 5H", minutes(20))
    asks = [line.split(" — ")[0] for line in shell.rules.help(shell.state, "alice")]
    assert f"ask {MARY}" in asks
    shell.accept("alice", f"ask {MARY}", minutes(21))
    assert shell.state.asked is not None and shell.state.asked.giver == MARY
    shell.accept(MARY, "give 9H", minutes(22))
    assert shell.hand("alice") == ["KS", "QS", "JS", "AC", "9H"]


def test_ace_and_king_target_names_with_spaces() -> None:
    # Mary Ann 10C; alice JH (11, one above): Mary Ann draws 1 (6D or 7D); Mary Ann QC (12)
    # on alice 9H: 9H goes home, alice draws a different card (5S, the only one); alice KH
    # (12, equal) on alice and Mary Ann: each draws 1 (alice 9H, Mary Ann the other D).
    shell = match("10C QC 2C 3C 4C", "JH KH 8H 9H", first_inv="6D 7D", second_inv="5S")
    shell.accept(MARY, "play 10C", minutes(20))
    shell.accept("alice", "play JH", minutes(21))
    shell.accept(MARY, "play QC on alice 9H", minutes(22))
    assert shell.hand("alice") == ["KH", "8H", "5S"] and shell.inventory("alice") == ["9H"]
    shell.accept("alice", f"play KH on alice {MARY}", minutes(23))
    assert shell.hand("alice") == ["8H", "5S", "9H"] and shell.inventory("alice") == []
    assert sorted(shell.hand(MARY)) == ["2C", "3C", "4C", "6D", "7D"]
    assert shell.inventory(MARY) == []
    # Mary Ann 2H; alice AS (1, one below 2) on Mary Ann: she draws 2, all she holds.
    shell = match("2H 6H 7H 8H 9H", "AS 2C 3C 4C", first_inv="KD 2D")
    shell.accept(MARY, "play 2H", minutes(20))
    shell.accept("alice", f"play AS on {MARY}", minutes(21))
    assert sorted(shell.hand(MARY)) == ["2D", "6H", "7H", "8H", "9H", "KD"]
    assert "Mary Ann drew" in shell.posts("played")[-1].body


def test_queen_target_name_with_spaces_then_its_card() -> None:
    # Mary Ann 10C; alice JH: Mary Ann draws 1 of 6D, 5D; Mary Ann JC (11): alice draws 9S;
    # alice QH (12) on Mary Ann 2C: 2C goes home and Mary Ann draws a different card, the
    # other D.
    shell = match("10C JC 2C 3C 4C", "JH QH KH 8H", first_inv="6D 5D", second_inv="9S")
    shell.accept(MARY, "play 10C", minutes(20))
    shell.accept("alice", "play JH", minutes(21))
    shell.accept(MARY, "play JC", minutes(22))
    shell.accept("alice", f"play QH on {MARY} 2C", minutes(23))
    assert sorted(shell.hand(MARY)) == ["3C", "4C", "5D", "6D"]
    assert shell.inventory(MARY) == ["2C"]
