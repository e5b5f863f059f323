"""The Gilded Hall's economy (RULES GH-1 to GH-8) driven through a small simulated shell.

Worked examples give their arithmetic in comments; the property at the end runs random
sequences of economy actions and checks that every item and unit of currency is accounted
for (per item: players + house + void = what the mint issued, i.e. ledger totals zero) and
that no balance but the mint's goes negative.
"""

from __future__ import annotations

from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from dealer.cards import CATALOGUE
from dealer.fairness import commitment, verify_draw
from dealer.games import rules_for
from dealer.games.base import PostDraft, Rejected
from dealer.games.hall import Hall
from dealer.games.hall.state import HallSettings
from dealer.ledger import CHIPS, MINT, VERTEBRAE, Scope, player
from dealer.testing import RulesShell, standalone_context

UTC = timezone.utc
T0 = datetime(2026, 12, 1, 10, 0, tzinfo=UTC)
DAY = timedelta(hours=24)
GAME = "hall1"
CYCLE = Scope(GAME)  # GH-1: the cycle's accounts (hall1/player:alice, hall1/house ...)


class Shell(RulesShell):
    """What the daemon does around the Hall's rules, in memory (see RulesShell).

    Each step's ledger holds only what the real shell loads (the members, the actor, house,
    void and the game's pool); the books keep every account, so the mint's balance shows
    what it issued. Every post is rendered, so each test also checks that its templates
    render. Here :meth:`send` raises :class:`Rejected` and returns the drafts it posted.
    """

    def __init__(self, players=(), holdings=None, start=T0, now=None, seed="5e" * 32,
                 load_players_only=True, **options):
        super().__init__(Hall(), seed=seed, game_id=GAME, load_players_only=load_players_only)
        for (name, item), amount in (holdings or {}).items():
            self.grant(name, item, amount)
        self.open(players, HallSettings(**options), start, now or start)

    @property
    def books(self) -> dict[tuple[str, str], int]:
        return self.balances

    @property
    def rendered(self) -> list[str]:
        return [sent.body for sent in self.sent]

    def cards(self, name: str) -> Counter:
        return Counter({item: n for (acct, item), n in self.books.items()
                        if acct == self.account(name) and item.startswith("card:") and n})

    def card_total(self, name: str) -> int:
        return sum(self.cards(name).values())

    advance = RulesShell.fire_due
    refused = RulesShell.refuse

    def send(self, actor: str, line: str, at: datetime) -> list[PostDraft]:  # type: ignore
        """One message line from ``actor`` sent at ``at``; returns the posts it produced."""
        return [sent.draft for sent in self.step(actor, line, at)]

    def totals_zero(self) -> None:
        sums: Counter = Counter()
        for (account, item), amount in self.books.items():
            sums[item] += amount
            assert amount >= 0 or account == MINT, (account, item, amount)
        assert all(v == 0 for v in sums.values()), sums


def at(hours: float) -> datetime:
    return T0 + timedelta(hours=hours)


def independent_cards(server_seed: str, counter: int, holo_flags: list[int | None]):
    """Recompute random cards straight from the HMAC formula (not through FairSource).

    Each entry of ``holo_flags`` is a holo percentage (two draws: row of 54, then
    ``below(100) < percent``) or None for a card holographic by rule (one draw).
    Returns the ledger items and the next counter.
    """
    from dealer.fairness import client_hash, uniform

    client = client_hash([])
    items = []
    for percent in holo_flags:
        row, counter = uniform(server_seed, client, counter, 54)
        if percent is None:
            holo = True
        else:
            roll, counter = uniform(server_seed, client, counter, 100)
            holo = roll < percent
        items.append(CATALOGUE[row].item(holo))
    return items, counter


def new_cards(before: Counter, after: Counter) -> Counter:
    return after - before


SEED = "5e" * 32


# -- opening, phases, activity (GH-6, GH-40) ------------------------------------------------


def test_registered_as_hall_with_its_defaults():
    rules = rules_for("hall")
    assert isinstance(rules, Hall)
    assert (rules.kind, rules.title, rules.default_channel, rules.open_to_all) == (
        "hall", "The Gilded Hall", "#game-actions", True)
    defaults = HallSettings()
    assert (defaults.phase_length, defaults.holo_percent, defaults.croupier_holo_percent,
            defaults.victory_chips, defaults.starting_chips, defaults.starting_vertebrae) == (
        DAY, 5, 10, 25, 0, 0)
    assert HallSettings.model_validate({"phase_length": "12h"}).phase_length == timedelta(hours=12)
    assert HallSettings(starting_chips=24).starting_chips == 24  # 24 < 25
    for bad in ({"phase_length": "0s"}, {"holo_percent": 101}, {"victory_chips": 0},
                {"starting_chips": -1}, {"starting_vertebrae": -1}, {"starting_chips": 25},
                {"starting_chips": 3, "victory_chips": 3}):
        with pytest.raises(ValueError):
            HallSettings.model_validate(bad)


def test_opening_now_starts_phase_1_and_publishes_the_commitment():
    shell = Shell(["alice", "bob"])
    summary = shell.rules.summary(shell.state)
    assert (summary.status, summary.players, summary.winner) == ("running", ["alice", "bob"], None)
    assert summary.detail["phase"] == 1
    assert shell.deadlines == {"phase-2": T0 + DAY}
    (opening,) = [sent.draft for sent in shell.sent]
    assert opening.recipient is None and opening.channel == "#game-actions"
    assert commitment(SEED) in shell.rendered[0]


def test_future_opening_is_pending_until_phase_1_deadline():
    opens = at(5)
    shell = Shell(["alice"], start=opens, now=T0)
    assert shell.rules.summary(shell.state).status == "pending"
    assert shell.deadlines == {"phase-1": opens}
    assert "opens at 2026-12-01 15:00 UTC" in shell.rendered[0]
    refusal = shell.refused("bob", "join", at(1))
    assert "opens at 2026-12-01 15:00 UTC" in refusal.what
    shell.advance(opens)
    assert shell.rules.summary(shell.state).status == "running"
    assert shell.deadlines == {"phase-2": opens + DAY}  # 15:00 + 24 h
    shell.send("bob", "join", at(6))
    assert shell.rules.summary(shell.state).players == ["alice", "bob"]


def test_a_message_sent_at_the_opening_instant_counts():
    # A message sent at the start counts, in every game: phase 1 begins, then bob joins.
    opens = at(5)
    shell = Shell(["alice"], start=opens, now=T0)
    shell.send("bob", "join", opens)
    assert shell.rules.summary(shell.state).players == ["alice", "bob"]
    assert shell.state.phase == 1 and shell.state.phase_started_at == opens
    assert shell.deadlines == {"phase-2": opens + DAY}
    assert len(shell.posts("opening")) == 2  # "opens soon", then "is open"


def test_opening_time_in_the_past_runs_phase_1_from_it():
    shell = Shell(["alice"], {("alice", VERTEBRAE): 5}, start=T0, now=at(2))
    assert shell.state.phase_started_at == T0 and shell.deadlines == {"phase-2": T0 + DAY}
    shell.send("alice", "buy random card", at(1))  # sent after the opening: it counts
    assert shell.has("alice", VERTEBRAE) == 0


def test_settings_may_come_as_a_plain_mapping():
    ctx = standalone_context(T0)
    state = Hall().start(ctx, [], {"phase_length": "12h", "victory_chips": 10}, T0)
    assert state.settings == HallSettings(phase_length=timedelta(hours=12), victory_chips=10)
    assert ctx.deadlines == {"phase-2": T0 + timedelta(hours=12)}


def test_duplicate_players_at_creation_are_refused():
    with pytest.raises(Rejected):
        Hall().start(standalone_context(T0), ["alice", "Alice"], HallSettings(), T0)


def test_message_sent_in_a_closed_phase_is_too_late():
    shell = Shell(["alice"], {("alice", VERTEBRAE): 10})
    shell.advance(at(24))  # phase 2 begins at 10:00 on 2 December
    refusal = shell.refused("alice", "buy random card", at(23.5))
    assert "too late" in refusal.what and "phase 1" in refusal.what
    assert "2026-12-02 10:00 UTC" in refusal.what and refusal.rule == "GH-6"


def test_a_message_older_than_the_previous_phase_is_too_late_without_its_number():
    # The cycle keeps the starts of the current and previous phases only (its state must
    # not grow with its age): a message of phase 1 read in phase 3 is told so, unnumbered.
    shell = Shell(["alice"], {("alice", VERTEBRAE): 10})
    shell.advance(at(48))  # phase 3 begins at 10:00 on 3 December
    assert shell.refused("alice", "buy random card", at(23.5)).what == (
        "too late: sent at 2026-12-02 09:30 UTC, before phase 2 began (2026-12-02 10:00 UTC); "
        "phase 3 is running now, send it again"
    )
    assert shell.refused("alice", "buy random card", at(24.5)).what == (
        "too late: sent at 2026-12-02 10:30 UTC for phase 2, which ended at 2026-12-03 10:00 "
        "UTC; phase 3 is running now, send it again"
    )
    assert "before the Hall opened" in shell.refused("alice", "join", at(-1)).what


def test_the_state_does_not_grow_with_the_age_of_the_cycle():
    # The same traffic every phase: a purchase, an offer declined, an offer that lapses, a
    # gift. Closed offers and past phases leave the state (they stay in the history).
    shell = Shell(["alice", "bob"], {("alice", VERTEBRAE): 10_000, ("bob", VERTEBRAE): 10_000})
    sizes = {}
    for phase in range(1, 41):
        began = at(24 * (phase - 1))
        offer = shell.state.next_offer
        shell.send("alice", "buy random card", began + timedelta(hours=1))
        shell.send("alice", "offer 2 vertebrae to bob for 1 vertebra", began + timedelta(hours=2))
        shell.send("bob", f"decline offer {offer}", began + timedelta(hours=3))
        shell.send("bob", "offer 1 vertebra to alice for 2 vertebrae", began + timedelta(hours=4))
        shell.send("bob", "gift alice", began + timedelta(hours=5))
        shell.advance(began + DAY)
        sizes[phase] = len(shell.state.model_dump_json())
    # Only the numbers' digits grow: phase 9 -> 40, offer ids 17 -> 80, timestamps alike.
    assert sizes[40] - sizes[9] <= 4, sizes
    assert len(shell.events) > 40 * 7  # the history keeps everything


def test_activity_inactive_after_a_phase_without_action():
    # alice was joined by the admin and never acts; bob sends `join`; carol joins and acts
    # in phase 2 only. `inventory` and refused commands are not actions (GH-6, GH-7).
    shell = Shell(["alice"])
    shell.send("alice", "inventory", at(1))
    shell.refused("alice", "gift alice", at(1))
    shell.send("bob", "join", at(2))
    shell.advance(at(24))
    assert shell.rules.summary(shell.state).detail["inactive"] == ["alice"]
    assert "Inactive in phase 2 (no action in phase 1, GH-6): alice." in shell.rendered[-1]
    shell.send("carol", "join", at(30))  # joining in phase 2: active in phase 2
    shell.send("alice", "gift bob", at(31))
    shell.advance(at(48))
    # Phase 2: alice and carol acted, bob did not.
    assert shell.rules.summary(shell.state).detail["inactive"] == ["bob"]


def test_unknown_or_stale_deadlines_change_nothing():
    shell = Shell(["alice"])
    ctx = shell.context(at(1))
    state = shell.rules.on_deadline(ctx, shell.state, "phase-7")
    assert state == shell.state and not ctx.posts and not ctx.ledger.staged


# -- packs (GH-4) --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "pack, holo_flags",
    [
        ("handy", [5, 5, 5]),  # 3 random cards at 5 %
        ("deck", [5] * 5),  # 5 random cards at 5 %
        ("legendary", [5] * 5 + [None, None]),  # 5 at 5 % + 2 holographic by rule
    ],
)
def test_opening_a_pack_discards_it_and_grants_its_cards(pack, holo_flags):
    shell = Shell(["alice"], {("alice", f"pack:{pack}"): 2})
    posts = shell.send("alice", f"open {pack} pack", at(1))
    # 2 packs - 1 opened = 1 left; the opened one is in void (discarded).
    assert shell.has("alice", f"pack:{pack}") == 1
    assert shell.books[(CYCLE.void, f"pack:{pack}")] == 1
    expected, counter = independent_cards(SEED, 0, holo_flags)
    assert shell.cards("alice") == Counter(expected)
    assert shell.rng.counter == counter
    assert shell.card_total("alice") == len(holo_flags)
    if pack == "legendary":
        assert sum(1 for item in shell.cards("alice").elements() if item.endswith(":holo")) >= 2
    assert [p.recipient for p in posts] == ["alice"]
    assert shell.state.log[-1].kind == "opened"
    shell.totals_zero()


def test_opening_a_pack_you_do_not_hold_is_refused():
    shell = Shell(["alice"], {("alice", "pack:handy"): 1})
    refusal = shell.refused("alice", "open deck pack", at(1))
    assert refusal.what == "you hold no Deck Pack" and refusal.rule == "GH-4"


# -- the Croupier (GH-5) -------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, paid, item, amount",
    [
        ("buy random card", 5, None, 1),
        ("buy handy pack", 12, "pack:handy", 1),
        ("buy deck pack", 18, "pack:deck", 1),
        ("buy legendary pack", 50, "pack:legendary", 1),
        ("buy chip", 25, CHIPS, 1),
        ("buy chip 3", 75, CHIPS, 3),  # 3 x 25
        ("buy 2 deck packs", 36, "pack:deck", 2),  # 2 x 18
    ],
)
def test_every_croupier_item_costs_its_price(line, paid, item, amount):
    shell = Shell(["alice"], {("alice", VERTEBRAE): 80})
    shell.send("alice", line, at(1))
    assert shell.has("alice", VERTEBRAE) == 80 - paid
    assert shell.books[(CYCLE.house, VERTEBRAE)] == paid  # the Croupier is the house
    if item is None:
        expected, _ = independent_cards(SEED, 0, [10])  # GH-5: 10 % holographic
        assert shell.cards("alice") == Counter(expected)
    else:
        assert shell.has("alice", item) == amount
        assert shell.books[(MINT, item)] == -amount  # issued by the mint, not by the house
    shell.totals_zero()


def test_croupier_card_uses_the_croupier_holo_setting():
    shell = Shell(["alice"], {("alice", VERTEBRAE): 50}, croupier_holo_percent=100, holo_percent=0)
    shell.send("alice", "buy 10 random cards", at(1))  # 10 x 5 = 50 vertebrae
    cards = shell.cards("alice")
    assert sum(cards.values()) == 10 and all(item.endswith(":holo") for item in cards)
    assert shell.has("alice", VERTEBRAE) == 0


def test_buying_without_enough_vertebrae_is_refused():
    shell = Shell(["alice"], {("alice", VERTEBRAE): 24})
    refusal = shell.refused("alice", "buy chip", at(1))
    assert refusal.what == "1 chip is 25 vertebrae and you have 24" and refusal.rule == "GH-5"
    refusal = shell.refused("alice", "buy 5 random cards", at(1))  # 5 x 5 = 25 > 24
    assert refusal.what == "5 random cards are 25 vertebrae and you have 24"


def test_a_refused_purchase_offers_only_what_the_vertebrae_pay_for():
    shell = Shell(["alice"], {("alice", VERTEBRAE): 24})
    refusal = shell.refused("alice", "buy chip", at(1))  # 25 > 24
    # 24 vertebrae pay for a random card (5), a Handy Pack (12), a Deck Pack (18); not for a
    # Legendary Pack (50) or a chip (25).
    assert refusal.allowed == [
        "buy random card — 5 vertebrae (GH-5)",
        "buy handy pack — 12 vertebrae (GH-5)",
        "buy deck pack — 18 vertebrae (GH-5)",
        "(with 24 vertebrae you cannot buy: legendary pack (50), chip (25))",
    ]
    refusal = shell.refused("alice", "buy 5 random cards", at(1))  # 5 x 5 = 25 > 24
    assert refusal.allowed[0] == ("buy 4 random cards — 20 vertebrae, the most you can pay for "
                                  "(GH-5)")  # floor(24 / 5) = 4, 4 x 5 = 20
    shell.send("alice", refusal.allowed[0].split(" — ")[0], at(2))  # the Croupier accepts it
    assert shell.has("alice", VERTEBRAE) == 24 - 20


def test_with_too_few_vertebrae_for_anything_no_buy_line_is_offered():
    shell = Shell(["alice"], {("alice", VERTEBRAE): 4})
    refusal = shell.refused("alice", "buy random card", at(1))
    assert refusal.what == "a random card is 5 vertebrae and you have 4"
    assert not any(line.startswith("buy") for line in refusal.allowed)
    assert refusal.allowed[-1] == ("(with 4 vertebrae you cannot buy: random card (5), handy pack "
                                   "(12), deck pack (18), legendary pack (50), chip (25))")
    assert not any(line.startswith("buy") for line in shell.rules.help(shell.state, "alice"))


def test_help_prices_what_a_member_can_buy_now():
    shell = Shell(["alice"], {("alice", VERTEBRAE): 30})
    buy_lines = [line for line in shell.rules.help(shell.state, "alice") if "buy" in line]
    assert buy_lines == [
        "buy random card — 5 vertebrae (GH-5)",
        "buy handy pack — 12 vertebrae (GH-5)",
        "buy deck pack — 18 vertebrae (GH-5)",
        "buy chip — 25 vertebrae (GH-5)",
        "(with 30 vertebrae you cannot buy: legendary pack (50))",
    ]
    shell.send("alice", "buy deck pack", at(1))  # 30 - 18 = 12 left
    buy_lines = [line for line in shell.rules.help(shell.state, "alice") if "buy" in line]
    assert buy_lines == [
        "buy random card — 5 vertebrae (GH-5)",
        "buy handy pack — 12 vertebrae (GH-5)",
        "(with 12 vertebrae you cannot buy: deck pack (18), legendary pack (50), chip (25))",
    ]


def test_non_members_must_join_before_acting():
    shell = Shell(["alice"], {("bob", VERTEBRAE): 30})
    refusal = shell.refused("bob", "buy chip", at(1))
    assert "not joined" in refusal.what and refusal.allowed[0].startswith("join")
    shell.send("bob", "inventory", at(1))  # looking is allowed to anyone
    assert "send `join` to take part" in shell.rendered[-1]


# -- trades (GH-1) -------------------------------------------------------------------------


def trading_hall():
    return Shell(
        ["alice", "bob", "carol"],
        {("alice", CHIPS): 5, ("alice", "card:7H"): 1, ("bob", "card:AS"): 1,
         ("bob", VERTEBRAE): 10, ("carol", "card:AS:holo"): 1, ("carol", CHIPS): 3},
    )


def test_accepted_offer_swaps_both_sides():
    shell = trading_hall()
    posts = shell.send("alice", "offer 2 chips and 7H to bob for AS and 4 vertebrae", at(1))
    assert [p.recipient for p in posts] == ["alice", "bob"]
    assert shell.has("alice", CHIPS) == 5  # an offer holds nothing back
    posts = shell.send("bob", "accept offer 1", at(2))
    assert {p.recipient for p in posts} == {"alice", "bob"}
    # alice: 5 - 2 = 3 chips, gave 7H, got AS and 4 vertebrae; bob: 2 chips, 7H, 10 - 4 = 6.
    assert (shell.has("alice", CHIPS), shell.has("alice", "card:7H"), shell.has("alice", "card:AS"),
            shell.has("alice", VERTEBRAE)) == (3, 0, 1, 4)
    assert (shell.has("bob", CHIPS), shell.has("bob", "card:7H"), shell.has("bob", "card:AS"),
            shell.has("bob", VERTEBRAE)) == (2, 1, 0, 6)
    assert shell.state.offers == []
    shell.advance(at(24))
    assert "Trade 1: alice gave 2 chips, 7 of Hearts to bob for 4 vertebrae, Ace of Spades" \
        in shell.rendered[-1]
    shell.totals_zero()


def test_two_offers_for_the_same_card_second_acceptance_fails_and_closes_the_offer():
    shell = trading_hall()
    shell.send("bob", "offer AS to alice for 2 chips", at(1))  # offer 1
    shell.send("bob", "offer AS to carol for 1 chip", at(1))  # offer 2
    shell.send("alice", "accept offer 1", at(2))
    posts = shell.send("carol", "accept offer 2", at(3))
    # Nothing moved: carol keeps her 3 chips, bob has alice's 2, alice has the Ace.
    assert (shell.has("carol", CHIPS), shell.has("bob", CHIPS), shell.has("alice", "card:AS")) == (
        3, 2, 1)
    # GH-1 (interpretation): the failed acceptance answered the offer, which is now closed.
    assert shell.state.offers == []
    assert {p.recipient for p in posts} == {"carol", "bob"}
    carol_reply = shell.rendered[-2]
    assert carol_reply.startswith("Offer 2 (bob gives Ace of Spades to carol for 1 chip) could "
                                  "not be completed when you accepted it: bob does not hold Ace "
                                  "of Spades (it has 0). Nothing moved, and the offer is now closed")
    assert "you do not hold Ace of Spades (you have 0)" in shell.rendered[-1]  # bob's notice
    assert not any("accept offer" in line for line in shell.rules.help(shell.state, "carol"))
    refusal = shell.refused("carol", "accept offer 2", at(4))
    assert refusal.what == "there is no open offer 2"
    shell.totals_zero()


def test_after_a_failed_acceptance_the_summary_says_what_happened_to_the_offer():
    shell = trading_hall()
    shell.send("bob", "offer AS to carol for 1 chip", at(1))  # offer 1
    shell.send("bob", "offer AS to alice for nothing", at(1))  # offer 2
    shell.send("alice", "accept offer 2", at(2))  # bob's Ace goes to alice
    shell.send("carol", "accept offer 1", at(3))  # fails: bob holds no Ace now
    shell.send("alice", "offer 7H to bob for nothing", at(4))  # offer 3, never answered
    shell.advance(at(24))
    summary = shell.rendered[-1]
    assert ("- Offer 1 from bob to carol (Ace of Spades for 1 chip) failed when carol accepted "
            "it: bob does not hold Ace of Spades (it has 0). Nothing moved and the offer closed "
            "(GH-1).") in summary
    assert "Offer 1 from bob to carol (Ace of Spades for 1 chip) lapsed" not in summary
    assert ("Offer 3 from alice to bob (7 of Hearts for nothing) lapsed unanswered (GH-1)."
            in summary)
    # carol's failed acceptance changed the game (it closed the offer): an action (GH-6).
    assert "Acted in phase 1: alice, bob, carol." in summary


def test_acceptor_must_still_hold_its_side_and_holo_is_told_apart():
    shell = trading_hall()
    shell.send("alice", "offer 7H to carol for AS", at(1))
    shell.send("carol", "accept offer 1", at(2))
    assert ("you do not hold Ace of Spades (you have 0); the holographic one is written 'holo AS'"
            in shell.rendered[-2])  # carol's reply
    assert "carol does not hold Ace of Spades (it has 0)" in shell.rendered[-1]  # alice's notice
    assert shell.has("alice", "card:7H") == 1 and shell.state.offers == []


def test_withdraw_and_decline_close_an_offer_without_moving_anything():
    shell = trading_hall()
    shell.send("alice", "offer 1 chip to bob for nothing", at(1))
    shell.send("alice", "offer 1 chip to carol for nothing", at(1))
    shell.refused("bob", "withdraw offer 1", at(2))  # only the offerer withdraws
    shell.refused("carol", "accept offer 1", at(2))  # only the target accepts
    shell.send("alice", "withdraw offer 1", at(2))
    shell.send("carol", "decline offer 2", at(2))
    assert shell.state.offers == [] and shell.has("alice", CHIPS) == 5
    assert "there is no open offer 1" in shell.refused("bob", "accept offer 1", at(3)).what
    assert any("carol declined offer 2" in text for text in shell.rendered)


def test_offers_expire_at_the_end_of_the_phase():
    shell = trading_hall()
    shell.send("alice", "offer 7H to bob for AS", at(1))
    shell.advance(at(24))
    assert shell.state.offers == []
    assert "Offer 1 from alice to bob (7 of Hearts for Ace of Spades) lapsed unanswered" \
        in shell.rendered[-1]
    shell.refused("bob", "accept offer 1", at(25))
    assert shell.has("bob", "card:AS") == 1


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("offer 1 chip to alice for AS", "you cannot trade with yourself"),
        ("offer 1 chip to dave for AS", "dave is not in the Hall"),
        ("offer 6 chips to bob for AS", "you do not hold 6 chips (you have 5)"),
        ("offer KS to bob for AS", "you do not hold King of Spades (you have 0)"),
        ("offer nothing to bob for nothing", "nothing for nothing"),
        ("offer 2 blorps to bob for AS", "'2 blorps' is not an item"),
        ("offer 7H to bob for the moon", "'the moon' is not an item"),
    ],
)
def test_bad_offers_are_refused_with_a_clear_error(line, fragment):
    shell = trading_hall()
    refusal = shell.refused("alice", line, at(1))
    assert fragment in refusal.what and refusal.rule == "GH-1"


# -- gifts (GH-7) --------------------------------------------------------------------------


def five_cards(name):
    return {(name, f"card:{code}"): 1 for code in ("2C", "3C", "4C", "5C", "6C")}


def test_gift_to_an_active_receiver_with_five_cards_is_one_card():
    shell = Shell(["alice", "bob"], five_cards("bob"))
    before = shell.cards("bob")
    shell.send("alice", "gift bob", at(1))
    expected, _ = independent_cards(SEED, 0, [5])  # 1 card, no extras
    assert new_cards(before, shell.cards("bob")) == Counter(expected)
    assert shell.card_total("alice") == 0 and shell.state.bonuses == []


def test_gift_to_a_receiver_with_fewer_than_five_cards_adds_one():
    shell = Shell(["alice", "bob"], {("bob", "card:2C"): 4})
    shell.send("alice", "gift bob", at(1))
    assert shell.card_total("bob") == 4 + 2  # 1 + 1 because 4 < 5
    assert shell.rendered[-1].startswith("alice gifted you 2 random cards")
    assert "You held fewer than 5 cards, so you got 1 more." in shell.rendered[-1]
    assert "You were inactive" not in shell.rendered[-1]


def test_gift_to_an_inactive_receiver_who_then_acts_pays_the_giver_once():
    shell = Shell(["alice", "bob"], {**five_cards("bob"), ("bob", VERTEBRAE): 10})
    shell.send("alice", "inventory", at(1))
    shell.advance(at(24))  # bob took no action in phase 1: inactive in phase 2
    assert shell.state.member("bob").inactive
    shell.send("alice", "gift bob", at(25))
    assert shell.card_total("bob") == 5 + 3  # 1 + 2 as inactive; 5 cards is not fewer than 5
    # Players are "they" in every post, never "it".
    assert "bob is inactive this phase, so they got 2 more; if they take an action" in \
        shell.rendered[-2] + shell.rendered[-1]
    assert shell.card_total("alice") == 0
    shell.send("bob", "inventory", at(26))  # not an action: nothing for alice yet
    assert shell.card_total("alice") == 0
    shell.send("bob", "buy random card", at(27))  # an action: alice gets 1 card
    assert shell.card_total("alice") == 1
    assert shell.state.member("bob").inactive  # inactivity is fixed for the whole phase
    shell.send("bob", "buy random card", at(28))  # once per gift
    assert shell.card_total("alice") == 1
    shell.advance(at(48))
    assert "bob acted after alice's gift, so alice received" in shell.rendered[-1]
    shell.totals_zero()


def test_inactive_receiver_with_few_cards_gets_four_and_bonus_lapses_at_phase_end():
    shell = Shell(["alice", "bob"], {("alice", VERTEBRAE): 5})
    shell.send("alice", "inventory", at(1))
    shell.advance(at(24))
    shell.send("alice", "gift bob", at(25))
    assert shell.card_total("bob") == 4  # 1 + 2 as inactive + 1 for 0 < 5 cards
    shell.advance(at(48))  # bob did not act in phase 2: the giver's card lapses
    assert shell.state.bonuses == []
    shell.send("bob", "gift alice", at(49))
    # alice: 0 cards, active (she gifted in phase 2) -> 1 + 1 = 2 cards; no bonus card.
    assert shell.card_total("alice") == 2


def test_each_giver_of_an_inactive_receiver_gets_its_card():
    shell = Shell(["alice", "bob", "carol"], five_cards("carol"))
    shell.send("alice", "inventory", at(1))
    shell.send("alice", "gift bob", at(2))
    shell.send("bob", "gift alice", at(3))
    shell.advance(at(24))  # carol did nothing in phase 1
    shell.send("alice", "gift carol", at(25))
    shell.send("bob", "gift carol", at(26))
    # carol: 5 + (1 + 2) + (1 + 2) = 11 cards (never fewer than 5 before a gift)
    assert shell.card_total("carol") == 11
    alice, bob = shell.card_total("alice"), shell.card_total("bob")
    shell.send("carol", "gift alice", at(27))
    # carol's action pays both givers one card each; alice also gets carol's gift:
    # alice had 2 cards (bob's gift: 1 + 1 for fewer than 5) -> 2 + 1 bonus + (1 + 1) gift.
    assert (alice, shell.card_total("alice")) == (2, 2 + 1 + 2)
    assert shell.card_total("bob") == bob + 1


def test_gifting_once_per_phase_and_refusals():
    shell = Shell(["alice", "bob", "carol"])
    shell.send("alice", "gift bob", at(1))
    refusal = shell.refused("alice", "gift carol", at(2))
    assert refusal.what == "you already gifted bob in phase 1; one gift per phase"
    assert refusal.rule == "GH-7"
    assert "cannot gift yourself" in shell.refused("bob", "gift BOB", at(2)).what
    assert "dave is not in the Hall" in shell.refused("bob", "gift dave", at(2)).what
    shell.advance(at(24))
    shell.send("alice", "gift carol", at(25))  # a new phase, a new gift
    assert shell.state.member("alice").gifted == "carol"


# -- victory (GH-8) ------------------------------------------------------------------------


def test_victory_at_25_chips_closes_the_hall():
    shell = Shell(["alice", "bob"], {("alice", CHIPS): 24, ("alice", VERTEBRAE): 30})
    shell.send("bob", "offer nothing to alice for 1 chip", at(1))
    shell.send("alice", "buy chip", at(2))  # 24 + 1 = 25 >= 25: alice wins
    summary = shell.rules.summary(shell.state)
    assert (summary.status, summary.winner, summary.scores) == (
        "finished", "alice", {"alice": 25, "bob": 0})
    assert shell.deadlines == {} and shell.state.offers == []
    assert "alice wins the cycle" in shell.rendered[-1]
    assert SEED in shell.rendered[-1]  # the last phase's seed is revealed
    refusal = shell.refused("bob", "gift alice", at(3))
    assert refusal.rule == "GH-8" and "alice won" in refusal.what


def test_victory_threshold_is_a_setting_and_24_chips_is_not_enough():
    shell = Shell(["alice"], {("alice", VERTEBRAE): 50}, victory_chips=2)
    shell.send("alice", "buy chip", at(1))
    assert shell.rules.summary(shell.state).status == "running"  # 1 < 2
    shell.send("alice", "buy chip", at(2))
    assert shell.rules.summary(shell.state).winner == "alice"  # 2 >= 2


def test_tie_at_victory_goes_to_most_chips_then_earliest_member():
    shell = Shell(["alice", "bob", "carol"])
    # Written straight into the books: no step makes two members qualify at once (a grant
    # --game is a step and checks victory at once), so this only tests the guard.
    for name in ("alice", "bob", "carol"):
        shell.grant(name, CHIPS, 30)
    shell.grant("carol", CHIPS, 1)
    shell.advance(at(24))
    assert shell.rules.summary(shell.state).winner == "carol"  # 31 > 30
    shell = Shell(["alice", "bob"])
    shell.grant("bob", CHIPS, 25)
    shell.grant("alice", CHIPS, 25)
    shell.advance(at(24))
    assert shell.rules.summary(shell.state).winner == "alice"  # equal: alice joined first


# -- a cycle's own inventories (GH-1) ---------------------------------------------------------


def test_chips_in_the_wallet_never_win_a_cycle():
    # alice won 30 chips at roulette: they are in her wallet (player:alice), not in the cycle.
    for production_loading in (True, False):  # False: the step even sees every wallet
        shell = Shell(["bob"], load_players_only=production_loading)
        shell.grant("alice", CHIPS, 30, wallet=True)
        shell.grant("alice", VERTEBRAE, 60, wallet=True)
        shell.send("alice", "join", at(1))
        summary = shell.rules.summary(shell.state)
        assert (summary.status, summary.winner, summary.scores) == (
            "running", None, {"bob": 0, "alice": 0})
        assert shell.has("alice", CHIPS) == 0 and shell.has("alice", CHIPS, wallet=True) == 30
        refusal = shell.refused("alice", "buy chip", at(2))  # the wallet's vertebrae neither
        assert refusal.what == "1 chip is 25 vertebrae and you have 0"
        shell.send("alice", "inventory", at(2))
        assert "- Chips: 0\n- Vertebrae: 0\n" in shell.rendered[-1]
        assert shell.has("alice", VERTEBRAE, wallet=True) == 60


def test_starting_items_are_issued_when_a_member_joins():
    shell = Shell(["alice"], starting_chips=3, starting_vertebrae=20, start=at(2), now=T0)
    assert shell.has("alice", CHIPS) == 0  # listed at creation: joins at the opening
    shell.advance(at(2))
    assert (shell.has("alice", CHIPS), shell.has("alice", VERTEBRAE)) == (3, 20)
    assert "each member starts with 3 chips and 20 vertebrae" in shell.rendered[-1]
    (welcome,) = shell.send("bob", "join", at(3))
    assert (shell.has("bob", CHIPS), shell.has("bob", VERTEBRAE)) == (3, 20)
    assert "it starts with 3 chips and 20 vertebrae" in shell.rendered[-1]
    # Two members x 3 chips and 20 vertebrae, issued by the mint.
    assert (shell.books[(MINT, CHIPS)], shell.books[(MINT, VERTEBRAE)]) == (-6, -40)
    shell.send("bob", "buy random card", at(4))  # 20 - 5 = 15
    assert shell.has("bob", VERTEBRAE) == 15
    shell.refused("bob", "join", at(5))  # joining twice gives nothing twice
    assert shell.has("bob", CHIPS) == 3
    shell.advance(at(26))
    assert "- bob joined the Hall with the starting 3 chips, 20 vertebrae." in shell.rendered[-1]
    shell.totals_zero()


def test_no_starting_items_by_default():
    shell = Shell(["alice"])
    shell.send("bob", "join", at(1))
    assert "it starts with nothing" in shell.rendered[-1]
    assert shell.books == {}


def grant(shell: Shell, name: str, item: str, amount: int, when: datetime) -> list[str]:
    """``dealer grant NAME ITEM N --game hall1`` as the registry runs it: a step of the game."""
    return [sent.body for sent in shell.grant_step(name, item, amount, when)]


def test_a_grant_into_the_cycle_wins_at_25_chips():
    shell = Shell(["alice", "bob"], starting_chips=20)
    (notice,) = grant(shell, "alice", CHIPS, 4, at(1))  # 20 + 4 = 24 < 25
    assert notice.startswith("The host granted you 4 chips in this cycle of the Hall (GH-1). "
                             "You now hold 24 chips")
    assert shell.rules.summary(shell.state).status == "running"
    assert shell.events[-1] == ("admin.grant", {"player": "alice", "item": CHIPS, "amount": 4})
    assert not shell.state.member("alice").acted  # the host's grant is not alice's action
    notice, victory = grant(shell, "alice", CHIPS, 1, at(2))  # 24 + 1 = 25 >= 25 (GH-8)
    summary = shell.rules.summary(shell.state)
    assert (summary.status, summary.winner, summary.scores) == (
        "finished", "alice", {"alice": 25, "bob": 20})
    assert victory.startswith("**alice wins the cycle of the Gilded Hall** with 25 chips")
    assert "- The host granted alice 4 chips (GH-1).\n- The host granted alice 1 chip (GH-1)." \
        in victory
    assert (shell.books[(MINT, CHIPS)], shell.has("alice", CHIPS, wallet=True)) == (-45, 0)
    shell.totals_zero()


def test_a_grant_goes_to_members_of_a_running_or_pending_cycle_only():
    shell = Shell(["alice"], start=at(5), now=T0)
    grant(shell, "alice", "card:KS", 2, at(1))  # listed, the cycle not yet open: fine
    assert shell.has("alice", "card:KS") == 2
    with pytest.raises(Rejected) as refused:
        grant(shell, "bob", CHIPS, 1, at(1))
    assert refused.value.what == ("bob has not joined cycle hall1: a player's inventory in a "
                                  "cycle starts when it joins") and refused.value.rule == "GH-1"
    shell.advance(at(5))  # the opening
    grant(shell, "alice", CHIPS, 25, at(6))
    with pytest.raises(Rejected) as refused:
        grant(shell, "alice", CHIPS, 1, at(7))
    assert refused.value.what == "cycle hall1 is over (alice won it); its inventories are closed"


# -- fairness per phase (GH-40) ------------------------------------------------------------


def test_each_phase_reveals_its_seed_and_every_draw_verifies():
    shell = Shell(["alice", "bob"], {("alice", "pack:deck"): 1, ("bob", "pack:handy"): 1})
    first_commitment = commitment(SEED)
    shell.send("alice", "open deck pack", at(1))
    shell.advance(at(24))
    shell.send("bob", "open handy pack", at(25))
    shell.advance(at(48))
    retired = {epoch: seed for epoch, seed, *_ in shell.rng.retired}
    assert retired[0] == SEED and commitment(retired[1]) in shell.rendered[2]
    phase_post = next(t for t in shell.rendered if t.startswith("**Phase 1 is over"))
    assert SEED in phase_post and first_commitment in phase_post
    assert f"Phase 2's commitment: `{commitment(retired[1])}`" in phase_post
    assert len(shell.rng.draws) >= 5 + 3 and all(
        verify_draw(retired[draw.epoch], draw) for draw in shell.rng.draws)


# -- replies, help, templates --------------------------------------------------------------


def test_player_text_is_escaped_in_posts():
    shell = Shell(["@everyone", "*bold*"], {("*bold*", "card:7H"): 1})
    shell.send("*bold*", "offer 7H to @everyone for nothing", at(1))
    shell.send("@everyone", "accept offer 1", at(2))
    shell.send("*bold*", "gift @everyone", at(3))
    shell.advance(at(24))
    text = "\n".join(shell.rendered)
    assert "@everyone" not in text and "@\u2060everyone" in text
    assert "*bold*" not in text and "\\*bold\\*" in text


def test_help_lists_what_is_valid_now():
    shell = Shell(["alice", "bob"], {("alice", CHIPS): 1})
    assert shell.rules.help(shell.state, "zoe")[0].startswith("join")
    shell.send("alice", "offer 1 chip to bob for nothing", at(1))
    bob_help = shell.rules.help(shell.state, "bob")
    assert any(line.startswith("accept offer 1 — from alice") for line in bob_help)
    assert any(line.startswith("gift alice — ") for line in bob_help)
    shell.send("bob", "gift alice", at(2))
    assert not any(line.startswith("gift") for line in shell.rules.help(shell.state, "bob"))
    alice_help = shell.rules.help(shell.state, "alice")
    assert any(line.startswith("withdraw offer 1") for line in alice_help)


def test_help_names_only_members_as_gift_and_trade_partners():
    shell = Shell(["alice"])
    lines = shell.rules.help(shell.state, "alice")
    assert not any(line.startswith(("gift", "offer")) for line in lines)  # nobody else yet
    shell.send("carol", "join", at(1))
    lines = shell.rules.help(shell.state, "alice")
    assert ("gift carol — once per phase, a member receives a random card (GH-7); members you "
            "can gift: carol") in lines
    assert any(line.startswith("offer 2 chips and 7H to carol for AS — ") for line in lines)
    assert not any("bob" in line for line in lines)  # bob is no member
    shell.send("dave", "join", at(2))
    (gift,) = [line for line in shell.rules.help(shell.state, "dave") if line.startswith("gift")]
    assert gift.endswith("members you can gift: alice, carol")


def test_help_shows_only_the_commands_valid_now(help_is_valid_now):
    # Each help line is accepted when sent; each command help leaves out is refused.
    def first_words(who, hours, **options):
        return [line.split(" — ")[0] for line in help_is_valid_now(shell, who, at(hours), **options)]

    shell = Shell(["alice"], start=at(5), now=T0)  # pending until 15:00
    assert first_words("alice", 1) == ["(the Hall opens at 2026-12-01 15:00 UTC; then: join)", "inventory",
                                       "receipts"]
    holdings = {("alice", VERTEBRAE): 100, ("alice", CHIPS): 2, ("alice", "card:7H"): 1,
                ("alice", "pack:handy"): 1, ("alice", "pack:deck"): 1,
                ("alice", "pack:legendary"): 1, ("bob", "card:AS"): 1}
    shell = Shell(["alice", "bob"], holdings, victory_chips=5)
    assert first_words("zoe", 1) == ["join", "inventory", "receipts", "judge", "proposals", "adopted"]
    assert first_words("alice", 1) == [
        "inventory", "receipts", "open handy pack", "open deck pack", "open legendary pack",
        "buy random card", "buy handy pack", "buy deck pack", "buy legendary pack", "buy chip",
        "offer 2 chips and 7H to bob for AS", "gift bob",
        "(battle needs at least 4 cards outside any match)", "duel bob",  # 1 card (GH-18)
        "judge", "proposals", "adopted"]
    shell.send("alice", "offer 2 chips and 7H to bob for AS", at(1))
    bob = help_is_valid_now(shell, "bob", at(2), tried=False)  # bob cannot pay for everything
    assert "accept offer 1 — from alice: 2 chips, 7 of Hearts for Ace of Spades (GH-1)" in bob
    assert "decline offer 1 — refuse it (GH-1)" in bob
    assert "withdraw offer 1 — your offer to bob: 2 chips, 7 of Hearts for Ace of Spades (GH-1)" in (
        help_is_valid_now(shell, "alice", at(2)))
    shell.send("alice", "gift bob", at(3))
    assert "gift" not in [word.split()[0] for word in first_words("alice", 4)]
    shell.send("alice", "buy chip 3", at(5))  # 2 + 3 = 5 chips: alice wins the cycle (GH-8)
    assert shell.state.status == "finished"
    assert first_words("alice", 6) == ["inventory", "receipts"]


def test_inventory_lists_cards_with_holo_marks_and_packs():
    shell = Shell(["alice"], {("alice", CHIPS): 3, ("alice", VERTEBRAE): 7, ("alice", "card:KS"): 2,
                              ("alice", "card:RJ:holo"): 1, ("alice", "pack:legendary"): 1})
    (reply,) = shell.send("alice", "inventory", at(1))
    assert reply.recipient == "alice"
    text = shell.rendered[-1]
    assert "- Chips: 3\n- Vertebrae: 7\n" in text
    assert "- Cards (3, 1 holographic): 2 × King of Spades, holo Red Joker" in text
    assert "- Packs: Legendary Pack" in text
    assert not shell.state.member("alice").acted  # GH-7: looking is not an action


def test_state_round_trips_through_json():
    shell = trading_hall()
    shell.send("alice", "offer 7H to bob for AS", at(1))
    shell.send("alice", "gift bob", at(2))
    dumped = shell.state.model_dump(mode="json")
    assert Hall.State.model_validate(dumped) == shell.state
    assert dumped["settings"]["phase_length"] == "24h"


# -- the property: nothing is created or lost ----------------------------------------------

NAMES = ["alice", "bob", "carol", "dave"]
LINES = st.one_of(
    st.just("join"),
    st.just("inventory"),
    st.sampled_from(["open handy pack", "open deck pack", "open legendary pack"]),
    st.sampled_from(["buy random card", "buy handy pack", "buy deck pack", "buy legendary pack",
                     "buy chip", "buy chip 2", "buy 3 random cards"]),
    st.builds(lambda who: f"gift {who}", st.sampled_from(NAMES)),
    st.builds(
        lambda give, who, want: f"offer {give} to {who} for {want}",
        st.sampled_from(["nothing", "1 chip", "3 vertebrae", "7H", "holo 7H", "handy pack",
                         "2 chips and KS"]),
        st.sampled_from(NAMES),
        st.sampled_from(["nothing", "1 chip", "7H", "AS", "5 vertebrae", "deck pack"]),
    ),
)
# An answer to the n-th open offer by the player entitled to give it (resolved when run),
# so that accepted trades are frequent, not only refused guesses.
ANSWERS = st.tuples(st.sampled_from(["accept", "decline", "withdraw"]), st.integers(0, 3))
# ``dealer grant NAME ITEM N --game hall1`` by the host, between the players' steps.
GRANTS = st.tuples(st.just("grant"), st.sampled_from([CHIPS, VERTEBRAE, "card:AS", "pack:deck"]),
                   st.integers(1, 12))
# Steps 0 to 6 hours apart: several steps per 24 h phase, and a few phase boundaries.
STEPS = st.lists(
    st.tuples(st.sampled_from(NAMES), st.one_of(LINES, ANSWERS, GRANTS), st.integers(0, 6)),
    max_size=40,
)


def resolve(shell: Shell, actor: str, line):
    """The actor and line of a step; an ANSWERS tuple picks a real open offer."""
    if isinstance(line, str) or line[0] == "grant":
        return actor, line
    verb, index = line
    if not shell.state.offers:
        return actor, "inventory"
    offer = shell.state.offers[index % len(shell.state.offers)]
    return (offer.offerer if verb == "withdraw" else offer.target), f"{verb} offer {offer.id}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=STEPS, victory=st.sampled_from([3, 25]))
def test_property_every_item_is_accounted_for(steps, victory):
    holdings = {}
    for name in NAMES:
        holdings.update({(name, VERTEBRAE): 60, (name, CHIPS): 2, (name, "card:7H"): 1,
                         (name, "card:7H:holo"): 1, (name, "card:AS"): 1, (name, "card:KS"): 1,
                         (name, "pack:handy"): 1, (name, "pack:deck"): 1})
    shell = Shell(["alice", "bob", "carol"], holdings, victory_chips=victory)
    wallets = {}
    for name in NAMES:  # chips and vertebrae won in other games (GH-1: never the cycle's)
        shell.grant(name, CHIPS, 30, wallet=True)
        shell.grant(name, VERTEBRAE, 40, wallet=True)
        wallets.update({key: n for key, n in shell.books.items() if key[0] == player(name)})
    when = T0
    for actor, line, hours in steps:
        when += timedelta(hours=hours)
        actor, line = resolve(shell, actor, line)
        try:
            if isinstance(line, tuple):
                shell.advance(when)
                grant(shell, actor, line[1], line[2], when)
            else:
                shell.send(actor, line, when)
        except Rejected:
            pass
        shell.totals_zero()
        # Every account the cycle moved lives in its scope; the wallets never moved.
        assert all(CYCLE.holds(account) for account, _ in shell.books
                   if account != MINT and not account.startswith("player:"))
        assert {key: n for key, n in shell.books.items() if key[0].startswith("player:")} == wallets
        state = shell.state
        members = [m.name for m in state.members]
        assert len(members) == len(set(members))
        assert all(o.offerer != o.target for o in state.offers)
        assert all(m.gifted != m.name for m in state.members)
        if state.status == "finished":
            assert shell.has(state.winner, CHIPS) >= victory and shell.deadlines == {}
        else:
            assert all(shell.has(m, CHIPS) < victory for m in members)
            assert len(shell.deadlines) == 1
    # per item: players + house + void == what the mint issued
    issued = Counter()
    held = Counter()
    for (account, item), amount in shell.books.items():
        (issued if account == MINT else held)[item] += -amount if account == MINT else amount
    assert issued == held
