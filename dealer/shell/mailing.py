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
        # An address the player linked (``dealer player link NAME email:ADDRESS``, read by
        # delivery into the post's ``accounts``) comes after the mail a reply answers.
        linked = post.accounts.get(post.recipient, {}).get("email")
        with engine.connect() as connection:
            reply = _REPLY_KEY.match(post.key)
            row = connection.execute(Q.MAIL_OF_MESSAGE, {"id": int(reply.group(1))}).first() if reply else None
            thread = _thread(row.raw) if row is not None and row.source == SOURCE else None
            if thread and (_same(row.sender, post.recipient) or (linked and row.sender == f"email:{linked}")):
                return _answer(thread, post.recipient)
            if post.recipient.startswith("email:"):
                return Addressing(post.recipient.removeprefix("email:"))
            if linked:
                return Addressing(linked)
            raw = connection.execute(Q.LATEST_MAIL_FROM, {"source": SOURCE, "sender": post.recipient}).scalar()
        thread = _thread(raw) if raw else None
        if not thread:
            return None
        return Addressing(thread["address"], on_behalf_of=post.recipient if thread.get("forwarded") else None)

    return address


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
