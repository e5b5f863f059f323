"""Exoptosis (RULES GH-10 to GH-17): worked examples computed by hand from the rules."""

from __future__ import annotations

import pytest

from dealer.cards import BY_CODE
from dealer.fairness import FairSource
from dealer.games.exoptosis.cards import may_play
from dealer.games.exoptosis.table import draw_reward
from dealer.games.exoptosis.testing import T0, MatchShell, hours
from dealer.ledger import CHIPS
from dealer.testing import standalone_context


def minutes(n: int):  # type: ignore[no-untyped-def]
    return T0 + hours(n / 60)


# --- GH-13: what may be played ------------------------------------------------------------


@pytest.mark.parametrize(("card", "last", "legal"), [
    # the first card: any non-special card, never a special one
    ("7H", None, True), ("2C", None, True), ("AS", None, False), ("KH", None, False),
    ("RJ", None, False),
    # equal, one above, one below
    ("7D", "7H", True), ("8H", "7D", True), ("6D", "7H", True), ("9H", "7D", False),
    # opposite colour, for a non-special card only
    ("2C", "9H", True), ("2D", "9H", False), ("KS", "5H", False), ("AS", "9D", False),
    # a special card by value: Jack 11 on 10, Queen 12 on Jack 11, King 12 on Queen 12, Ace 1 on 2
    ("JS", "10H", True), ("QH", "JS", True), ("KC", "QD", True), ("AS", "2H", True),
    ("AH", "JD", False), ("AS", "KH", False), ("10C", "JH", True), ("3H", "AS", True),
    # Jokers on anything
    ("RJ", "5C", True), ("BJ", "KH", True), ("RJ", "AS", True),
    # on a Joker only its colour, any value, special or not
    ("5H", "RJ", True), ("KD", "RJ", True), ("5C", "RJ", False), ("AS", "BJ", True),
    ("AH", "BJ", False), ("BJ", "RJ", False), ("RJ", "RJ", True),
])
def test_gh13_legality(card, last, legal) -> None:  # type: ignore[no-untyped-def]
    assert may_play(BY_CODE[card], BY_CODE[last] if last else None) is legal


# --- a match through its steps -------------------------------------------------------------


def two(alice: str, bob: str, alice_inv: str = "", bob_inv: str = "", chips: int = 0) -> MatchShell:
    """alice and bob with these hands (and further cards in their inventories); play begun."""
    shell = MatchShell()
    shell.deal("alice", *alice.split(), *alice_inv.split(), chips=chips)
    shell.deal("bob", *bob.split(), *bob_inv.split(), chips=chips)
    shell.start(["alice", "bob"])
    shell.to_play({"alice": alice, "bob": bob})
    return shell


def test_hands_are_held_by_the_match_and_revealed_together() -> None:
    shell = MatchShell()
    shell.deal("alice", "7H", "8H", "9S", "10C", "5C")
    shell.deal("bob", "2H", "3H", "4S", "KS")
    shell.start(["alice", "bob"])
    shell.accept("alice", "hand 7H 8H 9S 5C", minutes(1))
    assert shell.inventory("alice") == ["10C"]  # the hand is in the match's account (GH-10)
    assert shell.held() == ["5C", "7H", "8H", "9S"]
    assert not shell.posts("revealed")
    shell.accept("alice", "hand 7H 8H 9S 10C", minutes(2))  # changed before all chose
    assert shell.inventory("alice") == ["5C"] and shell.hand("alice") == ["7H", "8H", "9S", "10C"]
    shell.accept("bob", "hand 2H 3H 4S KS", minutes(3))
    (revealed,) = shell.posts("revealed")
    assert "- alice: 7 of Hearts, 8 of Hearts, 9 of Spades, 10 of Clubs" in revealed.body
    assert "- bob: 2 of Hearts, 3 of Hearts, 4 of Spades, King of Spades" in revealed.body
    assert shell.state.phase == "betting"
    refused = shell.refuse("alice", "hand 7H 8H 9S 5C", minutes(4))
    assert refused.rule == "GH-10" and "revealed already" in refused.what


@pytest.mark.parametrize(("line", "what"), [
    ("hand 7H 8H 9S", "a hand is at least 4 cards; you named 3"),
    ("hand 7H 8H 9S AS", "Ace of Spades is not in your inventory"),
    ("hand 7H 7H 8H 9S", "7 of Hearts is not in your inventory"),  # one copy only
    ("hand holo 7H 8H 9S 10C", "holo 7 of Hearts is not in your inventory"),
])
def test_a_bad_hand_is_refused_naming_gh10(line, what) -> None:  # type: ignore[no-untyped-def]
    shell = MatchShell()
    shell.deal("alice", "7H", "8H", "9S", "10C")
    shell.deal("bob", "2H", "3H", "4S", "KS")
    shell.start(["alice", "bob"])
    refused = shell.refuse("alice", line, minutes(1))
    assert refused.rule == "GH-10" and what in refused.what


def test_a_card_held_by_another_match_cannot_join_a_hand() -> None:
    # The card is in the first match's account: the cycle inventory no longer holds it.
    shell = MatchShell()
    shell.deal("alice", "7H", "8H", "9S", "10C")
    shell.deal("bob", "2H", "3H", "4S", "KS")
    shell.balances[(shell.scope.pool("h1-duel-0"), "card:7H")] = 1  # alice's other 7H, held
    shell.start(["alice", "bob"])
    assert "7 of Hearts is not in your inventory" not in shell.refuse(
        "alice", "hand 8H 9S 10C", minutes(1)).what  # fewer than 4
    shell.accept("alice", "hand 7H 8H 9S 10C", minutes(2))
    assert shell.has("alice", "card:7H") == 0


def test_setup_window_puts_out_who_did_not_choose_and_cancels_below_two() -> None:
    shell = MatchShell()
    shell.deal("alice", "7H", "8H", "9S", "10C")
    shell.deal("bob", "2H", "3H", "4S", "KS")
    shell.start(["alice", "bob"])
    shell.accept("alice", "hand 7H 8H 9S 10C", minutes(1))
    shell.fire_due(T0 + hours(24))  # GH-10: setup window 24 h
    assert shell.state.phase == "finished" and shell.state.result == "cancelled"
    assert shell.inventory("alice") == ["10C", "7H", "8H", "9S"] and shell.held() == []
    assert shell.state.seat("bob").out == "chose no hand in time"
    assert "cancelled" in shell.posts("result")[0].body


def test_a_third_without_a_hand_is_out_and_the_others_play() -> None:
    shell = MatchShell()
    for name, cards in (("alice", "7H 8H 9S 10C"), ("bob", "2H 3H 4S KS"), ("carol", "5C 6C 7C 8C")):
        shell.deal(name, *cards.split(), chips=3)
    shell.start(["alice", "bob", "carol"])
    shell.accept("alice", "hand 7H 8H 9S 10C", minutes(1))
    shell.accept("bob", "hand 2H 3H 4S KS", minutes(2))
    shell.fire_due(T0 + hours(24))
    assert shell.state.phase == "betting" and shell.state.seat("carol").out
    assert shell.has("carol", CHIPS) == 3 and len(shell.inventory("carol")) == 4  # lost nothing


# --- GH-11 betting ----------------------------------------------------------------------------


def betting(*names: str, chips: int = 10) -> MatchShell:
    shell = MatchShell()
    hands = {"alice": "7H 8H 9S 10C", "bob": "2H 3H 4S KS 5D", "carol": "5C 6C 7C 8C 9C 10D"}
    for name in names:
        shell.deal(name, *hands[name].split(), chips=chips)
    shell.start(list(names))
    for i, name in enumerate(names):
        shell.accept(name, f"hand {hands[name]}", minutes(i + 1))
    assert shell.state.phase == "betting"
    return shell


def test_raise_match_reraise_fold() -> None:
    shell = betting("alice", "bob", "carol")
    shell.accept("alice", "raise 2", minutes(10))  # alice 2
    shell.accept("bob", "match", minutes(11))  # bob 2: the raise is matched
    shell.accept("carol", "raise 3", minutes(12))  # carol 2 + 3 = 5
    assert [s.stake for s in shell.state.seats] == [2, 2, 5]
    shell.accept("alice", "match", minutes(13))  # alice puts in 3 more
    shell.accept("bob", "fold", minutes(14))  # bob out, his 2 back, his hand home
    # GH-11: everyone left has matched: the window closes early and play begins.
    assert shell.state.phase == "play"
    assert (shell.has("alice"), shell.has("bob"), shell.has("carol"), shell.pool_chips()) == (5, 10, 5, 10)
    assert shell.inventory("bob") == ["2H", "3H", "4S", "5D", "KS"]
    assert shell.state.order == ["carol", "alice"]  # 6 cards before 4 (GH-12)
    assert "bob folds" in shell.posts("fold")[0].body


def test_an_unmatched_raise_is_returned_when_the_window_closes() -> None:
    shell = betting("alice", "bob", "carol")
    shell.accept("alice", "raise 4", minutes(10))
    shell.fire_due(minutes(3) + hours(1))  # the window: 1 h from the reveal
    assert shell.state.phase == "play"
    assert (shell.has("alice"), shell.pool_chips()) == (10, 0)  # nobody matched: returned
    assert all(s.out is None for s in shell.state.seats)  # nobody has to meet it
    assert "alice: 4 chips returned (a raise nobody matched)" in shell.posts("betting_closed")[0].body


def test_whoever_does_not_meet_a_matched_bet_is_out_with_its_stake() -> None:
    shell = betting("alice", "bob", "carol")
    shell.accept("alice", "raise 2", minutes(10))
    shell.accept("bob", "match", minutes(11))
    shell.accept("alice", "raise 3", minutes(12))  # alice 5; bob stays at 2, carol at 0
    shell.fire_due(minutes(3) + hours(1))
    # The bet that stands is 2 (the highest two reached): alice gets her unmatched 3 back,
    # carol (0 < 2) is out with nothing to return; alice and bob play for 4.
    assert (shell.has("alice"), shell.has("bob"), shell.has("carol"), shell.pool_chips()) == (8, 8, 10, 4)
    assert shell.state.seat("carol").out == "did not meet the bet"
    assert shell.state.phase == "play"


def test_a_bet_over_ones_chips_is_refused() -> None:
    shell = betting("alice", "bob", chips=3)
    refused = shell.refuse("alice", "raise 4", minutes(10))
    assert refused.rule == "GH-11" and "you have 3" in refused.what
    assert shell.refuse("alice", "play 7H", minutes(10)).rule == "GH-12"


def test_folds_leaving_one_let_the_last_one_win() -> None:
    # GH-11, the seed: a player who will not meet a bet "must forfeit the game (but lose no
    # Chips)", and a forfeit that leaves one participant makes it win (GH-16). bob folds:
    # his stake (0) comes back, alice wins the pool, her own 1 chip.
    shell = betting("alice", "bob")
    shell.accept("alice", "raise 1", minutes(10))
    shell.accept("bob", "fold", minutes(11))
    assert shell.state.result == "won" and shell.state.winner == "alice"
    assert (shell.has("alice"), shell.has("bob")) == (10, 10)
    assert shell.held() == []
    assert "**alice wins the Exoptosis match** and takes the pool of 1 chip" in \
        shell.posts("result")[0].body


# --- play and effects ---------------------------------------------------------------------------


def test_first_card_must_be_non_special_and_out_of_turn_is_refused() -> None:
    shell = two("AS 5H 6H 7H 8H", "2C 3C 4C 9D")  # alice 5 cards: first (GH-12)
    assert shell.state.order == ["alice", "bob"]
    refused = shell.refuse("alice", "play AS on bob", minutes(20))
    assert refused.rule == "GH-13" and "first card of the match must be non-special" in refused.what
    refused = shell.refuse("bob", "play 2C", minutes(20))
    assert refused.rule == "GH-12" and "alice's turn" in refused.what
    shell.accept("alice", "play 5H", minutes(21))
    refused = shell.refuse("bob", "play 9D", minutes(22))  # red on red, 9 vs 5
    assert refused.rule == "GH-13" and "opposite colour" in refused.what
    shell.accept("bob", "play 4C", minutes(23))
    (post,) = shell.posts("played")[-1:]
    assert "**bob plays 4 of Clubs.**" in post.body and "Turn 3: alice plays" in post.body


def test_ace_makes_another_draw_two_from_its_inventory() -> None:
    # alice 5H, bob 2C (opposite colour), alice AS on 2C (1 is one below 2): bob draws 2.
    shell = two("5H AS 6H 7H 8H", "2C 3C 4C 9D", bob_inv="KD")
    shell.accept("alice", "play 5H", minutes(20))
    shell.accept("bob", "play 2C", minutes(21))
    refused = shell.refuse("alice", "play AS on alice", minutes(22))
    assert refused.rule == "GH-15" and "another participant" in refused.what
    refused = shell.refuse("alice", "play AS on zoe", minutes(22))
    assert refused.rule == "GH-15" and "zoe is not a participant" in refused.what
    assert shell.hand("bob") == ["3C", "4C", "9D"] and shell.inventory("bob") == ["KD"]
    shell.accept("alice", "play AS on bob", minutes(22))
    # bob holds one card outside the match: the first draw takes it, the second does nothing.
    assert shell.hand("bob") == ["3C", "4C", "9D", "KD"] and shell.inventory("bob") == []
    body = shell.posts("played")[-1].body
    assert "bob drew King of Diamonds (1 draw did nothing" in body


def test_jack_makes_the_next_participant_draw_one() -> None:
    shell = two("10H JH 6H 7H 8H", "10C 3C 4C 9D", bob_inv="2S")
    shell.accept("alice", "play 10H", minutes(20))
    shell.accept("bob", "play 10C", minutes(21))
    assert shell.hand("bob") == ["3C", "4C", "9D"] and shell.inventory("bob") == ["2S"]
    shell.accept("alice", "play JH", minutes(22))
    assert shell.hand("bob") == ["3C", "4C", "9D", "2S"] and shell.inventory("bob") == []
    assert shell.hand("alice") == ["6H", "7H", "8H"]


def test_queen_sends_a_card_home_and_its_holder_draws_a_different_one() -> None:
    shell = two("10H QH 6H 7H 8H", "JC 3C 4C 9D", bob_inv="9D 5S")
    shell.accept("alice", "play 10H", minutes(20))
    shell.accept("bob", "play JC", minutes(21))
    assert shell.hand("bob") == ["3C", "4C", "9D"] and shell.inventory("bob") == ["5S", "9D"]
    refused = shell.refuse("alice", "play QH on bob 7H", minutes(22))
    assert refused.rule == "GH-15" and "7 of Hearts is not in bob's hand" in refused.what
    shell.accept("alice", "play QH on bob 9D", minutes(22))
    # 9D goes home; bob draws a card other than a 9D: his inventory holds 9D, 9D, 5S -> 5S.
    assert shell.hand("bob") == ["3C", "4C", "5S"] and shell.inventory("bob") == ["9D", "9D"]


def test_targets_are_checked_before_anything_moves() -> None:
    shell = two("10H KH 6H 7H 8H", "JC 3C 4C 9D", alice_inv="2D", bob_inv="2S")
    shell.accept("alice", "play 10H", minutes(20))
    assert shell.refuse("bob", "play 9D on alice", minutes(21)).what.startswith(
        "the 9 of Diamonds has no effect that names a target")
    shell.accept("bob", "play JC", minutes(21))
    for line, what in (("play KH on bob bob", "two different participants"),
                       ("play KH on bob", "needs two participants"),
                       ("play KH on bob zoe", "zoe is not a participant"),
                       ("play 6H on bob", "has no effect that names a target")):
        refused = shell.refuse("alice", line, minutes(22))
        assert refused.rule == "GH-15" and what in refused.what, line
    assert shell.refuse("alice", "play QH on bob 3C", minutes(22)).what == "Queen of Hearts is not in your hand"


def test_king_effect_with_both_targets() -> None:
    shell = two("10H KH 6H 7H 8H", "JC 3C 4C 9D", alice_inv="2D", bob_inv="2S")
    shell.accept("alice", "play 10H", minutes(20))
    shell.accept("bob", "play JC", minutes(21))  # the Jack: alice draws her 2D
    assert shell.hand("alice") == ["KH", "6H", "7H", "8H", "2D"] and shell.inventory("alice") == []
    shell.accept("alice", "play KH on alice bob", minutes(22))  # 12 vs 11
    # alice's inventory is empty: her draw does nothing; bob draws his 2S.
    assert shell.hand("alice") == ["6H", "7H", "8H", "2D"]
    assert shell.hand("bob") == ["3C", "4C", "9D", "2S"] and shell.inventory("bob") == []
    assert "alice drew nothing (1 draw did nothing" in shell.posts("played")[-1].body


def test_add_only_when_nothing_can_be_played() -> None:
    shell = two("5H 6H 7H 8H 9H", "KS QS JS AC", bob_inv="3D 10S")
    shell.accept("alice", "play 5H", minutes(20))
    # bob's cards are all special and none is 4, 5 or 6: he cannot play.
    refused = shell.refuse("bob", "play KS on alice bob", minutes(21))
    assert refused.rule == "GH-13"
    refused = shell.refuse("bob", "add 2H", minutes(21))
    assert refused.rule == "GH-14" and "not in your inventory" in refused.what
    shell.accept("bob", "add 10S", minutes(21))
    assert shell.hand("bob") == ["KS", "QS", "JS", "AC", "10S"] and shell.inventory("bob") == ["3D"]
    assert shell.state.current == "alice"
    refused = shell.refuse("alice", "add 5H", minutes(22))
    assert refused.rule == "GH-14" and "you can play a card" in refused.what


def test_ask_and_give_when_nothing_can_be_played_or_added() -> None:
    shell = two("5H 6H 7H 8H 9H", "KS QS JS AC")  # bob has no card outside the match
    shell.accept("alice", "play 5H", minutes(20))
    refused = shell.refuse("bob", "ask bob", minutes(21))
    assert "another participant" in refused.what
    shell.accept("bob", "ask alice", minutes(21))
    assert shell.state.asked is not None
    assert shell.refuse("bob", "play KS on alice bob", minutes(22)).rule == "GH-14"
    refused = shell.refuse("alice", "give 2C", minutes(22))
    assert refused.rule == "GH-14" and "not in your hand" in refused.what
    shell.accept("alice", "give 9H", minutes(22))
    assert shell.hand("bob") == ["KS", "QS", "JS", "AC", "9H"]
    assert shell.state.seat("bob").hand[-1].owner == "alice"  # the card stays alice's
    assert shell.state.current == "alice"


def test_an_unanswered_ask_gives_a_fair_random_card() -> None:
    shell = two("5H 6H 7H 8H 9H", "KS QS JS AC")
    shell.accept("alice", "play 5H", minutes(20))
    shell.accept("bob", "ask alice", minutes(21))
    shell.fire_due(minutes(21) + hours(24))  # a turn's length
    given = shell.events[-1]
    assert shell.state.asked is None and len(shell.hand("bob")) == 5 and len(shell.hand("alice")) == 3
    assert any(e[0] == "given" and e[1]["random"] for e in shell.events)
    assert "chosen at random" in shell.posts("given")[0].body
    assert given


def test_a_turn_not_taken_is_skipped() -> None:
    shell = two("5H 6H 7H 8H 9H", "2C 3C 4C 9D")
    shell.accept("alice", "play 5H", minutes(20))
    shell.fire_due(minutes(20) + hours(24))  # GH-17: bob's turn, 24 h
    assert shell.state.current == "alice" and shell.state.turn == 3
    assert "bob's turn is skipped" in shell.posts("skipped")[0].body
    assert shell.hand("bob") == ["2C", "3C", "4C", "9D"]


def test_a_move_sent_before_the_turn_began_is_refused_as_late() -> None:
    """GH-17, docs/EXOPTOSIS.md: bob's play was sent during alice's turn but read only after
    turns were skipped (the daemon was down): it is bob's turn again now, but the line was
    sent in a turn that has passed, so it is refused, and the turns keep their order."""
    shell = two("5H 6H 7H 8H 9H", "2C 3C 4C 6D", "", "")
    shell.accept("alice", "play 5H", minutes(20))  # bob's turn, to minutes(20) + 24 h
    shell.fire_due(minutes(21) + hours(48))  # bob's skipped, then alice's: bob's turn again
    assert shell.state.current == "bob" and shell.state.turn == 4
    late = shell.refuse("bob", "play 6D", minutes(30) + hours(24), fire_first=False)
    assert late.rule == "GH-17" and "sent before your turn began" in str(late)
    shell.accept("bob", "play 6D", minutes(30) + hours(48))  # sent in his turn: taken
    assert shell.state.current == "alice"


def _bob_one_card_from_winning() -> MatchShell:
    """A raised match (a pool of 4) where bob's last card, 10D, is all he has left to play."""
    shell = MatchShell()
    shell.deal("alice", "5H", "6C", "7S", "8C", "9H", chips=5)
    shell.deal("bob", "2D", "3D", "4D", "10D", chips=5)
    shell.start(["alice", "bob"])
    shell.accept("alice", "hand 5H 6C 7S 8C 9H", minutes(1))
    shell.accept("bob", "hand 2D 3D 4D 10D", minutes(2))
    shell.accept("alice", "raise 2", minutes(3))
    shell.accept("bob", "match", minutes(4))
    for i, (who, card) in enumerate([("alice", "5H"), ("bob", "4D"), ("alice", "6C"),
                                      ("bob", "3D"), ("alice", "7S"), ("bob", "2D"),
                                      ("alice", "8C")]):
        shell.accept(who, f"play {card}", minutes(10 + i))
    return shell


def test_the_first_empty_hand_wins_the_pool_and_every_card_goes_home() -> None:
    shell = _bob_one_card_from_winning()
    shell.accept("bob", "play 10D", minutes(17))
    # bob played his 4th and last card first: he wins the pool of 4.
    assert shell.state.winner == "bob" and shell.state.result == "won"
    assert (shell.has("alice"), shell.has("bob"), shell.pool_chips()) == (3, 7, 0)
    assert shell.inventory("alice") == ["5H", "6C", "7S", "8C", "9H"]
    assert shell.inventory("bob") == ["10D", "2D", "3D", "4D"] and shell.held() == []
    assert "**bob wins the Exoptosis match** and takes the pool of 4 chips" in shell.posts("result")[0].body


def test_the_winning_play_is_posted_before_the_result_with_the_board_as_it_ended() -> None:
    shell = _bob_one_card_from_winning()
    last = shell.accept("bob", "play 10D", minutes(20))
    # The play first, then the result: the board shows the hands and the pool (4 chips)
    # as the winning card left them, and no next turn.
    assert [sent.kind for sent in last if sent.to is None] == ["played", "result"]
    played = last[0].body
    assert "- bob: no card (stake 2 chips)" in played
    assert "- alice: 9 of Hearts (stake 2 chips)" in played
    assert "Pool: 4 chips." in played and "Turn " not in played
    assert "bob has no card left in hand and wins (GH-16)." in played


def test_a_battle_won_without_stakes_has_no_pool_to_take() -> None:
    shell = MatchShell()
    shell.deal("alice", "5H", "6C", "7S", "8C", "9H")
    shell.deal("bob", "2D", "3D", "4D", "10D")
    shell.start(["alice", "bob"], fight="battle")
    shell.to_play({"alice": "5H 6C 7S 8C 9H", "bob": "2D 3D 4D 10D"}, at=minutes(0))
    for i, (who, card) in enumerate([("alice", "5H"), ("bob", "4D"), ("alice", "6C"),
                                      ("bob", "3D"), ("alice", "7S"), ("bob", "2D"),
                                      ("alice", "8C"), ("bob", "10D")]):
        shell.accept(who, f"play {card}", minutes(10 + i))
    body = shell.posts("result")[0].body
    assert "**bob wins the Exoptosis battle** (GH-16); nobody bet, so there was no pool to take." in body
    assert "pool of 0" not in body


def test_forfeit_leaves_the_stake_in_the_pool_and_the_last_one_wins() -> None:
    shell = two("5H 6H 7H 8H 9H", "2C 3C 4C 9D", chips=10)
    # to_play matched at 0; bet again in a fresh match with stakes:
    shell = MatchShell()
    shell.deal("alice", *"5H 6H 7H 8H 9H".split(), chips=10)
    shell.deal("bob", *"2C 3C 4C 9D".split(), chips=10)
    shell.start(["alice", "bob"])
    shell.accept("alice", "hand 5H 6H 7H 8H 9H", minutes(1))
    shell.accept("bob", "hand 2C 3C 4C 9D", minutes(2))
    shell.accept("alice", "raise 3", minutes(3))
    shell.accept("bob", "match", minutes(4))
    shell.accept("alice", "play 5H", minutes(5))
    shell.accept("alice", "forfeit", minutes(6))  # out of turn: forfeit is allowed any time
    assert shell.state.winner == "bob"
    assert (shell.has("alice"), shell.has("bob"), shell.pool_chips()) == (7, 13, 0)
    assert shell.inventory("alice") == ["5H", "6H", "7H", "8H", "9H"]  # the played 5H too
    assert "their stake of 3 chips stays in the pool" in shell.posts("forfeit")[0].body


def test_termination_needs_everyone_within_one_turn_and_returns_the_stakes() -> None:
    shell = MatchShell()
    shell.deal("alice", *"5H 6H 7H 8H 9H".split(), chips=10)
    shell.deal("bob", *"2C 3C 4C 9D".split(), chips=10)
    shell.start(["alice", "bob"])
    shell.accept("alice", "hand 5H 6H 7H 8H 9H", minutes(1))
    shell.accept("bob", "hand 2C 3C 4C 9D", minutes(2))
    shell.accept("alice", "raise 3", minutes(3))
    shell.accept("bob", "match", minutes(4))
    shell.accept("bob", "terminate", minutes(5))
    assert shell.refuse("bob", "terminate", minutes(6)).rule == "GH-16"
    shell.accept("alice", "play 5H", minutes(7))  # a new turn: bob's consent lapses
    shell.accept("alice", "terminate", minutes(8))
    assert shell.state.phase == "play" and shell.state.consents == ["alice"]
    shell.accept("bob", "terminate", minutes(9))
    assert shell.state.result == "terminated" and shell.state.winner is None
    assert (shell.has("alice"), shell.has("bob"), shell.pool_chips()) == (10, 10, 0)
    assert shell.held() == [] and len(shell.inventory("alice")) == 5


def test_help_lists_the_playable_cards_with_their_targets(help_is_valid_now) -> None:  # type: ignore[no-untyped-def]
    shell = two("10H KH 6H 7H 8H", "JC 3C 4C 9D", alice_inv="2D", bob_inv="2S")
    shell.accept("alice", "play 10H", minutes(20))
    lines = help_is_valid_now(shell, "bob", minutes(21))
    assert lines[0] == "play JC — Jack of Clubs: the next participant draws 1 (GH-15)"
    assert "play 9D — 9 of Diamonds (GH-13)" in lines
    assert "play 3C — 3 of Clubs (GH-13)" in lines  # black on red, non-special
    assert not any(line.startswith(("add", "ask", "give", "hand", "raise")) for line in lines)
    assert "(it is bob's turn; you can play on yours (GH-12))" in help_is_valid_now(
        shell, "alice", minutes(21))


def test_consents_to_terminate_do_not_carry_from_the_setup_into_the_betting() -> None:
    shell = MatchShell()
    shell.deal("alice", *"5H 6H 7H 8H".split())
    shell.deal("bob", *"2C 3C 4C 9D".split())
    shell.start(["alice", "bob"])
    shell.accept("alice", "terminate", minutes(1))  # in the setup
    shell.accept("alice", "hand 5H 6H 7H 8H", minutes(2))
    shell.accept("bob", "hand 2C 3C 4C 9D", minutes(3))  # the reveal: a new "turn"
    shell.accept("bob", "terminate", minutes(4))
    assert shell.state.phase == "betting" and shell.state.consents == ["bob"]
    shell.accept("alice", "terminate", minutes(5))
    assert shell.state.result == "terminated" and shell.held() == []


def test_forfeit_in_the_setup_is_leaving_and_cancels_below_two() -> None:
    shell = MatchShell()
    shell.deal("alice", *"5H 6H 7H 8H".split())
    shell.deal("bob", *"2C 3C 4C 9D".split())
    shell.start(["alice", "bob"])
    shell.accept("alice", "hand 5H 6H 7H 8H", minutes(1))
    shell.accept("alice", "forfeit", minutes(2))
    assert shell.state.result == "cancelled" and shell.state.winner is None
    assert shell.inventory("alice") == ["5H", "6H", "7H", "8H"]
    refused = shell.refuse("bob", "hand 2C 3C 4C 9D", minutes(3))
    assert refused.rule == "GH-16" and "is over" in refused.what


def test_equal_hands_are_ordered_by_the_fair_source_and_the_post_shows_it() -> None:
    shell = two("5H 6H 7H 8H", "2C 3C 4C 9D")  # 4 cards each: a tie (GH-12)
    assert shell.state.ties == [["alice", "bob"]]
    (draws,) = [data["draws"] for kind, data in shell.events if kind == "fair.draws"
                and any("GH-12" in d["purpose"] for d in data["draws"])]
    assert [d["purpose"] for d in draws] == ["GH-12 tie of 4-card hands"]
    # Fisher-Yates over 2: one draw below 2; 1 keeps [alice, bob], 0 swaps them.
    expected = ["alice", "bob"] if draws[0]["result"] == 1 else ["bob", "alice"]
    assert shell.state.order == expected
    body = shell.posts("play_began")[0].body
    assert "Tie: alice, bob hold as many cards; the fair source ordered them (GH-12, GH-40)." in body


@pytest.mark.parametrize("kind", [0, 1, 2])
def test_a_battle_winner_draws_one_of_the_three_rewards(kind: int) -> None:
    # The first seed (in a fixed order) whose first draw below 3 is ``kind``: the reward's.
    seed = next(s for s in (f"{i:064x}" for i in range(100))
                if FairSource(s).below(3) == kind)
    ctx = standalone_context(T0, game_id="h1-battle-1", server_seed=seed, scope="h1")
    reward, words = draw_reward(ctx, "alice")
    held = ctx.ledger.holdings(ctx.scope.player("alice"))
    assert held == reward  # exactly the reward, issued by the mint into the cycle
    if kind == 0:
        assert sum(reward.values()) == 3 and words.startswith("3 random cards: ")
    elif kind == 1:
        assert list(reward) == ["vertebrae"] and 5 <= reward["vertebrae"] <= 16
        assert words == f"{reward['vertebrae']} vertebrae"
    else:
        assert reward == {"chips": 2} and words == "2 chips"


def test_help_of_one_who_cannot_play_and_of_the_one_asked(help_is_valid_now) -> None:  # type: ignore[no-untyped-def]
    shell = two("5H 6H 7H 8H 9H", "KS QS JS AC", bob_inv="3D")
    shell.accept("alice", "play 5H", minutes(20))
    lines = help_is_valid_now(shell, "bob", minutes(21))
    assert not any(line.startswith(("play", "ask")) for line in lines)
    assert lines[0] == "add 3D — add 3 of Diamonds to your hand; your turn ends (GH-14)"
    shell.accept("bob", "add 3D", minutes(21))
    shell.accept("alice", "play 6H", minutes(22))  # bob: nothing playable on 6H, nothing to add
    lines = help_is_valid_now(shell, "bob", minutes(23))
    assert lines[0] == ("ask alice — only when you can neither play nor add: that participant "
                        "gives you a card of their hand; participants: alice (GH-14)")
    shell.accept("bob", "ask alice", minutes(23))
    lines = help_is_valid_now(shell, "alice", minutes(24))
    assert lines[0] == "(it is bob's turn; you can play on yours (GH-12))"
    assert lines[1:4] == ["give 7H — give 7 of Hearts to bob (GH-14)",
                         "give 8H — give 8 of Hearts to bob (GH-14)",
                         "give 9H — give 9 of Hearts to bob (GH-14)"]


def test_a_named_card_takes_the_plain_copy_first() -> None:
    shell = MatchShell()
    shell.deal("alice", "7H", "holo 7H", "8H", "9S", "10C")
    shell.deal("bob", "2H", "3H", "4S", "KS")
    shell.start(["alice", "bob"])
    shell.accept("alice", "hand 7H 8H 9S 10C", minutes(1))
    assert shell.hand("alice")[0] == "7H" and shell.inventory("alice") == ["holo 7H"]
    shell.accept("alice", "hand holo 7H 8H 9S 10C", minutes(2))
    assert shell.hand("alice")[0] == "holo 7H" and shell.inventory("alice") == ["7H"]


def test_a_giver_whose_last_card_is_given_wins() -> None:
    shell = two("5H 6H 7H KD QD", "4C 3C 2C 10C")
    for i, (who, card) in enumerate([("alice", "5H"), ("bob", "4C"), ("alice", "6H"),
                                      ("bob", "3C"), ("alice", "7H"), ("bob", "2C")]):
        shell.accept(who, f"play {card}", minutes(20 + i))
    # alice holds KD and QD, neither playable on 2C, and nothing outside the match.
    assert shell.refuse("alice", "add KD", minutes(30)).rule == "GH-14"
    shell.accept("alice", "ask bob", minutes(30))
    shell.accept("bob", "give 10C", minutes(31))
    assert shell.state.winner == "bob" and shell.held() == []
    assert shell.inventory("alice") == ["5H", "6H", "7H", "KD", "QD"]


def test_termination_returns_a_forfeiters_stake_too() -> None:
    shell = betting("alice", "bob", "carol")
    shell.accept("alice", "raise 2", minutes(10))
    shell.accept("bob", "match", minutes(11))
    shell.accept("carol", "match", minutes(12))
    assert shell.state.phase == "play" and shell.pool_chips() == 6
    shell.accept("bob", "forfeit", minutes(13))  # his 2 stay in the pool
    assert shell.pool_chips() == 6 and shell.has("bob") == 8
    shell.accept("alice", "terminate", minutes(14))
    shell.accept("carol", "terminate", minutes(15))
    assert shell.state.result == "terminated"
    assert (shell.has("alice"), shell.has("bob"), shell.has("carol")) == (10, 10, 10)
