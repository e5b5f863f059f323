"""``dealer verify``: recompute every recorded draw of a game from its revealed seeds."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlalchemy import select
from sqlalchemy.orm import Session

from dealer.fairness import Draw as FairDraw, client_hash, commitment, verify_draw
from dealer.store.models import Draw, Event, Game, Seed


@dataclass
class Verification:
    """What ``verify`` found: checked draws and every problem, in words."""

    game_id: str
    checked: int = 0
    unrevealed: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every revealed draw matched and nothing else was wrong."""
        return not self.problems


def verify_game(session: Session, game_id: str) -> Verification:
    """Check commitments, client-seed hashes, counters and results of every draw."""
    report = Verification(game_id)
    if session.get(Game, game_id) is None:
        report.problems.append(f"there is no game {game_id!r}")
        return report
    published = {
        e.data.get("epoch"): e.data.get("commitment")
        for e in session.scalars(
            select(Event).where(Event.game_id == game_id, Event.type == "seed.committed")
        )
    }
    for seed in session.scalars(select(Seed).where(Seed.game_id == game_id).order_by(Seed.epoch)):
        draws = list(
            session.scalars(
                select(Draw)
                .where(Draw.game_id == game_id, Draw.epoch == seed.epoch)
                .order_by(Draw.counter)
            )
        )
        if seed.revealed_at is None:
            report.unrevealed.append(seed.epoch)
            continue
        if commitment(seed.server_seed) != seed.commitment:
            report.problems.append(f"epoch {seed.epoch}: the revealed seed does not match its commitment")
        if seed.epoch in published and published[seed.epoch] != seed.commitment:
            report.problems.append(f"epoch {seed.epoch}: the commitment differs from the one published")
        valid_clients = {
            client_hash(seed.client_seeds[:k]) for k in range(len(seed.client_seeds) + 1)
        }
        expected_counter = 0
        for draw in draws:
            fair = FairDraw(seed.epoch, draw.counter, draw.n, draw.result, draw.client, draw.purpose)
            if draw.client not in valid_clients:
                report.problems.append(
                    f"epoch {seed.epoch} draw {draw.counter}: client-seed hash matches no prefix of the client seeds"
                )
            if draw.counter < expected_counter:
                report.problems.append(f"epoch {seed.epoch} draw {draw.counter}: counter reused")
            if not verify_draw(seed.server_seed, fair):
                report.problems.append(
                    f"epoch {seed.epoch} draw {draw.counter} ({draw.purpose}): recorded {draw.result} "
                    f"of {draw.n}, but the seed gives another result"
                )
            expected_counter = _next_counter(seed.server_seed, fair)
            report.checked += 1
    return report


def _next_counter(server_seed: str, draw: FairDraw) -> int:
    from dealer.fairness import uniform

    _, nxt = uniform(server_seed, draw.client, draw.counter, draw.n)
    return nxt
