"""The players' commands at the raceway, each declared once (see dealer.games.commands)."""

from __future__ import annotations

from dataclasses import dataclass

from dealer.cards import BY_CODE
from dealer.games.commands import CardName, Command, Commands, Example, Text, Whole, receipts_command
from dealer.games.races.field import clean_name, free_name
from dealer.games.races.state import RacesState


@dataclass(frozen=True)
class Sit:
    """Take a seat (OR-1)."""


@dataclass(frozen=True)
class Stand:
    """Leave the table (OR-1)."""


@dataclass(frozen=True)
class EnterHorse:
    """Enter (or re-enter) one's horse (OR-2); ``card`` is a catalogue code."""

    name: str
    card: str


@dataclass(frozen=True)
class Ready:
    """Say one's horse is set and seating may close (OR-3)."""


@dataclass(frozen=True)
class Interested:
    """Ask betting to wait for one's bet or pass (OR-5)."""


@dataclass(frozen=True)
class PlaceBet:
    """Bet ``amount`` chips on a horse (OR-5)."""

    amount: int
    horse: str


@dataclass(frozen=True)
class Pass:
    """Say one will not bet (more) (OR-5)."""


@dataclass(frozen=True)
class RaceAction:
    """Draw a card and move the horses forward (OR-7)."""


@dataclass(frozen=True)
class LapAction:
    """Draw a card and move the horses back (OR-8)."""


def _seated(state: RacesState, actor: str) -> bool:
    return actor in state.seated


def _racer(state: RacesState, actor: str) -> bool:
    """OR-7: every player with a horse in the race acts, seated or not."""
    return state.phase == "racing" and state.horse_of(actor) is not None


def _bet_now(state: RacesState, actor: str) -> list[Example]:
    """The example names a horse of this field, and the field is listed."""
    names = [h.name for h in state.horses]
    if not names:
        return list(BET.examples)
    return [Example(f"bet 10 on {names[0]}",
                    f"bet 10 chips on {names[0]} (the field: {', '.join(names)}); the chips "
                    "go into the pool at once")]


def _horse_now(state: RacesState, actor: str) -> list[Example]:
    """The ``horse`` line of help: a free name, and ``CARD`` to fill (help sees no cards)."""
    others = [h for h in state.horses if h.owner != actor]
    taken = "; already taken: " + ", ".join(
        f"{h.name} ({BY_CODE[h.card].short})" for h in others
    ) if others else ""
    return [Example(
        f"horse {free_name(state.horses, actor)} card CARD",
        "enter (or change) your horse: a name of 1 to 18 characters that no other horse has, "
        "and CARD, a card from your inventory that no other horse runs as, written like 7H or "
        f"queen of hearts (OR-2){taken}",
    )]


def _stand_now(state: RacesState, actor: str) -> list[Example]:
    if state.phase == "seating":
        return [Example("stand", "leave the table; your entry is withdrawn", "OR-1")]
    return [Example("stand", "leave the table; your horse races on, your winnings go to void",
                    "OR-9")]


HORSE_EXAMPLE = "horse Thunder Hooves card king of spades"

BET = Command(
    "bet {amount} [chip|chips] on {horse}", PlaceBet,
    fields={
        "amount": Whole(1, complaint="a bet is a whole number of chips, at least 1, not '{text}'"),
        "horse": Text("HORSE", read=lambda text: " ".join(text.split())),
    },
    examples=["bet 10 on Thunder Hooves", "bet 5 chips on Thunder Hooves"], rule="OR-5",
    help="bet chips on a horse; they go into the pool at once",
    valid=lambda s, actor: s.phase == "betting", suggest=_bet_now,
)

def has_record(state: RacesState, actor: str) -> bool:
    """Whether ``actor`` has anything at the table: a seat (now or before), a horse, a bet."""
    return (actor in state.seated or actor in state.left
            or any(h.owner == actor for h in state.horses)
            or any(b.bettor == actor for b in state.bets))


COMMANDS = Commands(
    "a command of Off to the Races",
    [
        Command("sit", Sit, examples=["sit"], rule="OR-1",
                help="take a seat at the table, then enter a horse",
                valid=lambda s, actor: s.phase == "seating" and not _seated(s, actor)),
        Command(
            # OR-2: the name may itself contain the word "card"; the greedy name makes the
            # line split on its LAST " card ".
            "horse {name} card {card}", lambda name, card: EnterHorse(name, card[0].code),
            fields={"name": Text("NAME", read=clean_name), "card": CardName()},
            examples=[HORSE_EXAMPLE, "horse Wild Card card red joker"], rule="OR-2",
            help="enter (or change) your horse: a name of 1 to 18 characters and a card you own",
            valid=lambda s, actor: s.phase == "seating" and _seated(s, actor),
            suggest=_horse_now, refusal="enter a horse as 'horse NAME card CARD'",
        ),
        Command("ready", Ready, examples=["ready"], rule="OR-3",
                help="your horse is set; seating closes once everyone is ready",
                valid=lambda s, actor: (s.phase == "seating" and _seated(s, actor)
                                        and s.horse_of(actor) is not None
                                        and actor not in s.ready)),
        BET,
        Command("pass", Pass, examples=["pass"], rule="OR-5",
                help="you will not bet (more); betting stops waiting for you",
                valid=lambda s, actor: s.phase == "betting" and actor not in s.passed),
        Command("race", RaceAction, examples=["race"], rule="OR-7",
                help="draw a card; every horse sharing its suit, rank or colour moves 1 "
                     "forward, or all do if none shares",
                valid=lambda s, actor: _racer(s, actor) and not s.lap_owed),
        Command("lap", LapAction, examples=["lap"], rule="OR-8",
                help="draw a card; every horse sharing its suit, rank or colour moves back 1",
                valid=lambda s, actor: _racer(s, actor) and s.lap_owed),
        Command("interested", Interested, examples=["interested"], rule="OR-5",
                help="betting will wait for your bet or pass",
                valid=lambda s, actor: (s.phase in ("seating", "betting")
                                        and actor not in s.interested)),
        Command("stand", Stand, examples=["stand"], rule="OR-1", help="leave the table",
                valid=lambda s, actor: (_seated(s, actor)
                                        and s.phase in ("seating", "betting", "racing")),
                suggest=_stand_now),
        receipts_command("your seat, horse and bets at this table, and the fair source's "
                         "commitment", valid=has_record),
    ],
)
"""The raceway's commands, in the order ``help`` lists them."""
