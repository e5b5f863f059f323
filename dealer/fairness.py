"""Provably fair randomness (GH-40): every random outcome comes from a :class:`FairSource`
(docs/FAIRNESS.md; ``dealer/fairness_check.py`` recomputes it). Pure: the shell hands it its seeds."""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar

T = TypeVar("T")

_SPACE = 2**256


def new_server_seed() -> str:
    """A fresh secret server seed (64 hex digits) from the OS's CSPRNG (shell only)."""
    return secrets.token_hex(32)


def commitment(server_seed: str) -> str:
    """The SHA-256 commitment published before any draw: hex digest of the seed's text."""
    return hashlib.sha256(server_seed.encode("utf-8")).hexdigest()


def client_hash(client_seeds: Sequence[str]) -> str:
    """The hash of the client seeds in the order they were added."""
    return hashlib.sha256("\n".join(client_seeds).encode("utf-8")).hexdigest()


def raw_value(server_seed: str, client: str, counter: int) -> int:
    """The 256-bit integer of draw ``counter``: HMAC-SHA256(server_seed, f"{client}:{counter}")."""
    digest = hmac.new(
        server_seed.encode("utf-8"), f"{client}:{counter}".encode("utf-8"), hashlib.sha256
    ).hexdigest()
    return int(digest, 16)


def uniform(server_seed: str, client: str, counter: int, n: int) -> tuple[int, int]:
    """An integer in ``[0, n)`` from ``counter`` on, and the next counter (rejection keeps it uniform)."""
    if n < 1:
        raise ValueError("a draw needs at least one outcome")
    limit = (_SPACE // n) * n
    while True:
        value = raw_value(server_seed, client, counter)
        counter += 1
        if value < limit:
            return value % n, counter


def secret(server_seed: str, label: str) -> str:
    """A secret derived from the seed (a receipt salt): ``HMAC-SHA256(server_seed, "secret:" + label)``."""
    return hmac.new(
        server_seed.encode("utf-8"), f"secret:{label}".encode("utf-8"), hashlib.sha256
    ).hexdigest()


@dataclass(frozen=True)
class Draw:
    """One recorded draw: enough to recompute it from the revealed seed."""

    epoch: int
    counter: int
    n: int
    result: int
    client: str
    purpose: str


@dataclass
class FairSource:
    """The random source of one game's current epoch; ``draws`` collects its draws for the shell."""

    server_seed: str
    client_seeds: list[str] = field(default_factory=list)
    counter: int = 0
    epoch: int = 0
    draws: list[Draw] = field(default_factory=list)
    seed_factory: Callable[[], str] | None = None
    retired: list[tuple[int, str, int]] = field(default_factory=list)
    """Epochs ended by :meth:`rotate`: ``(epoch, server_seed, final counter)``."""

    @property
    def commitment(self) -> str:
        """SHA-256 of the current server seed, as published."""
        return commitment(self.server_seed)

    def add_client_seed(self, text: str) -> None:
        """Mix a player's seed into every later draw of this epoch."""
        self.client_seeds.append(text)

    def below(self, n: int, purpose: str = "") -> int:
        """A uniform integer in ``[0, n)``."""
        client = client_hash(self.client_seeds)
        start = self.counter
        result, self.counter = uniform(self.server_seed, client, start, n)
        self.draws.append(Draw(self.epoch, start, n, result, client, purpose))
        return result

    def between(self, low: int, high: int, purpose: str = "") -> int:
        """A uniform integer in ``[low, high]`` (both ends included)."""
        return low + self.below(high - low + 1, purpose)

    def choice(self, options: Sequence[T], purpose: str = "") -> T:
        """One of ``options``, uniformly."""
        return options[self.below(len(options), purpose)]

    def chance(self, numerator: int, denominator: int, purpose: str = "") -> bool:
        """True with probability ``numerator / denominator`` (exactly)."""
        return self.below(denominator, purpose) < numerator

    def shuffled(self, items: Sequence[T], purpose: str = "") -> list[T]:
        """A uniformly random permutation of ``items`` (Fisher-Yates over fair draws)."""
        result = list(items)
        for i in range(len(result) - 1, 0, -1):
            j = self.below(i + 1, purpose)
            result[i], result[j] = result[j], result[i]
        return result

    def secret(self, label: str) -> str:
        """A secret derived from the server seed (e.g. a receipt salt): see :func:`secret`."""
        return secret(self.server_seed, label)

    def rotate(self) -> str:
        """End this epoch and start the next with a fresh seed; return the retired one (to reveal)."""
        if self.seed_factory is None:
            raise RuntimeError("this source cannot rotate: no seed factory was given")
        old = self.server_seed
        self.retired.append((self.epoch, old, self.counter))
        self.server_seed = self.seed_factory()
        self.client_seeds = []
        self.counter = 0
        self.epoch += 1
        return old


def verify_draw(server_seed: str, draw: Draw) -> bool:
    """True when ``draw`` is exactly what ``server_seed`` produces at its counter."""
    result, _ = uniform(server_seed, draw.client, draw.counter, draw.n)
    return result == draw.result
