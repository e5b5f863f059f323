"""Where a post's mail goes: the SMTP publisher's addressing, read from the store.

A reply to a message that came by mail answers that mail: it goes to the address the mail
came from, threaded to it (``In-Reply-To``, ``References``, ``Re:`` its subject). When that
address is a forwarding dealer's (the message was a forwarded PM), the subject names the
player it is for, so the forwarder knows whose PM to answer. Another private post goes to
the address of the player's latest mail (the forwarder's, for a forum player whose PMs are
forwarded), or to ``ADDRESS`` for a recipient written ``email:ADDRESS``. A public post goes
to the list address.

Interpretation (docs/EMAIL.md): until players can link an address of their own
(``dealer player link NAME email:ADDRESS``, issue 12's identities), a player is written to
where their latest mail came from; a player who never sent a mail has no address, and a
post to them waits (and is parked after every attempt, ``dealer outbox list --failed``).
"""

from __future__ import annotations

import json
import re
from typing import Any, Callable

from sqlalchemy.engine import Engine

from dealer.publish.base import OutgoingPost, Publisher
from dealer.publish.smtp import Addressing, SmtpPublisher
from dealer.store import queries as Q
from dealer.text import player_key

SOURCE = "email"
_REPLY_KEY = re.compile(r"^in:(\d+):")


def store_addressing(engine: Engine, list_address: str | None) -> Callable[[OutgoingPost], Addressing | None]:
    """The addressing of :class:`~dealer.publish.smtp.SmtpPublisher` for a store, read
    through ``engine``, the daemon's reading engine (:func:`~dealer.store.db.reading_engine`:
    a post is addressed while delivery's claim is open)."""

    def address(post: OutgoingPost) -> Addressing | None:
        if post.recipient is None:
            return Addressing(list_address) if list_address else None
        if post.recipient.startswith("email:"):
            to = post.recipient.removeprefix("email:")
            return Addressing(to, **_thread_fields(engine, post, to))
        with engine.connect() as connection:
            reply = _REPLY_KEY.match(post.key)
            if reply:
                row = connection.execute(Q.MAIL_OF_MESSAGE, {"id": int(reply.group(1))}).first()
                linked = (getattr(post, "accounts", None) or {}).get(post.recipient, {}).get("email")
                if row is not None and row.source == SOURCE and (
                        _same(row.sender, post.recipient) or (linked and row.sender == f"email:{linked}")):
                    thread = _thread(row.raw)
                    if thread:
                        return _answer(thread, post.recipient)
            raw = connection.execute(Q.LATEST_MAIL_FROM, {"source": SOURCE, "sender": post.recipient}).scalar()
        # An address the player linked (platform identities: ``dealer player link NAME
        # email:ADDRESS``, read by delivery into the post's ``accounts``) comes first.
        linked = (getattr(post, "accounts", None) or {}).get(post.recipient, {}).get("email")
        if linked:
            return Addressing(linked)
        thread = _thread(raw) if raw else None
        if not thread:
            return None
        return Addressing(thread["address"], on_behalf_of=post.recipient if thread.get("forwarded") else None)

    return address


def _thread_fields(engine: Engine, post: OutgoingPost, to: str) -> dict[str, Any]:
    """A reply to ``email:ADDRESS``'s own mail is threaded to it."""
    reply = _REPLY_KEY.match(post.key)
    if not reply:
        return {}
    with engine.connect() as connection:
        row = connection.execute(Q.MAIL_OF_MESSAGE, {"id": int(reply.group(1))}).first()
    thread = _thread(row.raw) if row is not None and row.source == SOURCE else None
    if not thread or thread["address"] != to:
        return {}
    answer = _answer(thread, post.recipient or "")
    return {"in_reply_to": answer.in_reply_to, "references": answer.references, "subject": answer.subject}


def _answer(thread: dict[str, Any], recipient: str) -> Addressing:
    subject = thread.get("subject") or ""
    if subject and not subject.lower().startswith("re:"):
        subject = f"Re: {subject}"
    return Addressing(
        thread["address"],
        in_reply_to=thread["message_id"],
        references=tuple(thread.get("references") or ()),
        subject=subject or None,
        on_behalf_of=recipient if thread.get("forwarded") else None,
    )


def _thread(raw: str) -> dict[str, Any] | None:
    try:
        thread = json.loads(raw).get("email")
    except (ValueError, AttributeError):
        return None
    return thread if isinstance(thread, dict) and thread.get("address") else None


def _same(sender: str, recipient: str) -> bool:
    return player_key(sender) == player_key(recipient)


def attach(publisher: Publisher, engine: Engine) -> None:
    """Give an SMTP publisher the store's addressing, read through ``engine`` (the
    daemon's reading engine); other publishers need none. Under routes, each SMTP
    transport the routing publisher makes."""
    from dealer.publish.routing import RoutingPublisher

    if isinstance(publisher, RoutingPublisher):
        publisher.for_each_transport(lambda transport: attach(transport, engine))
    elif isinstance(publisher, SmtpPublisher) and publisher.addressing is None:
        publisher.addressing = store_addressing(engine, publisher.list_address)
