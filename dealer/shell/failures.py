"""What dealer could not handle: the sender's reply, and replaying the message once the cause is fixed."""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy.orm import Session

from dealer.render import render
from dealer.text import quote
from dealer.store import queries as Q
from dealer.store.models import Inbound
from dealer.views import message_view


class NotRetried(ValueError):
    """A retry named a message that does not exist or did not fail."""


def _find(session: Session, ident: str) -> Inbound:
    """A message by the number ``dealer inbox list`` shows, or else by its own message id."""
    found = session.get(Inbound, int(ident)) if ident.isdigit() else None
    if found is None:
        matches = Q.messages_with_external_id(session, ident)
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
    """Put failed messages (every one when ``idents`` is None) back to ``pending``; one that did
    not fail is refused (it would be applied twice)."""
    if idents is None:
        chosen = Q.failed_messages(session)
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
        session.execute(Q.retry_failed([m.id for m in chosen]))
    return views


log = logging.getLogger(__name__)

FAILURE_REPLY = (
    "dealer could not handle this message; the host has been told.\n\n"
    "Nothing in it was applied. The host can replay it once the problem is fixed, and you "
    "will get the usual reply then: there is no need to send it again.\n"
)
"""The "could not handle" reply as plain text, for when even its template cannot render."""


def failure_reply(line: str, now: datetime) -> str:
    """The reply to a message dealer could not handle, quoting its first line; plain
    :data:`FAILURE_REPLY` should rendering itself fail."""
    try:
        return render("common/failed.txt", now, line=quote(line) if line else "")
    except Exception:
        log.exception("common/failed.txt could not be rendered; replying in plain text")
        return FAILURE_REPLY


def describe(exc: BaseException) -> str:
    """``Type: message`` of an error, as stored with what it stopped."""
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
