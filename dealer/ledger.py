"""The ledger: every movement of a currency or an item is an entry between two accounts.

Accounts are strings: ``player:alice``, ``house`` (the casino: the LGT, the Croupier),
``void`` (where removed chips go), ``mint`` (where new items come from) and
``pool:GAME`` (chips held by a table). Items are strings too: ``chips``, ``vertebrae``,
``card:KS``, ``card:KS:holo``, ``pack:handy``. Only ``mint`` may go below zero: what it
has issued is minus its balance, so the total of every item over all accounts is always
zero and nothing is ever created or lost by accident.

:class:`Ledger` is the pure, in-memory view a rule works with: it reads balances from a
snapshot, stages transfers, and refuses any that would make a balance negative.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable, Mapping

HOUSE = "house"
VOID = "void"
MINT = "mint"
CHIPS = "chips"
VERTEBRAE = "vertebrae"


def player(name: str) -> str:
    """The account of player ``name``."""
    return f"player:{name}"


def pool(game_id: str) -> str:
    """The account in which a game holds chips (a race's betting pool, a battle's stakes)."""
    return f"pool:{game_id}"


def may_go_negative(account: str) -> bool:
    """Only the mint issues; every other account holds what it has."""
    return account == MINT


class InsufficientBalance(Exception):
    """A transfer asked for more than the account holds."""

    def __init__(self, account: str, item: str, wanted: int, held: int):
        super().__init__(f"{account} holds {held} {item}, cannot pay {wanted}")
        self.account = account
        self.item = item
        self.wanted = wanted
        self.held = held


@dataclass(frozen=True)
class Transfer:
    """One ledger entry: ``amount`` of ``item`` from ``source`` to ``target``."""

    source: str
    target: str
    item: str
    amount: int
    memo: str = ""


@dataclass
class Ledger:
    """Balances read from a snapshot plus the transfers staged by the current step."""

    balances: dict[tuple[str, str], int] = field(default_factory=dict)
    staged: list[Transfer] = field(default_factory=list)

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, str, int]]) -> "Ledger":
        """Build a ledger from ``(account, item, amount)`` rows."""
        return cls({(account, item): amount for account, item, amount in rows})

    def balance(self, account: str, item: str = CHIPS) -> int:
        """What ``account`` holds of ``item`` now, staged transfers included."""
        return self.balances.get((account, item), 0)

    def holdings(self, account: str) -> dict[str, int]:
        """Every item ``account`` holds a positive amount of."""
        return {
            item: amount
            for (acct, item), amount in sorted(self.balances.items())
            if acct == account and amount > 0
        }

    def move(self, source: str, target: str, item: str, amount: int, memo: str = "") -> int:
        """Stage a transfer; refuse one that would make ``source`` negative.

        A zero amount stages nothing. Returns the amount moved.
        """
        if amount < 0:
            raise ValueError(f"a transfer moves a positive amount, not {amount}")
        if amount == 0:
            return 0
        if source == target:
            return amount
        held = self.balance(source, item)
        if held < amount and not may_go_negative(source):
            raise InsufficientBalance(source, item, amount, held)
        self.balances[(source, item)] = held - amount
        self.balances[(target, item)] = self.balance(target, item) + amount
        self.staged.append(Transfer(source, target, item, amount, memo))
        return amount

    def move_up_to(self, source: str, target: str, item: str, amount: int, memo: str = "") -> int:
        """Move ``amount``, or whatever ``source`` has left if that is less; return what moved."""
        return self.move(source, target, item, min(amount, max(self.balance(source, item), 0)), memo)

    def mint(self, target: str, item: str, amount: int = 1, memo: str = "") -> int:
        """Issue new items or currency to ``target``."""
        return self.move(MINT, target, item, amount, memo)

    def totals(self) -> Mapping[str, int]:
        """The sum of every item over all accounts (always zero per item)."""
        sums: dict[str, int] = {}
        for (_, item), amount in self.balances.items():
            sums[item] = sums.get(item, 0) + amount
        return sums
