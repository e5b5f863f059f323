"""Who sent a message, where the transport cannot vouch for it: quarantine and pass phrases.

A mail not authenticated is stored ``quarantined``, unless its first line carries its
player's pass phrase; it is never applied nor answered (no backscatter) until released.
After :data:`WRONG_PHRASES` wrong pass phrases from one sender within :data:`WRONG_WINDOW`,
its later mails are quarantined unchecked, the right phrase too, until the window moves on.
A ``set passphrase WORDS`` PM sets the phrase when stored, hashed and cut out of the
stored text at once.
"""

from __future__ import annotations

import json
import logging
import re
from collections import Counter
from datetime import datetime, timedelta
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


WRONG_PHRASES = 5
"""Wrong pass phrases one sender may send within :data:`WRONG_WINDOW` before its mail is set aside unchecked."""
WRONG_WINDOW = timedelta(hours=1)
_WRONG = "its pass phrase does not match"


def quarantine_reasons(engine: Engine, deliveries: Sequence[Delivery], now: datetime) -> list[str | None]:
    """For each delivery, why it is to be quarantined, or None when it counts."""
    if all(d.check is None or d.check.authenticated for d in deliveries):
        return [None] * len(deliveries)
    wrong: Counter[str] = Counter()  # this batch's wrong phrases, not stored yet
    with engine.connect() as connection:
        return [_reason(connection, delivery, now, wrong) for delivery in deliveries]


def _reason(connection: Connection, delivery: Delivery, now: datetime, wrong: Counter[str]) -> str | None:
    check = delivery.check
    if check is None or check.authenticated:
        return None
    if check.passphrase is None:
        return f"sender not authenticated: {check.how}"
    sender = delivery.message.sender
    tries = wrong[sender] + Q.count_quarantined_like(connection, sender, _WRONG, now - WRONG_WINDOW)
    if tries >= WRONG_PHRASES:
        # Guessing is capped, and so is scrypt's work (about 50 ms a check).
        return (f"sender not authenticated ({check.how}), and {tries} wrong pass phrases from "
                f"{sender} within the last hour: its pass phrase was not checked; a genuine mail "
                "can be released")
    player = Q.player_of(connection, sender)
    stored = Q.passphrase_hash(connection, player) if player else None
    if stored is not None and matches(check.passphrase, stored):
        log.info("message %s from %s: not authenticated (%s), counted by its pass phrase",
                 delivery.message.id, sender, check.how)
        return None
    wrong[sender] += 1
    whose = "has no pass phrase set" if player and stored is None else \
        "is no player" if not player else "has another pass phrase"
    return f"sender not authenticated ({check.how}), and {_WRONG}: {sender} {whose}"


def redact_new_passphrase(message: InboxMessage, raw: str) -> tuple[InboxMessage, str, str | None]:
    """``message`` and its ``raw`` with a ``set passphrase WORDS`` (or ``passphrase WORDS``)
    first line's phrase cut out, and the phrase to set (None for the second)."""
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
    """Apply a ``set passphrase`` message just stored: set the phrase, mark it, queue the reply."""
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
    """Set a new random pass phrase for ``name``: (the name, the phrase shown once; only its hash is kept)."""
    from dealer.views import find_player

    player = find_player(session, name)
    phrase = new_passphrase()
    Q.set_passphrase_hash(session, player.key, hash_passphrase(phrase), now)
    return player.name, phrase


class NotReleased(ValueError):
    """A release named a message that does not exist or is not quarantined."""


def release_messages(session: Session, idents: list[str]) -> list[dict[str, Any]]:
    """Release quarantined messages to ``pending``, each applied at its own ``sent_at``; return what each was."""
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
