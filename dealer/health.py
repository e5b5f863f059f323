"""``dealer health``: whether the store says all is well, for a probe; warnings (quarantined
mail, the sender check off) do not make it unhealthy."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from sqlalchemy.engine import Engine
from sqlalchemy.exc import SQLAlchemyError

from dealer.clock import format_utc
from dealer.store import queries as Q
from dealer.store.db import SchemaOutOfDate, check_schema
from dealer.store.room import no_room

OVERDUE_GRACE = timedelta(minutes=1)
"""How long past its due time a pending deadline may wait before dealer is unhealthy."""
SHOWN = 5
"""Overdue deadlines named in the report (the rest are counted)."""
GATEWAYS = "gateway"
"""The cursors' source marking a gateway down: place ``discord`` (started again on its own) or
``discord/refused`` (its login refused), position since when in ms, 0 while up."""


@dataclass
class Health:
    """What the check found: ``problems`` is empty when all is well."""

    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    """Said, but all is still well."""
    parked: int = 0
    overdue: int = 0
    quarantined: int = 0

    @property
    def ok(self) -> bool:
        return not self.problems


def check_health(engine: Engine, now: datetime, auth_off: str | None = None) -> Health:
    """Check the store behind ``engine`` at ``now`` (never raises for a store problem)."""
    health = Health()
    if auth_off:
        health.warnings.append(auth_off)
    try:
        check_schema(engine)
    except SchemaOutOfDate as exc:
        health.problems.append(str(exc))
        return health
    except (SQLAlchemyError, OSError) as exc:
        reason = getattr(exc, "orig", None) or exc
        lines = str(reason).strip().splitlines()
        health.problems.append(f"the store cannot be reached: {lines[0] if lines else type(reason).__name__}")
        return health
    try:
        with engine.connect() as connection:
            overdue = Q.overdue_deadlines(connection, now - OVERDUE_GRACE)
            health.parked = Q.count_parked(connection)
            health.quarantined = Q.count_quarantined(connection)
            gateways = Q.cursors(connection, GATEWAYS)
    except SQLAlchemyError as exc:
        health.problems.append(f"the store cannot be read: {exc}")
        return health
    try:
        full = no_room(engine)
    except (SQLAlchemyError, OSError) as exc:
        full = f"its room could not be read: {exc}"
    if full:
        health.problems.append(f"{full}; the daemon cannot store messages, they wait in the inbox until space is freed")
    health.overdue = len(overdue)
    if health.quarantined:
        health.warnings.append(
            f"{health.quarantined} mail(s) quarantined, their sender not authenticated: "
            "`dealer inbox list --quarantined`; `dealer inbox release ID` for a genuine one"
        )
    if overdue:
        named = ", ".join(
            f"{row.game_id}:{row.name} (due {format_utc(row.due_at)}{'; failing: ' + row.error if row.error else ''})"
            for row in overdue[:SHOWN]
        )
        more = f" and {len(overdue) - SHOWN} more" if len(overdue) > SHOWN else ""
        health.problems.append(
            f"{len(overdue)} deadline(s) overdue by more than a minute: {named}{more}; is `dealer run` running?"
        )
    for place, since in sorted((p, int(ms)) for p, ms in gateways.items() if int(ms)):
        when = format_utc(datetime.fromtimestamp(since / 1000, timezone.utc))
        health.problems.append(
            f"Discord refused the gateway's login at {when}: dealer hears nothing from Discord; fix "
            "DEALER_DISCORD_TOKEN or the intents (`dealer discord check`), then restart `dealer run`"
            if place.endswith("/refused") else f"the {place.title()} gateway has been down since {when}: "
            "dealer hears nothing from it meanwhile; it is started again on its own (the daemon's log says why)")
    if health.parked:
        health.problems.append(
            f"{health.parked} post(s) parked after failing every delivery attempt for hours "
            "(each tried again on its own after its backoff): `dealer outbox list --failed`, "
            "`dealer outbox retry` to send them now"
        )
    return health
