"""``dealer verify``: recompute a game's draws (GH-40) and sealed submissions from its revealed seeds."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy.orm import Session

from dealer.fairness import client_hash, commitment, uniform
from dealer.games import rules_for
from dealer.store import queries as Q
from dealer.store.models import Game
from dealer.text import plural


@dataclass
class Verification:
    """What ``verify`` found: how much it checked, and every problem, in words."""

    game_id: str
    checked: int = 0  # draws
    seeds: int = 0  # revealed seeds checked against their commitments
    receipts: int = 0  # sealed submissions (Stationary Roulette)
    commitments: int = 0  # colour commitments of resolved roulettes
    unrevealed: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every revealed draw matched and nothing else was wrong."""
        return not self.problems

    def line(self) -> str:
        """``checked 1 seed, 12 draws: no problems``, or why nothing could be checked."""
        problems = plural(len(self.problems), "problem") if self.problems else "no problems"
        if not (self.seeds or self.checked or self.receipts or self.commitments):
            why = (
                "no seed is revealed yet: seeds are revealed when the game (or Hall phase) ends"
                if self.unrevealed
                else "the game has no revealed seed, draw or sealed submission"
            )
            return f"nothing to check: {why}; {problems}"
        parts = [plural(self.seeds, "seed"), plural(self.checked, "draw")]
        if self.receipts or self.commitments:
            parts += [plural(self.receipts, "receipt"),
                      plural(self.commitments, "colour commitment")]
        return f"checked {', '.join(parts[:-1])} and {parts[-1]}: {problems}"


def verify_game(session: Session, game_id: str) -> Verification:
    """Check commitments, client-seed hashes, counters and results of every draw, and the
    game's sealed submissions (receipts, colour commitments) once its seed is revealed."""
    report = Verification(game_id)
    game = session.get(Game, game_id)
    if game is None:
        report.problems.append(f"there is no game {game_id!r}")
        return report
    published = {
        e.data.get("epoch"): e.data.get("commitment")
        for e in Q.game_events_of_type(session, game_id, "seed.committed")
    }
    for seed in Q.game_seeds(session, game_id):
        draws = Q.epoch_draws(session, game_id, seed.epoch)
        if seed.revealed_at is None:
            report.unrevealed.append(seed.epoch)
            continue
        report.seeds += 1
        if seed.epoch == 0:  # the ruleset's own check of its sealed submissions (roulette's receipts)
            events = [(e.type, e.data) for e in Q.game_events(session, game.id)]
            found = rules_for(game.kind).check_sealed(game.id, seed.server_seed, events)
            report.receipts += found.receipts
            report.commitments += found.commitments
            report.problems += found.problems
        if commitment(seed.server_seed) != seed.commitment:
            report.problems.append(f"epoch {seed.epoch}: the revealed seed does not match its commitment")
        if seed.epoch in published and published[seed.epoch] != seed.commitment:
            report.problems.append(f"epoch {seed.epoch}: the commitment differs from the one published")
        valid_clients = {
            client_hash(seed.client_seeds[:k]) for k in range(len(seed.client_seeds) + 1)
        }
        expected_counter = 0
        for draw in draws:
            result, next_counter = uniform(seed.server_seed, draw.client, draw.counter, draw.n)
            if draw.client not in valid_clients:
                report.problems.append(
                    f"epoch {seed.epoch} draw {draw.counter}: client-seed hash matches no prefix of the client seeds"
                )
            if draw.counter < expected_counter:
                report.problems.append(f"epoch {seed.epoch} draw {draw.counter}: counter reused")
            if result != draw.result:
                report.problems.append(
                    f"epoch {seed.epoch} draw {draw.counter} ({draw.purpose}): recorded {draw.result} "
                    f"of {draw.n}, but the seed gives another result"
                )
            expected_counter = next_counter
            report.checked += 1
    return report
