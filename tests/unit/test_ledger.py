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
    book = L.Ledger.from_rows([(L.player("a"), L.CHIPS, 3), (L.player("a"), L.VERTEBRAE, 0)])
    assert book.holdings(L.player("a")) == {L.CHIPS: 3}


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
