"""The ledger: every movement of an item is an entry between two accounts; only ``mint`` goes
below zero, so each item sums to zero, and only the mint gives across scopes (GH-1)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping, Protocol

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


SCOPE_MARK = "/"


def scoped(scope: str | None, account: str) -> str:
    """``account`` inside ``scope`` (``hall1/player:alice``); the mint belongs to no scope."""
    if scope is None or account == MINT:
        return account
    if not scope or SCOPE_MARK in scope or ":" in scope:
        raise ValueError(f"{scope!r} cannot name a ledger scope (no '/' or ':', not empty)")
    return f"{scope}{SCOPE_MARK}{account}"


def scope_of(account: str) -> str | None:
    """The scope ``account`` lives in, or None (a scope name has no ``:``: ``player:a/b`` is global)."""
    head, mark, _ = account.partition(SCOPE_MARK)
    return head if mark and ":" not in head else None


@dataclass(frozen=True)
class Scope:
    """The accounts of one scope, for a game's rules; ``Scope()`` is the global one."""

    name: str | None = None

    def player(self, name: str) -> str:
        """The account of player ``name`` in this scope (its inventory in a Hall cycle)."""
        return scoped(self.name, player(name))

    def pool(self, game_id: str) -> str:
        """The pool of game ``game_id`` (itself or a child game) in this scope."""
        return scoped(self.name, pool(game_id))

    @property
    def house(self) -> str:
        """The house of this scope (a cycle's Croupier)."""
        return scoped(self.name, HOUSE)

    @property
    def void(self) -> str:
        """Where this scope's removed and discarded items go."""
        return scoped(self.name, VOID)

    def holds(self, account: str) -> bool:
        """Whether ``account`` lives in this scope."""
        return scope_of(account) == self.name


GLOBAL = Scope()
"""The global scope: the wallets that roulette, races and ``dealer player show`` use."""


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


class ScopeCrossing(ValueError):
    """A transfer between two scopes (only the mint issues into a scope)."""

    def __init__(self, source: str, target: str):
        super().__init__(
            f"{source} and {target} live in different ledger scopes; only the mint "
            "moves items into a scope, and nothing leaves one"
        )
        self.source = source
        self.target = target


@dataclass(frozen=True)
class Transfer:
    """One ledger entry: ``amount`` of ``item`` from ``source`` to ``target``."""

    source: str
    target: str
    item: str
    amount: int
    memo: str = ""


class BalanceSource(Protocol):
    """Where a :class:`Ledger` reads a balance its snapshot lacks (the store), on first use."""

    def balance(self, account: str, item: str) -> int:
        """What ``account`` holds of ``item`` (0 for an account the step may not touch)."""

    def holdings(self, account: str) -> dict[str, int]:
        """Every item ``account`` holds (empty for an account the step may not touch)."""


@dataclass
class Ledger:
    """Balances from a snapshot (or, on first use, a ``source``) plus the step's staged transfers."""

    balances: dict[tuple[str, str], int] = field(default_factory=dict)
    staged: list[Transfer] = field(default_factory=list)
    read: dict[tuple[str, str], int] = field(default_factory=dict)
    """The opening balance of every ``(account, item)`` the step looked at: what its replay is given."""
    source: BalanceSource | None = None
    whole: set[str] = field(default_factory=set)
    """Accounts whose every item is in ``balances`` already (read from the source)."""

    def balance(self, account: str, item: str = CHIPS) -> int:
        """What ``account`` holds of ``item`` now, staged transfers included."""
        key = (account, item)
        value = self.balances.get(key)
        if value is None:
            value = 0
            if self.source is not None and account not in self.whole:
                value = self.balances[key] = self.source.balance(account, item)
        if key not in self.read:
            self.read[key] = value
        return value

    def holdings(self, account: str) -> dict[str, int]:
        """Every item ``account`` holds a positive amount of."""
        if self.source is not None and account not in self.whole:
            for item, amount in self.source.holdings(account).items():
                self.balances.setdefault((account, item), amount)  # keep staged changes
            self.whole.add(account)
        held = {}
        for (acct, item), amount in sorted(self.balances.items()):
            if acct == account:
                self.read.setdefault((acct, item), amount)
                if amount > 0:
                    held[item] = amount
        return held

    def opening_reads(self) -> dict[str, dict[str, int]]:
        """The non-zero opening balances the step read, ``{account: {item: amount}}``."""
        reads: dict[str, dict[str, int]] = {}
        for (account, item), amount in sorted(self.read.items()):
            if amount:
                reads.setdefault(account, {})[item] = amount
        return reads

    @classmethod
    def from_reads(cls, reads: Mapping[str, Mapping[str, int]]) -> "Ledger":
        """A ledger holding exactly the balances a recorded step read (the rest is zero)."""
        return cls({(account, item): amount for account, items in reads.items()
                    for item, amount in items.items()})

    def move(self, source: str, target: str, item: str, amount: int, memo: str = "") -> int:
        """Stage a transfer (none below zero, none across scopes but the mint's); the amount moved."""
        if amount < 0:
            raise ValueError(f"a transfer moves a positive amount, not {amount}")
        if source != MINT and target != MINT and scope_of(source) != scope_of(target):
            raise ScopeCrossing(source, target)
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
