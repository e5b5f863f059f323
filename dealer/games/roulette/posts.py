"""The contexts of Stationary Roulette's posts and replies (``templates/roulette/``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dealer.clock import format_duration
from dealer.games.base import Context
from dealer.games.roulette.checks import colours_left
from dealer.games.roulette.model import (
    BLACK,
    BLACK_FEE,
    BLACK_LOSS_CAP,
    COLOURS,
    MISSED_PREPARATION_FEE,
    MISSED_PREPARATION_POINTS,
    POINTS_PER_CHIP,
    Roulette,
    RouletteState,
    Sealed,
    phase_name,
    phase_title,
)
from dealer.games.roulette.scoring import BlackTransfer, FinalResult, RouletteScore
from dealer.ledger import CHIPS, player


def standings(ctx: Context, state: RouletteState) -> list[dict[str, Any]]:
    """Each player's points, chips on hand and black tallies, for every result post."""
    return [
        {
            "player": name,
            "points": state.points[name],
            "chips": ctx.ledger.balance(player(name), CHIPS),
            "start_chips": state.starting_stacks[name],
            "black_losses": state.black_losses[name],
            "idle_black": state.idle_black.get(name, 0),
            "chips_stolen": state.chips_stolen[name],
        }
        for name in state.players
    ]


def opening(ctx: Context, state: RouletteState) -> dict[str, Any]:
    """The public post announcing a new game and its fair-source commitment."""
    s = state.settings
    return {
        "game": state.game,
        "players": list(state.players),
        "stacks": [{"player": p, "chips": state.starting_stacks[p]} for p in state.players],
        "starts_at": state.starts_at,
        "pending": state.starts_at > ctx.now,
        "rounds": s.rounds,
        "round_length": format_duration(s.round_length),
        "preparation_length": format_duration(s.preparation_length),
        "layout_public": s.layout_public,
        "early_close": s.early_close,
        "colour_limit": s.colour_limit,
        "min_stack": s.min_stack,
        "commitment": ctx.rng.commitment,
    }


def roulette_card(roulette: Roulette, layout_public: bool) -> dict[str, Any]:
    """A roulette as announced when it becomes active (SR-7; I-13: its layout only if public)."""
    card: dict[str, Any] = {
        "preparer": roulette.preparer,
        "bettor": roulette.bettor,
        "commitment": roulette.commitment,
        "layout_public": layout_public,
    }
    if layout_public:
        card.update(gold=roulette.layout("gold"), silver=roulette.layout("silver"), black=0)
    return card


def phase_start(ctx: Context, state: RouletteState, deadline: datetime) -> dict[str, Any]:
    """The public post opening a phase: roulettes, commitments, what is due, the deadline."""
    roulettes, missing = [], []
    if state.phase >= 1:
        for name in state.players:
            roulette = state.active.get(name)
            if roulette is None:
                missing.append({"preparer": name, "bettor": state.opponent(name)})
            else:
                roulettes.append(roulette_card(roulette, state.settings.layout_public))
    previous = state.phase_starts[-2] if len(state.phase_starts) > 1 else None
    return {
        "game": state.game,
        "phase": state.phase,
        "title": phase_title(state.phase),
        "deadline_name": phase_name(state.phase),
        "last_round": state.last_round,
        "preparation_due": state.phase < state.last_round,
        "next_round": state.phase + 1,
        "roulettes": roulettes,
        "missing": missing,
        "deadline": deadline,
        "early_close": state.settings.early_close,
        "standings": standings(ctx, state) if previous is not None else [],
    }


def entry_lines(state: RouletteState, name: str) -> list[dict[str, Any]]:
    """What ``name`` has on file in the current phase, with receipts."""
    found = [state.preparations.get(name), state.bets.get(name)]
    return [
        {"kind": "preparation" if e.kind == "prepare" else "bet", "canonical": e.canonical,
         "receipt": e.receipt, "number": e.number}
        for e in found
        if e is not None
    ]


def receipts(ctx: Context, state: RouletteState, actor: str, owed: list[str]) -> dict[str, Any]:
    """The answer to ``receipts``: every receipt and sealed text in full, replaced ones too (SR-6)."""
    def full(e: Sealed) -> dict[str, Any]:
        return {"kind": "preparation" if e.kind == "prepare" else "bet", "number": e.number,
                "canonical": e.canonical, "receipt": e.receipt}

    counted = [e for e in (state.preparations.get(actor), state.bets.get(actor)) if e is not None]
    return {
        "game": state.game,
        "status": state.status,
        "phase_title": phase_title(state.phase),
        "on_file": [full(e) for e in counted],
        "replaced": [full(e) for e in state.replaced if e.player == actor],
        "active": [roulette_card(r, state.settings.layout_public)
                   for r in state.active.values() if r is not None],
        "owed": owed,
        "deadline": ctx.deadlines.get(phase_name(state.phase)) or state.phase_deadline,
        "commitment": ctx.rng.commitment,
    }


def confirmation(ctx: Context, state: RouletteState, actor: str, entry: Sealed,
                 replaced: Sealed | None, owed: list[str]) -> dict[str, Any]:
    """The private confirmation of an accepted submission (SR-6) with its receipt."""
    opponent = state.opponent(actor)
    context: dict[str, Any] = {
        "game": state.game,
        "player": actor,
        "opponent": opponent,
        "submission": entry.kind,
        "phase_title": phase_title(state.phase),
        "colour": entry.colour,
        "gold": entry.gold,
        "silver": entry.silver,
        "black": entry.black,
        "number": entry.number,
        "canonical": entry.canonical,
        "receipt": entry.receipt,
        "replaced": None if replaced is None else {"number": replaced.number,
                                                   "receipt": replaced.receipt},
        "on_file": entry_lines(state, actor),
        "owed": owed,
        "deadline": ctx.deadlines.get(phase_name(state.phase)) or state.phase_deadline,
        "early_close": state.settings.early_close,
        "for_round": state.phase + 1,
    }
    if entry.kind == "prepare":
        limit = state.settings.colour_limit
        used = dict(state.colours_used[actor])
        context["colour_limit"] = limit
        context["left_now"] = colours_left(used, limit)
        used[entry.colour or ""] = used.get(entry.colour or "", 0) + 1
        context["left_after"] = colours_left(used, limit)
    else:
        roulette = state.active[opponent]
        assert roulette is not None
        context["roulette"] = roulette_card(roulette, state.settings.layout_public)
    return context


def reminder(state: RouletteState, name: str, owed: list[str],
             deadline: datetime) -> dict[str, Any]:
    """The private reminder of what ``name`` still owes before the deadline."""
    return {
        "game": state.game,
        "player": name,
        "opponent": state.opponent(name),
        "title": phase_title(state.phase),
        "owed": owed,
        "deadline": deadline,
        "next_round": state.phase + 1,
        "missed_points": MISSED_PREPARATION_POINTS,
        "missed_fee": MISSED_PREPARATION_FEE,
    }


def score_card(score: RouletteScore) -> dict[str, Any]:
    """One resolved roulette, fully revealed: colour, layout, bet, points, salts, receipts."""
    roulette = score.roulette
    prep = roulette.preparation
    bet_entry = None if score.missing_bet else {"gold": score.bet.gold,
                                                 "silver": score.bet.silver,
                                                 "black": score.bet.black}
    return {
        "preparer": roulette.preparer,
        "bettor": roulette.bettor,
        "colour": roulette.colour,
        "gold": prep.gold,
        "silver": prep.silver,
        "black": prep.black,
        "bet": bet_entry,
        "preparer_points": score.preparer_points,
        "preparer_bonus": score.preparer_bonus,
        "bettor_points": score.bettor_points,
        "bettor_bonus": score.bettor_bonus,
        "owed": score.owed,
        "commitment": roulette.commitment,
        "salt": prep.salt,
        "prep_canonical": prep.canonical,
        "prep_receipt": prep.receipt,
    }


def revealed_bets(state: RouletteState, scores: list[RouletteScore]) -> list[dict[str, Any]]:
    """The bets that counted this round, with the salts that open their receipts."""
    shown = []
    for score in scores:
        entry = state.bets.get(score.roulette.bettor)
        if entry is not None:
            shown.append({"player": entry.player, "canonical": entry.canonical,
                          "salt": entry.salt, "receipt": entry.receipt})
    return shown


def transfer_card(transfer: BlackTransfer | None) -> dict[str, Any] | None:
    """The black transfer of a round (SR-9), or None."""
    if transfer is None:
        return None
    return {
        "payer": transfer.payer,
        "payee": transfer.payee,
        "owed": transfer.owed,
        "paid": transfer.paid,
        "limited_by": transfer.limited_by,
        "counted": transfer.counted,
        "gross": [{"player": p, "owed": n} for p, n in transfer.gross.items()],
    }


def round_result(ctx: Context, state: RouletteState, record: dict[str, Any], early: bool,
                 ending: bool) -> dict[str, Any]:
    """The public result of a round (SR-8, SR-9) from its record (:func:`round_record`)."""
    played = {r["preparer"] for r in record["roulettes"]}
    return {
        "game": state.game,
        "round": state.phase,
        "early": early,
        "ending": ending,
        "forfeited": state.forfeited,
        "roulettes": record["roulettes"],
        "no_roulette": [{"preparer": p, "bettor": state.opponent(p)}
                        for p in state.players if p not in played],
        "transfer": record["transfer"],
        "fees": [{"player": p, "paid": n} for p, n in record["fees"].items()],
        "fee": BLACK_FEE,
        "cap": BLACK_LOSS_CAP,
        "bets": record["bets"],
        "standings": standings(ctx, state),
        "next_round": state.phase + 1,
        "next_deadline": None if ending else ctx.now + state.settings.round_length,
    }


def round_record(state: RouletteState, scores: list[RouletteScore], transfer: BlackTransfer | None,
                 fees: dict[str, int]) -> dict[str, Any]:
    """A resolved round's event data, with the full salts, receipts and texts the post shortens."""
    return {
        "roulettes": [score_card(s) for s in scores],
        "bets": revealed_bets(state, scores),
        "transfer": transfer_card(transfer),
        "fees": dict(fees),
        "points": dict(state.points),
        "black_losses": dict(state.black_losses),
        "idle_black": {p: state.idle_black.get(p, 0) for p in state.players},
        "chips_stolen": dict(state.chips_stolen),
    }


def inactivity(ctx: Context, state: RouletteState, missed: list[dict[str, Any]]) -> dict[str, Any]:
    """The public notice of missed preparations (SR-10)."""
    return {
        "game": state.game,
        "title": phase_title(state.phase),
        "missed": missed,
        "points": MISSED_PREPARATION_POINTS,
        "fee": MISSED_PREPARATION_FEE,
        "next_round": state.phase + 1,
        "standings": standings(ctx, state),
    }


def forfeit(state: RouletteState) -> dict[str, Any]:
    """The public notice that a player's black losses reached the cap (SR-9)."""
    name = state.forfeited or ""
    return {
        "game": state.game,
        "player": name,
        "opponent": state.opponent(name),
        "losses": state.black_losses[name],
        "cap": BLACK_LOSS_CAP,
        "round": state.phase,
    }


def final_result(ctx: Context, state: RouletteState, result: FinalResult) -> dict[str, Any]:
    """The public final result (SR-11), with the revealed server seed (GH-40)."""
    return {
        "game": state.game,
        "winner": result.winner,
        "loser": result.loser,
        "draw": result.winner is None,
        "forfeit": result.forfeit,
        "tiebreak": result.tiebreak,
        "lead": result.lead,
        "per_chip": POINTS_PER_CHIP,
        "transfer_due": result.transfer_due,
        "transfer": result.transfer,
        "tournament_points": [
            {"player": p, "points": result.tournament_points[p]} for p in state.players
        ],
        "standings": standings(ctx, state),
        "rounds_played": state.phase,
        "server_seed": ctx.rng.server_seed,
        "commitment": ctx.rng.commitment,
        "colours": COLOURS,
        "black": BLACK,
    }
