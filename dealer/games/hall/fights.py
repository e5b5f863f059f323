"""The Hall's Exoptosis fights (RULES GH-18, GH-19): battles and duels, each a child game."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from dealer.games.base import Context, Rejected, Summary
from dealer.games.commands import Choice, Command, Example, Players, Whole
from dealer.games.names import read_names
from dealer.games.hall import fight_events as events
from dealer.games.hall.items import card_count
from dealer.games.hall.state import Challenge, HallState

BATTLE_CARDS = 4  # GH-18: a player with at least 4 cards may engage
MATCH_KIND = "exoptosis"


@dataclass(frozen=True)
class Battle:
    """GH-18: engage in the next phase's battle."""


@dataclass(frozen=True)
class Duel:
    """GH-19: challenge the named members to a duel."""

    challenged: tuple[str, ...]


@dataclass(frozen=True)
class AnswerDuel:
    """GH-19: accept or decline a duel one was challenged to."""

    verb: str  # accept | decline
    duel: int


GAME_ID_LENGTH = 64
"""The longest game id the store keeps (``games.id``, as ``dealer game new`` allows)."""


def battle_id(hall: str, phase: int) -> str:
    """The match id of the battle of those who engaged in phase ``phase``."""
    return _match_id(hall, f"battle-{phase}")


def duel_id(hall: str, number: int) -> str:
    """The match id of duel challenge ``number``."""
    return _match_id(hall, f"duel-{number}")


def _match_id(hall: str, suffix: str) -> str:
    """``HALL-SUFFIX``, or the cycle's id cut short and marked with its hash when too long."""
    whole = f"{hall}-{suffix}"
    if len(whole) <= GAME_ID_LENGTH:
        return whole
    mark = hashlib.blake2b(hall.encode("utf-8"), digest_size=4).hexdigest()
    keep = GAME_ID_LENGTH - len(suffix) - len(mark) - 2
    return f"{hall[:keep]}-{mark}-{suffix}"


def battle(ctx: Context, state: HallState, actor: str, command: Battle) -> None:
    """GH-18: engage once per phase, holding at least 4 cards outside any match."""
    if actor in state.battlers:
        raise Rejected(f"you engaged in battle already in phase {state.phase}; once per phase",
                       rule="GH-18")
    held = card_count(ctx.ledger, ctx.scope.player(actor))
    if held < BATTLE_CARDS:
        raise Rejected(f"engaging in battle takes at least {BATTLE_CARDS} cards and you hold "
                       f"{held} outside any match", rule="GH-18",
                       allowed=["buy random card — 5 vertebrae (GH-5)", "inventory"])
    state.battlers.append(actor)
    ctx.record(events.BattleEngaged(player=actor, phase=state.phase))
    ctx.post("battle_engaged", "hall/battle_engaged.txt", f"{actor} engages in battle",
             name=actor, engaged=list(state.battlers), phase=state.phase,
             starts_at=state.phase_ends_at)


def duel(ctx: Context, state: HallState, actor: str, command: Duel) -> None:
    """GH-19: challenge one or more other members (each named once)."""
    names: list[str] = []
    # Names hold spaces ("Mary Ann"): each is the longest run of words naming a member.
    for word in read_names(command.challenged, [m.name for m in state.members]):
        member = state.member(word)
        if member is None:
            others = ", ".join(state.others(actor)) or "nobody yet"
            raise Rejected(f"{word} is not in the Hall", rule="GH-19",
                           allowed=[f"members you can challenge: {others}"])
        if member.name == actor:
            raise Rejected("you cannot challenge yourself", rule="GH-19")
        if member.name in names:
            raise Rejected(f"{member.name} is named twice", rule="GH-19")
        names.append(member.name)
    challenge = Challenge(id=state.next_challenge, challenger=actor, challenged=names)
    state.next_challenge += 1
    state.challenges.append(challenge)
    ctx.record(events.DuelChallenged(id=challenge.id, challenger=actor, challenged=names))
    ctx.post("duel_challenge", "hall/duel_challenge.txt", f"{actor} challenges {', '.join(names)}",
             challenge=challenge.model_dump(), lapses_at=state.phase_ends_at)


def answer(ctx: Context, state: HallState, actor: str, command: AnswerDuel) -> None:
    """GH-19: one decline cancels the challenge; when all have accepted the match opens."""
    challenge = next((c for c in state.challenges if c.id == command.duel), None)
    if challenge is None or actor not in challenge.challenged:
        mine = [f"{c.id} (from {c.challenger})" for c in state.challenges
                if actor in c.challenged and actor not in c.accepted]
        raise Rejected(f"you were not challenged to duel {command.duel}, or it is no longer "
                       "open", rule="GH-19",
                       allowed=[f"duels open to you: {', '.join(mine) or 'none'}"])
    if actor in challenge.accepted:
        raise Rejected(f"you accepted duel {challenge.id} already", rule="GH-19")
    ctx.record(events.DuelAnswered(id=challenge.id, player=actor, verb=command.verb))
    if command.verb == "decline":
        state.challenges.remove(challenge)
        ctx.post("duel_declined", "hall/duel_declined.txt", f"Duel {challenge.id} declined",
                 challenge=challenge.model_dump(), by=actor)
        return
    challenge.accepted.append(actor)
    waiting = [n for n in challenge.challenged if n not in challenge.accepted]
    if waiting:
        ctx.reply(actor, "confirmation", "hall/duel_accepted.txt", f"Duel {challenge.id}",
                  challenge=challenge.model_dump(), waiting=waiting)
        return
    state.challenges.remove(challenge)
    players = [challenge.challenger, *challenge.challenged]
    open_match(ctx, state, duel_id(ctx.game_id, challenge.id), "duel", players)


def open_match(ctx: Context, state: HallState, game_id: str, fight: str, players: list[str]) -> None:
    """Open an Exoptosis match of the cycle, now, in the cycle's channel, with the cycle's
    timings for its matches (GH-10, GH-11, GH-17)."""
    timings = state.settings.model_dump(mode="json", include=set(MATCH_TIMINGS))
    ctx.open_child(MATCH_KIND, game_id, players,
                   {"fight": fight, **{MATCH_TIMINGS[name]: value for name, value in timings.items()}})
    ctx.record(events.FightOpened(game=game_id, fight=fight, players=players))
    ctx.post("fight_opened", "hall/fight_opened.txt", f"Exoptosis {fight}: {game_id}",
             game=game_id, fight=fight, players=players)


MATCH_TIMINGS = {"match_setup_window": "setup_window", "match_betting_window": "betting_window",
                 "match_turn_length": "turn_length"}
"""The cycle's settings for its matches, each the match's setting of that name."""


def phase_ends(ctx: Context, state: HallState, closing: int) -> None:
    """At the next phase's start: the battle (GH-18) and the lapse of unanswered challenges (GH-19)."""
    engaged = list(state.battlers)
    state.battlers = []
    lapsed = list(state.challenges)
    state.challenges = []
    if lapsed:
        ctx.record(events.DuelsLapsed(ids=[c.id for c in lapsed]))
        ctx.post("duels_lapsed", "hall/duels_lapsed.txt", "Duel challenges lapsed",
                 lapsed=[c.model_dump() for c in lapsed], phase=closing)
    if not engaged:
        return
    if len(engaged) < 2:
        ctx.record(events.NoBattle(phase=closing, engaged=engaged))
        ctx.post("no_battle", "hall/no_battle.txt", "No battle this phase", engaged=engaged,
                 phase=closing)
        return
    open_match(ctx, state, battle_id(ctx.game_id, closing), "battle", engaged)


def child_finished(ctx: Context, state: HallState, child_id: str, summary: Summary) -> None:
    """A match ended: the cycle records it (its result and reward are the match's own posts)."""
    refresh_cards(ctx, state, list(summary.players))
    ctx.record(events.FightEnded(game=child_id, status=summary.status, winner=summary.winner,
                                 detail={k: summary.detail.get(k) for k in ("fight", "result",
                                                                            "reward")}))


def refresh_cards(ctx: Context, state: HallState, names: list[str] | None = None) -> None:
    """Keep the card count of the members a step touched, for ``help`` (GH-18's ``battle``)."""
    touched = set(names or [])
    for transfer in ctx.ledger.staged:
        touched |= {transfer.source, transfer.target}
    for member in state.members:
        if member.name in touched or ctx.scope.player(member.name) in touched:
            state.cards[member.name] = card_count(ctx.ledger, ctx.scope.player(member.name))


# --- declarations (added to the Hall's commands) -------------------------------------------


def _duel_now(state: HallState, actor: str) -> list[Example]:
    others = state.others(actor)
    return [Example(f"duel {others[0]}", "challenge one or more members to an Exoptosis duel "
                                         f"(GH-19); members: {', '.join(others)}")]


def _answers_now(state: HallState, actor: str) -> list[Example]:
    lines = []
    for c in state.challenges:
        if actor in c.challenged and actor not in c.accepted:
            lines.append(Example(f"accept duel {c.id}", f"{c.challenger}'s duel with "
                                                        f"{', '.join([c.challenger, *c.challenged])}"))
            lines.append(Example(f"decline duel {c.id}", "refuse it: the duel is cancelled"))
    return lines


DUEL_NUMBER = Whole(1, complaint="'{text}' is not a duel number", pattern=r"#?\d{1,9}", strip="#")

FIGHT_COMMANDS = [
    Command("battle", Battle, rule="GH-18",
            examples=[Example("battle", "engage in the battle that starts with the next phase "
                                        "(at least 4 cards, once per phase)")],
            valid=lambda s, actor: (s.running_member(actor) and actor not in s.battlers
                                    and s.cards.get(actor, 0) >= BATTLE_CARDS),
            note=lambda s, actor: (f"battle needs at least {BATTLE_CARDS} cards outside any match"
                                   if s.running_member(actor) and actor not in s.battlers
                                   and s.cards.get(actor, 0) < BATTLE_CARDS else None)),
    Command("duel {challenged}", Duel, fields={"challenged": Players()}, rule="GH-19",
            examples=[Example("duel bob carol", "challenge members to an Exoptosis duel"),
                      "duel bob"],
            valid=lambda s, actor: s.running_member(actor) and bool(s.others(actor)),
            suggest=_duel_now),
    Command("{verb} duel {duel}", AnswerDuel, rule="GH-19",
            fields={"verb": Choice(("accept", "decline"), "accept|decline"), "duel": DUEL_NUMBER},
            examples=[Example("accept duel 2", "accept duel 2 you were challenged to"),
                      Example("decline duel 2", "refuse it: the duel is cancelled")],
            valid=lambda s, actor: s.running_member(actor) and bool(_answers_now(s, actor)),
            suggest=_answers_now),
]
"""The fights' commands, listed after the Hall's own."""

FIGHT_ACTIONS = {Battle: battle, Duel: duel, AnswerDuel: answer}
"""The fights' actions (GH-6, GH-7: each counts as an action)."""
