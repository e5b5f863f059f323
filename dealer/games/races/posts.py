"""The table's posts and replies: template names and plain-data views of the state."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from dealer.cards import BY_CODE
from dealer.clock import format_duration
from dealer.games.base import Context
from dealer.games.races.payout import totals_by_bettor
from dealer.games.races.state import Horse, RacesState
from dealer.games.races.track import bar

TITLE = "Off to the Races"


def announce(ctx: Context, template: str, subject: str, *, mentions: list[str] | tuple[str, ...] = (),
             **context: Any) -> None:
    """Queue the public post ``templates/races/<template>.txt``, pinging ``mentions``."""
    ctx.post(template, f"races/{template}.txt", f"{TITLE} {ctx.game_id}: {subject}",
             mentions=mentions, **_common(ctx), **context)


def confirm(ctx: Context, actor: str, template: str, subject: str, **context: Any) -> None:
    """Queue the private reply ``templates/races/<template>.txt`` to ``actor``."""
    ctx.reply(
        actor, template, f"races/{template}.txt", f"{TITLE} {ctx.game_id}: {subject}",
        **_common(ctx), player=actor, **context,
    )


def _common(ctx: Context) -> dict[str, Any]:
    return {"table": ctx.game_id, "channel": ctx.channel}


def horse_view(horse: Horse, length: int) -> dict[str, Any]:
    """One horse as posts show it: name, card, owner (None for an NPC), position, track bar."""
    card = BY_CODE[horse.card]
    return {
        "name": horse.name,
        "card": card.short,
        "card_name": card.name,
        "owner": horse.owner,
        "npc": horse.npc,
        "position": horse.position,
        "bar": bar(horse.position, length),
        "won": length > 0 and horse.position > length,
    }


def field_view(state: RacesState) -> list[dict[str, Any]]:
    """Every horse of the field, in entry order (NPCs last)."""
    return [horse_view(h, state.length) for h in state.horses]


def bets_view(state: RacesState) -> list[dict[str, Any]]:
    """Per horse: the total bet on it and each bettor's total, in field order."""
    views = []
    for horse in state.horses:
        stakes = totals_by_bettor(state.bets, horse.name)
        views.append({
            "horse": horse.name,
            "total": sum(stakes.values()),
            "bettors": [{"bettor": b, "amount": a} for b, a in stakes.items()],
        })
    return views


def duration_text(value: timedelta | None) -> str:
    """A setting's duration as :func:`dealer.clock.format_duration` writes it (``off`` for None)."""
    return "off" if value is None else format_duration(value)
