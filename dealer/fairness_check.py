#!/usr/bin/env python3
"""Check dealer's fairness yourself: random draws (GH-40) and sealed roulette submissions.

Standard library only (Python 3.8 or later). Save this file as fairness_check.py, then:

  python3 fairness_check.py draws SEED [--commitment HEX] [--client-seed TEXT ...]
                                       [--counter N] DRAW ...
      Recompute draws from a revealed server seed. Each DRAW is a number n (a draw among
      n outcomes, 0 to n - 1), "card" (a Gilded Hall random card, 5 % holographic),
      "card:P" (P % holographic: card:10 for the Croupier's) or "holocard"
      (holographic by rule, one draw only).
  python3 fairness_check.py seed SEED COMMITMENT
      Is this the server seed the opening post committed to?
  python3 fairness_check.py receipt SALT RECEIPT "SEALED TEXT"
      Does the receipt of your confirmation seal exactly this text?
  python3 fairness_check.py commitment SALT COLOUR COMMITMENT
      Did the round-start commitment fix this winning colour?
  python3 fairness_check.py salt SEED LABEL
      After the game: the salt of any submission (LABEL such as alice:round-3:bet:2).

Each check prints OK or MISMATCH and ends with status 1 on a mismatch. The functions
below can be used from Python too: from fairness_check import *
"""
import argparse
import hashlib
import hmac
import sys

RANKS = ["Ace", "2", "3", "4", "5", "6", "7", "8", "9", "10", "Jack", "Queen", "King"]
SUITS = ["Hearts", "Diamonds", "Spades", "Clubs"]
CARDS = [f"{rank} of {suit}" for suit in SUITS for rank in RANKS] + ["Red Joker", "Black Joker"]


def sha256(text):
    """SHA-256 of a text, as 64 hex digits."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def hmac_hex(key, message):
    """HMAC-SHA256 of a message under a key (both texts), as 64 hex digits."""
    return hmac.new(key.encode("utf-8"), message.encode("utf-8"), hashlib.sha256).hexdigest()


# -- random draws (GH-40) ------------------------------------------------------------------


def draw(seed, client, counter, n):
    """A draw among n outcomes starting at counter; returns (outcome, next counter)."""
    limit = (2**256 // n) * n
    while True:
        value = int(hmac_hex(seed, f"{client}:{counter}"), 16)
        counter += 1
        if value < limit:  # otherwise: rejected, try the next counter
            return value % n, counter


def card(seed, client, counter, spec):
    """A Gilded Hall card: its row among 54, then (unless holographic by rule) its holo roll."""
    row, counter = draw(seed, client, counter, 54)
    if spec == "holocard":
        return "holo " + CARDS[row], counter
    percent = int(spec.partition(":")[2] or 5)
    roll, counter = draw(seed, client, counter, 100)
    return ("holo " if roll < percent else "") + CARDS[row], counter


# -- sealed submissions (Stationary Roulette) ----------------------------------------------


def sealed_text(game, player, phase, number, command):
    """phase: "preparation" or "round 3"; command as the dealer spells it."""
    return f"{game}, {player}, {phase}, submission {number}, {command}"


def bet_command(gold, silver, black):
    """A bet as sealed: all three colours, gold, silver, black."""
    return f"bet gold {gold} silver {silver} black {black}"


def prepare_command(colour, gold, silver):
    """A preparation as sealed: the winning colour, then the layout."""
    return f"prepare {colour} gold {gold} silver {silver} black 0"


def check_receipt(salt, text, receipt):
    """True when the receipt in your confirmation seals exactly this text."""
    return sha256(salt + text) == receipt


def check_commitment(salt, colour, commitment):
    """True when the round-start commitment fixed this winning colour."""
    return sha256(salt + colour) == commitment


def salt_from_seed(server_seed, player, phase, kind, number):
    """After the game: any submission's salt. phase "preparation" or "round-3"."""
    return hmac_hex(server_seed, f"secret:{player}:{phase}:{kind}:{number}")


# -- the command line ----------------------------------------------------------------------


def _verdict(ok, what):
    print(f"{what} {'OK' if ok else 'MISMATCH'}")
    return 0 if ok else 1


def _draws(args, parser):
    if args.commitment is not None:
        if sha256(args.seed) != args.commitment.strip().lower():
            print("commitment MISMATCH: this is not the seed the dealer committed to")
            return 1
        print("commitment OK")
    client = sha256("\n".join(args.client_seed))
    counter = args.counter
    for spec in args.draws:
        start = counter
        if spec.isdigit() and int(spec) > 0:
            outcome, counter = draw(args.seed, client, counter, int(spec))
            print(f"counter {start}: {outcome} of {spec}")
        elif spec in ("card", "holocard") or spec.startswith("card:"):
            name, counter = card(args.seed, client, counter, spec)
            print(f"counter {start}: {name}")
        else:
            parser.error(f"not a draw: {spec!r} (use a number, card, card:P or holocard)")
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description="Check dealer's draws and sealed submissions.")
    commands = parser.add_subparsers(dest="command", required=True)
    p = commands.add_parser("draws", help="recompute draws from a revealed server seed")
    p.add_argument("seed", help="the revealed server seed")
    p.add_argument("--commitment", help="the commitment published before the draws")
    p.add_argument("--client-seed", action="append", default=[],
                   help="a client seed, in the order added (repeat the option)")
    p.add_argument("--counter", type=int, default=0, help="the first draw's counter")
    p.add_argument("draws", nargs="+", help="n, card, card:P or holocard")
    p = commands.add_parser("seed", help="check a revealed seed against its commitment")
    p.add_argument("seed")
    p.add_argument("commitment")
    p = commands.add_parser("receipt", help="check a receipt against a salt and sealed text")
    p.add_argument("salt")
    p.add_argument("receipt")
    p.add_argument("text", help="the sealed text, quoted")
    p = commands.add_parser("commitment", help="check a colour commitment against its salt")
    p.add_argument("salt")
    p.add_argument("colour", choices=["gold", "silver", "black"])
    p.add_argument("commitment")
    p = commands.add_parser("salt", help="compute a submission's salt from the revealed seed")
    p.add_argument("seed")
    p.add_argument("label", help="PLAYER:PHASE:KIND:N, such as alice:round-3:bet:2")
    args = parser.parse_args(argv)
    if args.command == "draws":
        return _draws(args, parser)
    if args.command == "seed":
        return _verdict(sha256(args.seed) == args.commitment.strip().lower(), "commitment")
    if args.command == "receipt":
        return _verdict(check_receipt(args.salt.strip().lower(), args.text,
                                      args.receipt.strip().lower()), "receipt")
    if args.command == "commitment":
        return _verdict(check_commitment(args.salt.strip().lower(), args.colour,
                                         args.commitment.strip().lower()), "commitment")
    print(hmac_hex(args.seed, f"secret:{args.label}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
