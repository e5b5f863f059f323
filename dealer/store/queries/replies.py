"""Whether a player was already told about a game (the brief replies' explanations, once):
the outbox is the record, so no table is needed."""

from __future__ import annotations

from sqlalchemy import and_, bindparam, select
from sqlalchemy.orm import Session

from dealer.store.direct import direct
from dealer.store.models import Game, Post

_outbox = Post.__table__
_games = Game.__table__

_TOLD = (
    select(_outbox.c.id)
    .where(and_(_outbox.c.game_id == bindparam("game_id"), _outbox.c.channel == "pm",
                _outbox.c.recipient == bindparam("recipient")))
    .limit(1)
)
_KIND = select(_games.c.kind).where(_games.c.id == bindparam("game_id"))
_TOLD_KEY = "dealer.told"


def was_told(session: Session, game_id: str, recipient: str) -> bool:
    """Whether ``recipient`` had a private post of ``game_id``: as noted in this transaction
    (:func:`note_told`), else as read now."""
    told: dict[tuple[str, str], bool] = session.info.setdefault(_TOLD_KEY, {})
    found = told.get((game_id, recipient))
    if found is None:
        found = direct(_TOLD).first(session.connection(), {"game_id": game_id, "recipient": recipient}) is not None
        told[(game_id, recipient)] = found
    return found


def note_told(session: Session, game_id: str, recipient: str, told: bool = True) -> None:
    """Note that ``recipient`` is being told about ``game_id`` (a reply queued, maybe staged), or
    whether it was, as read by a statement that only this transaction could have made wrong since."""
    seen: dict[tuple[str, str], bool] = session.info.setdefault(_TOLD_KEY, {})
    seen[(game_id, recipient)] = seen.get((game_id, recipient), False) or told


def game_kind(session: Session, game_id: str) -> str | None:
    """The kind of game ``game_id`` (None: no such game)."""
    return session.execute(_KIND, {"game_id": game_id}).scalar()
