"""Resolution: SR-8 (points), SR-9 (chips through black), SR-10 (inactivity), SR-11 (end);
called in that order at a round's deadline. Nothing is posted here."""

from __future__ import annotations

from dataclasses import dataclass, field

from dealer.games.roulette.model import (
    BLACK,
    BLACK_FEE,
    BLACK_LOSS_CAP,
    BONUS,
    MISSED_PREPARATION_FEE,
    MISSED_PREPARATION_POINTS,
    POINTS_PER_CHIP,
    STAKE,
    Bet,
    Roulette,
    RouletteState,
)
from dealer.ledger import CHIPS, HOUSE, Ledger, player

ON_HAND = "chips on hand"
CAP = "the 100-chip cap on black losses"


@dataclass
class RouletteScore:
    """SR-8 applied to one roulette: the points each side earns and the chips owed."""

    roulette: Roulette
    bet: Bet
    missing_bet: bool
    preparer_points: int = 0
    bettor_points: int = 0
    preparer_bonus: int = 0
    bettor_bonus: int = 0
    owed: int = 0  # chips the bettor owes the preparer through black, before SR-9 limits


def score_roulette(roulette: Roulette, bet: Bet | None) -> RouletteScore:
    """SR-8 for one roulette; a missing bet counts as 0 on every colour (SR-10, I-17)."""
    stake = bet or Bet()
    result = RouletteScore(roulette, stake, missing_bet=bet is None)
    winning = roulette.colour
    on_winning = stake.on(winning)
    if winning == BLACK:
        # SR-8: no base points on black; the preparer takes 40 - b[black] chips (SR-9).
        result.owed = STAKE - stake.black
    else:
        # SR-8: P earns I[W], B earns b[W].
        result.preparer_points = roulette.layout(winning)
        result.bettor_points = on_winning
    if on_winning == STAKE:
        # SR-8: all 40 on one colour and that colour is W (also when W is black).
        result.bettor_bonus = BONUS
    if on_winning == 0:
        # SR-8: b[W] = 0 gives the preparer 20 (a missing bet always does, SR-10).
        result.preparer_bonus = BONUS
    return result


def award_points(state: RouletteState, score: RouletteScore) -> None:
    """Add one roulette's points and bonuses to the running scores."""
    preparer, bettor = score.roulette.preparer, score.roulette.bettor
    state.points[preparer] += score.preparer_points + score.preparer_bonus
    state.points[bettor] += score.bettor_points + score.bettor_bonus


@dataclass
class BlackTransfer:
    """Chips moved through black in one round (SR-9)."""

    payer: str
    payee: str
    owed: int  # what the rules ask for (the net difference when both roulettes are black)
    paid: int
    limited_by: str | None = None
    gross: dict[str, int] = field(default_factory=dict)  # both black: what each owed
    counted: bool = True  # False: paid for a round without a bet, not towards the cap (SR-10)


def settle_black(ledger: Ledger, state: RouletteState, scores: list[RouletteScore],
                 memo: str) -> BlackTransfer | None:
    """SR-9: move the chips owed through black, net when both roulettes are black (I-20)."""
    blacks = [s for s in scores if s.roulette.colour == BLACK]
    if not blacks:
        return None
    if len(blacks) == 1:
        only = blacks[0]
        bettor, preparer = only.roulette.bettor, only.roulette.preparer
        return pay_black(ledger, state, bettor, preparer, only.owed, memo,
                         counts=not only.missing_bet)
    # SR-9: both black, only the net difference moves, from the one owing more
    # (I-7: equal amounts move nothing).
    gross = {s.roulette.bettor: s.owed for s in blacks}
    missing = {s.roulette.bettor: s.missing_bet for s in blacks}
    first, second = state.players
    payer, payee = (first, second) if gross[first] >= gross[second] else (second, first)
    transfer = pay_black(ledger, state, payer, payee, gross[payer] - gross[payee], memo,
                         counts=not missing[payer])
    transfer.gross = gross
    return transfer


def pay_black(ledger: Ledger, state: RouletteState, payer: str, payee: str, owed: int, memo: str,
              counts: bool = True) -> BlackTransfer:
    """Move ``owed`` chips through black, limited by chips on hand and the cap (SR-9, I-5, I-6)."""
    on_hand = ledger.balance(player(payer), CHIPS)
    room = BLACK_LOSS_CAP - state.black_losses[payer] if counts else owed
    paid = max(0, min(owed, on_hand, room))
    limited_by = None
    if paid < owed:
        limited_by = CAP if room <= on_hand else ON_HAND
    why = "black (SR-9)" if counts else "black, no bet placed (SR-9, SR-10)"
    ledger.move(player(payer), player(payee), CHIPS, paid, f"{memo}: {why}")
    if counts:
        state.black_losses[payer] += paid
    else:
        state.idle_black[payer] = state.idle_black.get(payer, 0) + paid
    state.chips_stolen[payee] += paid
    return BlackTransfer(payer, payee, owed, paid, limited_by, counted=counts)


def black_fees(ledger: Ledger, scores: list[RouletteScore], memo: str) -> dict[str, int]:
    """SR-9: each preparer of a black roulette pays 10 chips (or what it has) to the house."""
    fees: dict[str, int] = {}
    for s in scores:
        if s.roulette.colour == BLACK:
            name = s.roulette.preparer
            fees[name] = ledger.move_up_to(
                player(name), HOUSE, CHIPS, BLACK_FEE, f"{memo}: black fee (SR-9)"
            )
    return fees


def forfeiter(state: RouletteState) -> str | None:
    """SR-9: the player whose black losses reached the cap (at most one: a round moves the net)."""
    reached = [p for p in state.players if state.black_losses[p] >= BLACK_LOSS_CAP]
    return reached[0] if reached else None


def missed_preparation(ledger: Ledger, state: RouletteState, name: str, memo: str) -> int:
    """SR-10: the opponent earns 60 points; ``name`` pays 5 chips (or what it has); the fee paid."""
    state.points[state.opponent(name)] += MISSED_PREPARATION_POINTS
    return ledger.move_up_to(
        player(name), HOUSE, CHIPS, MISSED_PREPARATION_FEE, f"{memo}: missed preparation (SR-10)"
    )


@dataclass
class FinalResult:
    """SR-11: how the game ended."""

    winner: str | None
    loser: str | None
    forfeit: bool
    tiebreak: bool
    lead: int
    transfer_due: int
    transfer: int
    tournament_points: dict[str, float]


def end_of_game(ledger: Ledger, state: RouletteState, memo: str) -> FinalResult:
    """SR-11 (and SR-9's forfeit): decide the winner, move the end transfer, fill the state."""
    first, second = state.players
    lead = abs(state.points[first] - state.points[second])
    forfeited = state.forfeited
    if forfeited is not None:
        # SR-9/SR-11: the forfeiting player loses, whatever the points; no end transfer.
        winner, tiebreak = state.opponent(forfeited), False
    else:
        winner, tiebreak = _winner_by_points(state)
    if winner is None:
        result = FinalResult(None, None, False, tiebreak, 0, 0, 0, {first: 0.5, second: 0.5})
    else:
        loser = state.opponent(winner)
        # SR-11: floor(lead / 10), at most the loser's chips; I-15: a tiebreak win has lead 0.
        due = 0 if forfeited else lead // POINTS_PER_CHIP
        paid = ledger.move_up_to(player(loser), player(winner), CHIPS, due, f"{memo}: lead (SR-11)")
        result = FinalResult(
            winner, loser, forfeited is not None, tiebreak, lead, due, paid, {winner: 1, loser: 0}
        )
    state.winner = result.winner
    state.tiebreak = result.tiebreak
    state.tournament_points = dict(result.tournament_points)
    state.end_transfer = result.transfer
    return result


def _winner_by_points(state: RouletteState) -> tuple[str | None, bool]:
    """SR-11: more points wins; then more chips received through black; else a draw."""
    first, second = state.players
    if state.points[first] != state.points[second]:
        return (first if state.points[first] > state.points[second] else second), False
    if state.chips_stolen[first] != state.chips_stolen[second]:
        stolen = state.chips_stolen
        return (first if stolen[first] > stolen[second] else second), True
    return None, True
