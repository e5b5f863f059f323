"""Where a post's mail goes, read from the store (docs/EMAIL.md): a reply answers the mail
it came from, threaded; another PM goes to the player's latest mail's address, or to
``ADDRESS`` for ``email:ADDRESS``; a public post to the list."""

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
    """The SMTP publisher's addressing, read through the reading ``engine`` (delivery's claim is open)."""

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
    """Give an SMTP publisher the store's addressing (``passes.attach_platforms``: each transport under routes)."""
    if isinstance(publisher, SmtpPublisher) and publisher.addressing is None:
        publisher.addressing = store_addressing(engine, publisher.list_address)
