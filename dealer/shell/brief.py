"""The parts only a brief reply has (dealer/detail.py): a footer (a template's ``.footer``
version) and, in the player's first reply about a game, its ``explain.txt``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from markupsafe import Markup
from sqlalchemy.orm import Session

from dealer.detail import BRIEF, reply_detail
from dealer.games.base import PostDraft
from dealer.render import fairness_short, render, template_variant
from dealer.store.queries.replies import game_kind, note_told, was_told


def is_brief() -> bool:
    """Whether private replies are brief under the policy in force."""
    return reply_detail() == BRIEF


def footer(draft: PostDraft, now: datetime, game_id: str | None) -> str:
    """The footer a brief reply ends with for ``draft`` (empty: its template has none)."""
    name = template_variant(draft.template, "footer")
    if name is None:
        return ""
    return render(name, now, **{"game_id": game_id, **draft.context}).strip()


def explanation(session: Session, game_id: str | None, now: datetime) -> str:
    """The explanations of ``game_id``'s kind (``KIND/explain.txt``, else the common ones)."""
    kind = game_kind(session, game_id) if game_id else None
    name = (kind and template_variant(f"{kind}/explain.txt", None)) or "common/explain.txt"
    return render(name, now, game_id=game_id, fairness_short=fairness_short()).strip()


def reply_parts(session: Session, footers: list[str], game_id: str | None, recipient: str,
                now: datetime) -> dict[str, Any]:
    """The brief reply's footer (its last command's) and, the first time, the game's explanations."""
    parts: dict[str, Any] = {"footer": Markup(footers[-1]) if footers else "", "explain": ""}
    if game_id and not was_told(session, game_id, recipient):
        parts["explain"] = Markup(explanation(session, game_id, now))
    if game_id:
        note_told(session, game_id, recipient)
    return parts
