"""Who sent a message, where the transport cannot vouch for it: quarantine and pass phrases.

An e-mail inbox tells ingest, with each message, whether its sender was authenticated
(:class:`~dealer.inbox.base.SenderCheck`). :func:`quarantine_reasons` decides what is
stored ``quarantined``: a mail not authenticated, unless its first line carried the pass
phrase of the player it would count for. A quarantined message is never applied nor
answered (its ``From:`` may be forged: dealer sends no backscatter); the host lists it
(``dealer inbox list --quarantined``) and releases it (:func:`release_messages`).

A PM whose first line is ``set passphrase WORDS`` (an authenticated mail, a Discord DM, a
forwarded PM from an authenticated forwarder) sets its sender's pass phrase when it is
stored (:func:`set_from_message`, in the insert's transaction): the phrase is hashed and
cut out of the stored body and raw text at once, so it is never kept, and the reply says
it was set without repeating it. Nothing else of such a message is read.
"""

from __future__ import annotations

import json
import logging
import re
from datetime import datetime
from typing import Any, Sequence

from sqlalchemy.engine import Connection, Engine
from sqlalchemy.orm import Session

from dealer.inbox.base import Delivery, InboxMessage
from dealer.passphrases import (
    HIDDEN, BadPassphrase, Taken, check_new, hash_passphrase, hide_passphrase, matches, new_passphrase,
    take_new_passphrase,
)
from dealer.render import render
from dealer.store import queries as Q
from dealer.store.models import Inbound

log = logging.getLogger(__name__)

_MENTIONS_PASSPHRASE = re.compile("passphrase", re.IGNORECASE)


def quarantine_reasons(engine: Engine, deliveries: Sequence[Delivery]) -> list[str | None]:
    """For each delivery, why it is to be quarantined, or None when it counts."""
    if all(d.check is None or d.check.authenticated for d in deliveries):
        return [None] * len(deliveries)
    with engine.connect() as connection:
        return [_reason(connection, delivery) for delivery in deliveries]


def _reason(connection: Connection, delivery: Delivery) -> str | None:
    check = delivery.check
    if check is None or check.authenticated:
        return None
    if check.passphrase is None:
        return f"sender not authenticated: {check.how}"
    player = Q.player_of(connection, delivery.message.sender)
    stored = Q.passphrase_hash(connection, player) if player else None
    if stored is not None and matches(check.passphrase, stored):
        log.info("message %s from %s: not authenticated (%s), counted by its pass phrase",
                 delivery.message.id, delivery.message.sender, check.how)
        return None
    whose = "has no pass phrase set" if player and stored is None else \
        "is no player" if not player else "has another pass phrase"
    return f"sender not authenticated ({check.how}), and its pass phrase does not match: {delivery.message.sender} {whose}"


def redact_new_passphrase(message: InboxMessage, raw: str) -> tuple[InboxMessage, str, str | None]:
    """``message`` and its ``raw`` text with the pass phrase of a ``set passphrase WORDS``
    first line cut out, and the phrase (None when the message sets none). A first line
    ``passphrase WORDS`` that reached this far (a transport that does not read pass
    phrases: the e-mail inbox takes it out itself) is hidden too, and sets nothing."""
    if message.kind not in ("message", "edit") or not _MENTIONS_PASSPHRASE.search(message.body):
        return message, raw, None  # nearly every message: one search, nothing copied
    taken = take_new_passphrase(message.body)
    if taken.phrase is None:
        hidden = hide_passphrase(message.body)
        if hidden.phrase is None:
            return message, raw, None
        taken = Taken(hidden.body, None)
    if message.kind == "edit":  # an edit sets nothing: it only must not keep the phrase
        taken = Taken(taken.body, None)
    message = message.model_copy(update={"body": taken.body})
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if isinstance(data, dict):
        data["body"] = taken.body
        raw = json.dumps(data, ensure_ascii=False)
    else:  # a raw text that is not a JSON object: the message as dealer read it stands in
        raw = message.model_dump_json()
    return message, raw, taken.phrase


def set_from_message(connection: Connection, source: str, message: InboxMessage, phrase: str,
                     now: datetime) -> None:
    """Apply a stored ``set passphrase`` message (just inserted, in ``connection``'s
    transaction): set its sender's pass phrase, mark the message, queue the reply."""
    row = connection.execute(
        Inbound.__table__.select().where(Inbound.source == source, Inbound.external_id == message.id)
    ).one()
    player = Q.player_of(connection, message.sender)
    result, said = "rejected", ""
    if player is None:
        said = f"{message.sender} is not a registered player, so no pass phrase was set."
    elif message.channel != "pm":
        # Said where others read it, the phrase is no secret: it is not set.
        said = ("A pass phrase is set in a private message only: this one was not set. It was "
                "seen by others, so choose another.")
    else:
        try:
            Q.set_passphrase_hash(connection, player, hash_passphrase(check_new(phrase)), now)
            result = "applied"
        except BadPassphrase as exc:
            said = f"The pass phrase was not set: {exc}."
    detail = "pass phrase set" if result == "applied" else said
    connection.execute(
        Inbound.__table__.update().where(Inbound.id == row.id).values(
            status=result, processed_at=now, outcome=[{"line": "set passphrase", "result": result, "detail": detail}],
        )
    )
    connection.execute(Q.INSERT_POSTS, dict(
        key=f"in:{row.id}:passphrase", game_id=None, channel="pm", recipient=message.sender,
        kind="passphrase", subject="Pass phrase set" if result == "applied" else "Pass phrase not set",
        body=render("common/passphrase.txt", now, applied=result == "applied", said=said),
        created_at=now, status="pending", attempts=0,
    ))


def new_passphrase_for(session: Session, name: str, now: datetime) -> tuple[str, str]:
    """Set a new random pass phrase for player ``name`` (``dealer player passphrase``):
    (the player's name, the phrase), the phrase to be shown once and only its hash kept."""
    from dealer.views import find_player

    player = find_player(session, name)
    phrase = new_passphrase()
    Q.set_passphrase_hash(session, player.key, hash_passphrase(phrase), now)
    return player.name, phrase


class NotReleased(ValueError):
    """A release named a message that does not exist or is not quarantined."""


def release_messages(session: Session, idents: list[str]) -> list[dict[str, Any]]:
    """Release quarantined messages (by the number ``dealer inbox list`` shows, or their own
    id) to ``pending``: the next pass applies each at its own ``sent_at``, and answers it.
    Returns what each was (as ``dealer inbox list`` shows it)."""
    from dealer.views import message_view

    chosen: list[Inbound] = []
    for ident in idents:
        found = session.get(Inbound, int(ident)) if ident.isdigit() else None
        if found is None:
            matches_ = Q.messages_with_external_id(session, ident)
            if len(matches_) > 1:
                raise NotReleased(f"several stored messages have the id {ident!r}; name one by its number")
            found = matches_[0] if matches_ else None
        if found is None:
            raise NotReleased(f"there is no stored message {ident!r}; `dealer inbox list --quarantined` shows them")
        if found.status != Q.QUARANTINED:
            raise NotReleased(f"message {found.id} ({found.external_id!r} from {found.sender}) is "
                              f"{found.status}, not quarantined")
        if found.body.strip().lower().startswith(f"set passphrase {HIDDEN}"):
            # Its pass phrase was cut out when it was stored: released, it could set nothing.
            raise NotReleased(f"message {found.id} set a pass phrase, which is not kept; the player "
                              "sends it again from an authenticated address")
        if found not in chosen:
            chosen.append(found)
    views = [message_view(m) for m in chosen]
    Q.release_quarantined(session, [m.id for m in chosen])
    return views
