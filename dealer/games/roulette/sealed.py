"""Sealed submissions: receipts for players, commitments for everyone.

docs/FAIRNESS.md ("Sealed submissions") explains these formats to players; the
standard-library script that checks them is ``dealer/fairness_check.py`` (``dealer
fairness-script`` prints it), and a test runs it against this module, so the two cannot
drift apart.

- The canonical text of a submission is one line,
  ``GAME, PLAYER, PHASE, submission N, COMMAND``:
  ``g1, alice, round 3, submission 2, bet gold 30 silver 10 black 0``.
  ``PHASE`` is ``preparation`` or ``round R``; ``N`` counts the player's accepted
  submissions of that kind in that phase (1, 2, ...);
  ``COMMAND`` always names the three colours, in the order gold, silver, black, and a
  preparation puts its winning colour first:
  ``prepare black gold 30 silver 10 black 0``.
- Its salt is ``ctx.rng.secret("PLAYER:PHASE:KIND:N")`` (KIND ``prepare`` or ``bet``),
  i.e. ``HMAC-SHA256(server_seed, "secret:PLAYER:PHASE:KIND:N")``: 64 hex digits, secret
  until the round result reveals it, and recomputable by anyone once the server seed is
  revealed at the end of the game.
- The receipt sent privately with the confirmation is ``SHA-256(salt + canonical)``.
- When a roulette becomes active, its commitment ``SHA-256(salt + colour)`` is posted,
  where ``salt`` is the salt of the preparation that was locked in and ``colour`` is its
  winning colour (``gold``, ``silver`` or ``black``).

:func:`fairness_record` reads these values back from the game's events, for ``dealer game
show``.

The salt is 64 hex digits, so plain concatenation is unambiguous. The canonical text
avoids characters that posts escape (``|``, ``-``, ``:``), so it reads the same in a post
as in the hash (only a game id or player name with such characters shows escapes).
"""

from __future__ import annotations

import hashlib
from typing import Any

from dealer.games.roulette.model import BLACK, GOLD, SILVER

Events = list[tuple[str, dict[str, Any]]]


def sha256_hex(text: str) -> str:
    """Hex SHA-256 of ``text`` encoded as UTF-8."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def salt_label(player: str, phase: str, kind: str, number: int) -> str:
    """The label of a submission's salt: ``alice:round-3:bet:2``."""
    return f"{player}:{phase}:{kind}:{number}"


def command_text(kind: str, gold: int, silver: int, black: int, colour: str | None = None) -> str:
    """The canonical command: ``bet gold 30 silver 10 black 0`` or ``prepare black gold ...``."""
    amounts = f"{GOLD} {gold} {SILVER} {silver} {BLACK} {black}"
    return f"prepare {colour} {amounts}" if kind == "prepare" else f"bet {amounts}"


def canonical(game: str, player: str, phase: str, number: int, command: str) -> str:
    """The canonical submission text that a receipt seals.

    ``phase`` is the deadline name (``preparation``, ``round-3``); the text spells it
    ``preparation`` / ``round 3``.
    """
    return f"{game}, {player}, {phase.replace('-', ' ')}, submission {number}, {command}"


def receipt(salt: str, canonical_text: str) -> str:
    """The receipt of a submission: SHA-256(salt + canonical text)."""
    return sha256_hex(salt + canonical_text)


def colour_commitment(salt: str, colour: str) -> str:
    """The public commitment of a roulette's winning colour: SHA-256(salt + colour)."""
    return sha256_hex(salt + colour)


# --- reading the record back: dealer game show ---------------------------------------------

_ROULETTE_KEYS = ("preparer", "bettor", "colour", "commitment", "salt", "prep_receipt",
                  "prep_canonical")
_BET_KEYS = ("player", "salt", "receipt", "canonical")


def fairness_record(events: Events) -> list[dict[str, Any]]:
    """Each resolved round's full commitments, salts, receipts and sealed texts.

    These are the values a round result post shows shortened to 12 hex digits; the
    ``round.resolved`` event keeps them whole.
    """
    return [
        {
            "round": data["round"],
            "roulettes": [{k: r.get(k) for k in _ROULETTE_KEYS} for r in data["roulettes"]],
            "bets": [{k: b.get(k) for k in _BET_KEYS} for b in data.get("bets", [])],
        }
        for type_, data in events
        if type_ == "round.resolved"
    ]
