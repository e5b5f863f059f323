"""What dealer could not handle, for the host: list failed messages and replay them.

A message whose handling crashed is stored ``failed`` with its error (see
:mod:`dealer.shell.daemon`). Once the cause is fixed, :func:`retry_messages` puts it back to
``pending`` and the next pass applies it like any stored message: at its own ``sent_at``,
to the game as it stands then.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import func, select, update
from sqlalchemy.orm import Session

from dealer.clock import iso
from dealer.store.models import Inbound


class NotRetried(ValueError):
    """A retry named a message that does not exist or did not fail."""


def message_view(inbound: Inbound) -> dict[str, Any]:
    """One stored message as ``dealer inbox list`` shows it."""
    return {
        "id": inbound.id,
        "message_id": inbound.external_id,
        "source": inbound.source,
        "sender": inbound.sender,
        "channel": inbound.channel,
        "sent_at": iso(inbound.sent_at),
        "received_at": iso(inbound.received_at),
        "status": inbound.status,
        "body": inbound.body,
        "error": inbound.error,
    }


def list_messages(session: Session, *, failed: bool = False, limit: int = 20) -> list[dict[str, Any]]:
    """The newest stored messages (only the failed ones with ``failed``), newest first."""
    query = select(Inbound).order_by(Inbound.received_at.desc(), Inbound.id.desc()).limit(limit)
    if failed:
        query = query.where(Inbound.status == "failed")
    return [message_view(m) for m in session.scalars(query)]


def count_failed(session: Session) -> int:
    """How many stored messages wait for a retry."""
    return session.scalar(select(func.count()).select_from(Inbound).where(Inbound.status == "failed")) or 0


def _find(session: Session, ident: str) -> Inbound:
    """A message by the number ``dealer inbox list`` shows, or else by its own message id."""
    found = session.get(Inbound, int(ident)) if ident.isdigit() else None
    if found is None:
        matches = list(session.scalars(select(Inbound).where(Inbound.external_id == ident)))
        if len(matches) > 1:
            raise NotRetried(
                f"several stored messages have the id {ident!r} (from different sources); "
                "name one by the number `dealer inbox list` shows"
            )
        found = matches[0] if matches else None
    if found is None:
        raise NotRetried(f"there is no stored message {ident!r}; `dealer inbox list` shows them")
    return found


def retry_messages(session: Session, idents: list[str] | None = None) -> list[dict[str, Any]]:
    """Put failed messages back to ``pending`` (every failed one when ``idents`` is None).

    Their error and outcome are cleared; the next pass applies them. A message that did not
    fail is refused: replaying an applied message would apply it twice.
    """
    if idents is None:
        chosen = list(session.scalars(
            select(Inbound).where(Inbound.status == "failed").order_by(Inbound.sent_at, Inbound.id)
        ))
    else:
        chosen = []
        for ident in idents:
            inbound = _find(session, ident)
            if inbound.status != "failed":
                raise NotRetried(
                    f"message {inbound.id} ({inbound.external_id!r} from {inbound.sender}) is "
                    f"{inbound.status}, not failed; only failed messages can be retried"
                )
            if inbound not in chosen:
                chosen.append(inbound)
    views = [message_view(m) for m in chosen]
    if chosen:
        session.execute(
            update(Inbound)
            .where(Inbound.id.in_([m.id for m in chosen]), Inbound.status == "failed")
            .values(status="pending", error=None, outcome=None, processed_at=None)
        )
    return views
