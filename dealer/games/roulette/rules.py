"""Stationary Roulette (RULES SR-1 to SR-12) as a pure ruleset; only the current phase's
deadline is pending, so an override moves all that follow."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from dealer.clock import as_utc, format_utc
from dealer.clock import iso as _iso
from dealer.games import register
from dealer.games.base import Context, GameSettings, Rejected, Rules, SealedCheck, Summary
from dealer.games.commands import Receipts
from dealer.games.roulette import events, posts, sealed
from dealer.games.roulette.checks import bet_problems, colours_left, describe_left, layout_problems
from dealer.games.roulette.model import (
    COLOURS,
    PLAYERS,
    START,
    Bet,
    Prepare,
    Reminders,
    Roulette,
    RouletteSettings,
    RouletteState,
    Sealed,
    phase_name,
    phase_title,
    reminder_offsets,
)
from dealer.games.roulette.commands import COMMANDS
from dealer.games.roulette.scoring import (
    award_points,
    black_fees,
    end_of_game,
    forfeiter,
    missed_preparation,
    score_roulette,
    settle_black,
)
from dealer.ledger import CHIPS, player
from dealer.text import plural

TEMPLATE = "roulette/{}.txt"


@register
class StationaryRoulette(Rules):
    """Two players prepare roulettes for each other and bet on the opponent's (SR-1..SR-12)."""

    kind = "roulette"
    title = "Stationary Roulette"
    Settings = RouletteSettings
    State = RouletteState
    default_channel = "#stationary-roulette"
    open_to_all = False
    commands = COMMANDS

    # --- creation --------------------------------------------------------------------

    def start(self, ctx: Context, players: list[str], settings: GameSettings,
              start: datetime) -> RouletteState:
        """Create the game; it is ``pending`` until ``start`` if that lies in the future."""
        settings = self.settings_of(settings)
        start = as_utc(start)
        if len(players) != PLAYERS or len(set(players)) != PLAYERS:
            raise Rejected(
                f"Stationary Roulette is for exactly {PLAYERS} different players, "
                f"not {len(players)}: {', '.join(players) or 'nobody'}",
                rule="SR-1",
            )
        stacks = {name: ctx.ledger.balance(player(name), CHIPS) for name in players}
        short = [f"{p} has {stacks[p]}" for p in players if stacks[p] < settings.min_stack]
        if short:
            # SR-12: a game can be created with a minimum stack.
            raise Rejected(
                f"this game needs at least {plural(settings.min_stack, 'chip')} per player; "
                + ", ".join(short),
                rule="SR-12",
            )
        state = RouletteState(
            game=ctx.game_id,
            players=list(players),
            settings=settings,
            starts_at=start,
            starting_stacks=stacks,
            points={p: 0 for p in players},
            black_losses={p: 0 for p in players},
            idle_black={p: 0 for p in players},
            chips_stolen={p: 0 for p in players},
            colours_used={p: {c: 0 for c in COLOURS} for p in players},
        )
        ctx.record(events.GameCreated(players=list(players), starts_at=_iso(start),
                                      settings=settings.model_dump(mode="json"), stacks=stacks))
        ctx.post("opening", TEMPLATE.format("opening"), f"{ctx.game_id}: Stationary Roulette",
                 **posts.opening(ctx, state))
        if start > ctx.now:
            ctx.set_deadline(START, start)
            return state
        self.begin_phase(ctx, state, 0, start)
        return state

    # --- commands --------------------------------------------------------------------

    def handle(self, ctx: Context, state: RouletteState, actor: str, command: Any) -> RouletteState:
        """Accept (or reject) one player's command sent at ``ctx.now``."""
        if actor not in state.players:
            raise Rejected(f"{actor} is not playing in this game", rule="SR-1")
        if state.status == "pending" and ctx.take_due(START):
            self.begin_phase(ctx, state, 0, ctx.now)  # I-11: a message sent at the start counts
        if isinstance(command, Reminders):
            self.set_reminders(ctx, state, actor, command.on)
            return state
        if isinstance(command, Receipts):
            self.send_receipts(ctx, state, actor)
            return state
        self.check_open(ctx, state, actor)
        if isinstance(command, Prepare):
            self.accept_preparation(ctx, state, actor, command)
        elif isinstance(command, Bet):
            self.accept_bet(ctx, state, actor, command)
        else:
            raise Rejected("not a Stationary Roulette command")
        if state.settings.early_close and not self.anything_owed(state):
            # I-14: the same adjudication as the deadline, right now.
            self.close_phase(ctx, state, early=True)
        return state

    def check_open(self, ctx: Context, state: RouletteState, actor: str) -> None:
        """Refuse a submission before the start, after the end, or meant for a closed phase (I-11)."""
        now = ctx.now
        if state.status == "pending" or now < state.phase_starts[0]:
            raise Rejected(
                f"the game has not started: the preparation phase opens at "
                f"{format_utc(state.starts_at)}, and this was sent at {format_utc(now)}",
                rule="SR-1",
            )
        # A phase closes when the next begins; the last one when the game ends.
        closes = state.phase_starts[1:] + ([state.ended_at] if state.ended_at else [])
        meant = max(i for i, began in enumerate(state.phase_starts) if began <= now)
        if meant < len(closes) and now < closes[meant]:
            raise Rejected(
                f"too late: sent at {format_utc(now)}, during {phase_title(meant)}, which "
                f"closed at {format_utc(closes[meant])}"
                + ("" if state.status == "finished" else f"; it is now {phase_title(state.phase)}"),
                rule="SR-1",
                allowed=self.help(state, actor),
            )
        if state.status == "finished":
            raise Rejected(
                f"the game is over (it ended at {format_utc(state.ended_at or now)})", rule="SR-11"
            )

    def accept_preparation(self, ctx: Context, state: RouletteState, actor: str,
                           command: Prepare) -> None:
        """SR-2, SR-3, SR-4, SR-6: put a valid preparation on file, replacing an earlier one."""
        if state.phase >= state.last_round:  # I-19
            raise Rejected(
                f"round {state.last_round} is the last round, so there is no roulette to "
                "prepare now (SR-3)",
                rule="SR-3",
                allowed=self.help(state, actor),
            )
        problems = layout_problems(command)
        if problems:
            allowed = self.examples(state, actor, "prepare")
            raise Rejected("; ".join(problems), rule="SR-2", allowed=allowed)
        limit = state.settings.colour_limit
        left = colours_left(state.colours_used[actor], limit)
        if left[command.colour] == 0:
            # SR-4, interpretation I-3: only preparations locked in at a deadline count.
            raise Rejected(
                f"you have already prepared {command.colour} as the winning colour "
                f"{plural(state.colours_used[actor][command.colour], 'time')}, the most allowed "
                f"({limit}); left: {describe_left(left)}",
                rule="SR-4",
                allowed=[
                    f"prepare {c} gold 30 silver 10" for c in COLOURS if left[c] > 0
                ],
            )
        entry = self.seal(ctx, state, actor, "prepare", command.gold, command.silver,
                          command.black, command.colour)
        self.file(ctx, state, actor, entry, state.preparations)

    def accept_bet(self, ctx: Context, state: RouletteState, actor: str, command: Bet) -> None:
        """SR-3, SR-5, SR-6, SR-10: put a valid bet on file, replacing an earlier one."""
        if state.phase == 0:  # I-10, I-19
            raise Rejected(
                "no roulette is active during the preparation phase; bets open in round 1 "
                "(SR-3)",
                rule="SR-3",
                allowed=self.help(state, actor),
            )
        opponent = state.opponent(actor)
        if state.active.get(opponent) is None:
            # Interpretation I-8 (docs/ROULETTE.md): with no roulette there is no bet to
            # make and none is due; the opponent's missed preparation was already penalised.
            raise Rejected(
                f"{opponent} missed its preparation, so you have no roulette to bet on in "
                f"{phase_title(state.phase)} (SR-10)",
                rule="SR-10",
                allowed=self.help(state, actor),
            )
        problems = bet_problems(command)
        if problems:
            allowed = self.examples(state, actor, "bet")
            raise Rejected("; ".join(problems), rule="SR-5", allowed=allowed)
        entry = self.seal(ctx, state, actor, "bet", command.gold, command.silver, command.black)
        self.file(ctx, state, actor, entry, state.bets)

    def seal(self, ctx: Context, state: RouletteState, actor: str, kind: str, gold: int,
             silver: int, black: int, colour: str | None = None) -> Sealed:
        """Number the submission, derive its salt and compute its receipt (docs/FAIRNESS.md)."""
        phase = phase_name(state.phase)
        key = f"{actor}:{phase}:{kind}"
        number = state.counts.get(key, 0) + 1
        state.counts[key] = number
        salt = ctx.rng.secret(sealed.salt_label(actor, phase, kind, number))
        text = sealed.canonical(state.game, actor, phase, number,
                                sealed.command_text(kind, gold, silver, black, colour))
        entry = Sealed(
            player=actor, phase=phase, kind=kind, number=number, colour=colour, gold=gold,
            silver=silver, black=black, sent_at=ctx.now, salt=salt, canonical=text,
            receipt=sealed.receipt(salt, text),
        )
        ctx.record(events.SubmissionAccepted(
            player=actor, phase=phase, kind=kind, number=number, canonical=text,
            receipt=entry.receipt, sent_at=_iso(ctx.now)))
        return entry

    def file(self, ctx: Context, state: RouletteState, actor: str, entry: Sealed,
             on_file: dict[str, Sealed]) -> None:
        """SR-6: the later valid submission replaces the earlier one; the player gets its receipt."""
        replaced = on_file.get(actor)
        on_file[actor] = entry
        if replaced is not None:
            state.replaced.append(replaced)
        ctx.reply(actor, "confirmation", TEMPLATE.format("confirmation"),
                  f"{state.game}: {'preparation' if entry.kind == 'prepare' else 'bet'} accepted",
                  closes_now=state.settings.early_close and not self.anything_owed(state),
                  **posts.confirmation(ctx, state, actor, entry, replaced,
                                       self.still_owed(state, actor)))

    def set_reminders(self, ctx: Context, state: RouletteState, actor: str, on: bool) -> None:
        """``reminders on|off``: this player's choice, valid at any time before the end (I-12)."""
        if state.status == "finished":
            raise Rejected("the game is over", rule="SR-11")
        if on and actor in state.reminders_off:
            state.reminders_off.remove(actor)
        if not on and actor not in state.reminders_off:
            state.reminders_off.append(actor)
        ctx.record(events.RemindersSet(player=actor, on=on))
        ctx.reply(actor, "reminders", TEMPLATE.format("reminders"),
                  f"{state.game}: reminders {'on' if on else 'off'}", on=on, game=state.game)

    def send_receipts(self, ctx: Context, state: RouletteState, actor: str) -> None:
        """``receipts`` changes nothing, so it is answered at any time, after the end too."""
        ctx.reply(actor, "receipts", TEMPLATE.format("receipts"), f"{state.game}: your receipts",
                  **posts.receipts(ctx, state, actor, self.still_owed(state, actor)))

    def still_owed(self, state: RouletteState, name: str) -> list[str]:
        """The submissions ``name`` still owes in the current phase (``preparation``, ``bet``)."""
        if state.status != "running":
            return []
        owed = []
        if state.phase >= 1 and state.active.get(state.opponent(name)) is not None:
            if name not in state.bets:
                owed.append("bet")
        if state.phase < state.last_round and name not in state.preparations:
            owed.append("preparation")
        return owed

    def anything_owed(self, state: RouletteState) -> bool:
        """Whether either player still owes a submission in the current phase."""
        return any(self.still_owed(state, p) for p in state.players)

    # --- the clock -------------------------------------------------------------------

    def on_deadline(self, ctx: Context, state: RouletteState, name: str) -> RouletteState:
        """``start``, a phase deadline, or a reminder has come (``ctx.now`` is its due time)."""
        if name == START and state.status == "pending":
            self.begin_phase(ctx, state, 0, ctx.now)
        elif state.status == "running" and name == phase_name(state.phase):
            self.close_phase(ctx, state, early=False)
        elif state.status == "running" and name.startswith(f"reminder-{phase_name(state.phase)}-"):
            self.remind(ctx, state)
        else:
            # A deadline of a phase already closed (e.g. an admin fired a stale name).
            ctx.record(events.DeadlineIgnored(deadline=name, phase=phase_name(state.phase),
                                              status=state.status))
        return state

    def begin_phase(self, ctx: Context, state: RouletteState, phase: int, at: datetime) -> None:
        """Open ``phase`` at ``at``: its deadline, its reminders and the public post (SR-7)."""
        if phase == 0:
            # SR-12, I-16: the starting stacks are the wallets when the game starts (a
            # pending game may start long after it was created).
            state.starting_stacks = {p: ctx.ledger.balance(player(p), CHIPS) for p in state.players}
        state.status = "running"
        state.phase = phase
        state.phase_starts.append(as_utc(at))
        length = state.settings.preparation_length if phase == 0 else state.settings.round_length
        deadline = as_utc(at) + length
        state.phase_deadline = deadline
        state.preparations = {}
        state.bets = {}
        state.replaced = []
        name = phase_name(phase)
        ctx.set_deadline(name, deadline)
        for label, offset in reminder_offsets(state.settings.remind_before):
            if deadline - offset > ctx.now:  # I-12: only reminders still ahead
                ctx.set_deadline(f"reminder-{name}-{label}", deadline - offset)
        ctx.record(events.PhaseStarted(
            phase=name, at=_iso(at), deadline=_iso(deadline),
            commitments={r.preparer: r.commitment for r in state.active.values() if r}))
        ctx.post("phase_start", TEMPLATE.format("phase_start"),
                 f"{state.game}: {phase_title(phase)} begins",
                 **posts.phase_start(ctx, state, deadline))

    def remind(self, ctx: Context, state: RouletteState) -> None:
        """PM each player who still owes a submission and has not said ``reminders off``."""
        deadline = self.current_deadline(ctx, state)
        for name in state.players:
            owed = self.still_owed(state, name)
            if owed and name not in state.reminders_off:
                # I-12: a reminder is only worth sending before its deadline; one that
                # could not go out in time (the daemon was down) is dropped, not sent.
                ctx.reply(name, "reminder", TEMPLATE.format("reminder"),
                          f"{state.game}: {phase_title(state.phase)} closes soon",
                          stale_after=deadline, **posts.reminder(state, name, owed, deadline))

    def current_deadline(self, ctx: Context, state: RouletteState) -> datetime:
        """The current phase's deadline as it stands (an admin may have moved it)."""
        return ctx.deadlines.get(phase_name(state.phase)) or state.phase_deadline or ctx.now

    def close_phase(self, ctx: Context, state: RouletteState, early: bool) -> None:
        """Adjudicate the current phase at ``ctx.now`` and open the next one, or end the game."""
        name = phase_name(state.phase)
        for pending in list(ctx.deadlines):
            if pending == name or pending.startswith(f"reminder-{name}-"):
                ctx.cancel_deadline(pending)
        memo = f"{state.game} {name}"
        ending = state.phase == state.last_round
        if state.phase >= 1:
            record = self.resolve_round(ctx, state, memo)
            state.forfeited = forfeiter(state)
            ending = ending or state.forfeited is not None
            ctx.post("round_result", TEMPLATE.format("round_result"),
                     f"{state.game}: round {state.phase} result",
                     **posts.round_result(ctx, state, record, early, ending))
        if ending:
            # I-9: after a forfeit no later round is played, so no preparation is charged.
            self.finish(ctx, state)
            return
        missed = self.lock_preparations(ctx, state, memo)
        if missed:
            ctx.post("inactivity", TEMPLATE.format("inactivity"),
                     f"{state.game}: missed preparation", **posts.inactivity(ctx, state, missed))
        self.begin_phase(ctx, state, state.phase + 1, ctx.now)
        if state.settings.early_close and not self.anything_owed(state):
            # Only a last round with no active roulette can start with nothing due.
            self.close_phase(ctx, state, early=True)

    def resolve_round(self, ctx: Context, state: RouletteState, memo: str) -> dict[str, Any]:
        """SR-8 and SR-9 for the current round's active roulettes; the round's record."""
        scores = []
        for preparer in state.players:
            roulette = state.active.get(preparer)
            if roulette is None:
                continue
            on_file = state.bets.get(roulette.bettor)
            bet = Bet(on_file.gold, on_file.silver, on_file.black) if on_file else None
            score = score_roulette(roulette, bet)  # SR-8; a missing bet is all zeros (SR-10)
            award_points(state, score)
            scores.append(score)
        transfer = settle_black(ctx.ledger, state, scores, memo)  # SR-9
        fees = black_fees(ctx.ledger, scores, memo)  # SR-9, after the transfer
        record = posts.round_record(state, scores, transfer, fees)
        ctx.record(events.RoundResolved(round=state.phase, **record))
        return record

    def lock_preparations(self, ctx: Context, state: RouletteState,
                          memo: str) -> list[dict[str, Any]]:
        """Lock in the next round's roulettes, then charge the missing ones (I-4, SR-10)."""
        next_round = state.phase + 1
        active: dict[str, Roulette | None] = {}
        missed = []
        for name in state.players:
            entry = state.preparations.get(name)
            if entry is None:
                fee = missed_preparation(ctx.ledger, state, name, memo)  # SR-10
                missed.append({"player": name, "opponent": state.opponent(name), "fee": fee})
                ctx.record(events.PreparationMissed(player=name, round=next_round, fee=fee))
                active[name] = None
                continue
            assert entry.colour is not None
            state.colours_used[name][entry.colour] += 1  # SR-4 counts locked-in preparations
            active[name] = Roulette(
                preparer=name, bettor=state.opponent(name), round=next_round, preparation=entry,
                # I-18: the preparation's own salt seals the public colour commitment.
                commitment=sealed.colour_commitment(entry.salt, entry.colour),
            )
        state.active = active
        return missed

    def finish(self, ctx: Context, state: RouletteState) -> None:
        """SR-11 (and the SR-9 forfeit): decide the game, move the end transfer, post it."""
        if state.forfeited is not None:
            ctx.post("forfeit", TEMPLATE.format("forfeit"), f"{state.game}: forfeit",
                     **posts.forfeit(state))
        result = end_of_game(ctx.ledger, state, f"{state.game} end")
        state.status = "finished"
        state.ended_at = ctx.now
        ctx.record(events.GameFinished(
            winner=result.winner, forfeit=result.forfeit, tiebreak=result.tiebreak,
            lead=result.lead, transfer=result.transfer,
            tournament_points=dict(result.tournament_points), points=dict(state.points)))
        ctx.post("final_result", TEMPLATE.format("final_result"), f"{state.game}: final result",
                 **posts.final_result(ctx, state, result))

    # --- what players and the shell see ----------------------------------------------

    def examples(self, state: RouletteState, actor: str, verb: str) -> list[str]:
        """The help lines for ``verb`` (``prepare`` or ``bet``) valid for ``actor`` now."""
        return [line for line in self.help(state, actor) if line.startswith(verb + " ")]

    def summary(self, state: RouletteState) -> Summary:
        """Status, players, points, winner, and the score sheets in ``detail``."""
        return Summary(
            status=state.status,
            players=list(state.players),
            scores=dict(state.points),
            winner=state.winner,
            detail={
                "round": state.phase,
                "phase": phase_name(state.phase) if state.status == "running" else state.status,
                "tournament_points": {p: _half(v) for p, v in state.tournament_points.items()},
                "black_losses": dict(state.black_losses),
                "idle_black": {p: state.idle_black.get(p, 0) for p in state.players},
                "chips_stolen": dict(state.chips_stolen),
                "forfeited": state.forfeited,
                "draw": state.status == "finished" and state.winner is None,
                "starting_stacks": dict(state.starting_stacks),
            },
        )


    def fairness_record(self, events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """Each resolved round's full commitments, salts, receipts and sealed texts."""
        return sealed.fairness_record(events)

    def check_sealed(self, game_id: str, server_seed: str,
                     events: list[tuple[str, dict[str, Any]]]) -> SealedCheck:
        """Every receipt and colour commitment, against the revealed seed (docs/FAIRNESS.md)."""
        return sealed.check_sealed(game_id, server_seed, events)


def _half(value: float) -> float | int:
    """1 and 0 as integers, 0.5 as it is."""
    return int(value) if value == int(value) else value

