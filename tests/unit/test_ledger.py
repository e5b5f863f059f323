"""The ledger: transfers between accounts, never negative except the mint, totals zero."""

from __future__ import annotations

import pytest
from hypothesis import given, settings, strategies as st

from dealer import ledger as L


def test_moves_and_refuses_overdrafts() -> None:
    book = L.Ledger()
    book.mint(L.player("alice"), L.CHIPS, 10)
    assert book.move(L.player("alice"), L.HOUSE, L.CHIPS, 4, "fee") == 4
    with pytest.raises(L.InsufficientBalance) as error:
        book.move(L.player("alice"), L.HOUSE, L.CHIPS, 7)
    assert (error.value.held, error.value.wanted) == (6, 7)
    assert book.move_up_to(L.player("alice"), L.VOID, L.CHIPS, 7) == 6
    assert book.balance(L.player("alice")) == 0
    assert book.balance(L.MINT) == -10 and book.totals() == {L.CHIPS: 0}
    assert [t.amount for t in book.staged] == [10, 4, 6]


def test_zero_and_negative_amounts() -> None:
    book = L.Ledger()
    assert book.move(L.player("a"), L.HOUSE, L.CHIPS, 0) == 0 and book.staged == []
    with pytest.raises(ValueError):
        book.move(L.player("a"), L.HOUSE, L.CHIPS, -1)


def test_holdings_list_only_positive_items() -> None:
    book = L.Ledger({(L.player("a"), L.CHIPS): 3, (L.player("a"), L.VERTEBRAE): 0})
    assert book.holdings(L.player("a")) == {L.CHIPS: 3}


def test_the_opening_balances_read_are_kept_for_the_replay() -> None:
    alice, bob = L.player("alice"), L.player("bob")
    book = L.Ledger({(alice, L.CHIPS): 10, (bob, L.CHIPS): 4, (bob, "card:KS"): 1})
    book.move(alice, bob, L.CHIPS, 3)  # reads alice's 10 and bob's 4 before moving
    assert book.balance(bob) == 7 and book.balance(alice, L.VERTEBRAE) == 0
    # The opening values, not the ones after the move; zeros and unread balances left out.
    assert book.opening_reads() == {alice: {L.CHIPS: 10}, bob: {L.CHIPS: 4}}
    book.holdings(bob)  # reading a whole account reads every item of it
    assert book.opening_reads()[bob] == {L.CHIPS: 4, "card:KS": 1}
    replayed = L.Ledger.from_reads(book.opening_reads())
    assert replayed.balance(bob, "card:KS") == 1 and replayed.balance(alice, L.VERTEBRAE) == 0


class Store:
    """A balance source that counts what it is asked."""

    def __init__(self, rows: dict[tuple[str, str], int]) -> None:
        self.rows, self.asked = rows, []

    def balance(self, account: str, item: str) -> int:
        self.asked.append((account, item))
        return self.rows.get((account, item), 0)

    def holdings(self, account: str) -> dict[str, int]:
        self.asked.append((account, "*"))
        return {item: n for (acct, item), n in self.rows.items() if acct == account}


def test_a_source_is_read_once_per_balance_and_never_over_a_staged_move() -> None:
    alice = L.player("alice")
    store = Store({(alice, L.CHIPS): 5, (alice, "card:KS"): 2, (alice, "card:7H"): 1})
    book = L.Ledger(source=store)
    book.move(alice, L.HOUSE, "card:KS", 1)
    assert book.balance(alice, "card:KS") == 1 and store.asked == [(alice, "card:KS"), (L.HOUSE, "card:KS")]
    # The whole account: the staged move stands, the other items come from the source once.
    assert book.holdings(alice) == {L.CHIPS: 5, "card:KS": 1, "card:7H": 1}
    book.holdings(alice)
    book.balance(alice, "pack:handy")
    assert store.asked[2:] == [(alice, "*")]
    assert book.opening_reads()[alice] == {L.CHIPS: 5, "card:7H": 1, "card:KS": 2}


ACCOUNTS = [L.player("a"), L.player("b"), L.HOUSE, L.VOID, L.pool("g")]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(ACCOUNTS + [L.MINT]), st.sampled_from(ACCOUNTS),
                          st.sampled_from([L.CHIPS, L.VERTEBRAE]), st.integers(0, 50)), max_size=40))
def test_any_sequence_conserves_and_never_overdraws(moves) -> None:  # type: ignore[no-untyped-def]
    book = L.Ledger()
    for source, target, item, amount in moves:
        try:
            book.move(source, target, item, amount)
        except L.InsufficientBalance:
            pass
    assert all(v == 0 for v in book.totals().values())
    assert all(amount >= 0 for (account, _), amount in book.balances.items() if account != L.MINT)


def test_scoped_accounts_are_named_after_their_scope() -> None:
    cycle = L.Scope("hall1")
    assert (cycle.player("alice"), cycle.house, cycle.void, cycle.pool("hall1-duel-1")) == (
        "hall1/player:alice", "hall1/house", "hall1/void", "hall1/pool:hall1-duel-1")
    assert (L.GLOBAL.player("alice"), L.GLOBAL.house, L.GLOBAL.pool("r1")) == (
        "player:alice", "house", "pool:r1")
    assert L.scoped("hall1", L.MINT) == L.MINT  # the mint belongs to no scope
    assert [L.scope_of(a) for a in ("hall1/player:alice", "player:alice", "player:a/b", "mint")] \
        == ["hall1", None, None, None]
    assert cycle.holds("hall1/house") and not cycle.holds("house")
    for bad in ("", "a/b", "a:b"):
        with pytest.raises(ValueError):
            L.scoped(bad, "house")


def test_only_the_mint_moves_items_into_a_scope_and_nothing_leaves_one() -> None:
    cycle = L.Scope("hall1")
    book = L.Ledger()
    book.mint(L.player("alice"), L.CHIPS, 30)  # won at roulette: the wallet
    book.mint(cycle.player("alice"), L.CHIPS, 2)  # granted into the cycle
    for source, target in ((L.player("alice"), cycle.player("alice")),
                           (cycle.player("alice"), L.player("alice")),
                           (cycle.player("alice"), L.Scope("hall2").player("alice")),
                           (cycle.player("alice"), L.HOUSE)):
        with pytest.raises(L.ScopeCrossing):
            book.move(source, target, L.CHIPS, 1)
    book.move(cycle.player("alice"), cycle.house, L.CHIPS, 1)
    assert (book.balance(L.player("alice")), book.balance(cycle.player("alice")),
            book.balance(cycle.house), book.balance(L.MINT)) == (30, 1, 1, -32)


SCOPES = [L.GLOBAL, L.Scope("hall1"), L.Scope("hall2")]
SCOPED = [account for scope in SCOPES for account in
          (scope.player("a"), scope.player("b"), scope.house, scope.void, scope.pool("g"))]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(SCOPED + [L.MINT]), st.sampled_from(SCOPED),
                          st.sampled_from([L.CHIPS, "card:KS"]), st.integers(0, 50)), max_size=60))
def test_any_sequence_keeps_each_scope_closed(moves) -> None:  # type: ignore[no-untyped-def]
    book = L.Ledger()
    issued: dict[tuple[str | None, str], int] = {}
    for source, target, item, amount in moves:
        crossing = source != L.MINT and L.scope_of(source) != L.scope_of(target)
        try:
            book.move(source, target, item, amount)
        except L.InsufficientBalance:
            assert not crossing
            continue
        except L.ScopeCrossing:
            assert crossing
            continue
        assert not crossing
        if source == L.MINT:
            key = (L.scope_of(target), item)
            issued[key] = issued.get(key, 0) + amount
    assert all(v == 0 for v in book.totals().values())
    # Per scope and item, its accounts hold exactly what the mint issued into it.
    for scope in SCOPES:
        for item in (L.CHIPS, "card:KS"):
            held = sum(n for (account, it), n in book.balances.items()
                       if it == item and account != L.MINT and scope.holds(account))
            assert held == issued.get((scope.name, item), 0)
