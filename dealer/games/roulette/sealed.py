"""Sealed submissions: receipts for players, commitments for everyone (docs/FAIRNESS.md);
``dealer/fairness_check.py`` checks the same, and a test runs it against this module."""

from __future__ import annotations

import hashlib
from typing import Any

from dealer.fairness import secret
from dealer.games.base import SealedCheck
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
    """The canonical text a receipt seals (``phase`` ``round-3`` written ``round 3``)."""
    return f"{game}, {player}, {phase.replace('-', ' ')}, submission {number}, {command}"


def receipt(salt: str, canonical_text: str) -> str:
    """The receipt of a submission: SHA-256(salt + canonical text)."""
    return sha256_hex(salt + canonical_text)


def colour_commitment(salt: str, colour: str) -> str:
    """The public commitment of a roulette's winning colour: SHA-256(salt + colour)."""
    return sha256_hex(salt + colour)


# --- reading the record back: dealer game show and dealer verify ---------------------------

_ROULETTE_KEYS = ("preparer", "bettor", "colour", "commitment", "salt", "prep_receipt",
                  "prep_canonical")
_BET_KEYS = ("player", "salt", "receipt", "canonical")


def fairness_record(events: Events) -> list[dict[str, Any]]:
    """Each resolved round's full commitments, salts, receipts and sealed texts."""
    return [
        {
            "round": data["round"],
            "roulettes": [{k: r.get(k) for k in _ROULETTE_KEYS} for r in data["roulettes"]],
            "bets": [{k: b.get(k) for k in _BET_KEYS} for b in data.get("bets", [])],
        }
        for type_, data in events
        if type_ == "round.resolved"
    ]


def _phase_words(phase: str) -> str:
    return "the preparation phase" if phase == "preparation" else phase.replace("-", " ")


def _submission(data: dict[str, Any]) -> str:
    kind = "preparation" if data["kind"] == "prepare" else "bet"
    return f"{data['player']}'s {kind} no. {data['number']} in {_phase_words(data['phase'])}"


def check_sealed(game: str, server_seed: str, events: Events) -> SealedCheck:
    """Check every receipt and commitment against the revealed seed, and SR-6's last submissions."""
    found = SealedCheck()
    latest: dict[tuple[str, str, str], dict[str, Any]] = {}
    published: dict[int, dict[str, str]] = {}
    for type_, data in events:
        if type_ == "submission.accepted":
            found.problems += _check_receipt(game, server_seed, data)
            found.receipts += 1
            key = (data["player"], data["phase"], data["kind"])
            if key not in latest or data["number"] > latest[key]["number"]:
                latest[key] = data
        elif type_ == "phase.started" and data.get("commitments"):
            published[int(data["phase"].rpartition("-")[2])] = data["commitments"]
        elif type_ == "round.resolved":
            number = data["round"]
            for roulette in data["roulettes"]:
                found.problems += _check_roulette(
                    server_seed, number, roulette, latest, published.get(number, {})
                )
                found.commitments += 1
            found.problems += _check_revealed_bets(server_seed, number, data, latest)
    return found


def _check_receipt(game: str, server_seed: str, data: dict[str, Any]) -> list[str]:
    what = _submission(data)
    problems = []
    prefix = canonical(game, data["player"], data["phase"], data["number"], "")
    if not data["canonical"].startswith(prefix):
        problems.append(f"{what}: its sealed text names another game, player, phase or number")
    salt = secret(server_seed, salt_label(data["player"], data["phase"], data["kind"],
                                          data["number"]))
    if receipt(salt, data["canonical"]) != data["receipt"]:
        problems.append(f"{what}: the receipt does not seal its text with the salt the seed gives")
    return problems


def _check_roulette(server_seed: str, number: int, roulette: dict[str, Any],
                    latest: dict[tuple[str, str, str], dict[str, Any]],
                    published: dict[str, str]) -> list[str]:
    preparer, bettor, colour = roulette["preparer"], roulette["bettor"], roulette["colour"]
    what = f"round {number}: {preparer}'s roulette"
    sent_in = "preparation" if number == 1 else f"round-{number - 1}"
    prep = latest.get((preparer, sent_in, "prepare"))
    if prep is None:
        return [f"{what}: no accepted preparation of {preparer} in {_phase_words(sent_in)} "
                "is on record"]
    problems = []
    if (roulette.get("prep_canonical"), roulette.get("prep_receipt")) != (
        prep["canonical"], prep["receipt"]
    ):
        problems.append(f"{what} is not {preparer}'s last accepted preparation of "
                        f"{_phase_words(sent_in)} (SR-6)")
    sealed_command = command_text("prepare", roulette["gold"], roulette["silver"],
                                  roulette["black"], colour)
    if not prep["canonical"].endswith(", " + sealed_command):
        problems.append(f"{what}: the revealed colour or layout is not the one sealed in "
                        f"{_submission(prep)}")
    salt = secret(server_seed, salt_label(preparer, sent_in, "prepare", prep["number"]))
    if colour_commitment(salt, colour) != roulette["commitment"]:
        problems.append(f"{what}: the commitment does not open to {colour} with the salt "
                        "the seed gives")
    if roulette.get("salt") is not None and roulette["salt"] != salt:
        problems.append(f"{what}: the revealed salt is not the one the seed gives")
    if preparer in published and published[preparer] != roulette["commitment"]:
        problems.append(f"{what}: the commitment differs from the one published when the "
                        "round began")
    bet = latest.get((bettor, f"round-{number}", "bet"))
    scored = roulette.get("bet")
    if bet is None and scored is not None:
        problems.append(f"{what}: a bet of {bettor} was scored, but none was accepted")
    elif bet is not None and (scored is None or not bet["canonical"].endswith(
        ", " + command_text("bet", scored["gold"], scored["silver"], scored["black"])
    )):
        problems.append(f"{what}: the bet scored is not {bettor}'s last accepted bet (SR-6)")
    return problems


def _check_revealed_bets(server_seed: str, number: int, data: dict[str, Any],
                         latest: dict[tuple[str, str, str], dict[str, Any]]) -> list[str]:
    problems = []
    for shown in data.get("bets", []):
        bet = latest.get((shown["player"], f"round-{number}", "bet"))
        if bet is None or (shown["canonical"], shown["receipt"]) != (bet["canonical"], bet["receipt"]):
            problems.append(f"round {number}: the bet revealed for {shown['player']} is not "
                            "its last accepted bet (SR-6)")
            continue
        salt = secret(server_seed, salt_label(bet["player"], bet["phase"], "bet", bet["number"]))
        if shown["salt"] != salt:
            problems.append(f"round {number}: the salt revealed for {_submission(bet)} is not "
                            "the one the seed gives")
    return problems
